// Scalar expressions: one node per IR node, specialized by operator (templates) so that a node's
// eval() is one virtual call plus the arithmetic. Constant right operands (i * 4, i + 1, the
// bulk of index arithmetic) get their own nodes.
#include <fmt/format.h>

#include "interp/ops.h"
#include "interp/program.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::interp::detail {

using namespace ir;

namespace {

struct IntConst final : IntExpr {
  int64_t v;
  explicit IntConst(int64_t v_) : v(v_) {}
  int64_t eval() override { return v; }
};
struct FloatConst final : FloatExpr {
  double v;
  explicit FloatConst(double v_) : v(v_) {}
  double eval() override { return v; }
};
struct IntVar final : IntExpr {
  const int64_t* slot;
  explicit IntVar(const int64_t* s) : slot(s) {}
  int64_t eval() override { return *slot; }
  const int64_t* var_slot() const override { return slot; }
};
struct FloatVar final : FloatExpr {
  const double* slot;
  explicit FloatVar(const double* s) : slot(s) {}
  double eval() override { return *slot; }
};

template <ExprKind K>
struct IntBin final : IntExpr {
  IntPtr a, b;
  Expr expr;  // for the division-by-zero message
  IntBin(IntPtr a_, IntPtr b_, Expr e) : a(std::move(a_)), b(std::move(b_)), expr(std::move(e)) {}
  int64_t eval() override {
    int64_t x = a->eval(), y = b->eval();
    if constexpr (is_int_division(K)) {
      if (y == 0) throw_division_by_zero(expr);
    }
    return int_op<K>(x, y);
  }
};
template <ExprKind K>
struct IntBinConst final : IntExpr {  // never built for a zero divisor
  IntPtr a;
  int64_t c;
  IntBinConst(IntPtr a_, int64_t c_) : a(std::move(a_)), c(c_) {}
  int64_t eval() override { return int_op<K>(a->eval(), c); }
};
struct IntAnd final : IntExpr {  // short-circuit, like the && of generated code
  IntPtr a, b;
  IntAnd(IntPtr a_, IntPtr b_) : a(std::move(a_)), b(std::move(b_)) {}
  int64_t eval() override { return a->eval() != 0 && b->eval() != 0; }
};
struct IntOr final : IntExpr {
  IntPtr a, b;
  IntOr(IntPtr a_, IntPtr b_) : a(std::move(a_)), b(std::move(b_)) {}
  int64_t eval() override { return a->eval() != 0 || b->eval() != 0; }
};
template <ExprKind K>
struct FloatBin final : FloatExpr {
  FloatPtr a, b;
  FloatBin(FloatPtr a_, FloatPtr b_) : a(std::move(a_)), b(std::move(b_)) {}
  double eval() override { return float_op<K>(a->eval(), b->eval()); }
};
template <ExprKind K>
struct FloatCompare final : IntExpr {
  FloatPtr a, b;
  FloatCompare(FloatPtr a_, FloatPtr b_) : a(std::move(a_)), b(std::move(b_)) {}
  int64_t eval() override { return float_op<K>(a->eval(), b->eval()) != 0; }
};

struct IntNot final : IntExpr {
  IntPtr a;
  explicit IntNot(IntPtr a_) : a(std::move(a_)) {}
  int64_t eval() override { return a->eval() == 0; }
};
// if_then_else: only the chosen side runs, so a guarded out-of-bounds load (padding) is legal.
struct IntIfThenElse final : IntExpr {
  IntPtr c, t, f;
  IntIfThenElse(IntPtr c_, IntPtr t_, IntPtr f_)
      : c(std::move(c_)), t(std::move(t_)), f(std::move(f_)) {}
  int64_t eval() override { return c->eval() ? t->eval() : f->eval(); }
};
struct FloatIfThenElse final : FloatExpr {
  IntPtr c;
  FloatPtr t, f;
  FloatIfThenElse(IntPtr c_, FloatPtr t_, FloatPtr f_)
      : c(std::move(c_)), t(std::move(t_)), f(std::move(f_)) {}
  double eval() override { return c->eval() ? t->eval() : f->eval(); }
};
// Select may evaluate both sides in generated code, so both run here: an out-of-bounds load on
// the discarded side is reported rather than hidden.
struct IntSelect final : IntExpr {
  IntPtr c, t, f;
  IntSelect(IntPtr c_, IntPtr t_, IntPtr f_)
      : c(std::move(c_)), t(std::move(t_)), f(std::move(f_)) {}
  int64_t eval() override {
    int64_t x = t->eval(), y = f->eval();
    return c->eval() ? x : y;
  }
};
struct FloatSelect final : FloatExpr {
  IntPtr c;
  FloatPtr t, f;
  FloatSelect(IntPtr c_, FloatPtr t_, FloatPtr f_)
      : c(std::move(c_)), t(std::move(t_)), f(std::move(f_)) {}
  double eval() override {
    double x = t->eval(), y = f->eval();
    return c->eval() ? x : y;
  }
};

// Class changes: implicit ones (mixed operands) and casts.
struct IntToFloat final : FloatExpr {
  IntPtr a;
  explicit IntToFloat(IntPtr a_) : a(std::move(a_)) {}
  double eval() override { return static_cast<double>(a->eval()); }
};
struct FloatToInt final : IntExpr {
  FloatPtr a;
  explicit FloatToInt(FloatPtr a_) : a(std::move(a_)) {}
  int64_t eval() override { return float_to_int(a->eval()); }
};
struct IntCast final : IntExpr {
  IntPtr a;
  DataType t;
  IntCast(IntPtr a_, DataType t_) : a(std::move(a_)), t(t_) {}
  int64_t eval() override { return wrap_int(a->eval(), t); }
};
struct FloatToIntCast final : IntExpr {
  FloatPtr a;
  DataType t;
  FloatToIntCast(FloatPtr a_, DataType t_) : a(std::move(a_)), t(t_) {}
  int64_t eval() override {
    double v = a->eval();
    return t.is_bool() ? int64_t{v != 0} : wrap_int(float_to_int(v), t);
  }
};
struct FloatCast final : FloatExpr {  // to a float type narrower than double
  FloatPtr a;
  DataType t;
  FloatCast(FloatPtr a_, DataType t_) : a(std::move(a_)), t(t_) {}
  double eval() override { return round_float(a->eval(), t); }
};
struct Float32Cast final : FloatExpr {
  FloatPtr a;
  explicit Float32Cast(FloatPtr a_) : a(std::move(a_)) {}
  double eval() override { return static_cast<double>(static_cast<float>(a->eval())); }
};

template <CallOp Op>
struct FloatCall final : FloatExpr {
  FloatPtr x, y;  // y only for pow
  FloatCall(FloatPtr x_, FloatPtr y_) : x(std::move(x_)), y(std::move(y_)) {}
  double eval() override {
    if constexpr (Op == CallOp::kPow) {
      double a = x->eval();
      return call_op<Op>(a, y->eval());
    } else {
      return call_op<Op>(x->eval());
    }
  }
};
struct IntAbs final : IntExpr {
  IntPtr a;
  explicit IntAbs(IntPtr a_) : a(std::move(a_)) {}
  int64_t eval() override { return int_abs(a->eval()); }
};

struct IntBitCall final : IntExpr {
  CallOp op;
  IntPtr a, b;  // b absent for bitwise_not
  DataType t;
  IntBitCall(CallOp o, IntPtr a_, IntPtr b_, DataType t_)
      : op(o), a(std::move(a_)), b(std::move(b_)), t(t_) {}
  int64_t eval() override {
    int64_t x = a->eval();
    return bit_call(op, x, b ? b->eval() : 0, t);
  }
};

struct IntLet final : IntExpr {
  ExecPtr bind;
  IntPtr body;
  IntLet(ExecPtr b, IntPtr e) : bind(std::move(b)), body(std::move(e)) {}
  int64_t eval() override {
    bind->exec();
    return body->eval();
  }
};
struct FloatLet final : FloatExpr {
  ExecPtr bind;
  FloatPtr body;
  FloatLet(ExecPtr b, FloatPtr e) : bind(std::move(b)), body(std::move(e)) {}
  double eval() override {
    bind->exec();
    return body->eval();
  }
};

template <typename T>
struct IntLoad final : IntExpr {
  ScalarAccess acc;
  explicit IntLoad(ScalarAccess a) : acc(std::move(a)) {}
  int64_t eval() override { return Storage<T>::load_i(*acc.buf, acc.offset()); }
};
template <typename T>
struct FloatLoad final : FloatExpr {
  ScalarAccess acc;
  explicit FloatLoad(ScalarAccess a) : acc(std::move(a)) {}
  double eval() override { return Storage<T>::load_f(*acc.buf, acc.offset()); }
};

struct IntBind final : Exec {
  int64_t* slot;
  IntPtr value;
  IntBind(int64_t* s, IntPtr v) : slot(s), value(std::move(v)) {}
  void exec() override { *slot = value->eval(); }
};
struct FloatBind final : Exec {
  double* slot;
  FloatPtr value;
  FloatBind(double* s, FloatPtr v) : slot(s), value(std::move(v)) {}
  void exec() override { *slot = value->eval(); }
};
struct VecBind final : Exec {
  VecSlot* slot;
  VecPtr value;
  VecBind(VecSlot* s, VecPtr v) : slot(s), value(std::move(v)) {}
  void exec() override {
    value->eval();
    if (value->is_float)
      slot->f = value->f;
    else
      slot->i = value->i;
  }
};

void check_call_arity(const CallNode* n) {
  if (static_cast<int>(n->args.size()) != call_op_arity(n->op))
    throw_error("interp: {} takes {} argument(s), got {}", call_op_name(n->op),
                call_op_arity(n->op), n->args.size());
}

[[noreturn]] void unexpected_vector(const Expr& e) {
  throw_error("interp: vector value {} ({}) where a scalar is expected", to_string(e),
              e.dtype().str());
}

}  // namespace

ScalarAccess compile_access(Program& p, const Buffer& buffer, const std::vector<Expr>& indices,
                            bool is_store) {
  ScalarAccess acc;
  acc.buf = p.lookup_buffer(buffer);
  acc.is_store = is_store;
  if (indices.size() != buffer->shape.size())
    throw_error("interp: {} indices for the {}-d buffer '{}'", indices.size(), buffer->shape.size(),
                buffer->name);
  for (const Expr& i : indices) {
    acc.idx.push_back(p.compile_int(i));
    acc.vars.push_back(acc.idx.back()->var_slot());
  }
  return acc;
}

[[noreturn]] void throw_division_by_zero(const Expr& e) {
  throw_error("integer division by zero in '{}'", to_string(e));
}

[[noreturn]] void throw_out_of_bounds(const BufferState& buf, bool is_store,
                                      const std::vector<int64_t>& index) {
  throw_error("out-of-bounds {} buffer '{}': index [{}] outside shape [{}]",
              is_store ? "store to" : "load from", buf.node->name, fmt::join(index, ", "),
              fmt::join(buf.shape, ", "));
}

void ScalarAccess::fail() {
  std::vector<int64_t> index;
  for (auto& e : idx) index.push_back(e->eval());
  throw_out_of_bounds(*buf, is_store, index);
}

void VecAccess::fail(int lane) {
  std::vector<int64_t> index;
  for (auto& e : idx) index.push_back(e->i[lane]);
  throw_out_of_bounds(*buf, is_store, index);
}

ExecPtr Program::compile_let_binding(Scope& scope, const LetNode* let) {
  DataType t = let->var.dtype();
  int lanes = t.lanes();
  if (lanes > 1) {
    VecPtr value = compile_vec(let->value, lanes);
    return std::make_unique<VecBind>(scope.bind_var(let->var).v, std::move(value));
  }
  if (t.is_float()) {
    FloatPtr value = compile_float(let->value);
    return std::make_unique<FloatBind>(scope.bind_var(let->var).f, std::move(value));
  }
  IntPtr value = compile_int(let->value);
  return std::make_unique<IntBind>(scope.bind_var(let->var).i, std::move(value));
}

IntPtr Program::compile_int(const Expr& e) {
  if (!e.defined()) throw_error("interp: undefined expression");
  DataType t = e.dtype();
  if (t.lanes() != 1) unexpected_vector(e);
  if (t.is_float()) return std::make_unique<FloatToInt>(compile_float(e));
  if (!t.is_int_like()) throw_error("interp: expression '{}' has type {}", to_string(e), t.str());
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return std::make_unique<IntConst>(e.as<IntImmNode>()->value);
    case ExprKind::kFloatImm:
      return std::make_unique<IntConst>(float_to_int(e.as<FloatImmNode>()->value));
    case ExprKind::kVar: {
      VarSlot s = lookup_var(static_cast<const VarNode*>(e.get()));
      if (!s.i) throw_error("interp: variable '{}' is not an integer here", to_string(e));
      return std::make_unique<IntVar>(s.i);
    }
    case ExprKind::kNot:
      return std::make_unique<IntNot>(compile_int(e.as<NotNode>()->a));
    case ExprKind::kSelect: {
      auto* n = e.as<SelectNode>();
      return std::make_unique<IntSelect>(compile_int(n->condition), compile_int(n->true_value),
                                         compile_int(n->false_value));
    }
    case ExprKind::kCast: {
      const Expr& v = e.as<CastNode>()->value;
      if (v.dtype().is_float()) return std::make_unique<FloatToIntCast>(compile_float(v), t);
      IntPtr a = compile_int(v);
      if (t.bits() == 64 && !t.is_bool()) return a;
      return std::make_unique<IntCast>(std::move(a), t);
    }
    case ExprKind::kBufferLoad: {
      auto* n = e.as<BufferLoadNode>();
      ScalarAccess acc = compile_access(*this, n->buffer, n->indices, false);
      return with_storage(n->buffer->dtype, [&]<typename T>() -> IntPtr {
        return std::make_unique<IntLoad<T>>(std::move(acc));
      });
    }
    case ExprKind::kCall: {
      auto* n = e.as<CallNode>();
      check_call_arity(n);
      if (n->op == CallOp::kIfThenElse)
        return std::make_unique<IntIfThenElse>(compile_int(n->args[0]), compile_int(n->args[1]),
                                               compile_int(n->args[2]));
      if (n->op == CallOp::kAbs && n->args.size() == 1 && n->args[0].dtype().is_int_like())
        return std::make_unique<IntAbs>(compile_int(n->args[0]));
      if (ir::is_bit_call(n->op))
        return std::make_unique<IntBitCall>(n->op, compile_int(n->args[0]),
                                            n->args.size() > 1 ? compile_int(n->args[1]) : nullptr,
                                            n->dtype);
      // Any other call on integers is computed in double and truncated.
      Expr as_float = Expr(std::make_shared<CallNode>(kFloat64, n->op, n->args));
      return std::make_unique<FloatToInt>(compile_float(as_float));
    }
    case ExprKind::kRamp: {
      auto* n = e.as<RampNode>();
      if (n->lanes != 1) unexpected_vector(e);
      return compile_int(n->base);
    }
    case ExprKind::kBroadcast: {
      auto* n = e.as<BroadcastNode>();
      if (n->lanes != 1) unexpected_vector(e);
      return compile_int(n->value);
    }
    case ExprKind::kLet: {
      Scope scope(*this);
      ExecPtr bind = compile_let_binding(scope, e.as<LetNode>());
      return std::make_unique<IntLet>(std::move(bind), compile_int(e.as<LetNode>()->body));
    }
    default:
      break;
  }
  // Binary operators.
  auto* n = static_cast<const BinaryNode*>(e.get());
  ExprKind k = e.kind();
  if (k == ExprKind::kAnd) return std::make_unique<IntAnd>(compile_int(n->a), compile_int(n->b));
  if (k == ExprKind::kOr) return std::make_unique<IntOr>(compile_int(n->a), compile_int(n->b));
  if (n->a.dtype().is_float() || n->b.dtype().is_float()) {
    FloatPtr a = compile_float(n->a), b = compile_float(n->b);
    if (is_comparison(k)) {
      return with_binary_kind(k, [&]<ExprKind K>() -> IntPtr {
        return std::make_unique<FloatCompare<K>>(std::move(a), std::move(b));
      });
    }
    // An integer-typed operator on float operands (hand-built IR): compute in double, truncate.
    FloatPtr r = with_binary_kind(k, [&]<ExprKind K>() -> FloatPtr {
      return std::make_unique<FloatBin<K>>(std::move(a), std::move(b));
    });
    return std::make_unique<FloatToInt>(std::move(r));
  }
  IntPtr a = compile_int(n->a);
  if (auto c = as_const_int(n->b); c && !(is_int_division(k) && *c == 0)) {
    return with_binary_kind(k, [&]<ExprKind K>() -> IntPtr {
      return std::make_unique<IntBinConst<K>>(std::move(a), *c);
    });
  }
  IntPtr b = compile_int(n->b);
  return with_binary_kind(k, [&]<ExprKind K>() -> IntPtr {
    return std::make_unique<IntBin<K>>(std::move(a), std::move(b), e);
  });
}

FloatPtr Program::compile_float(const Expr& e) {
  if (!e.defined()) throw_error("interp: undefined expression");
  DataType t = e.dtype();
  if (t.lanes() != 1) unexpected_vector(e);
  if (!t.is_float()) return std::make_unique<IntToFloat>(compile_int(e));
  switch (e.kind()) {
    case ExprKind::kFloatImm:
      return std::make_unique<FloatConst>(e.as<FloatImmNode>()->value);
    case ExprKind::kIntImm:
      return std::make_unique<FloatConst>(static_cast<double>(e.as<IntImmNode>()->value));
    case ExprKind::kVar: {
      VarSlot s = lookup_var(static_cast<const VarNode*>(e.get()));
      if (!s.f) throw_error("interp: variable '{}' is not a float here", to_string(e));
      return std::make_unique<FloatVar>(s.f);
    }
    case ExprKind::kNot:
      return std::make_unique<IntToFloat>(
          std::make_unique<IntNot>(compile_int(e.as<NotNode>()->a)));
    case ExprKind::kSelect: {
      auto* n = e.as<SelectNode>();
      return std::make_unique<FloatSelect>(compile_int(n->condition), compile_float(n->true_value),
                                           compile_float(n->false_value));
    }
    case ExprKind::kCast: {
      const Expr& v = e.as<CastNode>()->value;
      FloatPtr a = compile_float(v);
      if (t.bits() == 64) return a;
      // An int -> float16 cast must round once from the exact integer, as does float64 -> float32.
      if (t.bits() == 32 && !t.is_bfloat16()) return std::make_unique<Float32Cast>(std::move(a));
      return std::make_unique<FloatCast>(std::move(a), t);
    }
    case ExprKind::kBufferLoad: {
      auto* n = e.as<BufferLoadNode>();
      ScalarAccess acc = compile_access(*this, n->buffer, n->indices, false);
      return with_storage(n->buffer->dtype, [&]<typename T>() -> FloatPtr {
        return std::make_unique<FloatLoad<T>>(std::move(acc));
      });
    }
    case ExprKind::kCall: {
      auto* n = e.as<CallNode>();
      check_call_arity(n);
      if (n->op == CallOp::kIfThenElse)
        return std::make_unique<FloatIfThenElse>(compile_int(n->args[0]), compile_float(n->args[1]),
                                                 compile_float(n->args[2]));
      FloatPtr x = compile_float(n->args[0]);
      FloatPtr y = n->args.size() > 1 ? compile_float(n->args[1]) : nullptr;
      return with_call_op(n->op, [&]<CallOp Op>() -> FloatPtr {
        return std::make_unique<FloatCall<Op>>(std::move(x), std::move(y));
      });
    }
    case ExprKind::kRamp: {
      auto* n = e.as<RampNode>();
      if (n->lanes != 1) unexpected_vector(e);
      return compile_float(n->base);
    }
    case ExprKind::kBroadcast: {
      auto* n = e.as<BroadcastNode>();
      if (n->lanes != 1) unexpected_vector(e);
      return compile_float(n->value);
    }
    case ExprKind::kLet: {
      Scope scope(*this);
      ExecPtr bind = compile_let_binding(scope, e.as<LetNode>());
      return std::make_unique<FloatLet>(std::move(bind), compile_float(e.as<LetNode>()->body));
    }
    default:
      break;
  }
  auto* n = static_cast<const BinaryNode*>(e.get());
  FloatPtr a = compile_float(n->a), b = compile_float(n->b);
  return with_binary_kind(e.kind(), [&]<ExprKind K>() -> FloatPtr {
    return std::make_unique<FloatBin<K>>(std::move(a), std::move(b));
  });
}

}  // namespace tyche::interp::detail
