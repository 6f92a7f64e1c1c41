// How instruction kinds are defined (private to src/schedule/). An instruction is one typed C++
// function, Result<Out> fn(InstructionContext&, Args...), plus the names of its parameters:
//
//   Result<std::vector<LoopRV>> apply_split(InstructionContext& ctx, LoopRV loop,
//                                           std::vector<std::optional<ExprArg>> factors);
//   TYCHE_INSTRUCTION(split, apply_split, {{"loop"}, {"factors"}})
//
// From that one declaration come the kind's parameter types (from Args), its output type (from
// Out), the unpacking of trace values into Args, the exported handle kind_split() and the typed
// call split_kind()(sch, loop, factors) that the Schedule method forwards to; the compiler checks
// that the forward's arguments match the function's parameters and that every parameter is named.
#pragma once

#ifndef TYCHE_SCHEDULE_INTERNAL
#error \
    "schedule/instruction_impl.h is private to src/schedule/: apply instructions through Schedule (schedule/schedule.h)"
#endif

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

using Values = std::vector<Value>;

// What an instruction's implementation may do with the schedule it is applied to: read and
// change the state, resolve handles, issue handles for its outputs, consume the handles whose
// statements it replaced, draw from the schedule's engine and read or record its decision. Only
// Schedule::apply_instruction creates one, which records the instruction in the trace.
class InstructionContext {
 public:
  ScheduleState& state() { return sch_.state_; }
  const ScheduleState& state() const { return sch_.state_; }
  RandomEngine& rng() { return sch_.rng_; }
  // A sampling instruction's decision: given (kind != kNone) to be checked and used, or to be
  // drawn and stored here.
  Value& decision() { return *decision_; }

  Result<SRef> sref(const BlockRV& block) const { return sch_.block_sref(block); }
  Result<SRef> sref(const LoopRV& loop) const { return sch_.loop_sref(loop); }
  Result<SRef> sref(const BlockOrLoopRV& rv) const;
  // The srefs of a list of loops, or the first stale-handle error.
  Result<std::vector<SRef>> srefs(const std::vector<LoopRV>& loops) const;
  // The integer an ExprArg holds (a literal, or an ExprRV's value).
  Result<int64_t> value(const ExprArg& arg) const;
  // kComputeLocationRoot/Inline if `loop` is a location mark.
  std::optional<int64_t> location_mark(const LoopRV& loop) const;

  BlockRV issue_block(const SRef& block) { return sch_.issue_block(block); }
  LoopRV issue_loop(const SRef& loop) { return sch_.issue_loop(loop); }
  std::vector<BlockRV> issue_blocks(const std::vector<SRef>& blocks);
  std::vector<LoopRV> issue_loops(const std::vector<SRef>& loops);
  ExprRV issue_expr(int64_t value) { return sch_.issue_expr(value); }
  LoopRV issue_location_mark(int64_t mark) { return sch_.issue_location_mark(mark); }
  // The handle's statement is gone (replaced by the primitive): using it again is stale_handle.
  void consume(const LoopRV& loop) { sch_.loops_.erase(loop.id); }
  void consume(const BlockRV& block) { sch_.blocks_.erase(block.id); }

 private:
  friend class Schedule;
  InstructionContext(Schedule& sch, Value* decision) : sch_(sch), decision_(decision) {}
  Schedule& sch_;
  Value* decision_;
};

// ---- C++ types <-> trace values ----

template <typename T>
struct ArgType;  // the ParamType of an argument type, and its value read from a checked Value
template <>
struct ArgType<BlockRV> {
  static constexpr ParamType kType = ParamType::kBlock;
  static BlockRV from(const Value& v) { return {v.i}; }
};
template <>
struct ArgType<LoopRV> {
  static constexpr ParamType kType = ParamType::kLoop;
  static LoopRV from(const Value& v) { return {v.i}; }
};
template <>
struct ArgType<BlockOrLoopRV> {
  static constexpr ParamType kType = ParamType::kBlockOrLoop;
  static BlockOrLoopRV from(const Value& v) {
    if (v.kind == Value::Kind::kBlockRV) return BlockRV{v.i};
    return LoopRV{v.i};
  }
};
template <>
struct ArgType<ExprArg> {
  static constexpr ParamType kType = ParamType::kExpr;
  static ExprArg from(const Value& v) {
    if (v.kind == Value::Kind::kExprRV) return ExprRV{v.i};
    return v.i;
  }
};
template <>
struct ArgType<int64_t> {
  static constexpr ParamType kType = ParamType::kInt;
  static int64_t from(const Value& v) { return v.i; }
};
template <>
struct ArgType<int> {
  static constexpr ParamType kType = ParamType::kInt;
  static int from(const Value& v) { return static_cast<int>(v.i); }
};
template <>
struct ArgType<double> {
  static constexpr ParamType kType = ParamType::kFloat;
  static double from(const Value& v) {
    return v.kind == Value::Kind::kFloat ? v.f : static_cast<double>(v.i);
  }
};
template <>
struct ArgType<bool> {
  static constexpr ParamType kType = ParamType::kBool;
  static bool from(const Value& v) { return v.i != 0; }
};
template <>
struct ArgType<std::string> {
  static constexpr ParamType kType = ParamType::kString;
  static std::string from(const Value& v) { return v.s; }
};
template <>
struct ArgType<AnnArg> {
  static constexpr ParamType kType = ParamType::kAnnValue;
  static AnnArg from(const Value& v) {
    switch (v.kind) {
      case Value::Kind::kFloat:
        return v.f;
      case Value::Kind::kString:
        return v.s;
      case Value::Kind::kExprRV:
        return ExprRV{v.i};
      default:
        return v.i;
    }
  }
};
template <typename T, ParamType kListType>
struct ListArgType {
  static constexpr ParamType kType = kListType;
  static std::vector<T> from(const Value& v) {
    std::vector<T> out;
    out.reserve(v.list.size());
    for (const Value& x : v.list) out.push_back(ArgType<T>::from(x));
    return out;
  }
};
template <>
struct ArgType<std::vector<BlockRV>> : ListArgType<BlockRV, ParamType::kBlockList> {};
template <>
struct ArgType<std::vector<LoopRV>> : ListArgType<LoopRV, ParamType::kLoopList> {};
template <>
struct ArgType<std::vector<int64_t>> : ListArgType<int64_t, ParamType::kIntList> {};
template <>
struct ArgType<std::vector<double>> : ListArgType<double, ParamType::kFloatList> {};
template <>
struct ArgType<std::optional<ExprArg>> {
  static std::optional<ExprArg> from(const Value& v) {
    if (v.kind == Value::Kind::kNone) return std::nullopt;
    return ArgType<ExprArg>::from(v);
  }
};
template <>
struct ArgType<std::vector<std::optional<ExprArg>>>
    : ListArgType<std::optional<ExprArg>, ParamType::kOptExprList> {};

template <typename T>
struct OutType;  // the OutputType of a result type, and its handles as values
template <>
struct OutType<Unit> {
  static constexpr OutputType kType = OutputType::kNone;
  static Values values(const Unit&) { return {}; }
};
// One handle or a list of handles.
template <typename T, OutputType kOut>
struct HandleOutType {
  static constexpr OutputType kType = kOut;
  static Values values(const T& out) {
    Value v = to_value(out);
    return v.kind == Value::Kind::kList ? std::move(v.list) : Values{std::move(v)};
  }
};
template <>
struct OutType<BlockRV> : HandleOutType<BlockRV, OutputType::kBlock> {};
template <>
struct OutType<LoopRV> : HandleOutType<LoopRV, OutputType::kLoop> {};
template <>
struct OutType<ExprRV> : HandleOutType<ExprRV, OutputType::kExpr> {};
template <>
struct OutType<std::vector<BlockRV>> : HandleOutType<std::vector<BlockRV>, OutputType::kBlocks> {};
template <>
struct OutType<std::vector<LoopRV>> : HandleOutType<std::vector<LoopRV>, OutputType::kLoops> {};
template <>
struct OutType<std::vector<ExprRV>> : HandleOutType<std::vector<ExprRV>, OutputType::kExprs> {};

// A parameter's name, whether the text form writes it positionally (sch.reorder(l1, l2)), and
// the value the text form may omit.
struct ParamName {
  std::string_view name;
  bool variadic = false;
  std::optional<Value> default_value = std::nullopt;
};
struct KindFlags {
  DecisionType decision = DecisionType::kNone;
  bool pure = false;  // only looks or samples (see InstructionKind::pure)
};

template <typename Fn>
struct Signature;
template <typename R, typename... A>
struct Signature<Result<R> (*)(InstructionContext&, A...)> {
  using Out = R;
  using Args = std::tuple<std::decay_t<A>...>;
};

// The typed call of a kind: the Schedule method's one-line forward. Through
// Schedule::apply_instruction, so the instruction is checked and traced.
template <typename Out, typename Args>
class TypedCall;
template <typename Out, typename... A>
class TypedCall<Out, std::tuple<A...>> : public InstructionKind {
 public:
  Result<Out> operator()(Schedule& sch, const A&... args) const {
    return sample(sch, Value::none(), args...);
  }
  // A sampling kind with a given decision (none: draw one).
  Result<Out> sample(Schedule& sch, Value decision, const A&... args) const {
    auto out = sch.apply_instruction(*this, {to_value(args)...}, std::move(decision));
    if (!out) return out.error();
    if constexpr (std::is_same_v<Out, Unit>) {
      return Unit{};
    } else if constexpr (requires { typename Out::value_type; }) {
      Out rvs;
      for (const Value& v : out.value()) rvs.push_back(typename Out::value_type{v.i});
      return rvs;
    } else {
      return Out{out.value().at(0).i};
    }
  }
};

template <auto Fn>
class TypedKind : public TypedCall<typename Signature<decltype(Fn)>::Out,
                                   typename Signature<decltype(Fn)>::Args> {
  using Out = typename Signature<decltype(Fn)>::Out;
  using Args = typename Signature<decltype(Fn)>::Args;
  static constexpr size_t kArity = std::tuple_size_v<Args>;

 public:
  template <size_t N>
  TypedKind(std::string_view name, const ParamName (&params)[N], KindFlags flags = {}) {
    static_assert(N == kArity, "name every parameter of the instruction's function, in order");
    this->name = name;
    [&]<size_t... I>(std::index_sequence<I...>) {
      (this->params.push_back(Param{params[I].name, ArgType<std::tuple_element_t<I, Args>>::kType,
                                    params[I].variadic, params[I].default_value}),
       ...);
    }
    (std::make_index_sequence<kArity>{});
    this->output = OutType<Out>::kType;
    this->decision = flags.decision;
    this->pure = flags.pure;
    this->apply = &apply_values;
  }

 private:
  static Result<Values> apply_values(InstructionContext& ctx, std::span<const Value> args) {
    return [&]<size_t... I>(std::index_sequence<I...>)->Result<Values> {
      auto out = Fn(ctx, ArgType<std::tuple_element_t<I, Args>>::from(args[I])...);
      if (!out) return out.error();
      return OutType<Out>::values(out.value());
    }
    (std::make_index_sequence<kArity>{});
  }
};

}  // namespace tyche::schedule

// Defines the exported handle kind_NAME() (instruction.h) and NAME_kind(), the typed call the
// Schedule method forwards to, from the instruction's function FN and its parameters' names.
#define TYCHE_INSTRUCTION(NAME, FN, ...)                                    \
  static const ::tyche::schedule::TypedKind<FN>& NAME##_kind() {            \
    static const ::tyche::schedule::TypedKind<FN> kind(#NAME, __VA_ARGS__); \
    return kind;                                                            \
  }                                                                         \
  const ::tyche::schedule::InstructionKind& kind_##NAME() {                 \
    return NAME##_kind();                                                   \
  }
