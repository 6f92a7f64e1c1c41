// Constant integer bounds of an expression: [min_value, max_value], inclusive. The sentinels
// kNegInf/kPosInf mean "unbounded"; all bound arithmetic saturates at them, so a bound is always
// sound even when an intermediate product would overflow int64.
#pragma once

#include <cstdint>
#include <limits>

namespace tyche::arith {

struct ConstIntBound {
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  // Symmetric with kPosInf so that negating a bound never overflows.
  static constexpr int64_t kNegInf = -kPosInf;

  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;

  static ConstIntBound everything() { return {kNegInf, kPosInf}; }
  static ConstIntBound point(int64_t v) { return {v, v}; }
  bool is_const() const { return min_value == max_value; }
  bool is_everything() const { return min_value == kNegInf && max_value == kPosInf; }
  bool contains(int64_t v) const { return min_value <= v && v <= max_value; }
  bool operator==(const ConstIntBound&) const = default;
};

// Saturating arithmetic on bound endpoints: an infinite operand gives an infinite result, and a
// finite result that overflows becomes the infinity of its sign.
int64_t sat_add(int64_t a, int64_t b);
int64_t sat_sub(int64_t a, int64_t b);
int64_t sat_mul(int64_t a, int64_t b);

}  // namespace tyche::arith
