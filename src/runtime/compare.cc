#include "runtime/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tyche::runtime {

namespace {

// Multi-dimensional index of flat element `flat` in a row-major array of `shape`.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

// Exact integer read. (NDArray::get_flat_int is not used: it returns negative int32 values as
// their unsigned 32-bit pattern.)
int64_t int_at(const NDArray& a, int64_t i) {
  DataType t = a.dtype();
  if (t.is_bool()) return a.data_as<uint8_t>()[i] != 0;
  bool s = t.is_int();
  switch (t.bits()) {
    case 8:
      return s ? int64_t{a.data_as<int8_t>()[i]} : int64_t{a.data_as<uint8_t>()[i]};
    case 16:
      return s ? int64_t{a.data_as<int16_t>()[i]} : int64_t{a.data_as<uint16_t>()[i]};
    case 32:
      return s ? int64_t{a.data_as<int32_t>()[i]} : int64_t{a.data_as<uint32_t>()[i]};
    default:
      return a.data_as<int64_t>()[i];
  }
}

}  // namespace

Tolerance default_tolerance(DataType dtype) {
  if (!dtype.is_float()) return {0, 0};
  if (dtype.is_bfloat16() || dtype.bits() == 16) return {1e-2, 1e-2};
  if (dtype.bits() == 64) return {1e-9, 1e-9};
  // float32: sums of a few thousand O(1) terms in any order stay well inside; a missed term or
  // a wrong index does not.
  return {1e-4, 1e-4};
}

Comparison compare(const NDArray& actual, const NDArray& expected) {
  return compare(actual, expected, default_tolerance(expected.dtype()));
}

Comparison compare(const NDArray& actual, const NDArray& expected, Tolerance tol) {
  Comparison r;
  if (!actual.defined() || !expected.defined()) {
    r.ok = false;
    r.message = actual.defined() ? "expected array is undefined" : "actual array is undefined";
    return r;
  }
  if (actual.shape() != expected.shape()) {
    r.ok = false;
    r.message = fmt::format("shape mismatch: actual [{}] vs expected [{}]",
                            fmt::join(actual.shape(), ", "), fmt::join(expected.shape(), ", "));
    return r;
  }
  if (actual.dtype() != expected.dtype()) {
    r.ok = false;
    r.message = fmt::format("dtype mismatch: actual {} vs expected {}", actual.dtype().str(),
                            expected.dtype().str());
    return r;
  }
  const double inf = std::numeric_limits<double>::infinity();
  bool exact = !expected.dtype().is_float();
  double scale = 1;
  for (int64_t i = 0; !exact && i < expected.numel(); ++i) {
    double e = std::fabs(expected.get_flat(i));
    if (std::isfinite(e)) scale = std::max(scale, e);
  }
  const double atol = tol.atol * scale;
  int64_t first = -1;
  double first_a = 0, first_e = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a, e;
    bool bad;
    if (exact) {
      int64_t ai = int_at(actual, i), ei = int_at(expected, i);
      a = static_cast<double>(ai);
      e = static_cast<double>(ei);
      bad = ai != ei;
      if (bad) r.max_abs_error = std::max(r.max_abs_error, std::fabs(a - e));
      if (bad && ei != 0)
        r.max_rel_error = std::max(r.max_rel_error, std::fabs(a - e) / std::fabs(e));
    } else {
      a = actual.get_flat(i);
      e = expected.get_flat(i);
      if (std::isnan(e) || std::isnan(a)) {
        bad = std::isnan(a) != std::isnan(e);
        if (bad) r.max_abs_error = r.max_rel_error = inf;
      } else if (std::isinf(e) || std::isinf(a)) {
        bad = a != e;
        if (bad) r.max_abs_error = r.max_rel_error = inf;
      } else {
        double diff = std::fabs(a - e);
        bad = diff > atol + tol.rtol * std::fabs(e);
        r.max_abs_error = std::max(r.max_abs_error, diff);
        if (e != 0) r.max_rel_error = std::max(r.max_rel_error, diff / std::fabs(e));
      }
    }
    if (bad) {
      if (first < 0) first = i, first_a = a, first_e = e;
      ++r.mismatches;
    }
  }
  r.ok = r.mismatches == 0;
  if (r.ok) {
    r.message = fmt::format("ok (max abs error {:.3g}, max rel error {:.3g})", r.max_abs_error,
                            r.max_rel_error);
  } else {
    r.message = fmt::format(
        "{} of {} elements differ (rtol {:.3g}, atol {:.3g}; max abs error {:.3g}, max rel error "
        "{:.3g}); "
        "first at [{}]: actual {}, expected {}",
        r.mismatches, expected.numel(), tol.rtol, atol, r.max_abs_error, r.max_rel_error,
        fmt::join(unflatten(first, expected.shape()), ", "), first_a, first_e);
  }
  return r;
}

OutputsComparison compare_outputs(std::span<const NDArray> actual,
                                  std::span<const NDArray> expected,
                                  std::span<const std::string> names) {
  OutputsComparison out;
  if (actual.size() != expected.size()) {
    out.ok = false;
    out.message =
        fmt::format("the program has {} outputs, the reference {}", actual.size(), expected.size());
    return out;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    Comparison c = compare(actual[i], expected[i]);
    out.max_abs_error = std::max(out.max_abs_error, c.max_abs_error);
    if (c.ok) continue;
    out.ok = false;
    std::string which =
        i < names.size() ? fmt::format("output {} ({})", i, names[i]) : fmt::format("output {}", i);
    out.message += fmt::format("{}{}: {}", out.message.empty() ? "" : "\n", which, c.message);
  }
  return out;
}

}  // namespace tyche::runtime
