// Vector expressions (after vectorization): each node computes all lanes into its own storage.
// Operators dispatch per lane at run time; vector code is rare enough in the interpreter's
// workload that one node type per operator family is the better trade for code size.
#include "interp/ops.h"
#include "interp/program.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::interp::detail {

using namespace ir;

namespace {

struct VecFromInt final : VecExpr {  // broadcast of an integer scalar
  IntPtr a;
  VecFromInt(IntPtr a_, int lanes) : VecExpr(lanes, false), a(std::move(a_)) {}
  void eval() override { std::fill(i.begin(), i.end(), a->eval()); }
};
struct VecFromFloat final : VecExpr {
  FloatPtr a;
  VecFromFloat(FloatPtr a_, int lanes) : VecExpr(lanes, true), a(std::move(a_)) {}
  void eval() override { std::fill(f.begin(), f.end(), a->eval()); }
};
struct VecRampInt final : VecExpr {
  IntPtr base, stride;
  VecRampInt(IntPtr b, IntPtr s, int lanes)
      : VecExpr(lanes, false), base(std::move(b)), stride(std::move(s)) {}
  void eval() override {
    int64_t b = base->eval(), s = stride->eval();
    for (int l = 0; l < lanes; ++l) i[l] = b + l * s;
  }
};
struct VecRampFloat final : VecExpr {
  FloatPtr base, stride;
  VecRampFloat(FloatPtr b, FloatPtr s, int lanes)
      : VecExpr(lanes, true), base(std::move(b)), stride(std::move(s)) {}
  void eval() override {
    double b = base->eval(), s = stride->eval();
    for (int l = 0; l < lanes; ++l) f[l] = b + l * s;
  }
};
struct VecVar final : VecExpr {
  const VecSlot* slot;
  VecVar(const VecSlot* s, int lanes, bool is_float) : VecExpr(lanes, is_float), slot(s) {}
  void eval() override {
    if (is_float)
      f = slot->f;
    else
      i = slot->i;
  }
};
// Implicit class change of all lanes (int <-> float) or an explicit cast to `to`.
struct VecConvert final : VecExpr {
  VecPtr a;
  DataType to;
  VecConvert(VecPtr a_, DataType t)
      : VecExpr(a_->lanes, t.is_float()), a(std::move(a_)), to(t.element_of()) {}
  void eval() override {
    a->eval();
    for (int l = 0; l < lanes; ++l) {
      if (is_float)
        f[l] = round_float(a->is_float ? a->f[l] : static_cast<double>(a->i[l]), to);
      else if (!a->is_float)
        i[l] = wrap_int(a->i[l], to);
      else
        i[l] = to.is_bool() ? int64_t{a->f[l] != 0} : wrap_int(float_to_int(a->f[l]), to);
    }
  }
};

// Arithmetic in the operands' class, comparisons and logic giving integer lanes.
struct VecBinary final : VecExpr {
  ExprKind kind;
  VecPtr a, b;
  Expr expr;
  VecBinary(ExprKind k, VecPtr a_, VecPtr b_, bool result_float, Expr e)
      : VecExpr(a_->lanes, result_float),
        kind(k),
        a(std::move(a_)),
        b(std::move(b_)),
        expr(std::move(e)) {}
  void eval() override {
    a->eval();
    b->eval();
    with_binary_kind(kind, [&]<ExprKind K>() {
      if (a->is_float) {
        for (int l = 0; l < lanes; ++l) {
          double r = float_op<K>(a->f[l], b->f[l]);
          if (is_float)
            f[l] = r;
          else
            i[l] = r != 0;
        }
      } else {
        for (int l = 0; l < lanes; ++l) {
          if constexpr (is_int_division(K)) {
            if (b->i[l] == 0) throw_division_by_zero(expr);
          }
          i[l] = int_op<K>(a->i[l], b->i[l]);
        }
      }
    });
  }
};
struct VecNot final : VecExpr {
  VecPtr a;
  explicit VecNot(VecPtr a_) : VecExpr(a_->lanes, false), a(std::move(a_)) {}
  void eval() override {
    a->eval();
    for (int l = 0; l < lanes; ++l) i[l] = a->i[l] == 0;
  }
};
// Select evaluates both sides in full. if_then_else (`mask` set) runs only the side a lane needs;
// when the condition is mixed, each side runs with the other side's lanes masked off, so an
// out-of-bounds lane it discards is not an error (a masked load in real code).
struct VecSelect final : VecExpr {
  VecPtr c, t, e;
  LaneMask* mask;  // null for Select
  VecSelect(VecPtr c_, VecPtr t_, VecPtr e_, LaneMask* m)
      : VecExpr(t_->lanes, t_->is_float),
        c(std::move(c_)),
        t(std::move(t_)),
        e(std::move(e_)),
        mask(m) {}
  void eval() override {
    c->eval();
    if (!mask) {
      t->eval();
      e->eval();
      for (int l = 0; l < lanes; ++l) {
        if (is_float)
          f[l] = c->i[l] ? t->f[l] : e->f[l];
        else
          i[l] = c->i[l] ? t->i[l] : e->i[l];
      }
      return;
    }
    int on = 0;
    for (int l = 0; l < lanes; ++l) on += c->i[l] != 0;
    if (on == lanes || on == 0) {
      VecExpr& side = on ? *t : *e;
      side.eval();
      if (is_float)
        f = side.f;
      else
        i = side.i;
      return;
    }
    LaneMask saved = *mask;
    bool outer = saved.active && static_cast<int>(saved.on.size()) == lanes;
    mask->active = true;
    mask->on.resize(lanes);
    for (int pass = 0; pass < 2; ++pass) {
      for (int l = 0; l < lanes; ++l)
        mask->on[l] = ((c->i[l] != 0) == (pass == 0)) && (!outer || saved.on[l]);
      VecExpr& side = pass == 0 ? *t : *e;
      side.eval();
      for (int l = 0; l < lanes; ++l) {
        if ((c->i[l] != 0) != (pass == 0)) continue;
        if (is_float)
          f[l] = side.f[l];
        else
          i[l] = side.i[l];
      }
    }
    *mask = std::move(saved);
  }
};
struct VecCall final : VecExpr {
  CallOp op;
  VecPtr x, y;
  DataType t;  // the call's element type
  VecCall(CallOp o, VecPtr x_, VecPtr y_, DataType t_)
      : VecExpr(x_->lanes, x_->is_float), op(o), x(std::move(x_)), y(std::move(y_)), t(t_) {}
  void eval() override {
    x->eval();
    if (y) y->eval();
    if (!is_float && ir::is_bit_call(op)) {
      for (int l = 0; l < lanes; ++l) i[l] = bit_call(op, x->i[l], y ? y->i[l] : 0, t);
      return;
    }
    if (!is_float) {  // integer abs
      for (int l = 0; l < lanes; ++l) i[l] = int_abs(x->i[l]);
      return;
    }
    with_call_op(op, [&]<CallOp Op>() {
      for (int l = 0; l < lanes; ++l) f[l] = call_op<Op>(x->f[l], y ? y->f[l] : 0.0);
    });
  }
};
// group_dot (ir/expr.h): a and b keep their own lane counts. Integers wrap as int32; floats add
// the products in order, each step rounded to float32, as the tensor intrinsics' descriptions do.
struct VecGroupDot final : VecExpr {
  VecPtr acc, a, b;
  VecGroupDot(VecPtr acc_, VecPtr a_, VecPtr b_)
      : VecExpr(acc_->lanes, acc_->is_float),
        acc(std::move(acc_)),
        a(std::move(a_)),
        b(std::move(b_)) {}
  void eval() override {
    acc->eval();
    a->eval();
    b->eval();
    const int g = a->lanes;
    for (int l = 0; l < lanes; ++l) {
      if (is_float) {
        double s = acc->f[l];
        for (int t = 0; t < g; ++t)
          s = round_float(s + round_float(a->f[t] * b->f[g * l + t], kFloat32), kFloat32);
        f[l] = s;
      } else {
        uint64_t s = static_cast<uint64_t>(acc->i[l]);
        for (int t = 0; t < g; ++t) s += static_cast<uint64_t>(a->i[t] * b->i[g * l + t]);
        i[l] = wrap_int(static_cast<int64_t>(s), kInt32);
      }
    }
  }
};
// tile_dot (ir/expr.h): group_dot's arithmetic over an M x N tile, the sum over t in order.
struct VecTileDot final : VecExpr {
  VecPtr acc, a, b;
  ir::TileDotShape shape;
  VecTileDot(VecPtr acc_, VecPtr a_, VecPtr b_, ir::TileDotShape s)
      : VecExpr(acc_->lanes, acc_->is_float),
        acc(std::move(acc_)),
        a(std::move(a_)),
        b(std::move(b_)),
        shape(s) {}
  void eval() override {
    acc->eval();
    a->eval();
    b->eval();
    const int m_rows = shape.m, n_cols = shape.n, k_len = shape.k, g = shape.g;  // captured below
    for (int m = 0; m < m_rows; ++m)
      for (int n = 0; n < n_cols; ++n) {
        const int l = m * n_cols + n;
        auto b_lane = [&](int t) { return (t / g) * n_cols * g + n * g + t % g; };
        if (is_float) {
          double s = acc->f[l];
          for (int t = 0; t < k_len; ++t)
            s = round_float(s + round_float(a->f[m * k_len + t] * b->f[b_lane(t)], kFloat32),
                            kFloat32);
          f[l] = s;
        } else {
          uint64_t s = static_cast<uint64_t>(acc->i[l]);
          for (int t = 0; t < k_len; ++t)
            s += static_cast<uint64_t>(a->i[m * k_len + t] * b->i[b_lane(t)]);
          i[l] = wrap_int(static_cast<int64_t>(s), kInt32);
        }
      }
  }
};
struct VecLet final : VecExpr {
  ExecPtr bind;
  VecPtr body;
  VecLet(ExecPtr b, VecPtr e)
      : VecExpr(e->lanes, e->is_float), bind(std::move(b)), body(std::move(e)) {}
  void eval() override {
    bind->exec();
    body->eval();
    if (is_float)
      f = body->f;
    else
      i = body->i;
  }
};
template <typename T>
struct VecLoad final : VecExpr {
  VecAccess acc;
  VecLoad(VecAccess a, bool is_float) : VecExpr(a.lanes, is_float), acc(std::move(a)) {}
  void eval() override {
    acc.compute();
    for (int l = 0; l < lanes; ++l) {
      int64_t off = acc.offsets[l];
      if (is_float)
        f[l] = off < 0 ? 0.0 : Storage<T>::load_f(*acc.buf, off);
      else
        i[l] = off < 0 ? 0 : Storage<T>::load_i(*acc.buf, off);
    }
  }
};

VecPtr convert(VecPtr v, bool to_float) {
  if (v->is_float == to_float) return v;
  return std::make_unique<VecConvert>(std::move(v), to_float ? kFloat64 : kInt64);
}

[[noreturn]] void lanes_mismatch(const Expr& e, int lanes) {
  throw_error("interp: '{}' has {} lanes where {} are expected", to_string(e), e.dtype().lanes(),
              lanes);
}

}  // namespace

VecAccess compile_vec_access(Program& p, const Buffer& buffer, const std::vector<Expr>& indices,
                             int lanes, bool is_store) {
  VecAccess acc;
  acc.buf = p.lookup_buffer(buffer);
  acc.lanes = lanes;
  acc.is_store = is_store;
  acc.mask = p.lane_mask();
  if (indices.size() != buffer->shape.size())
    throw_error("interp: {} indices for the {}-d buffer '{}'", indices.size(), buffer->shape.size(),
                buffer->name);
  for (const Expr& i : indices) acc.idx.push_back(convert(p.compile_vec(i, lanes), false));
  return acc;
}

VecPtr Program::compile_vec(const Expr& e, int lanes) {
  if (!e.defined()) throw_error("interp: undefined expression");
  DataType t = e.dtype();
  bool is_float = t.is_float();
  if (t.lanes() == 1) {
    if (is_float) return std::make_unique<VecFromFloat>(compile_float(e), lanes);
    return std::make_unique<VecFromInt>(compile_int(e), lanes);
  }
  if (t.lanes() != lanes) lanes_mismatch(e, lanes);
  switch (e.kind()) {
    case ExprKind::kVar: {
      VarSlot s = lookup_var(static_cast<const VarNode*>(e.get()));
      if (!s.v) throw_error("interp: variable '{}' is not a vector here", to_string(e));
      return std::make_unique<VecVar>(s.v, lanes, is_float);
    }
    case ExprKind::kNot:
      return std::make_unique<VecNot>(convert(compile_vec(e.as<NotNode>()->a, lanes), false));
    case ExprKind::kSelect: {
      auto* n = e.as<SelectNode>();
      VecPtr c = convert(compile_vec(n->condition, lanes), false);
      VecPtr a = convert(compile_vec(n->true_value, lanes), is_float);
      VecPtr b = convert(compile_vec(n->false_value, lanes), is_float);
      return std::make_unique<VecSelect>(std::move(c), std::move(a), std::move(b), nullptr);
    }
    case ExprKind::kCast:
      return std::make_unique<VecConvert>(compile_vec(e.as<CastNode>()->value, lanes), t);
    case ExprKind::kBufferLoad: {
      auto* n = e.as<BufferLoadNode>();
      VecAccess acc = compile_vec_access(*this, n->buffer, n->indices, lanes, false);
      return with_storage(n->buffer->dtype, [&]<typename T>() -> VecPtr {
        return std::make_unique<VecLoad<T>>(std::move(acc), is_float);
      });
    }
    case ExprKind::kCall: {
      auto* n = e.as<CallNode>();
      if (static_cast<int>(n->args.size()) != call_op_arity(n->op))
        throw_error("interp: {} takes {} argument(s), got {}", call_op_name(n->op),
                    call_op_arity(n->op), n->args.size());
      if (n->op == CallOp::kGroupDot) {
        auto operand = [&](const Expr& x) {
          return convert(compile_vec(x, x.dtype().lanes()), is_float);
        };
        return std::make_unique<VecGroupDot>(operand(n->args[0]), operand(n->args[1]),
                                             operand(n->args[2]));
      }
      if (n->op == CallOp::kTileDot) {
        auto operand = [&](const Expr& x) {
          return convert(compile_vec(x, x.dtype().lanes()), is_float);
        };
        return std::make_unique<VecTileDot>(operand(n->args[0]), operand(n->args[1]),
                                            operand(n->args[2]), ir::tile_dot_shape(n));
      }
      if (n->op == CallOp::kIfThenElse) {
        VecPtr c = convert(compile_vec(n->args[0], lanes), false);
        VecPtr a = convert(compile_vec(n->args[1], lanes), is_float);
        VecPtr b = convert(compile_vec(n->args[2], lanes), is_float);
        return std::make_unique<VecSelect>(std::move(c), std::move(a), std::move(b), &mask_);
      }
      bool int_call = (n->op == CallOp::kAbs || ir::is_bit_call(n->op)) && !is_float;
      VecPtr x = convert(compile_vec(n->args[0], lanes), !int_call);
      VecPtr y = n->args.size() > 1 ? convert(compile_vec(n->args[1], lanes), !int_call) : nullptr;
      VecPtr r =
          std::make_unique<VecCall>(n->op, std::move(x), std::move(y), n->dtype.element_of());
      return convert(std::move(r), is_float);
    }
    case ExprKind::kRamp: {
      auto* n = e.as<RampNode>();
      if (n->base.dtype().is_float() || n->stride.dtype().is_float())
        return std::make_unique<VecRampFloat>(compile_float(n->base), compile_float(n->stride),
                                              lanes);
      return std::make_unique<VecRampInt>(compile_int(n->base), compile_int(n->stride), lanes);
    }
    case ExprKind::kBroadcast: {
      const Expr& v = e.as<BroadcastNode>()->value;
      if (v.dtype().lanes() != 1) throw_error("interp: broadcast of the vector '{}'", to_string(v));
      return compile_vec(v, lanes);
    }
    case ExprKind::kLet: {
      Scope scope(*this);
      ExecPtr bind = compile_let_binding(scope, e.as<LetNode>());
      return std::make_unique<VecLet>(std::move(bind), compile_vec(e.as<LetNode>()->body, lanes));
    }
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
      lanes_mismatch(e, lanes);
    default:
      break;
  }
  auto* n = static_cast<const BinaryNode*>(e.get());
  ExprKind k = e.kind();
  bool logic = k == ExprKind::kAnd || k == ExprKind::kOr;
  bool operands_float = !logic && (n->a.dtype().is_float() || n->b.dtype().is_float());
  VecPtr a = convert(compile_vec(n->a, lanes), operands_float);
  VecPtr b = convert(compile_vec(n->b, lanes), operands_float);
  bool result_float = operands_float && !is_comparison(k);
  VecPtr r = std::make_unique<VecBinary>(k, std::move(a), std::move(b), result_float, e);
  return convert(std::move(r), is_float);
}

}  // namespace tyche::interp::detail
