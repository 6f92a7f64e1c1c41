// Element-wise comparison of a computed array against an expected one: how every check of a
// program's output (tests, the runner, tyche run and space) decides it is right.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "runtime/ndarray.h"

namespace tyche::runtime {

struct Comparison {
  bool ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;  // over elements whose expected value is non-zero
  int64_t mismatches = 0;
  std::string message;  // one line: "ok" or what differs and where
};

// Default tolerances for an element type: float32 1e-4, float16/bfloat16 1e-2, float64 1e-9,
// integers and bool 0 (exact).
struct Tolerance {
  double rtol = 0, atol = 0;
};
Tolerance default_tolerance(DataType dtype);

// Element-wise check: integers/bool exact; floats |a - e| <= atol * scale + rtol * |e| with the
// defaults of `expected`'s dtype, where scale = max(1, max |expected|): the absolute tolerance
// follows the output's magnitude, as a sum's rounding error follows its partial sums (C3D-3 sums
// 6912 products, its outputs reach ~100 and reordering the sum moves one near zero by ~5e-4). NaN
// in `actual` where `expected` is not NaN is a mismatch (NaN matches NaN); infinities must match
// exactly. A shape or dtype mismatch gives ok = false.
Comparison compare(const NDArray& actual, const NDArray& expected);
Comparison compare(const NDArray& actual, const NDArray& expected, Tolerance tolerance);

// A program's outputs against the expected ones, in order: ok when every one matches. The
// message names each output that does not ("output 1 (Z): 3 of 64 elements differ ...", with
// its name when `names` has one); max_abs_error is over all of them.
struct OutputsComparison {
  bool ok = true;
  double max_abs_error = 0;
  std::string message;  // empty when ok; one line per mismatching output
};
OutputsComparison compare_outputs(std::span<const NDArray> actual,
                                  std::span<const NDArray> expected,
                                  std::span<const std::string> names = {});

}  // namespace tyche::runtime
