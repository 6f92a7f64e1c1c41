#include "te/index_notation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "support/error.h"
#include "te/index_notation_syntax.h"

namespace tyche::te {

using namespace notation;

namespace {

// ---- lowering to te ----

Expr affine_to_expr(const AffineIndex& idx, const std::unordered_map<std::string, Var>& vars) {
  Expr e;
  auto plus = [&](Expr t) { e = e.defined() ? e + t : t; };
  auto term = [&](const IndexTerm& t) -> Expr {
    const Var& v = vars.at(t.index);
    int64_t c = t.coeff < 0 ? -t.coeff : t.coeff;
    return c == 1 ? Expr(v) : v * ir::make_int(c);
  };
  for (const IndexTerm& t : idx.terms)
    if (t.coeff > 0) plus(term(t));
  if (idx.offset > 0) plus(ir::make_int(idx.offset));
  for (const IndexTerm& t : idx.terms)
    if (t.coeff < 0) e = e.defined() ? e - term(t) : ir::make_int(0) - term(t);
  if (idx.offset < 0) e = e.defined() ? e - ir::make_int(-idx.offset) : ir::make_int(idx.offset);
  return e.defined() ? e : ir::make_int(0);
}

// `e` computed in `type`: every tensor read is converted to it.
Expr lower_expr(const IndexNotationExpr& e, const std::unordered_map<std::string, Tensor>& tensors,
                const std::unordered_map<std::string, Var>& vars, DataType type) {
  auto arg = [&](size_t i) { return lower_expr(e.args[i], tensors, vars, type); };
  switch (e.op) {
    case IndexNotationOp::kNumber:
      return ir::make_const(type, e.value);
    case IndexNotationOp::kAccess: {
      std::vector<Expr> indices;
      for (const AffineIndex& idx : e.indices) indices.push_back(affine_to_expr(idx, vars));
      Expr load = tensors.at(e.tensor)(std::move(indices));
      return load.dtype() == type ? load : ir::cast(type, load);
    }
    case IndexNotationOp::kNeg:
      return -arg(0);
    case IndexNotationOp::kCall:
      for (const FuncInfo& f : kFuncs)
        if (f.func == e.func)
          return f.arity == 2 ? ir::make_binary(f.binary, arg(0), arg(1))
                              : ir::call(f.call, {arg(0)});
      break;
    default:  // + - * /: float arithmetic, as make_binary builds it
      return ir::make_binary(
          kBinaryKinds[static_cast<int>(e.op) - static_cast<int>(IndexNotationOp::kAdd)], arg(0),
          arg(1));
  }
  throw InternalError("index notation: unknown expression node");
}

// ---------------------------------------------------------------------------------------------
// Printing

int precedence(const IndexNotationExpr& e) {
  IndexNotationOp o = e.op;
  if (o == IndexNotationOp::kAdd || o == IndexNotationOp::kSub) return 1;
  if (o == IndexNotationOp::kMul || o == IndexNotationOp::kDiv) return 2;
  return o == IndexNotationOp::kNeg ? 3 : 4;
}

// Coefficients and offsets of a checked program fit in int32, so negating them is safe.
std::string affine_string(const AffineIndex& idx) {
  std::string s;
  for (const IndexTerm& t : idx.terms) {
    int64_t c = t.coeff;
    if (s.empty()) {
      s = c == 1 ? t.index : c == -1 ? "-" + t.index : fmt::format("{}*{}", c, t.index);
    } else {
      int64_t m = c < 0 ? -c : c;
      s += c < 0 ? " - " : " + ";
      s += m == 1 ? t.index : fmt::format("{}*{}", m, t.index);
    }
  }
  if (s.empty()) return fmt::format("{}", idx.offset);
  if (idx.offset > 0) s += fmt::format(" + {}", idx.offset);
  if (idx.offset < 0) s += fmt::format(" - {}", -idx.offset);
  return s;
}

std::string expr_string(const IndexNotationExpr& e) {
  auto child = [&](size_t i, bool paren) {
    std::string s = expr_string(e.args[i]);
    return paren ? "(" + s + ")" : s;
  };
  int prec = precedence(e);
  switch (e.op) {
    case IndexNotationOp::kNumber: {
      // Shortest round-trip form, kept visibly floating point ("0.0", not "0").
      std::string n = fmt::format("{}", e.value);
      return n.find_first_of(".e") == std::string::npos ? n + ".0" : n;
    }
    case IndexNotationOp::kAccess: {
      std::string s = e.tensor + "[";
      for (size_t i = 0; i < e.indices.size(); ++i)
        s += (i ? ", " : "") + affine_string(e.indices[i]);
      return s + "]";
    }
    case IndexNotationOp::kAdd:
    case IndexNotationOp::kSub:
    case IndexNotationOp::kMul:
    case IndexNotationOp::kDiv: {
      const char* op = e.op == IndexNotationOp::kAdd   ? " + "
                       : e.op == IndexNotationOp::kSub ? " - "
                       : e.op == IndexNotationOp::kMul ? " * "
                                                       : " / ";
      return child(0, precedence(e.args[0]) < prec) + op + child(1, precedence(e.args[1]) <= prec);
    }
    case IndexNotationOp::kNeg: {
      std::string s = "-";  // appended, not "-" + ...: GCC 12 warns falsely (-Wrestrict) on that
      return s += child(0, precedence(e.args[0]) < 4);
    }
    case IndexNotationOp::kCall: {
      std::string s = std::string(index_notation_func_name(e.func)) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + expr_string(e.args[i]);
      return s + ")";
    }
  }
  return "?";
}

}  // namespace

const char* index_notation_func_name(IndexNotationFunc f) {
  for (const FuncInfo& i : kFuncs)
    if (i.func == f) return i.name;
  return "?";
}

const char* assign_op_name(AssignOp op) {
  static const char* const kNames[] = {"=", "+=", "max=", "min="};
  return kNames[static_cast<int>(op)];
}

int64_t IndexNotationProgram::extent(std::string_view index) const {
  for (const auto& [name, e] : extents)
    if (name == index) return e;
  throw_error("index notation: no index '{}'", index);
}

const IndexNotationTensor& IndexNotationProgram::tensor(std::string_view name) const {
  for (const IndexNotationTensor& t : tensors)
    if (t.name == name) return t;
  throw_error("index notation: no tensor '{}'", name);
}

std::vector<std::vector<int64_t>> IndexNotationProgram::input_shapes() const {
  std::vector<std::vector<int64_t>> r;
  for (const std::string& n : inputs) r.push_back(tensor(n).shape);
  return r;
}

std::vector<std::vector<int64_t>> IndexNotationProgram::output_shapes() const {
  std::vector<std::vector<int64_t>> r;
  for (const std::string& n : outputs) r.push_back(tensor(n).shape);
  return r;
}

IndexNotationProgram parse_index_notation(std::string_view formula, std::string_view extents,
                                          std::string_view dtypes) {
  std::vector<DtypeEntry> types = parse_dtypes(dtypes);
  IndexNotationProgram p = analyze(parse_statements(formula), parse_extents(extents));
  assign_dtypes(p, types);
  return p;
}

DataType index_notation_compute_type(DataType out) {
  return out.is_float() && out.bits() == 16 ? kFloat32 : out;
}

ir::PrimFunc to_prim_func(const IndexNotationProgram& program, std::string name) {
  std::unordered_map<std::string, Tensor> tensors;
  std::vector<Tensor> args;
  for (const std::string& in : program.inputs) {
    Tensor t = placeholder(program.tensor(in).shape, program.tensor(in).dtype, in);
    tensors.emplace(in, t);
    args.push_back(t);
  }
  for (const IndexNotationStatement& st : program.statements) {
    std::vector<IterVar> reduce_axes;
    for (const std::string& r : st.reduce_axes)
      reduce_axes.push_back(reduce_axis(program.extent(r), r));
    std::vector<int64_t> shape;
    for (const std::string& a : st.axes) shape.push_back(program.extent(a));
    auto body = [&](const std::vector<Var>& axis) -> ComputeBody {
      std::unordered_map<std::string, Var> vars;
      for (size_t i = 0; i < axis.size(); ++i) vars.emplace(st.axes[i], axis[i]);
      for (const IterVar& iv : reduce_axes) vars.emplace(iv.var.name(), iv.var);
      DataType out = program.tensor(st.output).dtype, type = index_notation_compute_type(out);
      Expr value = lower_expr(st.rhs, tensors, vars, type);
      if (!st.is_reduction()) return out == type ? value : ir::cast(out, value);
      switch (st.reducer) {
        case ReducerKind::kMax:
          return te::max(value, reduce_axes);
        case ReducerKind::kMin:
          return te::min(value, reduce_axes);
        default:
          return te::sum(value, reduce_axes);
      }
    };
    tensors.emplace(st.output,
                    compute(shape, std::function<ComputeBody(const std::vector<Var>&)>(body),
                            st.output, st.axes));
  }
  for (const std::string& out : program.outputs) args.push_back(tensors.at(out));
  return create_prim_func(args, std::move(name));
}

std::string formula_string(const IndexNotationProgram& program) {
  std::string s;
  for (const IndexNotationStatement& st : program.statements) {
    if (!s.empty()) s += "; ";
    s += st.output + "[";
    for (size_t i = 0; i < st.axes.size(); ++i) s += (i ? ", " : "") + st.axes[i];
    s += fmt::format("] {} {}", assign_op_name(st.assign), expr_string(st.rhs));
  }
  return s;
}

std::string dtypes_string(const IndexNotationProgram& program) {
  std::string s;
  for (const IndexNotationTensor& t : program.tensors)
    if (t.dtype != kFloat32)
      s += fmt::format("{}{}={}", s.empty() ? "" : ",", t.name, t.dtype.str());
  return s;
}

std::string extents_string(const IndexNotationProgram& program) {
  std::string s;
  for (const auto& [name, e] : program.extents)
    s += fmt::format("{}{}={}", s.empty() ? "" : ",", name, e);
  return s;
}

}  // namespace tyche::te
