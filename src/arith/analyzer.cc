// Variable bindings, constant-bound propagation and the proof queries of the Analyzer.
// The simplifier itself lives in simplify.cc.
#include "arith/analyzer.h"

#include <algorithm>

#include "arith/linear.h"
#include "ir/op.h"
#include "support/int_division.h"

namespace tyche::arith {

using namespace ir;

namespace {

using Bound = ConstIntBound;
constexpr int64_t kPosInf = Bound::kPosInf;
constexpr int64_t kNegInf = Bound::kNegInf;

bool is_inf(int64_t v) {
  return v == kPosInf || v == kNegInf;
}

int64_t clamp_finite(int64_t v) {
  return std::clamp(v, kNegInf, kPosInf);
}

// The values a variable or opaque expression of type `t` can take.
Bound type_bound(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_integer() || !t.is_scalar()) return Bound::everything();
  int bits = t.bits();
  if (t.is_uint()) return {0, bits >= 63 ? kPosInf : (int64_t{1} << bits) - 1};
  if (bits >= 64) return Bound::everything();
  return {-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1};
}

Bound unite(const Bound& a, const Bound& b) {
  return {std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
}

// x / y for a finite non-zero y, rounding down (floor) or toward zero; infinities keep their
// sign (times the sign of y).
int64_t div_endpoint(int64_t x, int64_t y, bool floor) {
  if (is_inf(x)) return (x > 0) == (y > 0) ? kPosInf : kNegInf;
  return floor ? tyche::floordiv(x, y) : x / y;
}

// Bounds of a / b when b's bound excludes zero and is finite: the quotient is monotone in each
// argument on such a domain, so the extremes are at the corners.
Bound div_corners(const Bound& a, const Bound& b, bool floor) {
  int64_t c[4] = {
      div_endpoint(a.min_value, b.min_value, floor), div_endpoint(a.min_value, b.max_value, floor),
      div_endpoint(a.max_value, b.min_value, floor), div_endpoint(a.max_value, b.max_value, floor)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Bound div_bound(const Bound& a, const Bound& b, bool floor) {
  bool finite = !is_inf(b.min_value) && !is_inf(b.max_value);
  if (finite && (b.min_value > 0 || b.max_value < 0)) return div_corners(a, b, floor);
  // |a / b| <= |a| whenever |b| >= 1 (b == 0 is undefined behaviour anyway).
  int64_t m = std::max(a.max_value, sat_sub(0, a.min_value));
  if (b.min_value > 0)
    return {std::min<int64_t>(a.min_value, 0), std::max<int64_t>(a.max_value, 0)};
  return {sat_sub(0, m), m};
}

Bound floormod_bound(const Bound& a, const Bound& b) {
  if (b.min_value > 0) {
    if (a.min_value >= 0 && a.max_value < b.min_value) return a;
    int64_t hi = b.max_value == kPosInf ? kPosInf : b.max_value - 1;
    if (a.min_value >= 0) hi = std::min(hi, a.max_value);
    return {0, hi};
  }
  if (b.max_value < 0) {
    if (a.max_value <= 0 && a.min_value > b.max_value) return a;
    return {b.min_value == kNegInf ? kNegInf : b.min_value + 1, 0};
  }
  return Bound::everything();
}

Bound mul_bound(const Bound& a, const Bound& b) {
  int64_t c[4] = {sat_mul(a.min_value, b.min_value), sat_mul(a.min_value, b.max_value),
                  sat_mul(a.max_value, b.min_value), sat_mul(a.max_value, b.max_value)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

}  // namespace

int64_t sat_add(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return clamp_finite(r);
}

int64_t sat_sub(int64_t a, int64_t b) {
  // Negating is exact: kNegInf == -kPosInf.
  return sat_add(a, b == std::numeric_limits<int64_t>::min() ? kPosInf : -b);
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool neg = (a < 0) != (b < 0);
  if (is_inf(a) || is_inf(b)) return neg ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return neg ? kNegInf : kPosInf;
  return clamp_finite(r);
}

// Propagates constant bounds bottom-up. Let-bound variables get the bounds of their values.
class BoundEvaluator {
 public:
  explicit BoundEvaluator(const Analyzer* a) : a_(a) {}

  Bound eval(const Expr& e) {
    DataType t = e.dtype();
    if (t.is_float() || !t.is_scalar()) return Bound::everything();
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = clamp_finite(e.as<IntImmNode>()->value);
        return {v, v};
      }
      case ExprKind::kVar:
        return var_bound(static_cast<const VarNode*>(e.get()), t);
      case ExprKind::kAdd:
      case ExprKind::kSub:
      case ExprKind::kMul:
      case ExprKind::kDiv:
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
      case ExprKind::kMin:
      case ExprKind::kMax: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        if (!n->a.dtype().is_int_like()) return type_bound(t);
        Bound a = eval(n->a), b = eval(n->b), r;
        switch (e.kind()) {
          case ExprKind::kAdd:
            r = {sat_add(a.min_value, b.min_value), sat_add(a.max_value, b.max_value)};
            break;
          case ExprKind::kSub:
            r = {sat_sub(a.min_value, b.max_value), sat_sub(a.max_value, b.min_value)};
            break;
          case ExprKind::kMul:
            r = mul_bound(a, b);
            break;
          case ExprKind::kDiv:
            r = div_bound(a, b, false);
            break;
          case ExprKind::kFloorDiv:
            r = div_bound(a, b, true);
            break;
          case ExprKind::kFloorMod:
            r = floormod_bound(a, b);
            break;
          case ExprKind::kMin:
            r = {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
            break;
          default:
            r = {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
            break;
        }
        // Unsigned and narrow types wrap; outside the type's range the bound says nothing.
        if (!t.is_int()) {
          Bound tb = type_bound(t);
          if (r.min_value < tb.min_value || r.max_value > tb.max_value) return tb;
        }
        return r;
      }
      case ExprKind::kSelect: {
        auto* n = e.as<SelectNode>();
        Bound c = eval(n->condition);
        if (c.is_const()) return eval(c.min_value ? n->true_value : n->false_value);
        return unite(eval(n->true_value), eval(n->false_value));
      }
      case ExprKind::kCast: {
        auto* n = e.as<CastNode>();
        Bound tb = type_bound(t);
        if (t.is_bool() || !n->value.dtype().is_int_like()) return tb;
        Bound v = eval(n->value);
        if (v.min_value < tb.min_value || v.max_value > tb.max_value) return tb;
        return v;
      }
      case ExprKind::kLet: {
        auto* n = e.as<LetNode>();
        Bound v = n->value.dtype().is_int_like() ? eval(n->value) : type_bound(n->var.dtype());
        lets_.emplace_back(n->var.get(), v);
        Bound r = eval(n->body);
        lets_.pop_back();
        return r;
      }
      default:
        // Comparisons and logic are bool; loads and calls are opaque.
        return type_bound(t);
    }
  }

 private:
  const Analyzer* a_;
  std::vector<std::pair<const VarNode*, Bound>> lets_;

  Bound var_bound(const VarNode* v, DataType t) {
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
      if (it->first == v) return it->second;
    auto it = a_->vars_.find(v);
    if (it != a_->vars_.end()) return it->second.bound;
    return type_bound(t);
  }
};

void Analyzer::bind(const Var& v, const Range& r) {
  Bound lo = const_int_bound(r.min);
  Bound hi = const_int_bound(simplify(r.min + r.extent - make_int(1, r.extent.dtype())));
  vars_[v.get()] = VarInfo{v, {lo.min_value, hi.max_value}, Expr()};
}

void Analyzer::bind(const Var& v, const Expr& value) {
  Expr s = simplify(value);
  Bound b = const_int_bound(s);
  vars_[v.get()] = VarInfo{v, b, s};
}

bool Analyzer::is_bound(const Var& v) const {
  return vars_.count(v.get()) != 0;
}

ConstIntBound Analyzer::const_int_bound(const Expr& e) {
  return BoundEvaluator(this).eval(e);
}

bool Analyzer::can_prove(const Expr& cond) {
  Expr s = simplify(cond);
  if (auto v = as_const_int(s)) return *v != 0;
  // The simplifier decides single comparisons; a disjunction may hold with neither side
  // provable alone, which we do not attempt.
  if (s.kind() == ExprKind::kAnd) {
    auto* n = static_cast<const BinaryNode*>(s.get());
    return can_prove(n->a) && can_prove(n->b);
  }
  return false;
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  Expr x = simplify(a), y = simplify(b);
  if (expr_equal(x, y)) return true;
  if (is_linear_type(x.dtype()) && x.dtype() == y.dtype()) return is_const_int(simplify(x - y), 0);
  return false;
}

}  // namespace tyche::arith
