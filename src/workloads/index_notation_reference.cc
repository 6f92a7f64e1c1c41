#include "workloads/index_notation_reference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <type_traits>

#include "support/error.h"

namespace tyche::workloads {

using runtime::NDArray;
using te::IndexNotationExpr;
using te::IndexNotationOp;
using te::IndexNotationProgram;
using te::IndexNotationStatement;
using te::IndexNotationTensor;

namespace {

// A right-hand side compiled to postfix code over a small stack, with every tensor read reduced
// to a linear function of the statement's index values: walking the AST per point would be
// several times slower, and the evaluator is the oracle for every test of the same formula.
enum class Code : uint8_t {
  kConst,
  kLoad,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kNeg,
  kMax,
  kMin,
  kExp,
  kLog,
  kSqrt,
  kTanh,
  kSigmoid,
  kAbs,
};

struct Instr {
  Code code;
  double value = 0;  // kConst
  int load = 0;      // kLoad: index into Compiled::loads
};

// A tensor's elements as the statement reading them computes: doubles, or int64 values for an
// integer statement.
template <typename V>
struct Load {
  const V* data = nullptr;
  int64_t base = 0;
  std::vector<int64_t> mult;  // per slot: flat-offset step per unit of that index
};

template <typename V>
struct Compiled {
  std::vector<Instr> code;
  std::vector<Load<V>> loads;
  int max_stack = 0;
};

// Every tensor a statement reads, converted once to V (exactly: float32 and narrower floats and
// integers all fit in a double; integers are wrapped to the statement's type, as the generated
// code converts them).
template <typename V>
using Values = std::map<std::string, std::vector<V>>;

template <typename V>
class Compiler {
 public:
  Compiler(const std::map<std::string, int>& slots, const std::map<std::string, NDArray>& arrays,
           const Values<V>& values)
      : slots_(slots), arrays_(arrays), values_(values) {}

  Compiled<V> compile(const IndexNotationExpr& e) {
    emit(e);
    return std::move(out_);
  }

 private:
  void push(Instr in, int stack_delta) {
    out_.code.push_back(in);
    depth_ += stack_delta;
    out_.max_stack = std::max(out_.max_stack, depth_);
  }

  void emit(const IndexNotationExpr& e) {
    for (const IndexNotationExpr& a : e.args) emit(a);
    int pops = static_cast<int>(e.args.size());
    switch (e.op) {
      case IndexNotationOp::kNumber:
        push({Code::kConst, e.value, 0}, 1);
        return;
      case IndexNotationOp::kAccess:
        push({Code::kLoad, 0, add_load(e)}, 1);
        return;
      case IndexNotationOp::kAdd:
        push({Code::kAdd}, 1 - pops);
        return;
      case IndexNotationOp::kSub:
        push({Code::kSub}, 1 - pops);
        return;
      case IndexNotationOp::kMul:
        push({Code::kMul}, 1 - pops);
        return;
      case IndexNotationOp::kDiv:
        push({Code::kDiv}, 1 - pops);
        return;
      case IndexNotationOp::kNeg:
        push({Code::kNeg}, 1 - pops);
        return;
      case IndexNotationOp::kCall:
        push({call_code(e.func)}, 1 - pops);
        return;
    }
  }

  static Code call_code(te::IndexNotationFunc f) {
    switch (f) {
      case te::IndexNotationFunc::kMax:
        return Code::kMax;
      case te::IndexNotationFunc::kMin:
        return Code::kMin;
      case te::IndexNotationFunc::kExp:
        return Code::kExp;
      case te::IndexNotationFunc::kLog:
        return Code::kLog;
      case te::IndexNotationFunc::kSqrt:
        return Code::kSqrt;
      case te::IndexNotationFunc::kTanh:
        return Code::kTanh;
      case te::IndexNotationFunc::kSigmoid:
        return Code::kSigmoid;
      case te::IndexNotationFunc::kAbs:
        return Code::kAbs;
    }
    throw InternalError("index notation: unknown function");
  }

  int add_load(const IndexNotationExpr& e) {
    const NDArray& a = arrays_.at(e.tensor);
    Load<V> l;
    l.data = values_.at(e.tensor).data();
    l.mult.assign(slots_.size(), 0);
    int64_t stride = 1;
    for (size_t d = e.indices.size(); d-- > 0;) {
      const te::AffineIndex& idx = e.indices[d];
      l.base += idx.offset * stride;
      for (const te::IndexTerm& t : idx.terms) l.mult[slots_.at(t.index)] += t.coeff * stride;
      stride *= a.shape()[d];
    }
    out_.loads.push_back(std::move(l));
    return static_cast<int>(out_.loads.size()) - 1;
  }

  const std::map<std::string, int>& slots_;
  const std::map<std::string, NDArray>& arrays_;
  const Values<V>& values_;
  Compiled<V> out_;
  int depth_ = 0;
};

// v wrapped to the integer type t, as two's complement arithmetic in t gives it.
int64_t wrap(uint64_t v, DataType t) {
  if (t.bits() >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t{1} << t.bits()) - 1;
  v &= mask;
  if (t.is_int() && (v >> (t.bits() - 1))) v |= ~mask;
  return static_cast<int64_t>(v);
}

// Integer arithmetic: + - * wrap (done on uint64, then wrapped to the type where it matters:
// max, min and abs compare, so their operands are wrapped first).
struct IntOps {
  DataType type;
  int64_t add(int64_t a, int64_t b) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  int64_t sub(int64_t a, int64_t b) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  }
  int64_t mul(int64_t a, int64_t b) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  int64_t neg(int64_t a) const { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }
  int64_t max(int64_t a, int64_t b) const { return std::max(w(a), w(b)); }
  int64_t min(int64_t a, int64_t b) const { return std::min(w(a), w(b)); }
  int64_t abs(int64_t a) const { return w(a) < 0 ? neg(w(a)) : w(a); }
  int64_t w(int64_t a) const { return wrap(static_cast<uint64_t>(a), type); }
  // Integer statements hold neither (te's checks refuse them).
  int64_t div(int64_t, int64_t) const { throw InternalError("index notation: integer division"); }
  int64_t call(Code, int64_t) const {
    throw InternalError("index notation: float function in an integer statement");
  }
};
struct FloatOps {
  double add(double a, double b) const { return a + b; }
  double sub(double a, double b) const { return a - b; }
  double mul(double a, double b) const { return a * b; }
  double neg(double a) const { return -a; }
  double max(double a, double b) const { return std::max(a, b); }
  double min(double a, double b) const { return std::min(a, b); }
  double abs(double a) const { return std::abs(a); }
  double div(double a, double b) const { return a / b; }
  double call(Code code, double a) const {
    switch (code) {
      case Code::kExp:
        return std::exp(a);
      case Code::kLog:
        return std::log(a);
      case Code::kSqrt:
        return std::sqrt(a);
      case Code::kTanh:
        return std::tanh(a);
      default:
        return 1.0 / (1.0 + std::exp(-a));  // kSigmoid
    }
  }
};

template <typename V, typename Ops>
V run(const Compiled<V>& c, const std::vector<int64_t>& vals, V* stack, const Ops& ops) {
  int sp = 0;
  for (const Instr& in : c.code) {
    switch (in.code) {
      case Code::kConst:
        stack[sp++] = static_cast<V>(in.value);
        break;
      case Code::kLoad: {
        const Load<V>& l = c.loads[in.load];
        int64_t off = l.base;
        for (size_t s = 0; s < vals.size(); ++s) off += l.mult[s] * vals[s];
        stack[sp++] = l.data[off];
        break;
      }
      case Code::kAdd:
        --sp;
        stack[sp - 1] = ops.add(stack[sp - 1], stack[sp]);
        break;
      case Code::kSub:
        --sp;
        stack[sp - 1] = ops.sub(stack[sp - 1], stack[sp]);
        break;
      case Code::kMul:
        --sp;
        stack[sp - 1] = ops.mul(stack[sp - 1], stack[sp]);
        break;
      case Code::kDiv:
        --sp;
        stack[sp - 1] = ops.div(stack[sp - 1], stack[sp]);
        break;
      case Code::kMax:
        --sp;
        stack[sp - 1] = ops.max(stack[sp - 1], stack[sp]);
        break;
      case Code::kMin:
        --sp;
        stack[sp - 1] = ops.min(stack[sp - 1], stack[sp]);
        break;
      case Code::kNeg:
        stack[sp - 1] = ops.neg(stack[sp - 1]);
        break;
      case Code::kExp:
      case Code::kLog:
      case Code::kSqrt:
      case Code::kTanh:
      case Code::kSigmoid:
        stack[sp - 1] = ops.call(in.code, stack[sp - 1]);
        break;
      case Code::kAbs:
        stack[sp - 1] = ops.abs(stack[sp - 1]);
        break;
    }
  }
  return stack[0];
}

// Advances vals[first, last) as a row-major counter; false once it wraps around to all zeros.
bool advance(std::vector<int64_t>& vals, const std::vector<int64_t>& extents, size_t first,
             size_t last) {
  for (size_t s = last; s-- > first;) {
    if (++vals[s] < extents[s]) return true;
    vals[s] = 0;
  }
  return false;
}

// Every tensor `e` reads, as V values (see Values).
template <typename V>
void convert_reads(const IndexNotationExpr& e, const std::map<std::string, NDArray>& arrays,
                   DataType type, Values<V>& values) {
  for (const IndexNotationExpr& a : e.args) convert_reads(a, arrays, type, values);
  if (e.op != IndexNotationOp::kAccess || values.count(e.tensor)) return;
  const NDArray& a = arrays.at(e.tensor);
  std::vector<V>& v = values[e.tensor];
  v.resize(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) {
    if constexpr (std::is_same_v<V, int64_t>)
      v[i] = wrap(static_cast<uint64_t>(a.get_flat_int(i)), type);
    else
      v[i] = a.get_flat(i);
  }
}

template <typename V, typename Ops>
void evaluate_statement(const IndexNotationProgram& p, const IndexNotationStatement& st,
                        std::map<std::string, NDArray>& arrays, DataType type, const Ops& ops) {
  // Slots: the left-hand indices (row-major over the output), then the reduction indices.
  std::map<std::string, int> slots;
  std::vector<int64_t> extents;
  for (const std::string& a : st.axes) {
    slots.emplace(a, static_cast<int>(extents.size()));
    extents.push_back(p.extent(a));
  }
  for (const std::string& r : st.reduce_axes) {
    slots.emplace(r, static_cast<int>(extents.size()));
    extents.push_back(p.extent(r));
  }
  Values<V> values;
  convert_reads(st.rhs, arrays, type, values);
  Compiled<V> c = Compiler<V>(slots, arrays, values).compile(st.rhs);
  std::vector<V> stack(static_cast<size_t>(std::max(c.max_stack, 1)));

  const IndexNotationTensor& out_tensor = p.tensor(st.output);
  NDArray out(out_tensor.shape, out_tensor.dtype);
  auto store = [&](int64_t i, V v) {
    if constexpr (std::is_same_v<V, int64_t>)
      out.set_flat_int(i, v);
    else
      out.set_flat(i, v);
  };
  const size_t n_axes = st.axes.size();
  const size_t n_slots = extents.size();
  std::vector<int64_t> vals(n_slots, 0);
  V identity = 0;
  if constexpr (std::is_same_v<V, int64_t>) {
    // The type's extremes, as the IR's reduction identity (ir::min_value / max_value).
    int64_t lo = type.is_int() ? -(int64_t{1} << (type.bits() - 1)) : 0;
    int64_t hi = type.is_int() ? (int64_t{1} << (type.bits() - 1)) - 1
                               : static_cast<int64_t>((uint64_t{1} << type.bits()) - 1);
    if (st.reducer == te::ReducerKind::kMax) identity = lo;
    if (st.reducer == te::ReducerKind::kMin) identity = hi;
  } else {
    if (st.reducer == te::ReducerKind::kMax) identity = -std::numeric_limits<double>::infinity();
    if (st.reducer == te::ReducerKind::kMin) identity = std::numeric_limits<double>::infinity();
  }

  int64_t o = 0;
  do {
    if (!st.is_reduction()) {
      store(o++, run(c, vals, stack.data(), ops));
      continue;
    }
    V acc = identity;
    do {
      V v = run(c, vals, stack.data(), ops);
      switch (st.reducer) {
        case te::ReducerKind::kMax:
          acc = ops.max(acc, v);
          break;
        case te::ReducerKind::kMin:
          acc = ops.min(acc, v);
          break;
        case te::ReducerKind::kProd:
          acc = ops.mul(acc, v);
          break;
        case te::ReducerKind::kSum:
          acc = ops.add(acc, v);
          break;
      }
    } while (advance(vals, extents, n_axes, n_slots));
    store(o++, acc);
  } while (advance(vals, extents, 0, n_axes));
  arrays[st.output] = out;
}

void evaluate_statement(const IndexNotationProgram& p, const IndexNotationStatement& st,
                        std::map<std::string, NDArray>& arrays) {
  DataType type = te::index_notation_compute_type(p.tensor(st.output).dtype);
  if (type.is_integer())
    evaluate_statement<int64_t>(p, st, arrays, type, IntOps{type});
  else
    evaluate_statement<double>(p, st, arrays, type, FloatOps{});
}

int count_ops(const IndexNotationExpr& e) {
  int n = e.op == IndexNotationOp::kNumber || e.op == IndexNotationOp::kAccess ? 0 : 1;
  for (const IndexNotationExpr& a : e.args) n += count_ops(a);
  return n;
}

}  // namespace

std::vector<std::vector<int64_t>> index_notation_input_shapes(const IndexNotationProgram& program) {
  return program.input_shapes();
}

std::vector<std::vector<int64_t>> index_notation_output_shapes(
    const IndexNotationProgram& program) {
  return program.output_shapes();
}

std::vector<NDArray> random_index_notation_inputs(const IndexNotationProgram& program,
                                                  uint64_t seed) {
  std::vector<NDArray> r;
  for (const std::string& name : program.inputs) {
    const te::IndexNotationTensor& t = program.tensor(name);
    NDArray a(t.shape, t.dtype);
    a.fill_random(seed++);
    r.push_back(std::move(a));
  }
  return r;
}

std::vector<NDArray> evaluate_index_notation(const IndexNotationProgram& program,
                                             const std::vector<NDArray>& inputs) {
  if (inputs.size() != program.inputs.size())
    throw_error("evaluate_index_notation: expected {} input(s) ({}), got {}", program.inputs.size(),
                fmt::join(program.inputs, ", "), inputs.size());
  std::map<std::string, NDArray> arrays;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = program.inputs[i];
    const std::vector<int64_t>& want = program.tensor(name).shape;
    DataType dtype = program.tensor(name).dtype;
    if (!inputs[i].defined() || inputs[i].dtype() != dtype)
      throw_error("evaluate_index_notation: input '{}' must be a {} array", name, dtype.str());
    if (inputs[i].shape() != want)
      throw_error("evaluate_index_notation: input '{}' has shape [{}], expected [{}]", name,
                  fmt::join(inputs[i].shape(), ", "), fmt::join(want, ", "));
    arrays[name] = inputs[i];
  }
  for (const IndexNotationStatement& st : program.statements)
    evaluate_statement(program, st, arrays);
  std::vector<NDArray> outs;
  for (const std::string& name : program.outputs) outs.push_back(arrays.at(name));
  return outs;
}

double index_notation_flop(const IndexNotationProgram& program) {
  double total = 0;
  for (const IndexNotationStatement& st : program.statements) {
    double points = 1;
    for (const std::string& a : st.axes) points *= static_cast<double>(program.extent(a));
    for (const std::string& r : st.reduce_axes) points *= static_cast<double>(program.extent(r));
    total += points * (count_ops(st.rhs) + (st.is_reduction() ? 1 : 0));
  }
  return total;
}

}  // namespace tyche::workloads
