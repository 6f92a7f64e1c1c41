#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ir/printer.h"
#include "te/tensor.h"

namespace tyche::te {
namespace {

using testing::HasSubstr;

runtime::NDArray filled(std::vector<int64_t> shape, uint64_t seed) {
  runtime::NDArray a(std::move(shape), kFloat32);
  a.fill_uniform(seed);
  return a;
}

TEST(Compute, ReducersUseTheirIdentities) {
  Tensor a = placeholder({3, 5}, kFloat32, "A");
  auto k1 = reduce_axis(5, "k"), k2 = reduce_axis(5, "k"), k3 = reduce_axis(5, "k"),
       k4 = reduce_axis(5, "k");
  Tensor s = compute(
      {3}, [&](Var i) { return sum(a(i, k1.var), {k1}); }, "S");
  Tensor mx = compute(
      {3}, [&](Var i) { return max(a(i, k2.var), {k2}); }, "MX");
  Tensor mn = compute(
      {3}, [&](Var i) { return min(a(i, k3.var), {k3}); }, "MN");
  Tensor pr = compute(
      {3}, [&](Var i) { return prod(a(i, k4.var), {k4}); }, "PR");
  ir::PrimFunc f = create_prim_func({a, s, mx, mn, pr});
  std::string text = ir::to_string(f);
  EXPECT_THAT(text, HasSubstr("MX[vi_1] = float32(\"-inf\")"));
  EXPECT_THAT(text, HasSubstr("MN[vi_2] = float32(\"inf\")"));
  EXPECT_THAT(text, HasSubstr("PR[vi_3] = 1.0f"));

  runtime::NDArray in = filled({3, 5}, 1);
  auto out = interp::run_on_inputs(f, {in});
  for (int64_t i = 0; i < 3; ++i) {
    double total = 0, hi = -1e9, lo = 1e9, product = 1;
    for (int64_t k = 0; k < 5; ++k) {
      double v = in.get_flat(i * 5 + k);
      total += v, hi = std::max(hi, v), lo = std::min(lo, v), product *= v;
    }
    EXPECT_NEAR(out[0].get_flat(i), total, 1e-5);
    EXPECT_FLOAT_EQ(out[1].get_flat(i), hi);
    EXPECT_FLOAT_EQ(out[2].get_flat(i), lo);
    EXPECT_NEAR(out[3].get_flat(i), product, 1e-6);
  }
}

TEST(Compute, ElementwiseMathMatchesLibm) {
  Tensor a = placeholder({8}, kFloat32, "A");
  Tensor b = compute(
      {8},
      [&](Var i) {
        Expr x = a(i);
        return exp(x) + log(abs(x) + 1.0) + sqrt(abs(x)) + tanh(x) + sigmoid(x) +
               select(x > 0.0, x, -x) + cast(kFloat32, cast(kInt32, x * 4.0)) + max(x, 0.25) +
               min(x, -0.25);
      },
      "B");
  runtime::NDArray in = filled({8}, 3);
  auto out = interp::run_on_inputs(create_prim_func({a, b}), {in});
  for (int64_t i = 0; i < 8; ++i) {
    float x = static_cast<float>(in.get_flat(i));
    double want = std::exp(x) + std::log(std::fabs(x) + 1.0) + std::sqrt(std::fabs(x)) +
                  std::tanh(x) + 1.0 / (1.0 + std::exp(-x)) + std::fabs(x) +
                  static_cast<int>(x * 4.0f) + std::max(x, 0.25f) + std::min(x, -0.25f);
    EXPECT_NEAR(out[0].get_flat(i), want, 1e-5) << i;
  }
}

TEST(CreatePrimFunc, IntermediatesBecomeRootAllocations) {
  Tensor a = placeholder({4, 4}, kFloat32, "A");
  Tensor t = compute(
      {4, 4}, [&](Var i, Var j) { return a(i, j) * 2.0; }, "T");
  Tensor o = compute(
      {4, 4}, [&](Var i, Var j) { return t(j, i) + 1.0; }, "O");
  ir::PrimFunc f = create_prim_func({a, o}, "chain");
  EXPECT_EQ(f->params.size(), 2u);
  EXPECT_EQ(f.outputs().size(), 1u);
  EXPECT_THAT(ir::to_string(f), HasSubstr("T = alloc_buffer((4, 4), \"float32\")"));
  runtime::NDArray in = filled({4, 4}, 2);
  auto out = interp::run_on_inputs(f, {in});
  EXPECT_FLOAT_EQ(out[0].get_flat(1 * 4 + 2),
                  static_cast<float>(in.get_flat(2 * 4 + 1) * 2.0 + 1.0));
}

TEST(CreatePrimFunc, RejectsMalformedGraphs) {
  Tensor a = placeholder({4}, kFloat32, "A");
  Tensor b = placeholder({4}, kFloat32, "B");
  Tensor c = compute(
      {4}, [&](Var i) { return a(i) + b(i); }, "C");
  EXPECT_THAT(
      [&] {
        create_prim_func({a, c});
      },
      testing::ThrowsMessage<Error>(HasSubstr("'B' is not among the arguments")));
  EXPECT_THAT(
      [&] {
        create_prim_func({c, a, b});
      },
      testing::ThrowsMessage<Error>(HasSubstr("listed after an output")));
  EXPECT_THAT(
      [&] {
        create_prim_func({a, b});
      },
      testing::ThrowsMessage<Error>(HasSubstr("no computed tensor")));
  EXPECT_THAT(
      [&] {
        create_prim_func({a, b, c, c});
      },
      testing::ThrowsMessage<Error>(HasSubstr("passed twice")));
  Tensor a2 = placeholder({4}, kFloat32, "A");
  Tensor d = compute(
      {4}, [&](Var i) { return a(i) + a2(i); }, "D");
  EXPECT_THAT(
      [&] {
        create_prim_func({a, a2, d});
      },
      testing::ThrowsMessage<Error>(HasSubstr("two tensors are named 'A'")));
}

// Generated code would read outside a tensor: refused, unless an if_then_else guards the read.
TEST(CreatePrimFunc, RejectsUnguardedReadsOutsideATensor) {
  Tensor a = placeholder({8}, kFloat32, "A");
  Tensor far = compute(
      {4}, [&](Var i) { return a(i + 100000000); }, "Far");
  EXPECT_THAT(
      [&] {
        create_prim_func({a, far});
      },
      testing::ThrowsMessage<Error>(
          HasSubstr("compute 'Far' reads A outside its shape: index i + 100000000 of dimension 0 "
                    "takes [100000000, 100000003], not within [0, 8)")));
  Tensor shifted = compute(
      {8}, [&](Var i) { return a(i - 1); }, "Shifted");
  EXPECT_THAT(
      [&] {
        create_prim_func({a, shifted});
      },
      testing::ThrowsMessage<Error>(HasSubstr("takes [-1, 6]")));
  IterVar k = reduce_axis(9, "k");
  Tensor red = compute(
      {1}, [&](Var) { return sum(a(k.var), {k}); }, "Red");
  EXPECT_THAT(
      [&] {
        create_prim_func({a, red});
      },
      testing::ThrowsMessage<Error>(HasSubstr("takes [0, 8]")));
  Tensor padded = compute(
      {10}, [&](Var i) { return if_then_else(i >= 1 && i < 9, a(i - 1), Expr(0.0)); }, "Padded");
  EXPECT_NO_THROW(create_prim_func({a, padded}));
  Tensor selected = compute(
      {10}, [&](Var i) { return select(i >= 1 && i < 9, a(i - 1), Expr(0.0)); }, "Selected");
  EXPECT_THAT(
      [&] {
        create_prim_func({a, selected});
      },
      testing::ThrowsMessage<Error>(HasSubstr("reads A outside its shape")));
}

TEST(Compute, RejectsBadDefinitions) {
  Tensor a = placeholder({4, 4}, kFloat32, "A");
  IterVar spatial{Var("s"), ir::Range(0, 4), ir::IterKind::kSpatial};
  EXPECT_THAT(
      [&] {
        compute(
            {4}, [&](Var i) { return sum(a(i, spatial.var), {spatial}); }, "R");
      },
      testing::ThrowsMessage<Error>(HasSubstr("not a reduce_axis")));
  EXPECT_THAT(
      [&] {
        compute(
            {4}, [&](Var i) { return a(i); }, "R");
      },
      testing::ThrowsMessage<Error>(HasSubstr("indexed with 1")));
  Expr outside = a(0, 0);
  EXPECT_THAT(
      [&] {
        compute(
            {4}, [&](Var) { return outside; }, "R");
      },
      testing::ThrowsMessage<Error>(HasSubstr("built outside its definition")));
  EXPECT_THAT(
      [&] {
        placeholder({4, 0}, kFloat32, "Z");
      },
      testing::ThrowsMessage<Error>(HasSubstr("non-positive")));
  EXPECT_THAT([&] { placeholder({int64_t{1} << 32}, kFloat32, "Z"); },
              testing::ThrowsMessage<InputError>(HasSubstr("larger than 2^31 - 1")));
  EXPECT_THAT([&] { reduce_axis(int64_t{1} << 31, "k"); },
              testing::ThrowsMessage<InputError>(HasSubstr("larger than 2^31 - 1")));
  EXPECT_THAT(
      [&] {
        compute(
            {int64_t{1} << 40}, [&](Var i) { return a(i, 0); }, "R");
      },
      testing::ThrowsMessage<InputError>(HasSubstr("larger than 2^31 - 1")));
  EXPECT_THAT(
      [&] {
        compute(
            {4}, [&](Var i) { return a(i, 0.5); }, "R");
      },
      testing::ThrowsMessage<Error>(HasSubstr("integer")));
}

}  // namespace
}  // namespace tyche::te
