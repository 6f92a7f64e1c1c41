#include "workloads/index_notation_reference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "support/error.h"

namespace tyche::workloads {

using runtime::NDArray;
using te::IndexNotationExpr;
using te::IndexNotationOp;
using te::IndexNotationProgram;
using te::IndexNotationStatement;

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

struct Load {
  const float* data = nullptr;
  int64_t base = 0;
  std::vector<int64_t> mult;  // per slot: flat-offset step per unit of that index
};

struct Compiled {
  std::vector<Instr> code;
  std::vector<Load> loads;
  int max_stack = 0;
};

class Compiler {
 public:
  Compiler(const std::map<std::string, int>& slots, const std::map<std::string, NDArray>& arrays)
      : slots_(slots), arrays_(arrays) {}

  Compiled compile(const IndexNotationExpr& e) {
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
    Load l;
    l.data = a.data_as<float>();
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
  Compiled out_;
  int depth_ = 0;
};

double run(const Compiled& c, const std::vector<int64_t>& vals, double* stack) {
  int sp = 0;
  for (const Instr& in : c.code) {
    switch (in.code) {
      case Code::kConst:
        stack[sp++] = in.value;
        break;
      case Code::kLoad: {
        const Load& l = c.loads[in.load];
        int64_t off = l.base;
        for (size_t s = 0; s < vals.size(); ++s) off += l.mult[s] * vals[s];
        stack[sp++] = l.data[off];
        break;
      }
      case Code::kAdd:
        --sp;
        stack[sp - 1] += stack[sp];
        break;
      case Code::kSub:
        --sp;
        stack[sp - 1] -= stack[sp];
        break;
      case Code::kMul:
        --sp;
        stack[sp - 1] *= stack[sp];
        break;
      case Code::kDiv:
        --sp;
        stack[sp - 1] /= stack[sp];
        break;
      case Code::kMax:
        --sp;
        stack[sp - 1] = std::max(stack[sp - 1], stack[sp]);
        break;
      case Code::kMin:
        --sp;
        stack[sp - 1] = std::min(stack[sp - 1], stack[sp]);
        break;
      case Code::kNeg:
        stack[sp - 1] = -stack[sp - 1];
        break;
      case Code::kExp:
        stack[sp - 1] = std::exp(stack[sp - 1]);
        break;
      case Code::kLog:
        stack[sp - 1] = std::log(stack[sp - 1]);
        break;
      case Code::kSqrt:
        stack[sp - 1] = std::sqrt(stack[sp - 1]);
        break;
      case Code::kTanh:
        stack[sp - 1] = std::tanh(stack[sp - 1]);
        break;
      case Code::kSigmoid:
        stack[sp - 1] = 1.0 / (1.0 + std::exp(-stack[sp - 1]));
        break;
      case Code::kAbs:
        stack[sp - 1] = std::abs(stack[sp - 1]);
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

void evaluate_statement(const IndexNotationProgram& p, const IndexNotationStatement& st,
                        std::map<std::string, NDArray>& arrays) {
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
  Compiled c = Compiler(slots, arrays).compile(st.rhs);
  std::vector<double> stack(static_cast<size_t>(std::max(c.max_stack, 1)));

  NDArray out(p.tensor(st.output).shape, kFloat32);
  float* dst = out.data_as<float>();
  const size_t n_axes = st.axes.size();
  const size_t n_slots = extents.size();
  std::vector<int64_t> vals(n_slots, 0);
  double identity = 0;
  if (st.reducer == te::ReducerKind::kMax) identity = -std::numeric_limits<double>::infinity();
  if (st.reducer == te::ReducerKind::kMin) identity = std::numeric_limits<double>::infinity();

  int64_t o = 0;
  do {
    if (!st.is_reduction()) {
      dst[o++] = static_cast<float>(run(c, vals, stack.data()));
      continue;
    }
    double acc = identity;
    do {
      double v = run(c, vals, stack.data());
      switch (st.reducer) {
        case te::ReducerKind::kMax:
          acc = std::max(acc, v);
          break;
        case te::ReducerKind::kMin:
          acc = std::min(acc, v);
          break;
        case te::ReducerKind::kProd:
          acc *= v;
          break;
        case te::ReducerKind::kSum:
          acc += v;
          break;
      }
    } while (advance(vals, extents, n_axes, n_slots));
    dst[o++] = static_cast<float>(acc);
  } while (advance(vals, extents, 0, n_axes));
  arrays[st.output] = out;
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
  for (const std::vector<int64_t>& s : program.input_shapes()) {
    NDArray a(s, kFloat32);
    a.fill_uniform(seed++);
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
    if (!inputs[i].defined() || inputs[i].dtype() != kFloat32)
      throw_error("evaluate_index_notation: input '{}' must be a float32 array", name);
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
