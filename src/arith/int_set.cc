#include "arith/int_set.h"

#include <unordered_set>

#include "arith/linear.h"
#include "ir/op.h"
#include "ir/var_use.h"

namespace tyche::arith {

using namespace ir;

bool IntervalSet::is_point() const {
  return is_bounded() && expr_equal(min_value, max_value);
}

namespace {

// Interval ends: undefined means -inf (for a min) or +inf (for a max), and every operation
// below propagates that.
Expr add(const Expr& a, const Expr& b) {
  return a.defined() && b.defined() ? a + b : Expr();
}
Expr sub(const Expr& a, const Expr& b) {
  return a.defined() && b.defined() ? a - b : Expr();
}

class IntervalEvaluator {
 public:
  IntervalEvaluator(const VarRangeMap& dom, Analyzer* a) : dom_(dom), a_(a) {
    for (const auto& [v, r] : dom) dom_vars_.insert(v.get());
  }

  IntervalSet eval(const Expr& e) {
    IntervalSet r = eval_raw(e);
    return {r.min_value.defined() ? a_->simplify(r.min_value) : Expr(),
            r.max_value.defined() ? a_->simplify(r.max_value) : Expr()};
  }

 private:
  const VarRangeMap& dom_;
  Analyzer* a_;
  std::unordered_map<const VarNode*, IntervalSet> lets_;
  std::unordered_map<const VarNode*, IntervalSet> cache_;
  std::unordered_set<const VarNode*> dom_vars_;
  std::unordered_set<const VarNode*> active_;  // guards against ranges that refer to themselves

  bool relaxed(const VarNode* v) const { return lets_.count(v) || dom_vars_.count(v); }

  IntervalSet var_interval(const Var& v) {
    if (auto it = lets_.find(v.get()); it != lets_.end()) return it->second;
    auto it = dom_.find(v);
    if (it == dom_.end()) return IntervalSet::point(v);
    if (auto c = cache_.find(v.get()); c != cache_.end()) return c->second;
    if (active_.count(v.get())) return IntervalSet::everything();
    active_.insert(v.get());
    const Range& r = it->second;
    Expr last = r.min + r.extent - make_int(1, r.extent.dtype());
    IntervalSet s{eval_raw(r.min).min_value, eval_raw(last).max_value};
    active_.erase(v.get());
    cache_[v.get()] = s;
    return s;
  }

  // Constant value of an interval end, if it is one after simplification.
  std::optional<int64_t> const_end(const Expr& e) {
    if (!e.defined()) return std::nullopt;
    return as_const_int(a_->simplify(e));
  }
  bool prove(const Expr& cond) { return a_->can_prove(cond); }

  IntervalSet eval_raw(const Expr& e) {
    if (!uses_var(e, [&](const VarNode* v) { return relaxed(v); })) return IntervalSet::point(e);
    DataType t = e.dtype();
    if (!t.is_int() || !t.is_scalar()) return IntervalSet::everything();
    switch (e.kind()) {
      case ExprKind::kVar:
        return var_interval(Var(std::static_pointer_cast<const VarNode>(e.ptr())));
      case ExprKind::kAdd: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        IntervalSet x = eval_raw(n->a), y = eval_raw(n->b);
        return {add(x.min_value, y.min_value), add(x.max_value, y.max_value)};
      }
      case ExprKind::kSub: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        IntervalSet x = eval_raw(n->a), y = eval_raw(n->b);
        return {sub(x.min_value, y.max_value), sub(x.max_value, y.min_value)};
      }
      case ExprKind::kMul: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        return tidy(mul(eval_raw(n->a), eval_raw(n->b)));
      }
      case ExprKind::kFloorDiv:
      case ExprKind::kDiv: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        IntervalSet x = eval_raw(n->a), y = eval_raw(n->b);
        // Truncating division is floor division for a non-negative dividend and a positive
        // divisor.
        if (e.kind() == ExprKind::kDiv &&
            !(x.has_lower_bound() && prove(x.min_value >= make_int(0, t)) && y.has_lower_bound() &&
              prove(y.min_value > make_int(0, t))))
          return IntervalSet::everything();
        return tidy(floordiv(x, y));
      }
      case ExprKind::kFloorMod: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        return floormod(eval_raw(n->a), eval_raw(n->b));
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        IntervalSet x = eval_raw(n->a), y = eval_raw(n->b);
        bool is_min = e.kind() == ExprKind::kMin;
        auto join = [&](const Expr& p, const Expr& q, bool take_min, bool inf_wins) {
          if (!p.defined() || !q.defined()) return inf_wins ? Expr() : (p.defined() ? p : q);
          return take_min ? ir::min(p, q) : ir::max(p, q);
        };
        // min: lower end is min of lower ends (an unbounded one wins), upper end is min of
        // upper ends (a bounded one wins); dually for max.
        return tidy({join(x.min_value, y.min_value, is_min, is_min),
                     join(x.max_value, y.max_value, is_min, !is_min)});
      }
      case ExprKind::kSelect: {
        auto* n = e.as<SelectNode>();
        return tidy(hull(eval_raw(n->true_value), eval_raw(n->false_value)));
      }
      case ExprKind::kCast: {
        auto* n = e.as<CastNode>();
        DataType from = n->value.dtype();
        if (!from.is_int() || from.bits() > t.bits()) return IntervalSet::everything();
        IntervalSet x = eval_raw(n->value);
        return {x.min_value.defined() ? cast(t, x.min_value) : Expr(),
                x.max_value.defined() ? cast(t, x.max_value) : Expr()};
      }
      case ExprKind::kLet: {
        auto* n = e.as<LetNode>();
        IntervalSet v = eval_raw(n->value);
        const VarNode* key = n->var.get();
        std::optional<IntervalSet> saved;
        if (auto it = lets_.find(key); it != lets_.end()) saved = it->second;
        lets_[key] = v;
        IntervalSet r = eval_raw(n->body);
        if (saved)
          lets_[key] = *saved;
        else
          lets_.erase(key);
        return r;
      }
      default:
        return IntervalSet::everything();
    }
  }

  // Simplifies the ends of a result built from min/max or corners, which would otherwise grow
  // geometrically with nesting.
  IntervalSet tidy(const IntervalSet& x) {
    return {x.min_value.defined() ? a_->simplify(x.min_value) : Expr(),
            x.max_value.defined() ? a_->simplify(x.max_value) : Expr()};
  }

  IntervalSet hull(const IntervalSet& x, const IntervalSet& y) {
    return {
        x.min_value.defined() && y.min_value.defined() ? ir::min(x.min_value, y.min_value) : Expr(),
        x.max_value.defined() && y.max_value.defined() ? ir::max(x.max_value, y.max_value)
                                                       : Expr()};
  }

  // Sign of an interval, when provable: +1 (>= 0), -1 (<= 0), 0 unknown.
  int sign(const IntervalSet& x) {
    DataType t = x.min_value.defined()   ? x.min_value.dtype()
                 : x.max_value.defined() ? x.max_value.dtype()
                                         : kInt32;
    if (x.has_lower_bound() && prove(x.min_value >= make_int(0, t))) return 1;
    if (x.has_upper_bound() && prove(x.max_value <= make_int(0, t))) return -1;
    return 0;
  }

  IntervalSet mul(const IntervalSet& x, const IntervalSet& y) {
    if (x.is_point() && !y.is_point()) return mul(y, x);
    if (y.is_point()) {
      // Scaling by one value: the ends map to the ends, in an order given by its sign.
      if (auto c = const_end(y.min_value); c && *c == 0)
        return IntervalSet::point(make_int(0, y.min_value.dtype()));
      int s = sign(y);
      if (s > 0)
        return {x.min_value.defined() ? x.min_value * y.min_value : Expr(),
                x.max_value.defined() ? x.max_value * y.min_value : Expr()};
      if (s < 0)
        return {x.max_value.defined() ? x.max_value * y.min_value : Expr(),
                x.min_value.defined() ? x.min_value * y.min_value : Expr()};
      if (!x.is_bounded()) return IntervalSet::everything();
      Expr p = x.min_value * y.min_value, q = x.max_value * y.min_value;
      return {ir::min(p, q), ir::max(p, q)};
    }
    if (!x.is_bounded() || !y.is_bounded()) return IntervalSet::everything();
    // The product of two intervals takes its extremes at the corners.
    Expr c[4] = {x.min_value * y.min_value, x.min_value * y.max_value, x.max_value * y.min_value,
                 x.max_value * y.max_value};
    return {ir::min(ir::min(c[0], c[1]), ir::min(c[2], c[3])),
            ir::max(ir::max(c[0], c[1]), ir::max(c[2], c[3]))};
  }

  IntervalSet floordiv(const IntervalSet& x, const IntervalSet& y) {
    if (!y.is_point()) {
      // A positive divisor interval: floordiv is monotone in each argument, so use corners.
      if (!x.is_bounded() || !y.is_bounded() ||
          !prove(y.min_value > make_int(0, y.min_value.dtype())))
        return IntervalSet::everything();
      Expr c[4] = {ir::floordiv(x.min_value, y.min_value), ir::floordiv(x.min_value, y.max_value),
                   ir::floordiv(x.max_value, y.min_value), ir::floordiv(x.max_value, y.max_value)};
      return {ir::min(ir::min(c[0], c[1]), ir::min(c[2], c[3])),
              ir::max(ir::max(c[0], c[1]), ir::max(c[2], c[3]))};
    }
    const Expr& d = y.min_value;
    auto c = const_end(d);
    bool positive = c ? *c > 0 : prove(d > make_int(0, d.dtype()));
    bool negative = c ? *c < 0 : prove(d < make_int(0, d.dtype()));
    auto div = [&](const Expr& v) { return v.defined() ? ir::floordiv(v, d) : Expr(); };
    if (positive) return {div(x.min_value), div(x.max_value)};
    if (negative) return {div(x.max_value), div(x.min_value)};
    return IntervalSet::everything();
  }

  IntervalSet floormod(const IntervalSet& x, const IntervalSet& y) {
    if (!y.is_point()) {
      if (!y.is_bounded() || !prove(y.min_value > make_int(0, y.min_value.dtype())))
        return IntervalSet::everything();
      return {make_int(0, y.max_value.dtype()), y.max_value - make_int(1, y.max_value.dtype())};
    }
    const Expr& d = y.min_value;
    if (!prove(d > make_int(0, d.dtype()))) return IntervalSet::everything();
    // Within one period the remainder is monotone, so its ends are the ends' remainders.
    if (x.is_bounded() && prove(ir::floordiv(x.min_value, d) == ir::floordiv(x.max_value, d)))
      return {ir::floormod(x.min_value, d), ir::floormod(x.max_value, d)};
    return {make_int(0, d.dtype()), d - make_int(1, d.dtype())};
  }
};

}  // namespace

IntervalSet eval_interval(const Expr& e, const VarRangeMap& dom_map, Analyzer* analyzer) {
  return IntervalEvaluator(dom_map, analyzer).eval(analyzer->simplify(e));
}

IntervalSet union_interval(const IntervalSet& a, const IntervalSet& b, Analyzer* analyzer) {
  auto join = [&](const Expr& x, const Expr& y, bool is_min) {
    if (!x.defined() || !y.defined()) return Expr();
    if (expr_equal(x, y)) return x;
    return analyzer->simplify(is_min ? ir::min(x, y) : ir::max(x, y));
  };
  return {join(a.min_value, b.min_value, true), join(a.max_value, b.max_value, false)};
}

}  // namespace tyche::arith
