// compare(): tolerances per dtype, NaN/inf handling, exact integers and shape/dtype mismatches.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/compare.h"

namespace tyche::runtime {
namespace {

NDArray filled(std::vector<int64_t> shape, DataType dtype, std::vector<double> values) {
  NDArray a(std::move(shape), dtype);
  for (size_t i = 0; i < values.size(); ++i) a.set_flat(static_cast<int64_t>(i), values[i]);
  return a;
}

TEST(Compare, IdenticalArraysMatch) {
  NDArray a = filled({2, 2}, kFloat32, {1, 2, 3, 4});
  Comparison c = compare(a, a.copy());
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.max_abs_error, 0);
}

TEST(Compare, ShapeMismatch) {
  Comparison c = compare(NDArray({2, 3}, kFloat32), NDArray({3, 2}, kFloat32));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("shape mismatch"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("[2, 3]"), std::string::npos) << c.message;
  EXPECT_FALSE(compare(NDArray({6}, kFloat32), NDArray({2, 3}, kFloat32)).ok);
}

TEST(Compare, DtypeMismatch) {
  Comparison c = compare(NDArray({2}, kFloat64), NDArray({2}, kFloat32));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("dtype"), std::string::npos) << c.message;
}

TEST(Compare, Float32ToleranceBoundary) {
  // |a - e| <= 1e-4 * max(1, max |e|) + 1e-4 * |e|: with values up to 1, 1e-4 near zero.
  NDArray expected = filled({2}, kFloat32, {1, 0});
  EXPECT_TRUE(compare(filled({2}, kFloat32, {1.00019, 0.00009}), expected).ok);
  Comparison c = compare(filled({2}, kFloat32, {1.00021, 0.00009}), expected);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_NEAR(c.max_abs_error, 0.00021, 1e-6);
  EXPECT_NEAR(c.max_rel_error, 0.00021, 1e-6);
  EXPECT_NE(c.message.find("first at [0]"), std::string::npos) << c.message;
  EXPECT_FALSE(compare(filled({2}, kFloat32, {1, 0.00012}), expected).ok);  // atol near zero
}

TEST(Compare, AbsoluteToleranceFollowsTheOutputsMagnitude) {
  // Outputs up to 100 (a long sum): a near-zero element may be off by 1e-4 * 100 = 0.01, as
  // reordering the sum moves it; a wrong element is off by far more.
  NDArray expected = filled({3}, kFloat32, {100, -40, 0});
  EXPECT_TRUE(compare(filled({3}, kFloat32, {100, -40, 0.0095}), expected).ok);
  Comparison c = compare(filled({3}, kFloat32, {100, -40, 0.0105}), expected);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("atol 0.01;"), std::string::npos) << c.message;  // the tolerance applied
  EXPECT_FALSE(compare(filled({3}, kFloat32, {100, -40.5, 0}), expected).ok);
  // NaN and infinity do not widen it.
  NDArray with_inf = filled({2}, kFloat32, {std::numeric_limits<double>::infinity(), 0});
  EXPECT_FALSE(
      compare(filled({2}, kFloat32, {std::numeric_limits<double>::infinity(), 0.00012}), with_inf)
          .ok);
}

TEST(Compare, ToleranceDependsOnDtype) {
  NDArray e16 = filled({1}, DataType::Float(16), {1.0});
  EXPECT_TRUE(
      compare(filled({1}, DataType::Float(16), {1.0078125}), e16).ok);  // 8 ulps, inside 1e-2
  EXPECT_FALSE(compare(filled({1}, DataType::Float(16), {1.03125}), e16).ok);
  NDArray ebf = filled({1}, DataType::BFloat16(), {1.0});
  EXPECT_TRUE(compare(filled({1}, DataType::BFloat16(), {1.0078125}), ebf).ok);
  NDArray e64 = filled({1}, kFloat64, {1.0});
  EXPECT_TRUE(compare(filled({1}, kFloat64, {1.0 + 1e-12}), e64).ok);
  EXPECT_FALSE(compare(filled({1}, kFloat64, {1.0 + 1e-7}), e64).ok);
  EXPECT_FALSE(compare(filled({1}, kFloat32, {1.001}), filled({1}, kFloat32, {1.0})).ok);
  // Explicit tolerances override the defaults.
  EXPECT_TRUE(compare(filled({1}, kFloat32, {1.001}), filled({1}, kFloat32, {1.0}), {1e-2, 0}).ok);
}

TEST(Compare, NaNAndInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  NDArray expected = filled({4}, kFloat32, {1, nan, inf, -inf});
  EXPECT_TRUE(compare(filled({4}, kFloat32, {1, nan, inf, -inf}), expected).ok);  // NaN matches NaN
  Comparison c = compare(filled({4}, kFloat32, {nan, nan, inf, -inf}), expected);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  EXPECT_FALSE(compare(filled({4}, kFloat32, {1, 2, inf, -inf}), expected).ok);     // finite vs NaN
  EXPECT_FALSE(compare(filled({4}, kFloat32, {1, nan, -inf, -inf}), expected).ok);  // wrong sign
  EXPECT_FALSE(compare(filled({4}, kFloat32, {1, nan, 3e38, -inf}), expected).ok);  // finite vs inf
}

TEST(Compare, IntegersAreExact) {
  DataType i32 = DataType::Int(32);
  NDArray e({3}, i32), a({3}, i32);
  for (int i = 0; i < 3; ++i) e.set_flat_int(i, 1000000 + i), a.set_flat_int(i, 1000000 + i);
  EXPECT_TRUE(compare(a, e).ok);
  a.set_flat_int(2, 1000001);  // off by one at a relative 1e-6: still a mismatch
  Comparison c = compare(a, e);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.max_abs_error, 1);
  NDArray b1({2}, kBool), b2({2}, kBool);
  b1.set_flat_int(0, 1);
  EXPECT_FALSE(compare(b1, b2).ok);
  b2.set_flat_int(0, 1);
  EXPECT_TRUE(compare(b1, b2).ok);
}

TEST(Compare, MessageNamesFirstMismatchIndex) {
  NDArray e = filled({2, 3}, kFloat32, {0, 0, 0, 0, 0, 0});
  NDArray a = filled({2, 3}, kFloat32, {0, 0, 0, 0, 7, 9});
  Comparison c = compare(a, e);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_NE(c.message.find("first at [1, 1]"), std::string::npos) << c.message;
  EXPECT_EQ(c.message.find('\n'), std::string::npos);
}

TEST(Compare, EmptyArraysMatch) {
  EXPECT_TRUE(compare(NDArray({0, 3}, kFloat32), NDArray({0, 3}, kFloat32)).ok);
}

TEST(CompareOutputs, NamesEachMismatchingOutputAndKeepsTheLargestError) {
  std::vector<NDArray> expected = {filled({2}, kFloat32, {1, 2}), filled({2}, kFloat32, {3, 4}),
                                   filled({1}, kInt32, {5})};
  std::vector<NDArray> actual = {filled({2}, kFloat32, {1, 2}), filled({2}, kFloat32, {3, 9}),
                                 filled({1}, kInt32, {6})};
  std::vector<std::string> names = {"A", "B", "C"};
  OutputsComparison c = compare_outputs(actual, expected, names);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.max_abs_error, 5);
  EXPECT_NE(c.message.find("output 1 (B): "), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("\noutput 2 (C): "), std::string::npos) << c.message;
  EXPECT_EQ(c.message.find("output 0"), std::string::npos) << c.message;
  EXPECT_TRUE(compare_outputs(expected, expected).ok);
  EXPECT_TRUE(compare_outputs(expected, expected).message.empty());
  OutputsComparison fewer = compare_outputs(std::span(actual).first(2), expected);
  EXPECT_FALSE(fewer.ok);
  EXPECT_EQ(fewer.message, "the program has 2 outputs, the reference 3");
}

}  // namespace
}  // namespace tyche::runtime
