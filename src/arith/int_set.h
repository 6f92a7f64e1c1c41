// Symbolic integer intervals: the values an index expression takes while some variables range
// over their domains and the others stay fixed (symbolic). Used to relax accesses over loops.
#pragma once

#include <unordered_map>

#include "arith/analyzer.h"
#include "ir/expr.h"

namespace tyche::arith {

using VarRangeMap = std::unordered_map<ir::Var, ir::Range, ir::RefHash, ir::RefEqual>;

// [min_value, max_value], inclusive. An undefined end is unbounded on that side.
struct IntervalSet {
  ir::Expr min_value, max_value;

  static IntervalSet point(const ir::Expr& e) { return {e, e}; }
  static IntervalSet everything() { return {}; }
  bool has_lower_bound() const { return min_value.defined(); }
  bool has_upper_bound() const { return max_value.defined(); }
  bool is_bounded() const { return has_lower_bound() && has_upper_bound(); }
  // Both ends are the same expression (compared exactly, variables by identity).
  bool is_point() const;
};

// The interval of `e` when each variable of `dom_map` ranges over its range (ranges may refer
// to other variables of dom_map: they are relaxed too). Variables outside dom_map stay
// symbolic. Exact for affine expressions in which each relaxed variable appears once after
// simplification; conservative otherwise (division, modulo, min/max, products via corners).
// The ends are simplified with `analyzer`.
IntervalSet eval_interval(const ir::Expr& e, const VarRangeMap& dom_map, Analyzer* analyzer);

// The smallest interval containing both (per-end min/max, simplified).
IntervalSet union_interval(const IntervalSet& a, const IntervalSet& b, Analyzer* analyzer);

}  // namespace tyche::arith
