// The arithmetic analyzer: what is known about variables (ranges, substitutions) plus the
// queries built on it (constant bounds, simplification, proofs). Schedule primitives and
// lowering passes own one Analyzer per transformation and bind the loop/iter vars in scope.
#pragma once

#include <unordered_map>

#include "arith/const_int_bound.h"
#include "ir/expr.h"

namespace tyche::arith {

class Analyzer {
 public:
  // `v` ranges over [r.min, r.min + r.extent); the range is reduced to constant bounds using
  // what is known when bind is called. A later bind of the same variable replaces the earlier.
  void bind(const ir::Var& v, const ir::Range& r);
  // `v` stands for `value`: simplify substitutes it and bounds of `v` are those of `value`.
  void bind(const ir::Var& v, const ir::Expr& value);
  // True when `v` has a range or a value bound.
  bool is_bound(const ir::Var& v) const;

  // Constant bounds of an integer (or bool) expression under the bound variables; unknown
  // parts are unbounded. Float expressions give everything().
  ConstIntBound const_int_bound(const ir::Expr& e);

  // An equivalent, canonical expression: constants folded; integer sums in linear form with
  // like terms merged (terms kept in order of first appearance); floordiv/floormod by positive
  // constants split and decided by bounds; min/max/comparisons decided by bounds; boolean and
  // select folding. Float arithmetic is only constant-folded, never reassociated. Idempotent.
  ir::Expr simplify(const ir::Expr& e);

  // True only when `cond` holds for every value of the bound variables (false = not proven).
  bool can_prove(const ir::Expr& cond);
  bool can_prove_equal(const ir::Expr& a, const ir::Expr& b);

 private:
  friend class Simplifier;
  friend class BoundEvaluator;
  struct VarInfo {
    ir::Var var;  // keeps the key alive
    ConstIntBound bound;
    ir::Expr value;  // defined when the variable is a substitution
  };
  std::unordered_map<const ir::VarNode*, VarInfo> vars_;
};

}  // namespace tyche::arith
