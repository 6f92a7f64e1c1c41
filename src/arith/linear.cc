#include "arith/linear.h"

#include <bit>

#include "ir/functor.h"
#include "ir/op.h"

namespace tyche::arith {

using namespace ir;

namespace {

bool exprs_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!expr_equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

bool expr_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::kIntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::kFloatImm:  // bitwise: 0.0 and -0.0 differ, a NaN equals itself
      return std::bit_cast<uint64_t>(a.as<FloatImmNode>()->value) ==
             std::bit_cast<uint64_t>(b.as<FloatImmNode>()->value);
    case ExprKind::kVar:
      return false;  // identity only, checked above
    case ExprKind::kNot:
      return expr_equal(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::kSelect: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return expr_equal(x->condition, y->condition) && expr_equal(x->true_value, y->true_value) &&
             expr_equal(x->false_value, y->false_value);
    }
    case ExprKind::kCast:
      return expr_equal(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::kBufferLoad: {
      auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
      return x->buffer.same_as(y->buffer) && exprs_equal(x->indices, y->indices);
    }
    case ExprKind::kCall: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      return x->op == y->op && exprs_equal(x->args, y->args);
    }
    case ExprKind::kRamp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return x->lanes == y->lanes && expr_equal(x->base, y->base) &&
             expr_equal(x->stride, y->stride);
    }
    case ExprKind::kBroadcast:
      return expr_equal(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case ExprKind::kLet: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      return x->var.same_as(y->var) && expr_equal(x->value, y->value) &&
             expr_equal(x->body, y->body);
    }
    default: {
      auto *x = static_cast<const BinaryNode*>(a.get()),
           *y = static_cast<const BinaryNode*>(b.get());
      return expr_equal(x->a, y->a) && expr_equal(x->b, y->b);
    }
  }
}

bool is_linear_type(DataType t) {
  return t.is_int() && t.is_scalar();
}

int64_t gcd_const(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? -static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? -static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  while (y != 0) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  return static_cast<int64_t>(x);
}

void LinearSum::add_term(const Expr& atom, int64_t coeff) {
  if (coeff == 0) return;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!expr_equal(terms[i].atom, atom)) continue;
    terms[i].coeff = wrap_add(terms[i].coeff, coeff);
    if (terms[i].coeff == 0) terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
  terms.push_back({atom, coeff});
}

void LinearSum::add(const LinearSum& other, int64_t k) {
  for (const LinearTerm& t : other.terms) add_term(t.atom, wrap_mul(t.coeff, k));
  constant = wrap_add(constant, wrap_mul(other.constant, k));
}

void LinearSum::scale(int64_t k) {
  if (k == 0) {
    terms.clear();
    constant = 0;
    return;
  }
  for (LinearTerm& t : terms) t.coeff = wrap_mul(t.coeff, k);
  constant = wrap_mul(constant, k);
}

int64_t LinearSum::content() const {
  int64_t g = gcd_const(constant, 0);
  for (const LinearTerm& t : terms) g = gcd_const(g, t.coeff);
  return g;
}

namespace {

void collect_linear(const Expr& e, int64_t scale, LinearSum* out) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      out->constant = wrap_add(out->constant, wrap_mul(e.as<IntImmNode>()->value, scale));
      return;
    case ExprKind::kAdd:
    case ExprKind::kSub: {
      auto* n = static_cast<const BinaryNode*>(e.get());
      collect_linear(n->a, scale, out);
      collect_linear(n->b, e.kind() == ExprKind::kAdd ? scale : wrap_mul(scale, -1), out);
      return;
    }
    case ExprKind::kMul: {
      auto* n = static_cast<const BinaryNode*>(e.get());
      if (auto c = as_const_int(n->b)) return collect_linear(n->a, wrap_mul(scale, *c), out);
      if (auto c = as_const_int(n->a)) return collect_linear(n->b, wrap_mul(scale, *c), out);
      break;
    }
    default:
      break;
  }
  out->add_term(e, scale);
}

Expr term_expr(const LinearTerm& t, int64_t coeff) {
  return coeff == 1 ? t.atom : make_binary(ExprKind::kMul, t.atom, make_int(coeff, t.atom.dtype()));
}

}  // namespace

LinearSum to_linear(const Expr& e) {
  LinearSum s(e.dtype());
  collect_linear(e, 1, &s);
  return s;
}

Expr to_expr(const LinearSum& s) {
  Expr out;
  for (const LinearTerm& t : s.terms) {
    if (t.coeff <= 0) continue;
    Expr x = term_expr(t, t.coeff);
    out = out.defined() ? make_binary(ExprKind::kAdd, out, x) : x;
  }
  // With no positive term a positive constant leads (`3 - x`); otherwise it trails (`x - 3`).
  bool const_leads = !out.defined() && s.constant > 0;
  if (const_leads) out = make_int(s.constant, s.dtype);
  for (const LinearTerm& t : s.terms) {
    if (t.coeff >= 0) continue;
    if (!out.defined())
      out = term_expr(t, t.coeff);  // all terms negative: `x * -2 - y`
    else
      out = make_binary(ExprKind::kSub, out, term_expr(t, wrap_mul(t.coeff, -1)));
  }
  if (!out.defined()) return make_int(s.constant, s.dtype);
  if (const_leads || s.constant == 0) return out;
  if (s.constant > 0) return make_binary(ExprKind::kAdd, out, make_int(s.constant, s.dtype));
  return make_binary(ExprKind::kSub, out, make_int(wrap_mul(s.constant, -1), s.dtype));
}

}  // namespace tyche::arith
