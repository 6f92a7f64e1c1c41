// Element types: rounding to half/bfloat16, bool and unsigned storage, vector lets and integer
// vectors.
#include <gtest/gtest.h>

#include <cmath>

#include "builders.h"
#include "interp/nodes.h"

namespace tyche::interp::testing {
namespace {

TEST(Numeric, RoundFloatMatchesNDArrayStorage) {
  // For values exactly representable as float, NDArray's float -> half/bfloat16 conversion rounds
  // once, so it must agree with the interpreter's direct rounding.
  NDArray h({1}, DataType::Float(16)), bf({1}, DataType::BFloat16());
  uint64_t state = 12345;
  for (int n = 0; n < 20000; ++n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    double mag = std::ldexp(1.0, static_cast<int>((state >> 40) % 60) - 30);  // 2^-30 .. 2^29
    double v = static_cast<float>(mag * (static_cast<double>((state >> 11) & 0xfffff) / 0xfffff) *
                                  ((state & 1) ? -1 : 1));
    h.set_flat(0, v);
    bf.set_flat(0, v);
    EXPECT_EQ(detail::round_float(v, DataType::Float(16)), h.get_flat(0)) << v;
    EXPECT_EQ(detail::round_float(v, DataType::BFloat16()), bf.get_flat(0)) << v;
  }
  EXPECT_TRUE(std::isinf(detail::round_float(65520.0, DataType::Float(16))));  // rounds past max
  EXPECT_EQ(detail::round_float(65519.0, DataType::Float(16)), 65504.0);
  EXPECT_EQ(detail::round_float(std::ldexp(1.0, -25) * 1.5, DataType::Float(16)),
            std::ldexp(1.0, -24));  // subnormal
  EXPECT_TRUE(std::isnan(detail::round_float(NAN, DataType::BFloat16())));
}

TEST(Numeric, BoolAndUnsignedStorage) {
  DataType u8 = DataType::UInt(8);
  Buffer a = make_buffer("A", kFloat32, {4}), m = make_buffer("M", kBool, {4}),
         u = make_buffer("U", u8, {4});
  Var i("i");
  Expr x = buffer_load(a, {i});
  Stmt body = seq({buffer_store(m, x > 0.0, {i}),
                   buffer_store(u, cast(u8, cast(DataType::Int(32), x * 100.0)), {i})});
  NDArray in({4}, kFloat32);
  std::vector<double> xs = {-1.5, 0.0, 0.25, 2.5};
  for (int p = 0; p < 4; ++p) in.set_flat(p, xs[p]);
  auto out = run_on_inputs(PrimFunc("f", {a, m, u}, 2, root(serial(i, 4, body))), {in});
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(out[0].data_as<uint8_t>()[p], xs[p] > 0 ? 1 : 0);
    EXPECT_EQ(out[1].data_as<uint8_t>()[p],
              static_cast<uint8_t>(static_cast<int>(xs[p] * 100)));  // -150 wraps to 106
  }
}

TEST(Numeric, VectorLetAndIntegerLanes) {
  // let v = ramp(4 i, 1, 4) * 3 in B[ramp(4 i, 1, 4)] = v - floordiv(v, 2) (int32 lanes).
  DataType i32 = DataType::Int(32);
  Buffer b = make_buffer("B", i32, {8});
  Var i("i"), v("v", i32.with_lanes(4));
  Expr idx = ramp(i * 4, 1, 4);
  Expr value = let(v, idx * broadcast(3, 4), v - floordiv(v, broadcast(2, 4)));
  ASSERT_EQ(value.dtype(), i32.with_lanes(4));
  NDArray out = run_on_inputs(
      PrimFunc("f", {b}, 1, root(serial(i, 2, buffer_store(b, value, {idx})))), {})[0];
  for (int p = 0; p < 8; ++p) EXPECT_EQ(out.data_as<int32_t>()[p], 3 * p - (3 * p) / 2) << p;
}

TEST(Numeric, VectorDivisionByZeroAndOutOfBoundsStore) {
  DataType i32 = DataType::Int(32);
  Buffer b = make_buffer("B", i32, {8});
  Var i("i");
  Expr idx = ramp(i * 4, 1, 4);
  PrimFunc div("f", {b}, 1,
               root(serial(i, 2, buffer_store(b, floordiv(broadcast(7, 4), idx), {idx}))));
  expect_error([&] { run_on_inputs(div, {}); }, {"division by zero"});
  PrimFunc oob("f", {b}, 1, root(serial(i, 3, buffer_store(b, broadcast(1, 4), {idx}))));
  expect_error([&] { run_on_inputs(oob, {}); }, {"store to buffer 'B'", "index [8]"});
}

TEST(Numeric, FloatMaxPropagatesNaN) {
  // A max-reduction over a poisoned element must stay NaN, whichever side the NaN is on.
  Buffer t = make_buffer("T", kFloat32, {2}), c = make_buffer("C", kFloat32, {2});
  Stmt body = seq({buffer_store(t, make_float(1.0), {0}),
                   buffer_store(c, max(buffer_load(t, {0}), buffer_load(t, {1})), {0}),
                   buffer_store(c, min(buffer_load(t, {1}), buffer_load(t, {0})), {1})});
  NDArray out = run_on_inputs(PrimFunc("f", {c}, 1, root(body, {t})), {})[0];
  EXPECT_TRUE(std::isnan(out.get_flat(0)));
  EXPECT_TRUE(std::isnan(out.get_flat(1)));
}

TEST(Numeric, ParamStridesAreElementStrides) {
  // A is declared column-major (strides 1, 2): A[i, j] is element i + 2 j of the argument.
  auto n = std::make_shared<BufferNode>(*make_buffer("A", kFloat32, {2, 3}));
  n->strides = {Expr(1), Expr(2)};
  Buffer a(n), c = make_buffer("C", kFloat32, {2, 3});
  Var i("i"), j("j");
  PrimFunc f("t", {a, c}, 1,
             root(serial(i, 2, serial(j, 3, buffer_store(c, buffer_load(a, {i, j}), {i, j})))));
  NDArray in = random_array({2, 3}, kFloat32, 3);
  NDArray out = run_on_inputs(f, {in})[0];
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q) EXPECT_EQ(out.get_flat(p * 3 + q), in.get_flat(p + 2 * q));
  auto padded = std::make_shared<BufferNode>(*n);
  padded->strides = {Expr(4), Expr(1)};  // reaches element 6 of a 6-element array
  PrimFunc g("t", {Buffer(padded), c}, 1, root(Stmt()));
  expect_error([&] { run_on_inputs(g, {in}); }, {"argument 0 ('A')", "strides reach"});
}

}  // namespace
}  // namespace tyche::interp::testing
