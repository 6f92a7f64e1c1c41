// The interpreter against direct C++ loops: schedules that must agree, broken ones that must not,
// block semantics (init, predicate, allocation, poisoning) and the errors it must raise.
#include <gtest/gtest.h>

#include <cmath>

#include "builders.h"
#include "runtime/compare.h"

namespace tyche::interp::testing {
namespace {

using runtime::compare;
using runtime::Comparison;

constexpr int kM = 24, kN = 20, kK = 32;

std::vector<NDArray> matmul_inputs(int m, int n, int k, DataType dtype = kFloat32) {
  double lo = dtype.is_float() ? -1 : -50, hi = dtype.is_float() ? 1 : 50;
  return {random_array({m, k}, dtype, 1, lo, hi), random_array({k, n}, dtype, 2, lo, hi)};
}

TEST(Interpreter, MatmulWithInitMatchesDirectLoop) {
  auto in = matmul_inputs(kM, kN, kK);
  auto out = run_on_inputs(matmul(kM, kN, kK), in);
  ASSERT_EQ(out.size(), 1u);
  Comparison c = compare(out[0], matmul_reference(in[0], in[1]));
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_LT(c.max_abs_error, 1e-5);  // double accumulation, one rounding at each store
}

TEST(Interpreter, InitRunsOnlyAtTheFirstReductionStep) {
  // Outputs start as garbage; the init must reset them exactly once per (i, j).
  auto in = matmul_inputs(kM, kN, kK);
  std::vector<NDArray> args = {in[0], in[1], random_array({kM, kN}, kFloat32, 9, 100, 200)};
  run(matmul(kM, kN, kK, {.split_k = true}), args);
  Comparison c = compare(args[2], matmul_reference(in[0], in[1]));
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(Interpreter, EquivalentSchedulesAgree) {
  auto in = matmul_inputs(kM, kN, kK);
  NDArray expected = matmul_reference(in[0], in[1]);
  for (MatmulOptions o :
       {MatmulOptions{.split_k = true}, MatmulOptions{.reorder = true},
        MatmulOptions{.split_k = true, .reorder = true}, MatmulOptions{.kind = ForKind::kParallel},
        MatmulOptions{.kind = ForKind::kUnrolled},
        MatmulOptions{.kind = ForKind::kThreadBinding}}) {
    Comparison c = compare(run_on_inputs(matmul(kM, kN, kK, o), in)[0], expected);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

TEST(Interpreter, WrongIndexFailsCompare) {
  auto in = matmul_inputs(kK, kN, kK);  // square A so that A[vk, vi] stays in bounds
  Comparison c = compare(run_on_inputs(matmul(kK, kN, kK, {.wrong_index = true}), in)[0],
                         matmul_reference(in[0], in[1]));
  EXPECT_FALSE(c.ok);
  EXPECT_GT(c.mismatches, kK * kN / 2);
}

TEST(Interpreter, MissingReductionStepFailsCompare) {
  auto in = matmul_inputs(kM, kN, kK);
  for (bool split : {false, true}) {
    Comparison c =
        compare(run_on_inputs(matmul(kM, kN, kK, {.split_k = split, .drop_k = true}), in)[0],
                matmul_reference(in[0], in[1]));
    EXPECT_FALSE(c.ok);
    EXPECT_GT(c.mismatches, kM * kN * 9 / 10) << c.message;
  }
}

TEST(Interpreter, Int32MatmulIsExact) {
  auto in = matmul_inputs(kM, kN, kK, DataType::Int(32));
  Comparison c = compare(run_on_inputs(matmul(kM, kN, kK, {.dtype = DataType::Int(32)}), in)[0],
                         matmul_reference(in[0], in[1]));
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_EQ(c.max_abs_error, 0);
}

// B[vi] = A[vi] * 2 over a 10-element axis split as 4 x 3 (12 iterations): the predicate must
// skip the two extra ones.
PrimFunc split_with_predicate(bool with_predicate) {
  Buffer a = make_buffer("A", kFloat32, {10}), b = make_buffer("B", kFloat32, {10});
  Var io("io"), ii("ii"), vi("vi");
  Block blk = make_block("B", {spatial(vi, 10)}, {BufferRegion::full(a)}, {BufferRegion::full(b)},
                         Stmt(), buffer_store(b, buffer_load(a, {vi}) * 2.0, {vi}));
  Expr pred = with_predicate ? io * 3 + ii < 10 : make_bool(true);
  Stmt s = serial(io, 4, serial(ii, 3, block_realize({io * 3 + ii}, pred, blk)));
  return PrimFunc("split", {a, b}, 1, root(s));
}

TEST(Interpreter, PredicateSkipsOutOfRangeIterations) {
  NDArray a = random_array({10}, kFloat32, 3);
  NDArray b = run_on_inputs(split_with_predicate(true), {a})[0];
  for (int i = 0; i < 10; ++i)
    EXPECT_FLOAT_EQ(b.get_flat(i), static_cast<float>(a.get_flat(i) * 2));
  // Without it, vi = 10 leaves the block's domain.
  expect_error([&] { run_on_inputs(split_with_predicate(false), {a}); },
               {"block 'B'", "iter var 'vi' = 10", "outside its domain [0, 10)"});
}

// T = A * 2 (intermediate, allocated by the root block); C = T + 1. With `short_producer`, the
// producer skips the last element, which the consumer then reads uninitialized.
PrimFunc two_stage(bool short_producer) {
  const int n = 16;
  Buffer a = make_buffer("A", kFloat32, {n}), t = make_buffer("T", kFloat32, {n}),
         c = make_buffer("C", kFloat32, {n});
  Var i("i"), j("j"), vi("vi"), vj("vj");
  Block produce =
      make_block("T", {spatial(vi, n)}, {BufferRegion::full(a)}, {BufferRegion::full(t)}, Stmt(),
                 buffer_store(t, buffer_load(a, {vi}) * 2.0, {vi}));
  Block consume =
      make_block("C", {spatial(vj, n)}, {BufferRegion::full(t)}, {BufferRegion::full(c)}, Stmt(),
                 buffer_store(c, buffer_load(t, {vj}) + 1.0, {vj}));
  Stmt body =
      seq({serial(i, short_producer ? n - 1 : n, block_realize({i}, make_bool(true), produce)),
           serial(j, n, block_realize({j}, make_bool(true), consume))});
  return PrimFunc("two_stage", {a, c}, 1, root(body, {t}));
}

TEST(Interpreter, IntermediateBufferPipeline) {
  NDArray a = random_array({16}, kFloat32, 4);
  NDArray expected({16}, kFloat32);
  for (int i = 0; i < 16; ++i) expected.set_flat(i, a.get_flat(i) * 2 + 1);
  Comparison c = compare(run_on_inputs(two_stage(false), {a})[0], expected);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(Interpreter, ReadingUnwrittenMemoryShowsAsNaN) {
  NDArray a = random_array({16}, kFloat32, 4);
  NDArray expected({16}, kFloat32);
  for (int i = 0; i < 16; ++i) expected.set_flat(i, a.get_flat(i) * 2 + 1);
  NDArray out = run_on_inputs(two_stage(true), {a})[0];
  EXPECT_TRUE(std::isnan(out.get_flat(15)));
  Comparison c = compare(out, expected);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_NE(c.message.find("[15]"), std::string::npos) << c.message;
}

TEST(Interpreter, IntegerPoisonIsNotZero) {
  // An int32 intermediate read before written: the poison must differ from a plausible value.
  Buffer t = make_buffer("T", DataType::Int(32), {4}), c = make_buffer("C", DataType::Int(32), {4});
  Var i("i");
  Stmt body = serial(i, 4, buffer_store(c, buffer_load(t, {i}), {i}));
  NDArray out = run_on_inputs(PrimFunc("f", {c}, 1, root(body, {t})), {})[0];
  EXPECT_EQ(int_at(out, 0), static_cast<int32_t>(0xa5a5a5a5u));
}

TEST(Interpreter, BlockAllocationIsFreshOnEveryEntry) {
  // A block inside a loop allocates T, writes T[0] only when i == 0, and copies T[0] out: every
  // later iteration must see fresh (NaN) storage.
  Buffer t = make_buffer("T", kFloat32, {1}), c = make_buffer("C", kFloat32, {3});
  Var i("i"), vi("vi");
  Stmt body = seq({if_then_else(vi == 0, buffer_store(t, make_float(5.0), {0})),
                   buffer_store(c, buffer_load(t, {0}), {vi})});
  Block blk = make_block("B", {spatial(vi, 3)}, {}, {BufferRegion::full(c)}, Stmt(), body, {t});
  NDArray out = run_on_inputs(
      PrimFunc("f", {c}, 1, root(serial(i, 3, block_realize({i}, make_bool(true), blk)))), {})[0];
  EXPECT_EQ(out.get_flat(0), 5.0);
  EXPECT_TRUE(std::isnan(out.get_flat(1)));
  EXPECT_TRUE(std::isnan(out.get_flat(2)));
}

TEST(Interpreter, AllocateWithStrides) {
  // A 2 x 3 local buffer with padded rows (stride 4): written then read back transposed.
  auto n = std::make_shared<BufferNode>(*make_buffer("L", kFloat32, {2, 3}, "local"));
  n->strides = {Expr(4), Expr(1)};
  Buffer l(n);
  Buffer a = make_buffer("A", kFloat32, {2, 3}), c = make_buffer("C", kFloat32, {3, 2});
  Var i("i"), j("j");
  Stmt fill = serial(i, 2, serial(j, 3, buffer_store(l, buffer_load(a, {i, j}), {i, j})));
  Stmt out = serial(j, 3, serial(i, 2, buffer_store(c, buffer_load(l, {i, j}), {j, i})));
  PrimFunc f("t", {a, c}, 1, root(allocate(l, seq({fill, out}))));
  NDArray in = random_array({2, 3}, kFloat32, 5);
  NDArray res = run_on_inputs(f, {in})[0];
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q) EXPECT_EQ(res.get_flat(q * 2 + p), in.get_flat(p * 3 + q));
}

TEST(Interpreter, OutOfBoundsStoreNamesBufferAndIndex) {
  Buffer a = make_buffer("A", kFloat32, {8}), c = make_buffer("Out", kFloat32, {8});
  Var i("i");
  PrimFunc f("f", {a, c}, 1, root(serial(i, 8, buffer_store(c, buffer_load(a, {i}), {i + 1}))));
  expect_error([&] { run_on_inputs(f, {random_array({8}, kFloat32, 1)}); },
               {"store to buffer 'Out'", "index [8]", "shape [8]"});
}

TEST(Interpreter, OutOfBoundsLoadNamesBufferAndIndex) {
  Buffer a = make_buffer("A", kFloat32, {4, 5}), c = make_buffer("C", kFloat32, {4, 5});
  Var i("i"), j("j");
  PrimFunc f("f", {a, c}, 1,
             root(serial(i, 4, serial(j, 5, buffer_store(c, buffer_load(a, {j, i}), {i, j})))));
  expect_error(
      [&] {
        run_on_inputs(f, {random_array({4, 5}, kFloat32, 1)});
      },
      {"load from buffer 'A'", "index [4, 0]", "shape [4, 5]"});
}

TEST(Interpreter, IntegerDivisionByZero) {
  DataType i32 = DataType::Int(32);
  Buffer a = make_buffer("A", i32, {4}), d = make_buffer("D", i32, {4}),
         c = make_buffer("C", i32, {4});
  Var i("i");
  for (ExprKind k : {ExprKind::kDiv, ExprKind::kFloorDiv, ExprKind::kFloorMod}) {
    Expr v = make_binary(k, buffer_load(a, {i}), buffer_load(d, {i}));
    PrimFunc f("f", {a, d, c}, 1, root(serial(i, 4, buffer_store(c, v, {i}))));
    NDArray num = random_array({4}, i32, 1, -100, 100), den({4}, i32);
    for (int p = 0; p < 4; ++p) den.set_flat_int(p, std::vector<int>{1, -1, 0, 3}[p]);
    expect_error([&] { run_on_inputs(f, {num, den}); }, {"division by zero"});
  }
  // A constant zero divisor is also caught at run time, not folded away.
  Buffer b = make_buffer("B", i32, {4});
  PrimFunc f(
      "f", {a, b}, 1,
      root(serial(
          i, 4,
          buffer_store(b, Expr(std::make_shared<BinaryNode>(ExprKind::kFloorDiv, i32, i, Expr(0))),
                       {i}))));
  expect_error([&] { run_on_inputs(f, {NDArray({4}, i32)}); }, {"division by zero", "i // 0"});
}

TEST(Interpreter, IntegerSemantics) {
  // floordiv/floormod floor, '/' truncates, int8 stores wrap; all exact.
  DataType i8 = DataType::Int(8), i32 = DataType::Int(32);
  Buffer a = make_buffer("A", i32, {6}), b = make_buffer("B", i32, {6});
  Buffer o = make_buffer("O", i32, {4, 6}), w = make_buffer("W", i8, {6});
  Var i("i");
  Expr x = buffer_load(a, {i}), y = buffer_load(b, {i});
  Stmt body =
      seq({buffer_store(o, floordiv(x, y), {0, i}), buffer_store(o, floormod(x, y), {1, i}),
           buffer_store(o, x / y, {2, i}), buffer_store(o, min(x, y) * 1000 + max(x, y), {3, i}),
           buffer_store(w, x * y, {i})});
  PrimFunc f("ints", {a, b, o, w}, 2, root(serial(i, 6, body)));
  std::vector<int> xs = {7, -7, 7, -7, 100, -128}, ys = {2, 2, -2, -2, 3, 1};
  NDArray na({6}, i32), nb({6}, i32);
  for (int p = 0; p < 6; ++p) na.set_flat_int(p, xs[p]), nb.set_flat_int(p, ys[p]);
  auto out = run_on_inputs(f, {na, nb});
  std::vector<int> fd = {3, -4, -4, 3, 33, -128}, fm = {1, 1, -1, -1, 1, 0},
                   td = {3, -3, -3, 3, 33, -128};
  for (int p = 0; p < 6; ++p) {
    EXPECT_EQ(int_at(out[0], 0 * 6 + p), fd[p]) << p;
    EXPECT_EQ(int_at(out[0], 1 * 6 + p), fm[p]) << p;
    EXPECT_EQ(int_at(out[0], 2 * 6 + p), td[p]) << p;
    EXPECT_EQ(int_at(out[0], 3 * 6 + p), std::min(xs[p], ys[p]) * 1000 + std::max(xs[p], ys[p]));
    EXPECT_EQ(int_at(out[1], p), static_cast<int8_t>(xs[p] * ys[p])) << p;  // 300 wraps to 44
  }
}

TEST(Interpreter, Int8InputsExact) {
  DataType i8 = DataType::Int(8), i32 = DataType::Int(32);
  Buffer a = make_buffer("A", i8, {5}), b = make_buffer("B", i32, {5});
  Var i("i");
  PrimFunc f("f", {a, b}, 1,
             root(serial(i, 5, buffer_store(b, cast(i32, buffer_load(a, {i})) * 1000 + 7, {i}))));
  NDArray in({5}, i8);
  for (int p = 0; p < 5; ++p) in.set_flat_int(p, -128 + 60 * p);
  NDArray out = run_on_inputs(f, {in})[0];
  for (int p = 0; p < 5; ++p) EXPECT_EQ(int_at(out, p), (-128 + 60 * p) * 1000 + 7);
}

TEST(Interpreter, VectorRampAndBroadcast) {
  // B[ramp(4 i, 1, 4)] = A[ramp(4 i, 1, 4)] * broadcast(3, 4) + ramp(0.5, 1, 4)
  Buffer a = make_buffer("A", kFloat32, {16}), b = make_buffer("B", kFloat32, {16});
  Var i("i");
  Expr idx = ramp(i * 4, 1, 4);
  Expr v = buffer_load(a, {idx}) * broadcast(make_float(3.0), 4) +
           ramp(make_float(0.5), make_float(1.0), 4);
  ASSERT_EQ(v.dtype(), kFloat32.with_lanes(4));
  PrimFunc f("vec", {a, b}, 1,
             root(for_loop(i, 0, 4, ForKind::kVectorized, buffer_store(b, v, {idx}))));
  NDArray in = random_array({16}, kFloat32, 6);
  NDArray out = run_on_inputs(f, {in})[0];
  for (int p = 0; p < 16; ++p)
    EXPECT_FLOAT_EQ(out.get_flat(p), static_cast<float>(in.get_flat(p) * 3 + 0.5 + p % 4)) << p;
}

TEST(Interpreter, VectorIfThenElseMasksOutOfBoundsLanes) {
  // Shift right by one with zero padding, 4 lanes at a time: lane 0 of the first vector would
  // read A[-1], but if_then_else discards it. Select evaluates both sides: an error.
  Buffer a = make_buffer("A", kFloat32, {8}), b = make_buffer("B", kFloat32, {8});
  Var i("i");
  Expr idx = ramp(i * 4, 1, 4);
  Expr src = ramp(i * 4 - 1, 1, 4);
  Expr cond = src >= broadcast(0, 4);
  Expr v = if_then_else(cond, buffer_load(a, {src}), broadcast(make_float(0.0), 4));
  ASSERT_EQ(v.dtype(), kFloat32.with_lanes(4));
  PrimFunc f("shift", {a, b}, 1, root(serial(i, 2, buffer_store(b, v, {idx}))));
  NDArray in = random_array({8}, kFloat32, 7);
  NDArray out = run_on_inputs(f, {in})[0];
  EXPECT_EQ(out.get_flat(0), 0.0);
  for (int p = 1; p < 8; ++p) EXPECT_EQ(out.get_flat(p), in.get_flat(p - 1));
  Expr w = select(cond, buffer_load(a, {src}), broadcast(make_float(0.0), 4));
  PrimFunc g("shift", {a, b}, 1, root(serial(i, 2, buffer_store(b, w, {idx}))));
  expect_error([&] { run_on_inputs(g, {in}); }, {"load from buffer 'A'", "index [-1]"});
  // A lane the condition keeps is still checked.
  Expr bad =
      if_then_else(cond, buffer_load(a, {src + broadcast(2, 4)}), broadcast(make_float(0.0), 4));
  PrimFunc h("shift", {a, b}, 1, root(serial(i, 2, buffer_store(b, bad, {idx}))));
  expect_error([&] { run_on_inputs(h, {in}); }, {"load from buffer 'A'", "index [8]"});
}

TEST(Interpreter, IfThenElseIsLazySelectIsNot) {
  // B[i] = A[i - 2] if i >= 2 else 0: the guarded load must not trap under if_then_else; under
  // Select (which generated code may evaluate eagerly) it is reported.
  Buffer a = make_buffer("A", kFloat32, {6}), b = make_buffer("B", kFloat32, {8});
  Var i("i");
  Expr v = if_then_else(i >= 2, buffer_load(a, {i - 2}), make_float(0.0));
  PrimFunc f("pad", {a, b}, 1, root(serial(i, 8, buffer_store(b, v, {i}))));
  NDArray in = random_array({6}, kFloat32, 8);
  NDArray out = run_on_inputs(f, {in})[0];
  for (int p = 0; p < 8; ++p) EXPECT_EQ(out.get_flat(p), p < 2 ? 0.0 : in.get_flat(p - 2));
  Expr w = select(i >= 2, buffer_load(a, {i - 2}), make_float(0.0));
  PrimFunc g("pad", {a, b}, 1, root(serial(i, 8, buffer_store(b, w, {i}))));
  expect_error([&] { run_on_inputs(g, {in}); }, {"load from buffer 'A'", "index [-2]"});
  // Integer if_then_else, and Select where both sides are safe.
  DataType i32 = DataType::Int(32);
  Buffer c = make_buffer("C", i32, {8});
  Expr iv = if_then_else(i < 3, i * 10, select(i < 5, i, 0 - i));
  NDArray r =
      run_on_inputs(PrimFunc("g", {c}, 1, root(serial(i, 8, buffer_store(c, iv, {i})))), {})[0];
  for (int p = 0; p < 8; ++p) EXPECT_EQ(int_at(r, p), p < 3 ? p * 10 : (p < 5 ? p : -p));
}

TEST(Interpreter, MathLetAndCasts) {
  Buffer a = make_buffer("A", kFloat32, {5}), b = make_buffer("B", kFloat32, {8, 5});
  Buffer h = make_buffer("H", DataType::Float(16), {5}),
         q = make_buffer("Q", DataType::Int(32), {5});
  Var i("i"), x("x", kFloat32);
  Expr ax = buffer_load(a, {i});
  Stmt body = seq({
      buffer_store(b, exp(ax), {0, i}),
      buffer_store(b, sigmoid(ax), {1, i}),
      buffer_store(b, tanh(ax), {2, i}),
      buffer_store(b, call(CallOp::kErf, {ax}), {3, i}),
      buffer_store(b, call(CallOp::kPow, {abs(ax), make_float(1.5)}), {4, i}),
      buffer_store(b, let(x, ax * 2.0, x * x + x), {5, i}),
      buffer_store(b, call(CallOp::kFloor, {ax * 4.0}) + call(CallOp::kCeil, {ax}), {6, i}),
      buffer_store(b, call(CallOp::kRsqrt, {abs(ax) + 1.0}) + sqrt(abs(ax)) + log(abs(ax) + 1.0),
                   {7, i}),
      buffer_store(h, ax * 1000.0, {i}),
      buffer_store(q, cast(DataType::Int(32), ax * 10.0), {i}),
  });
  PrimFunc f("math", {a, b, h, q}, 3, root(serial(i, 5, body)));
  NDArray in({5}, kFloat32);
  std::vector<double> xs = {-1.75, -0.3, 0.0, 0.61, 2.2};
  for (int p = 0; p < 5; ++p) in.set_flat(p, xs[p]);
  auto out = run_on_inputs(f, {in});
  for (int p = 0; p < 5; ++p) {
    double v = static_cast<float>(xs[p]);
    auto at = [&](int row) { return out[0].get_flat(row * 5 + p); };
    EXPECT_FLOAT_EQ(at(0), std::exp(v));
    EXPECT_FLOAT_EQ(at(1), 1 / (1 + std::exp(-v)));
    EXPECT_FLOAT_EQ(at(2), std::tanh(v));
    EXPECT_FLOAT_EQ(at(3), std::erf(v));
    EXPECT_FLOAT_EQ(at(4), std::pow(std::fabs(v), 1.5));
    EXPECT_FLOAT_EQ(at(5), 4 * v * v + 2 * v);
    EXPECT_FLOAT_EQ(at(6), std::floor(4 * v) + std::ceil(v));
    EXPECT_FLOAT_EQ(at(7), 1 / std::sqrt(std::fabs(v) + 1) + std::sqrt(std::fabs(v)) +
                               std::log(std::fabs(v) + 1));
    EXPECT_NEAR(out[1].get_flat(p), v * 1000, std::fabs(v * 1000) * 1e-3);  // float16 storage
    EXPECT_EQ(int_at(out[2], p), static_cast<int>(v * 10));                 // truncation
  }
}

TEST(Interpreter, FloatCastRoundsToFloat32) {
  // float64 arithmetic cast to float32 then back: 1 + 2^-30 is not a float32.
  Buffer a = make_buffer("A", kFloat64, {1}), b = make_buffer("B", kFloat64, {2});
  Expr x = buffer_load(a, {0});
  Stmt body =
      seq({buffer_store(b, cast(kFloat64, cast(kFloat32, x)), {0}), buffer_store(b, x, {1})});
  NDArray in({1}, kFloat64);
  in.set_flat(0, 1.0 + std::ldexp(1.0, -30));
  NDArray out = run_on_inputs(PrimFunc("f", {a, b}, 1, root(body)), {in})[0];
  EXPECT_EQ(out.get_flat(0), 1.0);
  EXPECT_EQ(out.get_flat(1), 1.0 + std::ldexp(1.0, -30));
}

TEST(Interpreter, SymbolicShapes) {
  Var n("n");
  Buffer a = make_buffer("A", kFloat32, {n}), b = make_buffer("B", kFloat32, {n * 2});
  Var i("i");
  Stmt body = serial(i, n * 2, buffer_store(b, buffer_load(a, {floordiv(i, 2)}), {i}));
  PrimFunc f("dup", {a, b}, 1, root(body));
  NDArray in = random_array({5}, kFloat32, 10);
  NDArray out = run_on_inputs(f, {in})[0];
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{10}));
  for (int p = 0; p < 10; ++p) EXPECT_EQ(out.get_flat(p), in.get_flat(p / 2));
  std::vector<NDArray> bad = {in, NDArray({9}, kFloat32)};
  expect_error([&] { run(f, bad); }, {"argument 1 ('B')", "shape [9]"});
}

TEST(Interpreter, ArgumentErrors) {
  PrimFunc f = matmul(4, 5, 6);
  std::vector<NDArray> too_few = {NDArray({4, 6}, kFloat32)};
  expect_error([&] { run(f, too_few); }, {"takes 3 arguments", "got 1"});
  std::vector<NDArray> wrong_shape = {NDArray({4, 6}, kFloat32), NDArray({6, 4}, kFloat32),
                                      NDArray({4, 5}, kFloat32)};
  expect_error([&] { run(f, wrong_shape); }, {"argument 1 ('B')", "shape [6, 4]", "[6, 5]"});
  std::vector<NDArray> wrong_dtype = {NDArray({4, 6}, kFloat64), NDArray({6, 5}, kFloat32),
                                      NDArray({4, 5}, kFloat32)};
  expect_error([&] { run(f, wrong_dtype); }, {"argument 0 ('A')", "float64", "float32"});
  expect_error([&] { run_on_inputs(f, {NDArray({4, 6}, kFloat32)}); }, {"takes 2 inputs"});
}

TEST(Interpreter, CompileErrors) {
  Var n("n"), i("i"), free_var("unbound_v");
  Buffer t = make_buffer("T", kFloat32, {n}), c = make_buffer("C", kFloat32, {4});
  PrimFunc dyn("f", {c}, 1, root(serial(i, 4, buffer_store(c, make_float(1.0), {i})), {t}));
  expect_error([&] { run_on_inputs(dyn, {}); }, {"non-constant allocation shape", "'T'"});
  PrimFunc unbound("f", {c}, 1, root(serial(i, 4, buffer_store(c, make_float(1.0), {free_var}))));
  expect_error([&] { run_on_inputs(unbound, {}); }, {"unbound variable 'unbound_v'"});
  Buffer stray = make_buffer("Stray", kFloat32, {4});
  PrimFunc not_allocated("f", {c}, 1,
                         root(serial(i, 4, buffer_store(c, buffer_load(stray, {i}), {i}))));
  expect_error([&] { run_on_inputs(not_allocated, {}); }, {"buffer 'Stray'"});
}

TEST(Interpreter, InputsAreNotModified) {
  // A program that (wrongly) writes its input must not corrupt the caller's array.
  Buffer a = make_buffer("A", kFloat32, {3}), b = make_buffer("B", kFloat32, {3});
  Var i("i");
  Stmt body = serial(
      i, 3, seq({buffer_store(a, make_float(0.0), {i}), buffer_store(b, make_float(1.0), {i})}));
  NDArray in = random_array({3}, kFloat32, 11);
  NDArray before = in.copy();
  run_on_inputs(PrimFunc("f", {a, b}, 1, root(body)), {in});
  EXPECT_TRUE(compare(in, before).ok);
}

TEST(Interpreter, CompiledFuncRunsRepeatedly) {
  CompiledFunc f(matmul(8, 8, 8));
  for (uint64_t seed = 0; seed < 3; ++seed) {
    std::vector<NDArray> in = {random_array({8, 8}, kFloat32, seed),
                               random_array({8, 8}, kFloat32, seed + 7)};
    Comparison c = compare(f.run_on_inputs(in)[0], matmul_reference(in[0], in[1]));
    EXPECT_TRUE(c.ok) << c.message;
  }
}

}  // namespace
}  // namespace tyche::interp::testing
