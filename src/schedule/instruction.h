// Instructions: every schedule primitive and sampling instruction is an InstructionKind defined
// once (name, typed parameters, outputs, decision type, apply). The Schedule's typed methods,
// tracing, replay, JSON and the text form all work from that one definition (docs/architecture.md,
// "Instructions and traces"). Kinds are listed in one explicit table (instruction_registry.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/error.h"

namespace tyche::schedule {

class InstructionContext;

// A value an instruction takes or produces: a literal, a random-variable handle, or a list.
// Handles are ids: the schedule's while it runs, trace-local inside a Trace.
struct Value {
  enum class Kind : uint8_t {
    kNone,
    kInt,
    kFloat,
    kBool,
    kString,
    kBlockRV,
    kLoopRV,
    kExprRV,
    kList
  };
  Kind kind = Kind::kNone;
  int64_t i = 0;  // kInt, kBool (0/1), or the id of an RV
  double f = 0;   // kFloat
  std::string s;  // kString
  std::vector<Value> list;

  static Value none() { return {}; }
  static Value integer(int64_t v) { return make(Kind::kInt, v); }
  static Value boolean(bool v) { return make(Kind::kBool, v ? 1 : 0); }
  static Value real(double v);
  static Value string(std::string v);
  static Value block(int64_t id) { return make(Kind::kBlockRV, id); }
  static Value loop(int64_t id) { return make(Kind::kLoopRV, id); }
  static Value expr(int64_t id) { return make(Kind::kExprRV, id); }
  static Value of_list(std::vector<Value> items);

  bool is_rv() const {
    return kind == Kind::kBlockRV || kind == Kind::kLoopRV || kind == Kind::kExprRV;
  }
  bool operator==(const Value& o) const;

 private:
  static Value make(Kind k, int64_t v) {
    Value x;
    x.kind = k;
    x.i = v;
    return x;
  }
};
const char* value_kind_name(Value::Kind kind);

enum class ParamType : uint8_t {
  kBlock,        // BlockRV
  kLoop,         // LoopRV
  kBlockOrLoop,  // BlockRV or LoopRV
  kExpr,         // ExprRV or integer literal
  kInt,          // integer literal
  kFloat,        // float literal (an integer is accepted)
  kBool,
  kString,
  kAnnValue,  // integer, float, string, or ExprRV (read as its integer)
  kBlockList,
  kLoopList,
  kOptExprList,  // ExprRV, integer literal, or None per element
  kIntList,
  kFloatList,
};
const char* param_type_name(ParamType t);

struct Param {
  std::string_view name;
  ParamType type;
  // Variadic parameters are written positionally in the text form: sch.reorder(l1, l2, l3).
  bool variadic = false;
  std::optional<Value> default_value = std::nullopt;
};

enum class OutputType : uint8_t { kNone, kBlock, kLoop, kExpr, kBlocks, kLoops, kExprs };
enum class DecisionType : uint8_t { kNone, kInt, kIntList };

struct InstructionKind {
  // `args` holds one Value per parameter, already checked against the parameter types and
  // holding the schedule's handle ids; the context (private to src/schedule/, made only by
  // Schedule::apply_instruction, which traces) carries the schedule and, for a sampling kind,
  // its decision.
  using ApplyFn = Result<std::vector<Value>> (*)(InstructionContext& ctx,
                                                 std::span<const Value> args);

  std::string_view name;
  std::vector<Param> params;
  OutputType output = OutputType::kNone;
  DecisionType decision = DecisionType::kNone;
  // Pure instructions only look (or sample): Trace::simplified drops them when nothing uses
  // their outputs.
  bool pure = false;
  ApplyFn apply = nullptr;

  bool is_sampling() const { return decision != DecisionType::kNone; }
  // The position of the parameter named `param`, or nullopt.
  std::optional<size_t> param_index(std::string_view param) const;
};

// The kinds, in the registry's order (instruction_registry.cc), grouped by the file that
// defines each.
// clang-format off
#define TYCHE_INSTRUCTION_KINDS(X)                                                                \
  /* sampling (sampling.cc) */                                                                    \
  X(sample_perfect_tile) X(sample_categorical) X(sample_compute_location)                         \
  /* lookup (get_block_loop.cc) */                                                                \
  X(get_block) X(get_loops) X(get_child_blocks) X(get_producers) X(get_consumers)                 \
  /* loops (loop_transformation.cc, for_kind.cc) */                                               \
  X(split) X(fuse) X(reorder) X(add_unit_loop) X(parallel) X(vectorize) X(unroll) X(bind)         \
  /* annotations (annotate.cc) */                                                                 \
  X(annotate) X(unannotate)                                                                       \
  /* compute location (compute_at.cc, compute_inline.cc) */                                       \
  X(compute_at) X(reverse_compute_at) X(compute_inline) X(reverse_compute_inline)                 \
  /* caches (cache.cc) */                                                                         \
  X(cache_read) X(cache_write) X(set_scope) X(storage_align) X(transform_layout)                  \
  /* padding (pad_einsum.cc) */                                                                   \
  X(pad_einsum)                                                                                   \
  /* reductions (reduction.cc) */                                                                 \
  X(decompose_reduction) X(rfactor)                                                               \
  /* blocks (blockize.cc, tensorize.cc) */                                                         \
  X(blockize) X(tensorize)
// clang-format on

// Each kind's handle, kind_split() and so on: compare an instruction's kind with it
// (inst.kind == &kind_split()) rather than by name.
#define TYCHE_DECLARE_KIND(name) const InstructionKind& kind_##name();
TYCHE_INSTRUCTION_KINDS(TYCHE_DECLARE_KIND)
#undef TYCHE_DECLARE_KIND

// Every kind, in the registry's order.
const std::vector<const InstructionKind*>& instruction_kinds();
// The kind named `name`, or nullptr.
const InstructionKind* find_instruction_kind(std::string_view name);

// Whether `v` fits parameter type `t` (the kinds only; handle validity is checked on use).
bool value_matches(const Value& v, ParamType t);
// A decision of the right shape for `t`.
bool decision_matches(const Value& v, DecisionType t);

}  // namespace tyche::schedule
