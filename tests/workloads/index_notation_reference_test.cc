// The index-notation evaluator is an oracle, so it is checked against loops written out by hand
// here, never against another path through the parser.
#include "workloads/index_notation_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/error.h"

namespace tyche::workloads {
namespace {

using runtime::NDArray;
using te::parse_index_notation;
using ::testing::HasSubstr;
using Shape = std::vector<int64_t>;

void expect_close(const NDArray& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.dtype(), kFloat32);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.get_flat(i), want[i], tol * (1 + std::abs(want[i]))) << "at flat index " << i;
}

TEST(IndexNotationReference, MatmulMatchesHandLoops) {
  const int64_t M = 5, N = 7, K = 3;
  auto p = parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=5,j=7,k=3");
  EXPECT_EQ(index_notation_input_shapes(p), (std::vector<Shape>{{M, K}, {K, N}}));
  EXPECT_EQ(index_notation_output_shapes(p), (std::vector<Shape>{{M, N}}));
  std::vector<NDArray> in = random_index_notation_inputs(p, 42);
  ASSERT_EQ(in.size(), 2u);
  std::vector<NDArray> out = evaluate_index_notation(p, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{M, N}));
  std::vector<double> want(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += in[0].get_flat(i * K + k) * in[1].get_flat(k * N + j);
      want[i * N + j] = acc;
    }
  expect_close(out[0], want);
  EXPECT_DOUBLE_EQ(index_notation_flop(p), 2.0 * M * N * K);
}

TEST(IndexNotationReference, ChainWithRelu) {
  const int64_t M = 4, N = 3, K = 6;
  auto p =
      parse_index_notation("C[i,j] += A[i,k]*B[k,j]; D[i,j] = max(C[i,j], 0.0)", "i=4,j=3,k=6");
  std::vector<NDArray> in = random_index_notation_inputs(p, 7);
  std::vector<NDArray> out = evaluate_index_notation(p, in);
  ASSERT_EQ(out.size(), 1u);  // C is an intermediate
  std::vector<double> want(M * N);
  int positives = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += in[0].get_flat(i * K + k) * in[1].get_flat(k * N + j);
      want[i * N + j] = std::max(static_cast<double>(static_cast<float>(acc)), 0.0);
      positives += acc > 0;
    }
  EXPECT_GT(positives, 0);
  EXPECT_LT(positives, M * N);
  expect_close(out[0], want);
  EXPECT_DOUBLE_EQ(index_notation_flop(p), 2.0 * M * N * K + M * N);
}

TEST(IndexNotationReference, MaxAndMinReductions) {
  auto p = parse_index_notation("Mx[i] max= A[i,j]; Mn[i] min= A[i,j] * -1", "i=3,j=5");
  NDArray a(Shape{3, 5}, kFloat32);
  for (int64_t i = 0; i < 15; ++i) a.set_flat(i, static_cast<double>((i * 7) % 11) - 5.0);
  std::vector<NDArray> out = evaluate_index_notation(p, {a});
  ASSERT_EQ(out.size(), 2u);
  std::vector<double> mx(3), mn(3);
  for (int i = 0; i < 3; ++i) {
    mx[i] = -1e30;
    mn[i] = 1e30;
    for (int j = 0; j < 5; ++j) {
      mx[i] = std::max(mx[i], a.get_flat(i * 5 + j));
      mn[i] = std::min(mn[i], -a.get_flat(i * 5 + j));
    }
  }
  expect_close(out[0], mx);
  expect_close(out[1], mn);
  // max=: 1 combine per point; min=: the negation and the multiply, plus the combine.
  EXPECT_DOUBLE_EQ(index_notation_flop(p), 15.0 + 3 * 15.0);
}

TEST(IndexNotationReference, StridedConvMatchesHandLoops) {
  // O[h, co] = sum_{r, ci} I[2h + r, ci] * W[r, ci, co]
  const int64_t H = 4, R = 3, CI = 2, CO = 3;
  auto p = parse_index_notation("O[h,co] += I[h*2 + r, ci] * W[r, ci, co]", "h=4,co=3,r=3,ci=2");
  const int64_t HI = (H - 1) * 2 + R;
  EXPECT_EQ(index_notation_input_shapes(p), (std::vector<Shape>{{HI, CI}, {R, CI, CO}}));
  std::vector<NDArray> in = random_index_notation_inputs(p, 3);
  std::vector<double> want(H * CO);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t co = 0; co < CO; ++co) {
      double acc = 0;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t ci = 0; ci < CI; ++ci)
          acc += in[0].get_flat((h * 2 + r) * CI + ci) * in[1].get_flat((r * CI + ci) * CO + co);
      want[h * CO + co] = acc;
    }
  expect_close(evaluate_index_notation(p, in)[0], want);
}

TEST(IndexNotationReference, ElementwiseFunctionsAndOffsets) {
  auto p = parse_index_notation(
      "Y[i] = -X[i+1] / 2 + exp(X[i]) - log(abs(X[i]) + 1) * sqrt(abs(X[4-i])) + tanh(X[i]) - "
      "sigmoid(X[0]) + "
      "min(X[i], 0.25)",
      "i=4");
  EXPECT_EQ(index_notation_input_shapes(p), (std::vector<Shape>{{5}}));
  std::vector<NDArray> in = random_index_notation_inputs(p, 11);
  auto x = [&](int64_t i) { return in[0].get_flat(i); };
  std::vector<double> want(4);
  for (int64_t i = 0; i < 4; ++i)
    want[i] = -x(i + 1) / 2 + std::exp(x(i)) -
              std::log(std::abs(x(i)) + 1) * std::sqrt(std::abs(x(4 - i))) + std::tanh(x(i)) -
              1 / (1 + std::exp(-x(0))) + std::min(x(i), 0.25);
  expect_close(evaluate_index_notation(p, in)[0], want);
  // neg, /, exp, log, abs, +, *, sqrt, abs, tanh, sigmoid, min and the five + / - joining terms.
  EXPECT_DOUBLE_EQ(index_notation_flop(p), 4.0 * 17);
}

TEST(IndexNotationReference, SoftmaxAndScalarReduction) {
  auto p = parse_index_notation(
      "M[i] max= A[i,j]; E[i,j] = exp(A[i,j] - M[i]); S[i] += E[i,j]; Y[i,j] = E[i,j] / S[i]; T[] "
      "+= Y[i,j]",
      "i=3,j=4");
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"T"}));
  std::vector<NDArray> in = random_index_notation_inputs(p, 5);
  std::vector<NDArray> out = evaluate_index_notation(p, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), Shape{});
  expect_close(out[0], {3.0});  // each softmax row sums to 1
}

TEST(IndexNotationReference, BroadcastAndCopy) {
  auto p = parse_index_notation("B[i,j] = A[j]", "i=2,j=3");
  NDArray a(Shape{3}, kFloat32);
  for (int i = 0; i < 3; ++i) a.set_flat(i, i + 0.5);
  expect_close(evaluate_index_notation(p, {a})[0], {0.5, 1.5, 2.5, 0.5, 1.5, 2.5});
  EXPECT_DOUBLE_EQ(index_notation_flop(p), 0.0);
}

TEST(IndexNotationReference, RejectsBadInputs) {
  auto p = parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=2,j=3,k=4");
  auto in = random_index_notation_inputs(p, 1);
  auto message = [&](const std::vector<NDArray>& args) -> std::string {
    try {
      evaluate_index_notation(p, args);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(message({in[0]}), HasSubstr("expected 2 input(s) (A, B), got 1"));
  EXPECT_THAT(message({in[0], NDArray(Shape{3, 4}, kFloat32)}),
              HasSubstr("input 'B' has shape [3, 4], expected [4, 3]"));
  EXPECT_THAT(message({in[0], NDArray(Shape{4, 3}, kFloat64)}),
              HasSubstr("input 'B' must be a float32 array"));
  auto typed =
      parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=2,j=3,k=4", "A=uint8,B=int8,C=int32");
  EXPECT_THROW(evaluate_index_notation(typed, in),
               Error);  // float32 inputs for uint8 and int8 tensors
}

// u8 x s8 -> s32 is exact: every product and sum checked against int64 loops, over the types' whole
// ranges (fill_random), with sums well past float32's 24-bit mantissa.
TEST(IndexNotationReference, IntegerMatmulIsExact) {
  const int64_t M = 3, N = 5, K = 700;
  auto p =
      parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=3,j=5,k=700", "A=uint8,B=int8,C=int32");
  std::vector<NDArray> in = random_index_notation_inputs(p, 9);
  ASSERT_EQ(in[0].dtype(), DataType::UInt(8));
  ASSERT_EQ(in[1].dtype(), DataType::Int(8));
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < in[1].numel(); ++i)
    lo = std::min(lo, in[1].get_flat_int(i)), hi = std::max(hi, in[1].get_flat_int(i));
  EXPECT_EQ(lo, -128);
  EXPECT_EQ(hi, 127);
  // Extreme values everywhere in row 0: 255 * -128 * 700 = -22,848,000, beyond float32's exact
  // range.
  for (int64_t k = 0; k < K; ++k) in[0].set_flat_int(k, 255), in[1].set_flat_int(k * N, -128);
  NDArray out = evaluate_index_notation(p, in)[0];
  ASSERT_EQ(out.dtype(), kInt32);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += in[0].get_flat_int(i * K + k) * in[1].get_flat_int(k * N + j);
      ASSERT_EQ(out.get_flat_int(i * N + j), acc) << i << "," << j;
    }
  EXPECT_EQ(out.get_flat_int(0), -22848000);
}

// An integer statement wraps as its output type does, and max compares wrapped values.
TEST(IndexNotationReference, NarrowIntegersWrap) {
  auto p = parse_index_notation("C[i] = A[i] * 2; D[i] = max(A[i] * 2, 0)", "i=2",
                                "A=int8,C=int8,D=int8");
  NDArray a(std::vector<int64_t>{2}, DataType::Int(8));
  a.set_flat_int(0, 100), a.set_flat_int(1, -3);
  auto out = evaluate_index_notation(p, {a});
  EXPECT_EQ(out[0].get_flat_int(0), -56);  // 200 wraps to -56 in int8
  EXPECT_EQ(out[0].get_flat_int(1), -6);
  EXPECT_EQ(out[1].get_flat_int(0), 0);  // max(-56, 0)
  EXPECT_EQ(out[1].get_flat_int(1), 0);
}

// bfloat16 inputs are exact in the double evaluation; a bfloat16 output rounds to nearest even.
TEST(IndexNotationReference, BFloat16RoundsWhenStored) {
  auto p = parse_index_notation("T[i] += A[i,k] * B[k]; C[i] = T[i]", "i=2,k=3",
                                "A=bfloat16,B=bfloat16,C=bfloat16");
  auto in = random_index_notation_inputs(p, 4);
  auto out = evaluate_index_notation(p, in);
  ASSERT_EQ(out[0].dtype(), DataType::BFloat16());
  for (int64_t i = 0; i < 2; ++i) {
    double acc = 0;
    for (int64_t k = 0; k < 3; ++k) acc += in[0].get_flat(i * 3 + k) * in[1].get_flat(k);
    NDArray want(std::vector<int64_t>{1}, DataType::BFloat16());
    want.set_flat(0, acc);
    EXPECT_EQ(out[0].get_flat(i), want.get_flat(0));
    EXPECT_NE(out[0].get_flat(i),
              static_cast<double>(static_cast<float>(acc)));  // rounded to 8 bits of mantissa
  }
}

}  // namespace
}  // namespace tyche::workloads
