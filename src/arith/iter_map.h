// Affine iter-map detection (after TVM's arith::DetectIterMap): are a block's bindings a
// quasi-affine, one-to-one map from its loop nest onto its iteration domain? Each binding is
// decomposed into a sum of splits of loop variables, floormod(floordiv(x, lower_factor),
// extent) * scale, where x is a loop variable or a fused group of splits (what fuse and split
// produce); the map is a bijection when each binding is a dense mixed-radix sum covering its
// domain and the splits of every loop variable tile it exactly once.
#pragma once

#include <string>
#include <vector>

#include "arith/analyzer.h"
#include "arith/int_set.h"
#include "ir/expr.h"

namespace tyche::arith {

struct IterMapBinding {
  // Loop variables the binding depends on, in order of first appearance.
  std::vector<ir::Var> loop_vars;
  // Per loop var: its coefficient when the binding uses it whole and linearly (binding =
  // ... + stride * var + ...); 0 when only part of it is used (through floordiv/floormod).
  std::vector<int64_t> strides;
  // The decomposition, e.g. "i*8 + j" or "(f // 8)*1 + ..."; for messages and tests.
  std::string form;
  int64_t extent = 1;  // number of values the binding takes
};

struct IterMapResult {
  bool ok = false;
  std::string reason;                    // one line, set when !ok
  std::vector<IterMapBinding> bindings;  // one per binding when ok
  std::vector<ir::Var> unused_loops;     // loop vars (extent > 1) no binding uses
};

// Checks that `bindings` (quasi-affine in the variables of `loop_ranges`, whose ranges must be
// constant) map the loops' joint range one-to-one onto the product of `iter_domains`:
// - binding k takes every value of [dom.min, dom.min + dom.extent) exactly once per value of
//   the other bindings, with constant extents; variables outside loop_ranges are symbolic
//   constants (they may appear only in the offset, e.g. an outer block's iter var);
// - every used loop variable is tiled by its splits exactly once. Loop variables no binding
//   mentions are allowed (the block instance merely repeats, as TVM's surjective level allows)
//   and are listed in unused_loops; a loop variable used only in part (e.g. {f // 8} alone) or
//   twice (e.g. {i, i}) is refused.
// With `allow_predicate`, a binding's image may exceed its domain and splits may be imperfect
// (ceil-divided outer parts), as after split by non-dividing factors: a predicate guards the
// extra iterations. Surjectivity is then only checked per binding. `predicate` (used only with
// allow_predicate) may tighten iterators: each conjunct `x < c`, x a loop var or a fused sum
// (e.g. i0*5 + i1 < 32), limits x to [0, c), so x // 8 of such an x has extent c / 8.
IterMapResult detect_iter_map(const std::vector<ir::Expr>& bindings, const VarRangeMap& loop_ranges,
                              const std::vector<ir::Range>& iter_domains, Analyzer* analyzer,
                              bool allow_predicate = false, const ir::Expr& predicate = ir::Expr());

}  // namespace tyche::arith
