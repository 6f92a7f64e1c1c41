#include "codegen/c/c_expr_printer.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/op.h"
#include "support/error.h"

namespace tyche::codegen {

using ir::ExprKind;

std::string CExprPrinter::sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}
std::string CExprPrinter::unique(std::unordered_map<const void*, std::string>& names,
                                 const void* key, const std::string& hint) {
  auto it = names.find(key);
  if (it != names.end()) return it->second;
  std::string base = sanitize(hint.empty() ? "v" : hint);
  std::string name = base;
  for (int k = 1; used_.count(name); ++k) name = fmt::format("{}_{}", base, k);
  used_.insert({name, 1});
  return names[key] = name;
}

std::string CExprPrinter::scalar_type(DataType t) {
  if (t.is_bool()) return "bool";
  if (t.is_float()) return t.bits() == 64 ? "double" : "float";  // 16-bit floats computed in float
  if (t.is_int()) return fmt::format("int{}_t", t.bits());
  if (t.is_uint()) return fmt::format("uint{}_t", t.bits());
  throw Error(fmt::format("C backend: unsupported type {}", t.str()));
}
std::string CExprPrinter::memory_type(DataType t) {
  if (t.is_bfloat16()) return "uint16_t";
  if (t.is_float() && t.bits() == 16) return "_Float16";
  return scalar_type(t.element_of());
}
std::string CExprPrinter::suffix(DataType t) {
  if (t.is_bool()) return "b";
  if (t.is_float()) return t.bits() == 64 ? "f64" : "f32";
  return fmt::format("{}{}", t.is_int() ? "i" : "u", t.bits());
}

// ---- expressions, evaluated for one lane (`lane` is a C expression, "" for scalars) ----
std::string CExprPrinter::expr(const ir::Expr& e, const std::string& lane) {
  DataType t = e.dtype();
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      int64_t v = e.as<ir::IntImmNode>()->value;
      if (t.is_bool()) return v ? "true" : "false";
      if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
      return fmt::format("(({}){}{})", scalar_type(t), v, t.bits() > 32 ? int64_suffix() : "");
    }
    case ExprKind::kFloatImm: {
      double v = e.as<ir::FloatImmNode>()->value;
      bool f64 = t.bits() == 64;
      if (std::isnan(v)) return f64 ? "((double)NAN)" : "((float)NAN)";
      if (std::isinf(v))
        return v > 0 ? (f64 ? "((double)INFINITY)" : "INFINITY")
                     : (f64 ? "(-(double)INFINITY)" : "(-INFINITY)");
      return fmt::format("(({}){:.17g})", scalar_type(t), v);
    }
    case ExprKind::kVar:
      return var_name(e.as<ir::VarNode>());
    case ExprKind::kNot:
      return fmt::format("(!{})", expr(e.as<ir::NotNode>()->a, lane));
    case ExprKind::kSelect: {
      auto* n = e.as<ir::SelectNode>();
      // Both sides may be evaluated (as in generated vector code): use temporaries-free ternary
      // on values; C evaluates only one side, which is also allowed.
      return fmt::format("({} ? {} : {})", expr(n->condition, lane), expr(n->true_value, lane),
                         expr(n->false_value, lane));
    }
    case ExprKind::kCast:
      return cast(t, e.as<ir::CastNode>()->value, lane);
    case ExprKind::kBufferLoad: {
      auto* n = e.as<ir::BufferLoadNode>();
      std::string load =
          fmt::format("{}[{}]", buffer_name(n->buffer), expr(n->indices.at(0), lane));
      return from_memory(load, t);
    }
    case ExprKind::kCall:
      return call(e.as<ir::CallNode>(), lane);
    case ExprKind::kRamp: {
      auto* n = e.as<ir::RampNode>();
      TYCHE_CHECK(!lane.empty(), "C backend: a vector expression outside a vector statement");
      return fmt::format("({} + ({}) * ({}){})", expr(n->base, ""), expr(n->stride, ""),
                         scalar_type(n->base.dtype()), lane);
    }
    case ExprKind::kBroadcast:
      return expr(e.as<ir::BroadcastNode>()->value, "");
    case ExprKind::kLet:
      throw Error("C backend: let expressions are not supported");
    default:
      return binary(e.as_binary(), lane);
  }
}

std::string CExprPrinter::from_memory(const std::string& load, DataType t) {
  if (t.is_bfloat16()) return fmt::format("tyche_bf16_to_f32({})", load);
  if (t.is_float() && t.bits() == 16) return fmt::format("((float){})", load);
  return load;
}
std::string CExprPrinter::to_memory(const std::string& v, DataType t) {
  if (t.is_bfloat16()) return fmt::format("tyche_f32_to_bf16({})", v);
  if (t.is_float() && t.bits() == 16) return fmt::format("((_Float16)({}))", v);
  return v;
}

std::string CExprPrinter::cast(DataType to, const ir::Expr& from, const std::string& lane) {
  std::string v = expr(from, lane);
  if (to.is_bool()) return fmt::format("(({}) != 0)", v);
  std::string c = fmt::format("(({})({}))", scalar_type(to), v);
  if (to.is_bfloat16()) return fmt::format("tyche_round_bf16({})", c);
  if (to.is_float() && to.bits() == 16) return round_float16(c);
  return c;
}

std::string CExprPrinter::binary(const ir::BinaryNode* n, const std::string& lane) {
  TYCHE_CHECK(n, "C backend: unknown expression");
  std::string a = expr(n->a, lane), b = expr(n->b, lane);
  DataType t = n->a.dtype();
  auto infix = [&](const char* op) { return fmt::format("({} {} {})", a, op, b); };
  switch (n->kind) {
    case ExprKind::kAdd:
      return infix("+");
    case ExprKind::kSub:
      return infix("-");
    case ExprKind::kMul:
      return infix("*");
    case ExprKind::kDiv:
      return infix("/");
    case ExprKind::kFloorDiv:
      return t.is_uint() ? infix("/")
                         : fmt::format("(({})tyche_floordiv({}, {}))", scalar_type(t), a, b);
    case ExprKind::kFloorMod:
      return t.is_uint() ? infix("%")
                         : fmt::format("(({})tyche_floormod({}, {}))", scalar_type(t), a, b);
    case ExprKind::kMin:
      return fmt::format("tyche_min_{}({}, {})", suffix(t), a, b);
    case ExprKind::kMax:
      return fmt::format("tyche_max_{}({}, {})", suffix(t), a, b);
    case ExprKind::kEQ:
      return infix("==");
    case ExprKind::kNE:
      return infix("!=");
    case ExprKind::kLT:
      return infix("<");
    case ExprKind::kLE:
      return infix("<=");
    case ExprKind::kGT:
      return infix(">");
    case ExprKind::kGE:
      return infix(">=");
    case ExprKind::kAnd:
      return infix("&&");
    case ExprKind::kOr:
      return infix("||");
    default:
      throw InternalError("C backend: unexpected binary operator");
  }
}

// group_dot (ir/expr.h) at one lane: acc + a[0] * b[G*lane] + ..., in order; integers summed as
// uint32 (wrapping, as int32 does in the instructions).
std::string CExprPrinter::group_dot(const ir::CallNode* n, const std::string& lane) {
  TYCHE_CHECK(!lane.empty(), "C backend: a vector expression outside a vector statement");
  const int g = n->args[1].dtype().lanes();
  bool ints = n->dtype.is_integer();
  std::string sum =
      ints ? fmt::format("(uint32_t)({})", expr(n->args[0], lane)) : expr(n->args[0], lane);
  for (int t = 0; t < g; ++t) {
    std::string a = expr(n->args[1], fmt::format("{}", t));
    std::string b = expr(n->args[2], fmt::format("({} * {} + {})", g, lane, t));
    sum = ints ? fmt::format("({} + (uint32_t)((int32_t)({}) * (int32_t)({})))", sum, a, b)
               : fmt::format("({} + (float)({}) * (float)({}))", sum, a, b);
  }
  return ints ? fmt::format("(int32_t){}", sum) : sum;
}

// tile_dot (ir/expr.h) at one lane of the M x N tile: group_dot's sum over a row of a and a
// column of b, t in order.
std::string CExprPrinter::tile_dot(const ir::CallNode* n, const std::string& lane) {
  TYCHE_CHECK(!lane.empty(), "C backend: a vector expression outside a vector statement");
  const ir::TileDotShape s = ir::tile_dot_shape(n);
  const int cols = s.n, k = s.k, g = s.g;
  bool ints = n->dtype.is_integer();
  const std::string row = fmt::format("(({}) / {})", lane, cols),
                    col = fmt::format("(({}) % {})", lane, cols);
  std::string sum =
      ints ? fmt::format("(uint32_t)({})", expr(n->args[0], lane)) : expr(n->args[0], lane);
  for (int t = 0; t < k; ++t) {
    std::string a = expr(n->args[1], fmt::format("({} * {} + {})", row, k, t));
    std::string b =
        expr(n->args[2], fmt::format("({} + {} * {})", (t / g) * cols * g + t % g, col, g));
    sum = ints ? fmt::format("({} + (uint32_t)((int32_t)({}) * (int32_t)({})))", sum, a, b)
               : fmt::format("({} + (float)({}) * (float)({}))", sum, a, b);
  }
  return ints ? fmt::format("(int32_t){}", sum) : sum;
}

// Integer bit operations: a left shift on the unsigned type of the width (no signed overflow),
// an out-of-range shift as ir::CallOp::kShiftLeft says, as the interpreter and LLVM compute them.
std::string CExprPrinter::bit_call(const ir::CallNode* n, const std::vector<std::string>& args) {
  DataType t = n->dtype.element_of();
  std::string T = scalar_type(t), U = scalar_type(DataType::UInt(t.bits()));
  const std::string& a = args[0];
  switch (n->op) {
    case ir::CallOp::kBitwiseAnd:
      return fmt::format("(({})(({}) & ({})))", T, a, args[1]);
    case ir::CallOp::kBitwiseOr:
      return fmt::format("(({})(({}) | ({})))", T, a, args[1]);
    case ir::CallOp::kBitwiseXor:
      return fmt::format("(({})(({}) ^ ({})))", T, a, args[1]);
    case ir::CallOp::kBitwiseNot:
      return fmt::format("(({})(~({})))", T, a);
    default: {
      bool left = n->op == ir::CallOp::kShiftLeft;
      std::string shifted = left ? fmt::format("({})(({})({}) << ({}))", T, U, a, args[1])
                                 : fmt::format("({})(({}) >> ({}))", T, a, args[1]);
      std::string out = left || !t.is_int() ? fmt::format("({})0", T)
                                            : fmt::format("(({}) < 0 ? ({})-1 : ({})0)", a, T, T);
      return fmt::format("((uint64_t)({}) >= {} ? {} : {})", args[1], t.bits(), out, shifted);
    }
  }
}

std::string CExprPrinter::call(const ir::CallNode* n, const std::string& lane) {
  if (n->op == ir::CallOp::kGroupDot) return group_dot(n, lane);
  if (n->op == ir::CallOp::kTileDot) return tile_dot(n, lane);
  std::vector<std::string> args;
  for (const ir::Expr& a : n->args) args.push_back(expr(a, lane));
  if (ir::is_bit_call(n->op)) return bit_call(n, args);
  DataType t = n->args.back().dtype();
  bool f64 = t.is_float() && t.bits() == 64;
  auto fn = [&](const char* name) { return fmt::format("{}({})", math(name, f64), args[0]); };
  switch (n->op) {
    case ir::CallOp::kExp:
      return fn("exp");
    case ir::CallOp::kLog:
      return fn("log");
    case ir::CallOp::kSqrt:
      return fn("sqrt");
    case ir::CallOp::kRsqrt:
      return fmt::format("(1 / {})", fn("sqrt"));
    case ir::CallOp::kTanh:
      return fn("tanh");
    case ir::CallOp::kErf:
      return fn("erf");
    case ir::CallOp::kSin:
      return fn("sin");
    case ir::CallOp::kCos:
      return fn("cos");
    case ir::CallOp::kTan:
      return fn("tan");
    case ir::CallOp::kAsin:
      return fn("asin");
    case ir::CallOp::kAcos:
      return fn("acos");
    case ir::CallOp::kAtan:
      return fn("atan");
    case ir::CallOp::kSinh:
      return fn("sinh");
    case ir::CallOp::kCosh:
      return fn("cosh");
    case ir::CallOp::kAsinh:
      return fn("asinh");
    case ir::CallOp::kAcosh:
      return fn("acosh");
    case ir::CallOp::kAtanh:
      return fn("atanh");
    case ir::CallOp::kFloor:
      return t.is_float() ? fn("floor") : args[0];
    case ir::CallOp::kCeil:
      return t.is_float() ? fn("ceil") : args[0];
    case ir::CallOp::kRound:
      return t.is_float() ? fn("nearbyint") : args[0];
    case ir::CallOp::kSigmoid:
      return fmt::format("tyche_sigmoid{}({})", f64 ? "" : "f", args[0]);
    case ir::CallOp::kAbs:
      if (t.is_float()) return fn("fabs");
      return fmt::format("(({0}) < 0 ? -({0}) : ({0}))", args[0]);
    case ir::CallOp::kPow:
      return fmt::format("{}({}, {})", math("pow", f64), args[0], args[1]);
    case ir::CallOp::kIfThenElse:
      return fmt::format("({} ? {} : {})", args[0], args[1], args[2]);  // C is lazy
    case ir::CallOp::kGroupDot:
    case ir::CallOp::kTileDot:
      break;  // group_dot() and tile_dot() above
    case ir::CallOp::kThreadBarrier:
    case ir::CallOp::kWarpShuffleDown:
    case ir::CallOp::kWarpShuffle:
    case ir::CallOp::kWarpMatrixFill:
    case ir::CallOp::kWarpMatrixLoad:
    case ir::CallOp::kWarpMatrixMma:
    case ir::CallOp::kWarpMatrixStore:
    case ir::CallOp::kAsyncCopy:
    case ir::CallOp::kAsyncCommit:
    case ir::CallOp::kAsyncWait:
      throw Error(fmt::format("C backend: {} outside GPU code", ir::call_op_name(n->op)));
    case ir::CallOp::kBitwiseAnd:
    case ir::CallOp::kBitwiseOr:
    case ir::CallOp::kBitwiseXor:
    case ir::CallOp::kBitwiseNot:
    case ir::CallOp::kShiftLeft:
    case ir::CallOp::kShiftRight:
      break;  // bit_call() above
  }
  throw InternalError("C backend: unknown call");
}

std::string CExprPrinter::parenthesized(const std::string& e) {
  if (e.size() >= 2 && e.front() == '(' && e.back() == ')') {
    int depth = 0;
    size_t i = 0;
    for (; i < e.size(); ++i) {
      depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    if (i == e.size() - 1) return e;
  }
  return "(" + e + ")";
}

std::string CExprPrinter::round_float16(const std::string& v) {
  return fmt::format("((float)(_Float16)({}))", v);
}

std::string CExprPrinter::math(const std::string& name, bool f64) {
  return f64 ? name : name + "f";
}

std::string CExprPrinter::stored(const ir::Expr& value, const std::string& lane) {
  DataType elem = value.dtype().element_of();
  // A copy moves the element as it is in memory: no round trip through float for 16-bit floats.
  if (auto* l = value.as<ir::BufferLoadNode>(); l && l->buffer->dtype == elem)
    return fmt::format("{}[{}]", buffer_name(l->buffer), expr(l->indices.at(0), lane));
  return to_memory(expr(value, lane), elem);
}

void CExprPrinter::store(const ir::BufferStoreNode* n) {
  int lanes = n->value.dtype().lanes();
  if (lanes == 1) {
    line(fmt::format("{}[{}] = {};", buffer_name(n->buffer), expr(n->indices.at(0), ""),
                     stored(n->value, "")));
    return;
  }
  std::string lane = fmt::format("lane{}", lane_counter_++);
  line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", lane, lanes));
  ++indent_;
  line(fmt::format("{}[{}] = {};", buffer_name(n->buffer), expr(n->indices.at(0), lane),
                   stored(n->value, lane)));
  --indent_;
  line("}");
}

bool CExprPrinter::common_stmt(const ir::Stmt& s) {
  switch (s.kind()) {
    case ir::StmtKind::kBufferStore:
      store(s.as<ir::BufferStoreNode>());
      return true;
    case ir::StmtKind::kSeqStmt:
      for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) stmt(c);
      return true;
    case ir::StmtKind::kIfThenElse: {
      auto* n = s.as<ir::IfThenElseNode>();
      line(fmt::format("if {} {{", parenthesized(expr(n->condition, ""))));
      nested(n->then_case);
      if (n->else_case.defined()) {
        line("} else {");
        nested(n->else_case);
      }
      line("}");
      return true;
    }
    case ir::StmtKind::kFor: {
      auto* f = s.as<ir::ForNode>();
      std::string v = var_name(f->loop_var.get()), t = scalar_type(f->loop_var.dtype());
      line(fmt::format("for ({0} {1} = {2}; {1} < {2} + {3}; ++{1}) {{", t, v, expr(f->min, ""),
                       expr(f->extent, "")));
      nested(f->body);
      line("}");
      return true;
    }
    default:
      return false;
  }
}

}  // namespace tyche::codegen
