#include "arith/iter_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "arith/linear.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "support/int_division.h"

namespace tyche::arith {
namespace {

// floormod(floordiv(mark, lower_factor), extent) * scale. A split is "top" when nothing of its
// mark lies above it (lower_factor * extent >= mark extent): then the floormod is a no-op and
// its extent may be a ceiling (an imperfect split).
struct Split {
  int mark;
  int64_t lower_factor, extent, scale;
  bool operator==(const Split&) const = default;
};

// A loop variable (var defined) or a fused group of splits: sum of source splits, whose scales
// form a dense mixed radix starting at 1.
struct Mark {
  ir::Var var;
  std::vector<Split> source;
  int64_t extent;
};

// sum(splits) + base + sym; sym (possibly undefined) holds variables that are not loops.
struct Sum {
  std::vector<Split> splits;
  int64_t base = 0;
  ir::Expr sym;
};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

class Rewriter {
 public:
  std::vector<Mark> marks;
  std::unordered_map<const ir::VarNode*, int> var_mark;
  std::unordered_map<const ir::VarNode*, int64_t> var_min;
  std::string error;

  std::optional<Sum> rewrite(const ir::Expr& e) {
    switch (e.kind()) {
      case ir::ExprKind::kIntImm:
        return Sum{{}, e.as<ir::IntImmNode>()->value, {}};
      case ir::ExprKind::kVar: {
        const auto* v = e.as<ir::VarNode>();
        auto it = var_mark.find(v);
        if (it == var_mark.end()) return Sum{{}, 0, e};
        Sum s{{}, var_min.at(v), {}};
        if (marks[it->second].extent > 1)
          s.splits.push_back({it->second, 1, marks[it->second].extent, 1});
        return s;
      }
      case ir::ExprKind::kAdd:
      case ir::ExprKind::kSub: {
        auto* b = e.as_binary();
        auto x = rewrite(b->a);
        if (!x) return std::nullopt;
        auto y = rewrite(b->b);
        if (!y) return std::nullopt;
        return add(*x, e.kind() == ir::ExprKind::kSub ? mul(*y, -1) : *y);
      }
      case ir::ExprKind::kMul: {
        auto* b = e.as_binary();
        auto x = rewrite(b->a);
        if (!x) return std::nullopt;
        auto y = rewrite(b->b);
        if (!y) return std::nullopt;
        if (x->splits.empty() && !x->sym.defined()) return mul(*y, x->base);
        if (y->splits.empty() && !y->sym.defined()) return mul(*x, y->base);
        if (x->splits.empty() && y->splits.empty())
          return Sum{{}, 0, sym_expr(*x, e.dtype()) * sym_expr(*y, e.dtype())};
        return fail(fmt::format("{} multiplies two loop-dependent terms", ir::to_string(e)));
      }
      case ir::ExprKind::kFloorDiv:
      case ir::ExprKind::kFloorMod:
        return divmod(e);
      default:
        return fail(fmt::format("{} is not quasi-affine", ir::to_string(e)));
    }
  }

  // Tightens the extent of the iterator `lhs` (a loop var or fused group) for each conjunct
  // `lhs < c` of the predicate, as TVM does; other conjuncts are ignored (they only restrict).
  void apply_predicate(const ir::Expr& p) {
    if (!p.defined()) return;
    auto* b = p.as_binary();
    if (!b) return;
    if (p.kind() == ir::ExprKind::kAnd) {
      apply_predicate(b->a);
      apply_predicate(b->b);
      return;
    }
    if (p.kind() != ir::ExprKind::kLT && p.kind() != ir::ExprKind::kLE) return;
    auto c = ir::as_const_int(b->b);
    if (!c) return;
    int64_t bound = p.kind() == ir::ExprKind::kLT ? *c : *c + 1;
    std::string saved = error;
    auto x = rewrite(b->a);
    error = saved;
    if (!x || x->sym.defined() || x->base != 0 || x->splits.empty()) return;
    auto split = as_single_split(x->splits, b->a);
    error = saved;
    if (!split || split->scale != 1 || split->lower_factor != 1 ||
        split->extent != marks[split->mark].extent)
      return;
    if (bound > 0 && bound < marks[split->mark].extent) marks[split->mark].extent = bound;
  }

  // Loop-dependent splits of `s` as one split (fusing several into a new mark).
  std::optional<Split> as_single_split(std::vector<Split> splits, const ir::Expr& e) {
    if (splits.size() == 1) return splits[0];
    std::sort(splits.begin(), splits.end(),
              [](const Split& a, const Split& b) { return a.scale < b.scale; });
    int64_t s0 = splits[0].scale;
    if (s0 <= 0) return fail_split(fmt::format("{} has a non-positive stride", ir::to_string(e)));
    int64_t extent = 1;
    for (size_t k = 0; k < splits.size(); ++k) {
      if (splits[k].scale != s0 * extent)
        return fail_split(fmt::format(
            "the terms of {} do not fuse into one iterator (strides are not a dense mixed radix)",
            ir::to_string(e)));
      extent *= splits[k].extent;
    }
    for (Split& sp : splits) sp.scale /= s0;
    for (size_t m = 0; m < marks.size(); ++m)
      if (!marks[m].var.defined() && marks[m].source == splits)
        return Split{static_cast<int>(m), 1, marks[m].extent, s0};
    marks.push_back({ir::Var(), splits, extent});
    return Split{static_cast<int>(marks.size()) - 1, 1, extent, s0};
  }

 private:
  // Under floormod by c only scales mod c matter, and the simplifier may have reduced them
  // ((f0*16 + f1) % 6 becomes (f0*4 + f1) % 6): pick scales congruent mod c that form a dense
  // mixed radix again when there are such; otherwise leave the splits as they are.
  static std::vector<Split> reduce_mod_scales(std::vector<Split> splits, int64_t c) {
    std::vector<Split> rest;
    for (const Split& sp : splits)
      if (tyche::floormod(sp.scale, c) != 0) rest.push_back(sp);
    if (rest.size() < 2) return rest;
    std::sort(rest.begin(), rest.end(), [&](const Split& a, const Split& b) {
      return tyche::floormod(a.scale, c) < tyche::floormod(b.scale, c);
    });
    std::vector<Split> out{rest[0]};
    out[0].scale = tyche::floormod(rest[0].scale, c);
    rest.erase(rest.begin());
    int64_t expected = out[0].scale * out[0].extent;
    while (!rest.empty()) {
      auto it = std::find_if(rest.begin(), rest.end(), [&](const Split& sp) {
        return tyche::floormod(sp.scale - expected, c) == 0;
      });
      if (it == rest.end()) return splits;
      out.push_back(*it);
      out.back().scale = expected;
      expected *= it->extent;
      rest.erase(it);
    }
    return out;
  }

  std::nullopt_t fail(std::string reason) {
    if (error.empty()) error = std::move(reason);
    return std::nullopt;
  }
  std::optional<Split> fail_split(std::string reason) {
    fail(std::move(reason));
    return std::nullopt;
  }

  static ir::Expr sym_expr(const Sum& s, DataType t) {
    ir::Expr c = ir::make_int(s.base, t);
    return s.sym.defined() ? (s.base == 0 ? s.sym : s.sym + c) : c;
  }

  static Sum add(Sum a, const Sum& b) {
    a.splits.insert(a.splits.end(), b.splits.begin(), b.splits.end());
    a.base += b.base;
    if (b.sym.defined()) a.sym = a.sym.defined() ? a.sym + b.sym : b.sym;
    return a;
  }

  static Sum mul(Sum a, int64_t c) {
    if (c == 0) return Sum{};
    for (Split& s : a.splits) s.scale *= c;
    a.base *= c;
    if (a.sym.defined()) a.sym = a.sym * ir::make_int(c, a.sym.dtype());
    return a;
  }

  bool is_top(const Split& s) const { return s.lower_factor * s.extent >= marks[s.mark].extent; }

  std::optional<Sum> divmod(const ir::Expr& e) {
    auto* b = e.as_binary();
    bool is_div = e.kind() == ir::ExprKind::kFloorDiv;
    auto c_opt = ir::as_const_int(b->b);
    if (!c_opt || *c_opt <= 0)
      return fail(
          fmt::format("{} divides by a non-constant or non-positive value", ir::to_string(e)));
    int64_t c = *c_opt;
    auto x = rewrite(b->a);
    if (!x) return std::nullopt;
    if (x->splits.empty()) {
      if (!x->sym.defined())
        return Sum{{}, is_div ? tyche::floordiv(x->base, c) : tyche::floormod(x->base, c), {}};
      ir::Expr s = sym_expr(*x, e.dtype());
      return Sum{{}, 0, is_div ? ir::floordiv(s, b->b) : ir::floormod(s, b->b)};
    }
    if (x->sym.defined())
      return fail(fmt::format("{} divides a sum with a symbolic offset", ir::to_string(e)));
    if (x->base % c != 0)
      return fail(fmt::format("{} divides a sum whose offset {} is not a multiple of {}",
                              ir::to_string(e), x->base, c));
    if (!is_div) x->splits = reduce_mod_scales(x->splits, c);
    if (x->splits.empty()) return Sum{};
    auto split = as_single_split(x->splits, e);
    if (!split) return std::nullopt;
    Sum out{{}, is_div ? x->base / c : 0, {}};
    Split s = *split;
    if (s.scale <= 0)
      return fail(fmt::format("{} divides a term with a non-positive stride", ir::to_string(e)));
    if (s.scale % c == 0) {  // c divides the stride: the division is exact, the modulo is zero
      if (is_div) out.splits.push_back({s.mark, s.lower_factor, s.extent, s.scale / c});
      return out;
    }
    if (c % s.scale != 0)
      return fail(fmt::format("{}: the divisor {} and the stride {} do not divide each other",
                              ir::to_string(e), c, s.scale));
    int64_t cc = c / s.scale;
    if (cc >= s.extent) {  // the whole split lies below the divisor
      if (!is_div) out.splits.push_back(s);
      return out;
    }
    if (s.extent % cc != 0 && !is_top(s))
      return fail(fmt::format("{}: the divisor {} does not divide the iterator extent {}",
                              ir::to_string(e), cc, s.extent));
    if (is_div)
      out.splits.push_back({s.mark, s.lower_factor * cc,
                            s.extent % cc == 0 ? s.extent / cc : ceil_div(s.extent, cc), 1});
    else
      out.splits.push_back({s.mark, s.lower_factor, cc, s.scale});
    return out;
  }
};

std::string mark_name(const Rewriter& rw, int m);

std::string split_str(const Rewriter& rw, const Split& s) {
  const Mark& mark = rw.marks[s.mark];
  std::string x = mark_name(rw, s.mark);
  if (s.lower_factor != 1) x = fmt::format("{} // {}", x, s.lower_factor);
  if (s.lower_factor * s.extent < mark.extent) x = fmt::format("{} % {}", x, s.extent);
  if (x.find(' ') != std::string::npos && s.scale != 1) x = fmt::format("({})", x);
  return s.scale == 1 ? x : fmt::format("{}*{}", x, s.scale);
}

std::string sum_str(const Rewriter& rw, const std::vector<Split>& splits) {
  std::string out;
  for (const Split& s : splits)
    out = out.empty() ? split_str(rw, s) : fmt::format("{} + {}", out, split_str(rw, s));
  return out.empty() ? "0" : out;
}

std::string mark_name(const Rewriter& rw, int m) {
  const Mark& mark = rw.marks[m];
  return mark.var.defined() ? mark.var.name() : fmt::format("({})", sum_str(rw, mark.source));
}

// Loop vars below a split, in order, with a stride when the var is used whole and linearly.
void collect_vars(const Rewriter& rw, const Split& s, bool whole, IterMapBinding* out) {
  const Mark& mark = rw.marks[s.mark];
  if (!mark.var.defined()) {
    for (const Split& src : mark.source) collect_vars(rw, src, false, out);
    return;
  }
  auto it = std::find_if(out->loop_vars.begin(), out->loop_vars.end(),
                         [&](const ir::Var& v) { return v.same_as(mark.var); });
  int64_t stride = whole && s.lower_factor == 1 && s.extent == mark.extent ? s.scale : 0;
  if (it == out->loop_vars.end()) {
    out->loop_vars.push_back(mark.var);
    out->strides.push_back(stride);
  } else {
    out->strides[it - out->loop_vars.begin()] = 0;
  }
}

}  // namespace

IterMapResult detect_iter_map(const std::vector<ir::Expr>& bindings, const VarRangeMap& loop_ranges,
                              const std::vector<ir::Range>& iter_domains, Analyzer* analyzer,
                              bool allow_predicate, const ir::Expr& predicate) {
  IterMapResult res;
  auto failed = [&](std::string reason) {
    res.ok = false;
    res.reason = std::move(reason);
    res.bindings.clear();
    res.unused_loops.clear();
    return res;
  };
  if (bindings.size() != iter_domains.size())
    return failed(
        fmt::format("{} bindings for {} iteration domains", bindings.size(), iter_domains.size()));

  Rewriter rw;
  // Mark order follows the map's order; it only affects messages and unused_loops' order.
  for (const auto& [v, r] : loop_ranges) {
    auto mn = ir::as_const_int(analyzer->simplify(r.min));
    auto ext = ir::as_const_int(analyzer->simplify(r.extent));
    if (!mn || !ext)
      return failed(fmt::format("loop variable '{}' has a non-constant range", v.name()));
    if (*ext < 1) return failed(fmt::format("loop variable '{}' has an empty range", v.name()));
    rw.var_mark[v.get()] = static_cast<int>(rw.marks.size());
    rw.var_min[v.get()] = *mn;
    rw.marks.push_back({v, {}, *ext});
  }

  if (allow_predicate) rw.apply_predicate(predicate);
  std::vector<Sum> sums;
  for (size_t k = 0; k < bindings.size(); ++k) {
    auto s = rw.rewrite(bindings[k]);
    if (!s) return failed(fmt::format("binding {}: {}", k, rw.error));
    sums.push_back(std::move(*s));
  }

  // Each binding: a dense mixed-radix sum of splits (strides 1, e0, e0*e1, ...) whose extent
  // and offset match its domain.
  for (size_t k = 0; k < sums.size(); ++k) {
    Sum& s = sums[k];
    std::sort(s.splits.begin(), s.splits.end(),
              [](const Split& a, const Split& b) { return a.scale < b.scale; });
    int64_t extent = 1;
    for (const Split& sp : s.splits) {
      if (sp.scale != extent)
        return failed(fmt::format(
            "binding {} ({}) is not one-to-one: its strides are not a dense mixed radix", k,
            ir::to_string(bindings[k])));
      extent *= sp.extent;
    }
    const ir::Range& dom = iter_domains[k];
    auto dext = ir::as_const_int(analyzer->simplify(dom.extent));
    if (!dext) return failed(fmt::format("iteration domain {} has a non-constant extent", k));
    ir::Expr offset = s.sym.defined() ? s.sym + ir::make_int(s.base, s.sym.dtype())
                                      : ir::make_int(s.base, dom.min.dtype());
    if (!analyzer->can_prove_equal(offset, dom.min))
      return failed(fmt::format("binding {} ({}) starts at {}, not at its domain minimum {}", k,
                                ir::to_string(bindings[k]),
                                ir::to_string(analyzer->simplify(offset)), ir::to_string(dom.min)));
    if (extent < *dext)
      return failed(fmt::format(
          "binding {} ({}) takes {} values, fewer than its domain extent {}: not surjective", k,
          ir::to_string(bindings[k]), extent, *dext));
    if (extent > *dext && !allow_predicate)
      return failed(fmt::format("binding {} ({}) takes {} values, more than its domain extent {}",
                                k, ir::to_string(bindings[k]), extent, *dext));
    IterMapBinding info;
    info.extent = extent;
    info.form = sum_str(rw, s.splits);
    for (const Split& sp : s.splits) collect_vars(rw, sp, true, &info);
    res.bindings.push_back(std::move(info));
  }

  // Every mark's splits must tile it exactly once; fused marks pass their sources down. Fused
  // marks are created after their sources, so visit marks from the last.
  std::vector<std::vector<Split>> uses(rw.marks.size());
  for (const Sum& s : sums)
    for (const Split& sp : s.splits) uses[sp.mark].push_back(sp);
  for (int m = static_cast<int>(rw.marks.size()) - 1; m >= 0; --m) {
    const Mark& mark = rw.marks[m];
    std::vector<Split>& u = uses[m];
    std::string name = mark.var.defined() ? fmt::format("loop variable '{}'", mark.var.name())
                                          : fmt::format("fused iterator {}", mark_name(rw, m));
    if (u.empty()) {
      if (mark.var.defined() && mark.extent > 1) res.unused_loops.push_back(mark.var);
      continue;
    }
    std::sort(u.begin(), u.end(),
              [](const Split& a, const Split& b) { return a.lower_factor < b.lower_factor; });
    int64_t covered = 1;
    for (const Split& sp : u) {
      if (sp.lower_factor < covered) return failed(fmt::format("{} is used more than once", name));
      if (sp.lower_factor > covered) return failed(fmt::format("{} is only partly used", name));
      covered *= sp.extent;
    }
    if (covered < mark.extent) return failed(fmt::format("{} is only partly used", name));
    if (covered > mark.extent) {
      const Split& top = u.back();
      bool ceil_top =
          top.lower_factor < mark.extent && top.extent == ceil_div(mark.extent, top.lower_factor);
      if (!ceil_top) return failed(fmt::format("{} is used more than once", name));
      if (!allow_predicate)
        return failed(
            fmt::format("{} (extent {}) is split imperfectly: the bindings are not surjective "
                        "without a predicate",
                        name, mark.extent));
    }
    for (const Split& src : mark.source) uses[src.mark].push_back(src);
  }
  res.ok = true;
  return res;
}

}  // namespace tyche::arith
