// Linear forms of integer expressions, the canonical representation behind the simplifier:
// sum(coeff_i * atom_i) + constant, where atoms are the non-linear leaves (variables, divisions,
// min/max, products of two non-constants, loads, ...). Terms keep the order in which they first
// appear, which makes the printed result deterministic and stable under re-simplification.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/expr.h"

namespace tyche::arith {

// Exact structural equality where variables and buffers compare by identity (unlike
// ir::structural_equal, which is modulo renaming and so equates two different free variables).
bool expr_equal(const ir::Expr& a, const ir::Expr& b);

struct LinearTerm {
  ir::Expr atom;
  int64_t coeff;
};

struct LinearSum {
  DataType dtype;
  std::vector<LinearTerm> terms;  // no zero coefficients, no two equal atoms
  int64_t constant = 0;

  explicit LinearSum(DataType t, int64_t c = 0) : dtype(t), constant(c) {}

  bool is_const() const { return terms.empty(); }
  // Adds coeff * atom, merging with an equal atom already present.
  void add_term(const ir::Expr& atom, int64_t coeff);
  void add(const LinearSum& other, int64_t scale = 1);
  void scale(int64_t k);
  // Greatest common divisor of all coefficients and the constant (0 for the zero sum).
  int64_t content() const;
};

// Signed integer scalars are the only expressions rewritten in linear form (unsigned
// subtraction wraps and floats do not associate).
bool is_linear_type(DataType t);

// Splits `e` along +, - and multiplication by constants; everything else is an atom.
LinearSum to_linear(const ir::Expr& e);
// Builds the expression: positive terms, then negative terms, then the constant.
ir::Expr to_expr(const LinearSum& s);

// Wrapping int64 arithmetic: the simplifier assumes index arithmetic does not overflow, and
// must not invoke undefined behaviour when it does.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t gcd_const(int64_t a, int64_t b);  // non-negative

}  // namespace tyche::arith
