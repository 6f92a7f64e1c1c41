// The simplifier: bottom-up, each node rewritten from its already simplified children.
// Integer index arithmetic goes through LinearSum (linear.h); every rule below is an identity
// over unbounded integers (floor division semantics), or is conditioned on constant bounds of
// the bound variables, so simplification never changes a value. Each rule's output is a fixed
// point of the same rule, which makes simplify idempotent.
#include <optional>

#include "arith/analyzer.h"
#include "arith/linear.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "support/int_division.h"

namespace tyche::arith {

using namespace ir;

namespace {

ExprKind mirror(ExprKind k) {
  switch (k) {
    case ExprKind::kLT:
      return ExprKind::kGT;
    case ExprKind::kLE:
      return ExprKind::kGE;
    case ExprKind::kGT:
      return ExprKind::kLT;
    case ExprKind::kGE:
      return ExprKind::kLE;
    default:
      return k;
  }
}

ExprKind negate(ExprKind k) {
  switch (k) {
    case ExprKind::kLT:
      return ExprKind::kGE;
    case ExprKind::kLE:
      return ExprKind::kGT;
    case ExprKind::kGT:
      return ExprKind::kLE;
    case ExprKind::kGE:
      return ExprKind::kLT;
    case ExprKind::kEQ:
      return ExprKind::kNE;
    default:
      return ExprKind::kEQ;
  }
}

// `x op c` where c is a positive constant; the operands of the division node.
struct DivParts {
  Expr x;
  int64_t c;
};
std::optional<DivParts> match_div(const Expr& e, ExprKind kind) {
  if (e.kind() != kind) return std::nullopt;
  auto* n = static_cast<const BinaryNode*>(e.get());
  auto c = as_const_int(n->b);
  if (!c || *c <= 0) return std::nullopt;
  return DivParts{n->a, *c};
}

bool finite(const ConstIntBound& b) {
  return b.min_value != ConstIntBound::kNegInf && b.max_value != ConstIntBound::kPosInf;
}

// Divides every coefficient and the constant by g (which divides them all).
LinearSum divide(const LinearSum& s, int64_t g) {
  LinearSum r(s.dtype, s.constant / g);
  for (const LinearTerm& t : s.terms) r.terms.push_back({t.atom, t.coeff / g});
  return r;
}

// Replaces terms[first] by `repl`, drops terms[second] (second may be -1), subtracts `minus`.
LinearSum splice(const LinearSum& s, size_t first, std::ptrdiff_t second, const LinearSum& repl,
                 const LinearSum& minus) {
  LinearSum r(s.dtype, wrap_add(s.constant, repl.constant));
  for (size_t i = 0; i < s.terms.size(); ++i) {
    if (i == first) {
      for (const LinearTerm& t : repl.terms) r.add_term(t.atom, t.coeff);
    } else if (static_cast<std::ptrdiff_t>(i) != second) {
      r.add_term(s.terms[i].atom, s.terms[i].coeff);
    }
  }
  r.add(minus, -1);
  return r;
}

}  // namespace

class Simplifier {
 public:
  explicit Simplifier(Analyzer* a) : a_(a) {}

  Expr simplify(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
        return e;
      case ExprKind::kVar: {
        auto it = a_->vars_.find(static_cast<const VarNode*>(e.get()));
        return it != a_->vars_.end() && it->second.value.defined() ? it->second.value : e;
      }
      case ExprKind::kNot:
        return simplify_not(simplify(e.as<NotNode>()->a), e);
      case ExprKind::kSelect:
        return simplify_select(e.as<SelectNode>(), e);
      case ExprKind::kCast:
        return simplify_cast(e.as<CastNode>(), e);
      case ExprKind::kBufferLoad: {
        auto* n = e.as<BufferLoadNode>();
        std::vector<Expr> idx;
        return simplify_all(n->indices, &idx) ? buffer_load(n->buffer, std::move(idx)) : e;
      }
      case ExprKind::kCall: {
        auto* n = e.as<CallNode>();
        std::vector<Expr> args;
        return simplify_all(n->args, &args) ? call(n->op, std::move(args)) : e;
      }
      case ExprKind::kRamp: {
        auto* n = e.as<RampNode>();
        Expr b = simplify(n->base), s = simplify(n->stride);
        return b.same_as(n->base) && s.same_as(n->stride) ? e : ramp(b, s, n->lanes);
      }
      case ExprKind::kBroadcast: {
        auto* n = e.as<BroadcastNode>();
        Expr v = simplify(n->value);
        return v.same_as(n->value) ? e : broadcast(v, n->lanes);
      }
      case ExprKind::kLet:
        return simplify_let(e.as<LetNode>(), e);
      default:
        return simplify_binary(static_cast<const BinaryNode*>(e.get()), e);
    }
  }

 private:
  Analyzer* a_;

  bool simplify_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
    bool changed = false;
    for (const Expr& x : in) {
      out->push_back(simplify(x));
      changed |= !out->back().same_as(x);
    }
    return changed;
  }

  ConstIntBound bound(const LinearSum& s) {
    ConstIntBound r = ConstIntBound::point(s.constant);
    for (const LinearTerm& t : s.terms) {
      ConstIntBound b = a_->const_int_bound(t.atom);
      int64_t lo = sat_mul(b.min_value, t.coeff), hi = sat_mul(b.max_value, t.coeff);
      if (t.coeff < 0) std::swap(lo, hi);
      r = {sat_add(r.min_value, lo), sat_add(r.max_value, hi)};
    }
    return r;
  }

  Expr simplify_binary(const BinaryNode* n, const Expr& self) {
    Expr a = simplify(n->a), b = simplify(n->b);
    ExprKind k = n->kind;
    auto rebuild = [&] { return a.same_as(n->a) && b.same_as(n->b) ? self : make_binary(k, a, b); };
    if (k == ExprKind::kAnd || k == ExprKind::kOr) return simplify_logic(k, a, b, rebuild);
    if (!is_linear_type(a.dtype())) {
      if (k == ExprKind::kEQ && expr_equal(a, b) && a.dtype().is_int_like()) return make_bool(true);
      if (k == ExprKind::kNE && expr_equal(a, b) && a.dtype().is_int_like())
        return make_bool(false);
      return rebuild();
    }
    switch (k) {
      case ExprKind::kAdd:
      case ExprKind::kSub: {
        LinearSum s = to_linear(a);
        s.add(to_linear(b), k == ExprKind::kAdd ? 1 : -1);
        return finish(std::move(s));
      }
      case ExprKind::kMul:
        return simplify_mul(a, b);
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod: {
        auto c = as_const_int(b);
        if (!c || *c <= 0) return rebuild();
        return k == ExprKind::kFloorDiv ? div_linear(to_linear(a), *c)
                                        : mod_linear(to_linear(a), *c);
      }
      case ExprKind::kDiv: {
        // Truncating division equals floor division for a non-negative dividend.
        auto c = as_const_int(b);
        if (c && *c > 0 && a_->const_int_bound(a).min_value >= 0)
          return div_linear(to_linear(a), *c);
        return rebuild();
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        if (as_const_int(a) && as_const_int(b)) return make_binary(k, a, b);
        LinearSum d = to_linear(a);
        d.add(to_linear(b), -1);
        ConstIntBound bd = bound(d);
        bool a_le_b = bd.max_value <= 0, a_ge_b = bd.min_value >= 0;
        if (a_le_b || a_ge_b) return (k == ExprKind::kMin) == a_le_b ? a : b;
        return rebuild();
      }
      default:
        return simplify_compare(k, a, b, rebuild);
    }
  }

  // Integer product: a constant factor scales the linear form; two non-constant factors form
  // one atom, with each factor's common divisor pulled out as the coefficient.
  Expr simplify_mul(const Expr& a, const Expr& b) {
    LinearSum la = to_linear(a), lb = to_linear(b);
    if (lb.is_const()) {
      la.scale(lb.constant);
      return finish(std::move(la));
    }
    if (la.is_const()) {
      lb.scale(la.constant);
      return finish(std::move(lb));
    }
    auto primitive = [](const LinearSum& s) {
      int64_t g = s.content();
      return s.terms.front().coeff < 0 ? wrap_mul(g, -1) : g;
    };
    int64_t ga = primitive(la), gb = primitive(lb);
    LinearSum r(a.dtype());
    r.add_term(make_binary(ExprKind::kMul, to_expr(divide(la, ga)), to_expr(divide(lb, gb))),
               wrap_mul(ga, gb));
    return to_expr(r);
  }

  Expr finish(LinearSum s) { return to_expr(fuse_divmod(std::move(s))); }

  // Recombines split divisions: x//c*c*k + x%c*k -> x*k and x*k - x//c*c*k -> x%c*k (the
  // latter when every term of x is present with the matching coefficient).
  LinearSum fuse_divmod(LinearSum s) {
    for (int guard = 0; guard < 32; ++guard) {
      bool changed = false;
      for (size_t i = 0; i < s.terms.size() && !changed; ++i) {
        auto div = match_div(s.terms[i].atom, ExprKind::kFloorDiv);
        if (!div || s.terms[i].coeff % div->c != 0) continue;
        int64_t k = s.terms[i].coeff / div->c;
        for (size_t j = 0; j < s.terms.size(); ++j) {
          auto mod = match_div(s.terms[j].atom, ExprKind::kFloorMod);
          if (mod && mod->c == div->c && s.terms[j].coeff == k && expr_equal(mod->x, div->x)) {
            LinearSum x = to_linear(div->x);
            x.scale(k);
            s = splice(s, std::min(i, j), static_cast<std::ptrdiff_t>(std::max(i, j)), x,
                       LinearSum(s.dtype));
            changed = true;
            break;
          }
        }
        if (changed) break;
        // x*(-k) ... + x//c*c*k: the terms of x must all be present to cancel.
        LinearSum x = to_linear(div->x);
        if (x.terms.empty()) continue;
        bool present = true;
        for (const LinearTerm& t : x.terms) {
          bool found = false;
          for (const LinearTerm& u : s.terms)
            if (expr_equal(u.atom, t.atom)) found = u.coeff == wrap_mul(t.coeff, -k);
          present = present && found;
        }
        if (!present) continue;
        // k*c*floordiv(x, c) = k*x - k*floormod(x, c); the k*x cancels the terms found above.
        LinearSum mod = to_linear(mod_linear(x, div->c));
        mod.scale(wrap_mul(k, -1));
        x.scale(wrap_mul(k, -1));
        s = splice(s, i, -1, mod, x);
        changed = true;
      }
      if (!changed) break;
    }
    return s;
  }

  // floordiv(s, c), c > 0.
  Expr div_linear(LinearSum s, int64_t c) {
    s = fuse_divmod(std::move(s));
    if (s.is_const()) return make_int(tyche::floordiv(s.constant, c), s.dtype);
    if (int64_t g = gcd_const(s.content(), c); g > 1) {
      s = divide(s, g);
      c /= g;
    }
    if (c == 1) return to_expr(s);
    // s = q*c + r: floordiv(s, c) = q + floordiv(r, c).
    LinearSum q(s.dtype), r(s.dtype, s.constant);
    for (const LinearTerm& t : s.terms) {
      if (t.coeff % c == 0)
        q.add_term(t.atom, t.coeff / c);
      else
        r.add_term(t.atom, t.coeff);
    }
    ConstIntBound rb = bound(r);
    if (finite(rb) && tyche::floordiv(rb.min_value, c) == tyche::floordiv(rb.max_value, c)) {
      q.constant = wrap_add(q.constant, tyche::floordiv(rb.min_value, c));
      return finish(std::move(q));
    }
    if (r.constant % c == 0) {
      q.constant = wrap_add(q.constant, r.constant / c);
      r.constant = 0;
    }
    Expr inner;
    if (r.terms.size() == 1 && r.terms[0].coeff == 1) {
      const Expr& atom = r.terms[0].atom;
      int64_t cc;
      if (auto d = match_div(atom, ExprKind::kFloorDiv);
          d && !__builtin_mul_overflow(d->c, c, &cc)) {
        // floordiv(floordiv(x, c1) + k, c) = floordiv(x + k*c1, c1*c).
        LinearSum x = to_linear(d->x);
        x.constant = wrap_add(x.constant, wrap_mul(r.constant, d->c));
        inner = div_linear(std::move(x), cc);
      } else if (auto m = match_div(atom, ExprKind::kFloorMod);
                 m && r.constant == 0 && m->c % c == 0) {
        // floordiv(floormod(x, c1), c) = floormod(floordiv(x, c), c1/c) when c divides c1.
        inner = mod_linear(to_linear(div_linear(to_linear(m->x), c)), m->c / c);
      }
    }
    if (!inner.defined())
      inner = make_binary(ExprKind::kFloorDiv, to_expr(r), make_int(c, s.dtype));
    q.add(to_linear(inner));
    return finish(std::move(q));
  }

  // floormod(s, c), c > 0.
  Expr mod_linear(LinearSum s, int64_t c) {
    s = fuse_divmod(std::move(s));
    if (c == 1) return make_int(0, s.dtype);
    if (s.is_const()) return make_int(tyche::floormod(s.constant, c), s.dtype);
    if (int64_t g = gcd_const(s.content(), c); g > 1) {
      // floormod(g*s, g*c) = g*floormod(s, c).
      LinearSum r = to_linear(mod_linear(divide(s, g), c / g));
      r.scale(g);
      return finish(std::move(r));
    }
    // Multiples of c vanish; coefficients at least c reduce modulo c.
    LinearSum r(s.dtype, tyche::floormod(s.constant, c));
    for (const LinearTerm& t : s.terms) {
      int64_t k = (t.coeff >= c || t.coeff <= -c) ? tyche::floormod(t.coeff, c) : t.coeff;
      r.add_term(t.atom, k);
    }
    if (r.is_const()) return make_int(r.constant, s.dtype);
    ConstIntBound rb = bound(r);
    if (finite(rb) && tyche::floordiv(rb.min_value, c) == tyche::floordiv(rb.max_value, c)) {
      r.constant = wrap_add(r.constant, wrap_mul(tyche::floordiv(rb.min_value, c), -c));
      return finish(std::move(r));
    }
    if (r.terms.size() == 1 && r.terms[0].coeff == 1) {
      // floormod(floormod(x, c1) + k, c) = floormod(x + k, c) when c divides c1.
      if (auto m = match_div(r.terms[0].atom, ExprKind::kFloorMod); m && m->c % c == 0) {
        LinearSum x = to_linear(m->x);
        x.constant = wrap_add(x.constant, r.constant);
        return mod_linear(std::move(x), c);
      }
    }
    return make_binary(ExprKind::kFloorMod, finish(std::move(r)), make_int(c, s.dtype));
  }

  // Integer comparison: decided from the bounds of a - b; otherwise written with positive
  // terms on the left, negated negative terms on the right, and the constant on one side.
  template <typename Rebuild>
  Expr simplify_compare(ExprKind k, const Expr& a, const Expr& b, const Rebuild& rebuild) {
    if (!is_comparison(k)) return rebuild();
    LinearSum d = to_linear(a);
    d.add(to_linear(b), -1);
    d = fuse_divmod(std::move(d));
    ConstIntBound bd = bound(d);
    std::optional<bool> r;
    switch (k) {
      case ExprKind::kLT:
        r = bd.max_value < 0    ? std::optional(true)
            : bd.min_value >= 0 ? std::optional(false)
                                : std::nullopt;
        break;
      case ExprKind::kLE:
        r = bd.max_value <= 0  ? std::optional(true)
            : bd.min_value > 0 ? std::optional(false)
                               : std::nullopt;
        break;
      case ExprKind::kGT:
        r = bd.min_value > 0    ? std::optional(true)
            : bd.max_value <= 0 ? std::optional(false)
                                : std::nullopt;
        break;
      case ExprKind::kGE:
        r = bd.min_value >= 0  ? std::optional(true)
            : bd.max_value < 0 ? std::optional(false)
                               : std::nullopt;
        break;
      case ExprKind::kEQ:
        if (bd.min_value == 0 && bd.max_value == 0)
          r = true;
        else if (bd.min_value > 0 || bd.max_value < 0)
          r = false;
        break;
      default:
        if (bd.min_value == 0 && bd.max_value == 0)
          r = false;
        else if (bd.min_value > 0 || bd.max_value < 0)
          r = true;
        break;
    }
    if (r) return make_bool(*r);
    LinearSum p(d.dtype), q(d.dtype);
    for (const LinearTerm& t : d.terms) {
      if (t.coeff > 0)
        p.add_term(t.atom, t.coeff);
      else
        q.add_term(t.atom, wrap_mul(t.coeff, -1));
    }
    // d = p - q + constant, so `d op 0` is `p + constant op q`.
    if (p.terms.empty()) {
      q.constant = 0;
      return make_binary(mirror(k), to_expr(q), make_int(d.constant, d.dtype));
    }
    if (q.terms.empty())
      return make_binary(k, to_expr(p), make_int(wrap_mul(d.constant, -1), d.dtype));
    if (d.constant >= 0)
      p.constant = d.constant;
    else
      q.constant = wrap_mul(d.constant, -1);
    return make_binary(k, to_expr(p), to_expr(q));
  }

  template <typename Rebuild>
  Expr simplify_logic(ExprKind k, const Expr& a, const Expr& b, const Rebuild& rebuild) {
    if (!a.dtype().is_scalar()) return rebuild();
    bool is_and = k == ExprKind::kAnd;
    // x and True = x, x and False = False; dually for or.
    if (auto c = as_const_int(a)) return (*c != 0) == is_and ? b : make_bool(!is_and);
    if (auto c = as_const_int(b)) return (*c != 0) == is_and ? a : make_bool(!is_and);
    if (expr_equal(a, b)) return a;
    return rebuild();
  }

  Expr simplify_not(const Expr& a, const Expr& self) {
    if (auto c = as_const_int(a)) return make_bool(*c == 0);
    if (auto* n = a.as<NotNode>()) return n->a;
    if (is_comparison(a.kind())) {
      auto* n = static_cast<const BinaryNode*>(a.get());
      ExprKind k = a.kind();
      // Negating an ordering is wrong for NaN, so only integer orderings are negated.
      if (k == ExprKind::kEQ || k == ExprKind::kNE || n->a.dtype().is_int_like()) {
        Expr x = make_binary(negate(k), n->a, n->b);
        return is_linear_type(n->a.dtype())
                   ? simplify_compare(negate(k), n->a, n->b, [&] { return x; })
                   : x;
      }
    }
    return a.same_as(self.as<NotNode>()->a) ? self : !a;
  }

  // A widening integer cast distributes over a sum whose value fits the narrow type, so mixed
  // int32/int64 index arithmetic still cancels: int64(i*4 + j) - int64(i)*4 -> int64(j).
  Expr simplify_cast(const CastNode* n, const Expr& self) {
    Expr v = simplify(n->value);
    DataType from = v.dtype(), to = n->dtype;
    if (is_linear_type(from) && is_linear_type(to) && to.bits() > from.bits() &&
        (v.kind() == ExprKind::kAdd || v.kind() == ExprKind::kSub || v.kind() == ExprKind::kMul)) {
      ConstIntBound b = a_->const_int_bound(v);
      int64_t half = from.bits() >= 64 ? ConstIntBound::kPosInf : int64_t{1} << (from.bits() - 1);
      if (b.min_value >= -half && b.max_value < half) {
        LinearSum s = to_linear(v), r(to, s.constant);
        for (const LinearTerm& t : s.terms) r.add_term(cast(to, t.atom), t.coeff);
        return finish(std::move(r));
      }
    }
    return v.same_as(n->value) ? self : cast(to, v);
  }

  Expr simplify_select(const SelectNode* n, const Expr& self) {
    Expr c = simplify(n->condition);
    if (auto v = as_const_int(c)) return simplify(*v ? n->true_value : n->false_value);
    Expr t = simplify(n->true_value), f = simplify(n->false_value);
    if (expr_equal(t, f)) return t;
    if (c.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value))
      return self;
    return select(c, t, f);
  }

  // A let of a constant or variable is inlined; otherwise the body is simplified knowing the
  // bounds of the value.
  Expr simplify_let(const LetNode* n, const Expr& self) {
    Expr v = simplify(n->value);
    const VarNode* key = n->var.get();
    std::optional<Analyzer::VarInfo> saved;
    if (auto it = a_->vars_.find(key); it != a_->vars_.end()) saved = it->second;
    bool inline_value = v.kind() == ExprKind::kIntImm || v.kind() == ExprKind::kVar ||
                        v.kind() == ExprKind::kFloatImm;
    a_->vars_[key] = Analyzer::VarInfo{n->var, a_->const_int_bound(v), inline_value ? v : Expr()};
    Expr body = simplify(n->body);
    if (saved)
      a_->vars_[key] = *saved;
    else
      a_->vars_.erase(key);
    if (inline_value || !uses_var(body, key)) return body;
    if (v.same_as(n->value) && body.same_as(n->body)) return self;
    return let(n->var, v, body);
  }
};

Expr Analyzer::simplify(const Expr& e) {
  if (!e.defined()) return e;
  return Simplifier(this).simplify(e);
}

}  // namespace tyche::arith
