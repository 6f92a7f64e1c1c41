// The reference operators are the oracle for everything else, so they are checked against
// independent formulations written here (naive per-element gathers, hand-computed values and
// identities between ops) rather than against themselves.
#include "workloads/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "support/error.h"

namespace tyche::workloads {
namespace {

using runtime::NDArray;
using Shape = std::vector<int64_t>;
using Params = std::vector<int64_t>;

NDArray random(const Shape& shape, uint64_t seed) {
  NDArray a(shape, kFloat32);
  a.fill_uniform(seed);
  return a;
}

NDArray from_values(const Shape& shape, const std::vector<float>& values) {
  NDArray a(shape, kFloat32);
  EXPECT_EQ(a.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) a.set_flat(static_cast<int64_t>(i), values[i]);
  return a;
}

std::vector<NDArray> random_inputs(const std::string& op, const Params& p, uint64_t seed) {
  std::vector<NDArray> r;
  for (const Shape& s : reference_shapes(op, p).inputs) r.push_back(random(s, seed++));
  return r;
}

NDArray run1(const std::string& op, const Params& p, const std::vector<NDArray>& in) {
  auto outs = run_reference(op, p, in);
  EXPECT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].shape(), reference_shapes(op, p).outputs[0]);
  return outs[0];
}

void expect_near_reference(const NDArray& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.get_flat(i), want[i], tol * (1 + std::abs(want[i]))) << "at flat index " << i;
}

void expect_near_reference(const NDArray& got, const NDArray& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  std::vector<double> w(want.numel());
  for (int64_t i = 0; i < want.numel(); ++i) w[i] = want.get_flat(i);
  expect_near_reference(got, w, tol);
}

// Naive NHWC conv2d, one output element at a time: I[N,H,W,CI], W[K,K,CI/G,CO].
std::vector<double> naive_conv2d(const NDArray& in, const NDArray& w, int64_t k, int64_t s,
                                 int64_t p, int64_t dil, int64_t groups) {
  const int64_t n_n = in.shape()[0], h_n = in.shape()[1], w_n = in.shape()[2];
  const int64_t ci_n = in.shape()[3], co_n = w.shape()[3], cig = ci_n / groups;
  const int64_t oh_n = (h_n + 2 * p - dil * (k - 1) - 1) / s + 1;
  const int64_t ow_n = (w_n + 2 * p - dil * (k - 1) - 1) / s + 1;
  std::vector<double> out;
  for (int64_t n = 0; n < n_n; ++n)
    for (int64_t oh = 0; oh < oh_n; ++oh)
      for (int64_t ow = 0; ow < ow_n; ++ow)
        for (int64_t co = 0; co < co_n; ++co) {
          const int64_t g = co / (co_n / groups);
          double acc = 0;
          for (int64_t rh = 0; rh < k; ++rh)
            for (int64_t rw = 0; rw < k; ++rw)
              for (int64_t rc = 0; rc < cig; ++rc) {
                const int64_t ih = oh * s + rh * dil - p, iw = ow * s + rw * dil - p;
                if (ih < 0 || ih >= h_n || iw < 0 || iw >= w_n) continue;
                acc += in.get_flat(((n * h_n + ih) * w_n + iw) * ci_n + g * cig + rc) *
                       w.get_flat(((rh * k + rw) * cig + rc) * co_n + co);
              }
          out.push_back(acc);
        }
  return out;
}

TEST(Reference, OpsInWorkloadsOrder) {
  const std::vector<std::string> want = {"GMM", "C1D", "C2D", "C3D", "GRP", "DIL", "DEP",
                                         "T2D", "CAP", "NRM", "SFM", "CBR", "TBG", "DENSE_RELU"};
  EXPECT_EQ(reference_ops(), want);
}

TEST(Reference, GmmHandComputed) {
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]; second batch is the transpose case.
  auto x = from_values({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});
  auto y = from_values({2, 2, 2}, {5, 6, 7, 8, 1, 2, 3, 4});
  expect_near_reference(run1("GMM", {2, 2, 2, 2}, {x, y}),
                        std::vector<double>{19, 22, 43, 50, 3, 4, 1, 2});
}

TEST(Reference, C2dPointwiseEqualsGmm) {
  // A 1x1, stride-1 conv over NHWC is a matmul of [H*W, CI] by [CI, CO].
  const Params c2d = {1, 3, 4, 5, 6, 1, 1, 0};
  auto in = random_inputs("C2D", c2d, 1);
  auto conv = run1("C2D", c2d, in);
  NDArray x = in[0].copy(), y = in[1].copy();
  auto gmm =
      run1("GMM", {1, 12, 6, 5},
           {from_values({1, 12, 5},
                        std::vector<float>(x.data_as<float>(), x.data_as<float>() + x.numel())),
            from_values({1, 5, 6},
                        std::vector<float>(y.data_as<float>(), y.data_as<float>() + y.numel()))});
  ASSERT_EQ(conv.numel(), gmm.numel());
  for (int64_t i = 0; i < conv.numel(); ++i) EXPECT_NEAR(conv.get_flat(i), gmm.get_flat(i), 1e-6);
}

TEST(Reference, C2dMatchesNaiveGather) {
  const Params p = {2, 7, 6, 3, 5, 3, 2, 1};
  auto in = random_inputs("C2D", p, 10);
  auto out = run1("C2D", p, in);
  EXPECT_EQ(out.shape(), (Shape{2, 4, 3, 5}));
  expect_near_reference(out, naive_conv2d(in[0], in[1], 3, 2, 1, 1, 1));
}

TEST(Reference, C1dHandComputed) {
  // I = [1,2,3], W = [1,10,100], K=3, pad 1: O[l] = I[l-1] + 10 I[l] + 100 I[l+1].
  auto out = run1("C1D", {1, 3, 1, 1, 3, 1, 1},
                  {from_values({1, 3, 1}, {1, 2, 3}), from_values({3, 1, 1}, {1, 10, 100})});
  expect_near_reference(out, std::vector<double>{210, 321, 32});
  // Stride 2 keeps outputs 0 and 2.
  out = run1("C1D", {1, 3, 1, 1, 3, 2, 1},
             {from_values({1, 3, 1}, {1, 2, 3}), from_values({3, 1, 1}, {1, 10, 100})});
  expect_near_reference(out, std::vector<double>{210, 32});
}

TEST(Reference, C1dEqualsC2dWithUnitHeight) {
  // With K=1 the square 2-d kernel is also 1 wide, so C1D over L equals C2D over (H=1, W=L).
  const Params c1d = {2, 9, 4, 3, 1, 2, 0};
  auto in = random_inputs("C1D", c1d, 20);
  auto a = run1("C1D", c1d, in);
  auto i2 = from_values({2, 1, 9, 4}, std::vector<float>(in[0].data_as<float>(),
                                                         in[0].data_as<float>() + in[0].numel()));
  auto w2 = from_values({1, 1, 4, 3}, std::vector<float>(in[1].data_as<float>(),
                                                         in[1].data_as<float>() + in[1].numel()));
  auto b = run1("C2D", {2, 1, 9, 4, 3, 1, 2, 0}, {i2, w2});
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.get_flat(i), b.get_flat(i), 1e-6);
  // And a general C1D against a naive loop.
  const Params p = {1, 11, 3, 2, 5, 2, 2};
  in = random_inputs("C1D", p, 21);
  std::vector<double> want;
  for (int64_t l = 0; l < 6; ++l)
    for (int64_t co = 0; co < 2; ++co) {
      double acc = 0;
      for (int64_t rk = 0; rk < 5; ++rk)
        for (int64_t rc = 0; rc < 3; ++rc) {
          const int64_t il = l * 2 + rk - 2;
          if (il >= 0 && il < 11)
            acc += in[0].get_flat(il * 3 + rc) * in[1].get_flat((rk * 3 + rc) * 2 + co);
        }
      want.push_back(acc);
    }
  expect_near_reference(run1("C1D", p, in), want);
}

TEST(Reference, C3dMatchesNaiveGather) {
  const Params p = {1, 4, 5, 3, 2, 3, 3, 2, 1};
  auto in = random_inputs("C3D", p, 30);
  auto out = run1("C3D", p, in);
  EXPECT_EQ(out.shape(), (Shape{1, 2, 3, 2, 3}));
  std::vector<double> want;
  for (int64_t od = 0; od < 2; ++od)
    for (int64_t oh = 0; oh < 3; ++oh)
      for (int64_t ow = 0; ow < 2; ++ow)
        for (int64_t co = 0; co < 3; ++co) {
          double acc = 0;
          for (int64_t kd = 0; kd < 3; ++kd)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw)
                for (int64_t rc = 0; rc < 2; ++rc) {
                  const int64_t id = od * 2 + kd - 1, ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1;
                  if (id < 0 || id >= 4 || ih < 0 || ih >= 5 || iw < 0 || iw >= 3) continue;
                  acc += in[0].get_flat(((id * 5 + ih) * 3 + iw) * 2 + rc) *
                         in[1].get_flat((((kd * 3 + kh) * 3 + kw) * 2 + rc) * 3 + co);
                }
          want.push_back(acc);
        }
  expect_near_reference(out, want);
}

TEST(Reference, GrpEachGroupIsC2dOnItsSlice) {
  const int64_t h = 5, w = 6, ci = 8, co = 12, k = 3;
  const Params p = {1, h, w, ci, co, k, 1, 1};
  auto in = random_inputs("GRP", p, 40);
  EXPECT_EQ(in[1].shape(), (Shape{k, k, ci / 4, co}));
  auto out = run1("GRP", p, in);
  const int64_t cig = ci / 4, cog = co / 4;
  for (int64_t g = 0; g < 4; ++g) {
    NDArray xs({1, h, w, cig}, kFloat32), ws({k, k, cig, cog}, kFloat32);
    for (int64_t px = 0; px < h * w; ++px)
      for (int64_t c = 0; c < cig; ++c)
        xs.set_flat(px * cig + c, in[0].get_flat(px * ci + g * cig + c));
    for (int64_t t = 0; t < k * k * cig; ++t)
      for (int64_t c = 0; c < cog; ++c)
        ws.set_flat(t * cog + c, in[1].get_flat(t * co + g * cog + c));
    auto slice = run1("C2D", {1, h, w, cig, cog, k, 1, 1}, {xs, ws});
    for (int64_t px = 0; px < h * w; ++px)
      for (int64_t c = 0; c < cog; ++c)
        ASSERT_NEAR(out.get_flat(px * co + g * cog + c), slice.get_flat(px * cog + c), 1e-6)
            << "group " << g;
  }
  // Stride 2 against the naive grouped gather.
  const Params p2 = {2, 7, 7, 8, 4, 3, 2, 1};
  in = random_inputs("GRP", p2, 41);
  expect_near_reference(run1("GRP", p2, in), naive_conv2d(in[0], in[1], 3, 2, 1, 1, 4));
}

TEST(Reference, DilHandComputed) {
  // 5x5 input I[h,w] = 5h + w, 3x3 ones kernel dilated by 2: one output summing h,w in {0,2,4}.
  std::vector<float> iv;
  for (int i = 0; i < 25; ++i) iv.push_back(static_cast<float>(i));
  auto out =
      run1("DIL", {1, 5, 5, 1, 1, 3, 1, 0},
           {from_values({1, 5, 5, 1}, iv), from_values({3, 3, 1, 1}, std::vector<float>(9, 1))});
  expect_near_reference(out, std::vector<double>{108});
  const Params p = {1, 9, 8, 2, 3, 3, 2, 2};
  auto in = random_inputs("DIL", p, 50);
  expect_near_reference(run1("DIL", p, in), naive_conv2d(in[0], in[1], 3, 2, 2, 2, 1));
}

TEST(Reference, DepMatchesNaiveGather) {
  const Params p = {2, 6, 5, 4, 3, 2, 1};
  auto in = random_inputs("DEP", p, 60);
  EXPECT_EQ(in[1].shape(), (Shape{1, 3, 3, 4}));
  auto out = run1("DEP", p, in);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 3, 4}));
  std::vector<double> want;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t oh = 0; oh < 3; ++oh)
      for (int64_t ow = 0; ow < 3; ++ow)
        for (int64_t c = 0; c < 4; ++c) {
          double acc = 0;
          for (int64_t rh = 0; rh < 3; ++rh)
            for (int64_t rw = 0; rw < 3; ++rw) {
              const int64_t ih = oh * 2 + rh - 1, iw = ow * 2 + rw - 1;
              if (ih < 0 || ih >= 6 || iw < 0 || iw >= 5) continue;
              acc += in[0].get_flat(((n * 6 + ih) * 5 + iw) * 4 + c) *
                     in[1].get_flat((rh * 3 + rw) * 4 + c);
            }
          want.push_back(acc);
        }
  expect_near_reference(out, want);
}

TEST(Reference, T2dMatchesGatherFormulation) {
  // Gather: output (oh, ow) collects input (h, w) through tap (kh, kw) when h*s + kh - p == oh.
  for (const Params& p : {Params{1, 3, 4, 3, 2, 4, 2, 1}, Params{2, 3, 3, 2, 3, 3, 1, 0},
                          Params{1, 4, 2, 2, 2, 3, 3, 2}}) {
    const int64_t n_n = p[0], h_n = p[1], w_n = p[2], ci_n = p[3], co_n = p[4], k = p[5], s = p[6],
                  pad = p[7];
    const int64_t oh_n = (h_n - 1) * s - 2 * pad + k, ow_n = (w_n - 1) * s - 2 * pad + k;
    auto in = random_inputs("T2D", p, 70);
    auto out = run1("T2D", p, in);
    EXPECT_EQ(out.shape(), (Shape{n_n, oh_n, ow_n, co_n}));
    std::vector<double> want;
    for (int64_t n = 0; n < n_n; ++n)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow)
          for (int64_t co = 0; co < co_n; ++co) {
            double acc = 0;
            for (int64_t kh = 0; kh < k; ++kh)
              for (int64_t kw = 0; kw < k; ++kw) {
                const int64_t th = oh + pad - kh, tw = ow + pad - kw;
                if (th < 0 || tw < 0 || th % s || tw % s || th / s >= h_n || tw / s >= w_n)
                  continue;
                for (int64_t ci = 0; ci < ci_n; ++ci)
                  acc += in[0].get_flat(((n * h_n + th / s) * w_n + tw / s) * ci_n + ci) *
                         in[1].get_flat(((kh * k + kw) * ci_n + ci) * co_n + co);
              }
            want.push_back(acc);
          }
    expect_near_reference(out, want);
  }
}

TEST(Reference, CapMatchesHandLoop) {
  // 1x1 kernel: O[n,h,w,i,j,co] = Σ k,rc I[n,h,w,i,k,rc] W[0,0,k,j,rc,co]; then 3x3, stride 2.
  for (const Params& p : {Params{1, 3, 2, 2, 3, 1, 1, 0}, Params{1, 5, 4, 2, 3, 3, 2, 1}}) {
    const int64_t h_n = p[1], w_n = p[2], ci_n = p[3], co_n = p[4], k = p[5], s = p[6], pad = p[7];
    const int64_t oh_n = (h_n + 2 * pad - k) / s + 1, ow_n = (w_n + 2 * pad - k) / s + 1;
    auto in = random_inputs("CAP", p, 80);
    auto out = run1("CAP", p, in);
    EXPECT_EQ(out.shape(), (Shape{1, oh_n, ow_n, 4, 4, co_n}));
    std::vector<double> want;
    for (int64_t oh = 0; oh < oh_n; ++oh)
      for (int64_t ow = 0; ow < ow_n; ++ow)
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < 4; ++j)
            for (int64_t co = 0; co < co_n; ++co) {
              double acc = 0;
              for (int64_t rh = 0; rh < k; ++rh)
                for (int64_t rw = 0; rw < k; ++rw)
                  for (int64_t kk = 0; kk < 4; ++kk)
                    for (int64_t rc = 0; rc < ci_n; ++rc) {
                      const int64_t ih = oh * s + rh - pad, iw = ow * s + rw - pad;
                      if (ih < 0 || ih >= h_n || iw < 0 || iw >= w_n) continue;
                      acc += in[0].get_flat((((ih * w_n + iw) * 4 + i) * 4 + kk) * ci_n + rc) *
                             in[1].get_flat(
                                 (((((rh * k + rw) * 4 + kk) * 4 + j) * ci_n + rc) * co_n) + co);
                    }
              want.push_back(acc);
            }
    expect_near_reference(out, want);
  }
}

TEST(Reference, NrmIsSqrtOfSumOfSquares) {
  const Params p = {3, 4, 5};
  auto in = random_inputs("NRM", p, 90);
  auto out = run1("NRM", p, in);
  for (int64_t b = 0; b < 3; ++b) {
    double sum = 0;
    for (int64_t t = 0; t < 20; ++t) sum += std::pow(in[0].get_flat(b * 20 + t), 2);
    EXPECT_NEAR(out.get_flat(b), std::sqrt(sum), 1e-6);
  }
  expect_near_reference(run1("NRM", {1, 1, 2}, {from_values({1, 1, 2}, {3, -4})}),
                        std::vector<double>{5});
}

TEST(Reference, SfmRowsAreNormalizedAndStable) {
  const int64_t m = 4, n = 7;
  auto in = random_inputs("SFM", {m, n}, 100);
  auto out = run1("SFM", {m, n}, in);
  for (int64_t i = 0; i < m; ++i) {
    double sum = 0, esum = 0;
    for (int64_t j = 0; j < n; ++j) esum += std::exp(in[0].get_flat(i * n + j));
    for (int64_t j = 0; j < n; ++j) {
      const double v = out.get_flat(i * n + j);
      EXPECT_GT(v, 0);
      EXPECT_NEAR(v, std::exp(in[0].get_flat(i * n + j)) / esum, 1e-6);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  // Softmax is shift-invariant; a naive exp would overflow at +1000.
  NDArray shifted = in[0].copy();
  for (int64_t t = 0; t < shifted.numel(); ++t) shifted.set_flat(t, shifted.get_flat(t) + 1000);
  expect_near_reference(run1("SFM", {m, n}, {shifted}), out, 1e-3);
}

TEST(Reference, CbrIsC2dThenElementwiseChain) {
  const Params p = {1, 6, 5, 3, 4, 3, 2, 1};
  auto in = random_inputs("CBR", p, 110);
  ASSERT_EQ(in.size(), 5u);
  auto out = run1("CBR", p, in);
  auto conv = run1("C2D", p, {in[0], in[1]});
  bool some_zero = false, some_positive = false;
  for (int64_t t = 0; t < out.numel(); ++t) {
    const int64_t co = t % 4;
    const double want = std::max(
        (conv.get_flat(t) + in[2].get_flat(co)) * in[3].get_flat(co) + in[4].get_flat(co), 0.0);
    EXPECT_NEAR(out.get_flat(t), want, 1e-5);
    (out.get_flat(t) == 0 ? some_zero : some_positive) = true;
  }
  EXPECT_TRUE(some_zero && some_positive);  // the ReLU actually clips something
}

TEST(Reference, TbgMatchesNaive) {
  const int64_t b_n = 2, l_n = 3, h_n = 2, d_n = 4;
  auto in = random_inputs("TBG", {b_n, l_n, h_n, d_n}, 120);
  auto out = run1("TBG", {b_n, l_n, h_n, d_n}, in);
  EXPECT_EQ(out.shape(), (Shape{b_n, h_n, l_n, l_n}));
  std::vector<double> want;
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < h_n; ++h)
      for (int64_t i = 0; i < l_n; ++i)
        for (int64_t j = 0; j < l_n; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < d_n; ++d)
            acc += in[0].get_flat(((b * l_n + i) * h_n + h) * d_n + d) *
                   in[1].get_flat(((b * l_n + j) * h_n + h) * d_n + d);
          want.push_back(acc);
        }
  expect_near_reference(out, want);
}

TEST(Reference, DenseReluIsClippedGmm) {
  const int64_t n = 5, m = 6, k = 7;
  auto in = random_inputs("DENSE_RELU", {n, m, k}, 130);
  auto out = run1("DENSE_RELU", {n, m, k}, in);
  auto x = in[0].copy(), y = in[1].copy();
  auto gmm =
      run1("GMM", {1, n, m, k},
           {from_values({1, n, k},
                        std::vector<float>(x.data_as<float>(), x.data_as<float>() + x.numel())),
            from_values({1, k, m},
                        std::vector<float>(y.data_as<float>(), y.data_as<float>() + y.numel()))});
  int clipped = 0;
  for (int64_t t = 0; t < out.numel(); ++t) {
    EXPECT_GE(out.get_flat(t), 0);
    EXPECT_NEAR(out.get_flat(t), std::max(gmm.get_flat(t), 0.0), 1e-6);
    clipped += gmm.get_flat(t) < 0;
  }
  EXPECT_GT(clipped, 0);
}

// The 56 presets of docs/workloads.md.
const std::map<std::string, std::vector<Params>>& presets() {
  static const std::map<std::string, std::vector<Params>> p = {
      {"GMM", {{1, 128, 128, 128}, {1, 512, 32, 512}, {1, 512, 512, 512}, {1, 1024, 1024, 1024}}},
      {"C1D",
       {{1, 256, 64, 128, 3, 2, 1},
        {1, 128, 128, 256, 1, 2, 0},
        {1, 64, 256, 256, 5, 1, 2},
        {1, 32, 512, 512, 3, 1, 1}}},
      {"C2D",
       {{1, 224, 224, 3, 64, 7, 2, 3},
        {1, 56, 56, 64, 64, 1, 1, 0},
        {1, 14, 14, 256, 256, 3, 1, 1},
        {1, 7, 7, 512, 512, 3, 1, 1}}},
      {"C3D",
       {{1, 16, 224, 224, 3, 64, 7, 2, 3},
        {1, 16, 56, 56, 64, 64, 1, 1, 0},
        {1, 16, 14, 14, 256, 256, 3, 1, 1},
        {1, 16, 7, 7, 512, 512, 3, 1, 1}}},
      {"GRP",
       {{1, 56, 56, 64, 128, 3, 2, 1},
        {1, 56, 56, 64, 64, 1, 1, 0},
        {1, 14, 14, 256, 256, 3, 1, 1},
        {1, 7, 7, 512, 512, 3, 1, 1}}},
      {"DIL",
       {{1, 224, 224, 3, 64, 7, 2, 3},
        {1, 56, 56, 64, 64, 1, 1, 0},
        {1, 14, 14, 256, 256, 3, 1, 1},
        {1, 7, 7, 512, 512, 3, 1, 1}}},
      {"DEP",
       {{1, 112, 112, 32, 3, 1, 1},
        {1, 112, 112, 64, 3, 2, 1},
        {1, 14, 14, 512, 3, 2, 1},
        {1, 7, 7, 1024, 3, 1, 1}}},
      {"T2D",
       {{1, 4, 4, 512, 256, 4, 2, 1},
        {1, 8, 8, 256, 128, 4, 2, 1},
        {1, 16, 16, 128, 64, 4, 2, 1},
        {1, 32, 32, 64, 3, 4, 2, 1}}},
      {"CAP",
       {{1, 16, 16, 32, 32, 3, 2, 1},
        {1, 8, 8, 32, 32, 3, 1, 1},
        {1, 16, 16, 8, 16, 3, 2, 1},
        {1, 8, 8, 16, 16, 3, 1, 1}}},
      {"NRM", {{1, 256, 256}, {1, 512, 512}, {1, 1024, 1024}, {1, 4096, 1024}}},
      {"SFM", {{256, 256}, {512, 512}, {1024, 1024}, {2048, 2048}}},
      {"CBR",
       {{1, 224, 224, 3, 64, 7, 2, 3},
        {1, 56, 56, 64, 128, 3, 2, 1},
        {1, 28, 28, 128, 256, 1, 2, 0},
        {1, 7, 7, 512, 512, 3, 1, 1}}},
      {"TBG", {{1, 128, 12, 64}, {1, 128, 16, 64}, {1, 64, 12, 128}, {1, 128, 12, 128}}},
      {"DENSE_RELU", {{128, 128, 128}, {512, 512, 512}, {1024, 1024, 1024}, {1, 4096, 1024}}},
  };
  return p;
}

TEST(Reference, PresetShapesAndFlops) {
  int count = 0;
  for (const std::string& op : reference_ops()) {
    ASSERT_EQ(presets().at(op).size(), 4u) << op;
    for (const Params& p : presets().at(op)) {
      ++count;
      TensorShapes s = reference_shapes(op, p);
      EXPECT_FALSE(s.inputs.empty()) << op;
      ASSERT_EQ(s.outputs.size(), 1u) << op;
      for (const auto& group : {s.inputs, s.outputs})
        for (const Shape& shape : group) {
          EXPECT_FALSE(shape.empty()) << op;
          for (int64_t d : shape) EXPECT_GT(d, 0) << op;
        }
      EXPECT_GT(reference_flop(op, p), 0) << op;
    }
  }
  EXPECT_EQ(count, 56);
  auto out = [](const std::string& op, int i) {
    return reference_shapes(op, presets().at(op)[i - 1]).outputs[0];
  };
  EXPECT_EQ(out("GMM", 4), (Shape{1, 1024, 1024}));
  EXPECT_EQ(out("C1D", 1), (Shape{1, 128, 128}));
  EXPECT_EQ(out("C2D", 1), (Shape{1, 112, 112, 64}));
  EXPECT_EQ(out("C3D", 1), (Shape{1, 8, 112, 112, 64}));
  EXPECT_EQ(out("GRP", 1), (Shape{1, 28, 28, 128}));
  EXPECT_EQ(out("DIL", 1), (Shape{1, 109, 109, 64}));
  EXPECT_EQ(out("DIL", 4), (Shape{1, 5, 5, 512}));
  EXPECT_EQ(out("DEP", 2), (Shape{1, 56, 56, 64}));
  EXPECT_EQ(out("T2D", 1), (Shape{1, 8, 8, 256}));
  EXPECT_EQ(out("T2D", 4), (Shape{1, 64, 64, 3}));
  EXPECT_EQ(out("CAP", 1), (Shape{1, 8, 8, 4, 4, 32}));
  EXPECT_EQ(out("NRM", 4), (Shape{1}));
  EXPECT_EQ(out("SFM", 2), (Shape{512, 512}));
  EXPECT_EQ(out("CBR", 3), (Shape{1, 14, 14, 256}));
  EXPECT_EQ(out("TBG", 1), (Shape{1, 12, 128, 128}));
  EXPECT_EQ(out("DENSE_RELU", 4), (Shape{1, 4096}));
  EXPECT_EQ(reference_shapes("GRP", presets().at("GRP")[0]).inputs[1], (Shape{3, 3, 16, 128}));
  EXPECT_EQ(reference_shapes("DEP", presets().at("DEP")[0]).inputs[1], (Shape{1, 3, 3, 32}));
  EXPECT_EQ(reference_shapes("CBR", presets().at("CBR")[0]).inputs.size(), 5u);
}

TEST(Reference, FlopCounts) {
  EXPECT_DOUBLE_EQ(reference_flop("GMM", {1, 1024, 1024, 1024}), 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(reference_flop("DENSE_RELU", {4, 5, 6}), 2.0 * 4 * 5 * 6 + 4 * 5);
  EXPECT_DOUBLE_EQ(reference_flop("NRM", {2, 3, 4}), 2.0 * 2 * 3 * 4 + 2);
  EXPECT_DOUBLE_EQ(reference_flop("SFM", {3, 4}), 5.0 * 3 * 4);
  // Padding taps multiply zeros and count nothing. Per spatial dim, the (output, tap) pairs that
  // read a real input element, by hand: 224 wide, K 7, stride 2, pad 3 -> 112 outputs with
  // 4, 6, 7 x 109, 5 real taps = 778 (not 112 x 7 = 784).
  EXPECT_DOUBLE_EQ(reference_flop("C2D", {1, 224, 224, 3, 64, 7, 2, 3}), 2.0 * 778 * 778 * 64 * 3);
  EXPECT_DOUBLE_EQ(reference_flop("CBR", {1, 224, 224, 3, 64, 7, 2, 3}),
                   2.0 * 778 * 778 * 64 * 3 + 4.0 * 112 * 112 * 64);
  // 56 wide, K 3, stride 2, pad 1: 28 outputs, 2 + 27 x 3 = 83 taps.
  EXPECT_DOUBLE_EQ(reference_flop("GRP", {1, 56, 56, 64, 128, 3, 2, 1}), 2.0 * 83 * 83 * 128 * 16);
  // 112 wide, K 3, stride 1, pad 1: 2 + 110 x 3 + 2 = 334.
  EXPECT_DOUBLE_EQ(reference_flop("DEP", {1, 112, 112, 32, 3, 1, 1}), 2.0 * 334 * 334 * 32);
  // 256 long, K 3, stride 2, pad 1: 2 + 127 x 3 = 383.
  EXPECT_DOUBLE_EQ(reference_flop("C1D", {1, 256, 64, 128, 3, 2, 1}), 2.0 * 383 * 128 * 64);
  // depth 16, K 7, stride 2, pad 3: 8 outputs with 4, 6, 7 x 5, 5 = 50 taps.
  EXPECT_DOUBLE_EQ(reference_flop("C3D", {1, 16, 224, 224, 3, 64, 7, 2, 3}),
                   2.0 * 50 * 778 * 778 * 64 * 3);
  // Transposed, 4 wide, K 4, stride 2, pad 1: input i feeds outputs 2i-1 .. 2i+2 of 8, so
  // 3 + 4 + 4 + 3 = 14 real taps per dim (the gather form over the zero-stuffed input: 8 x 16).
  EXPECT_DOUBLE_EQ(reference_flop("T2D", {1, 4, 4, 512, 256, 4, 2, 1}), 2.0 * 14 * 14 * 256 * 512);
  // 16 wide, K 3, stride 2, pad 1: 2 + 7 x 3 = 23.
  EXPECT_DOUBLE_EQ(reference_flop("CAP", {1, 16, 16, 32, 32, 3, 2, 1}),
                   2.0 * 23 * 23 * 16 * 32 * 4 * 32);
  // Dilation 2 on 8 wide, K 3, pad 1 (6 outputs): output o reads o - 1, o + 1, o + 3 of 0..7:
  // 2 + 3 + 3 + 3 + 3 + 2 = 16.
  EXPECT_DOUBLE_EQ(reference_flop("DIL", {1, 8, 8, 4, 4, 3, 1, 1}), 2.0 * 16 * 16 * 4 * 4);
  // Unpadded: every tap is real.
  EXPECT_DOUBLE_EQ(reference_flop("C2D", {1, 14, 14, 8, 8, 3, 1, 0}), 2.0 * 12 * 12 * 9 * 8 * 8);
  EXPECT_DOUBLE_EQ(reference_flop("TBG", {1, 128, 12, 64}), 2.0 * 12 * 128 * 128 * 64);
}

TEST(Reference, EveryOpRunsOnSmallShapes) {
  const std::map<std::string, Params> small = {
      {"GMM", {2, 3, 4, 5}},
      {"C1D", {1, 6, 2, 3, 3, 2, 1}},
      {"C2D", {1, 5, 5, 2, 3, 3, 1, 1}},
      {"C3D", {1, 3, 4, 4, 2, 2, 3, 1, 1}},
      {"GRP", {1, 4, 4, 4, 8, 3, 1, 1}},
      {"DIL", {1, 6, 6, 2, 2, 3, 1, 2}},
      {"DEP", {1, 5, 5, 3, 3, 2, 1}},
      {"T2D", {1, 2, 2, 3, 2, 4, 2, 1}},
      {"CAP", {1, 4, 4, 2, 2, 3, 2, 1}},
      {"NRM", {2, 3, 4}},
      {"SFM", {3, 5}},
      {"CBR", {1, 5, 5, 2, 3, 3, 2, 1}},
      {"TBG", {1, 3, 2, 4}},
      {"DENSE_RELU", {3, 4, 5}},
  };
  for (const std::string& op : reference_ops()) {
    const Params& p = small.at(op);
    auto outs = run_reference(op, p, random_inputs(op, p, 7));
    ASSERT_EQ(outs.size(), 1u) << op;
    double energy = 0;
    for (int64_t t = 0; t < outs[0].numel(); ++t) {
      ASSERT_TRUE(std::isfinite(outs[0].get_flat(t))) << op;
      energy += std::abs(outs[0].get_flat(t));
    }
    EXPECT_GT(energy, 0) << op;
  }
  // Names match case-insensitively.
  EXPECT_EQ(reference_shapes("dense_relu", {3, 4, 5}).outputs[0], (Shape{3, 4}));
}

TEST(Reference, RejectsBadInput) {
  EXPECT_THROW(reference_shapes("GEMM", {1, 2, 3, 4}), Error);
  EXPECT_THROW(reference_flop("", {}), Error);
  EXPECT_THROW(reference_shapes("GMM", {1, 2, 3}), Error);
  EXPECT_THROW(reference_flop("C2D", {1, 2, 3}), Error);
  EXPECT_THROW(reference_shapes("GRP", {1, 7, 7, 8, 8, 3, 1, 1, 1, 4}),
               Error);                                                      // fixed, not passed
  EXPECT_THROW(reference_shapes("GMM", {1, 0, 3, 4}), Error);               // empty extent
  EXPECT_THROW(reference_shapes("C2D", {1, 7, 7, 8, 8, 3, 0, 1}), Error);   // stride 0
  EXPECT_THROW(reference_shapes("C2D", {1, 7, 7, 8, 8, 3, 1, -1}), Error);  // negative pad
  EXPECT_THROW(reference_shapes("C2D", {1, 2, 2, 8, 8, 5, 1, 0}), Error);   // kernel > input
  EXPECT_THROW(reference_shapes("DIL", {1, 4, 4, 8, 8, 3, 1, 0}), Error);   // dilated too
  EXPECT_THROW(reference_shapes("GRP", {1, 7, 7, 6, 8, 3, 1, 1}), Error);   // CI % 4
  EXPECT_THROW(reference_shapes("T2D", {1, 1, 1, 2, 2, 1, 1, 1}), Error);   // cropped away
  try {
    reference_shapes("C2D", {1, 2});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("C2D expects 8 parameters"), std::string::npos);
  }

  const Params p = {1, 2, 3, 4};
  auto good = random_inputs("GMM", p, 1);
  EXPECT_NO_THROW(run_reference("GMM", p, good));
  EXPECT_THROW(run_reference("GMM", p, {good[0]}), Error);             // count
  EXPECT_THROW(run_reference("GMM", p, {good[0], good[0]}), Error);    // shape
  EXPECT_THROW(run_reference("GMM", p, {good[0], NDArray()}), Error);  // undefined
  EXPECT_THROW(run_reference("GMM", p, {good[0], NDArray({1, 4, 3}, kFloat64)}), Error);  // dtype
  EXPECT_THROW(run_reference("CBR", {1, 5, 5, 2, 3, 3, 1, 1},
                             random_inputs("C2D", {1, 5, 5, 2, 3, 3, 1, 1}, 1)),
               Error);  // bias/scale/offset missing
}

}  // namespace
}  // namespace tyche::workloads
