#include <gtest/gtest.h>

#include <set>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/structural.h"

namespace tyche::ir {
namespace {

// A matmul block nest over fresh variables, built the way create_prim_func would.
PrimFunc matmul(int64_t n, const std::string& prefix = "") {
  Buffer a = make_buffer(prefix + "A", kFloat32, {make_int(n), make_int(n)});
  Buffer b = make_buffer(prefix + "B", kFloat32, {make_int(n), make_int(n)});
  Buffer c = make_buffer(prefix + "C", kFloat32, {make_int(n), make_int(n)});
  Var i(prefix + "i"), j(prefix + "j"), k(prefix + "k");
  Var vi(prefix + "vi"), vj(prefix + "vj"), vk(prefix + "vk");
  Expr N = make_int(n);
  std::vector<IterVar> ivs = {{vi, Range(0, N), IterKind::kSpatial},
                              {vj, Range(0, N), IterKind::kSpatial},
                              {vk, Range(0, N), IterKind::kReduce}};
  auto point = [](Expr x) { return Range(x, 1); };
  Block blk = make_block(
      "C", ivs, {BufferRegion(a, {point(vi), point(vk)}), BufferRegion(b, {point(vk), point(vj)})},
      {BufferRegion(c, {point(vi), point(vj)})}, buffer_store(c, 0.0, {vi, vj}),
      buffer_store(c,
                   buffer_load(c, {vi, vj}) + buffer_load(a, {vi, vk}) * buffer_load(b, {vk, vj}),
                   {vi, vj}));
  Stmt s = block_realize({i, j, k}, make_bool(true), blk);
  s = for_loop(k, 0, N, ForKind::kSerial, s);
  s = for_loop(j, 0, N, ForKind::kSerial, s);
  s = for_loop(i, 0, N, ForKind::kSerial, s);
  Block root = make_block("root", {}, {}, {}, Stmt(), s);
  return PrimFunc("matmul", {a, b, c}, 1, block_realize({}, make_bool(true), root));
}

TEST(DataType, RoundTripsNames) {
  for (const char* name : {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
                           "int64", "uint8", "bool", "float32x8", "int8x64"}) {
    EXPECT_EQ(DataType::parse(name).str(), name);
  }
  EXPECT_EQ(DataType::parse("float32x16").lanes(), 16);
  EXPECT_THROW(DataType::parse("float31"), InputError);
  EXPECT_THROW(DataType::parse("floaty"), InputError);
  EXPECT_THROW(DataType::parse("int32x0"), InputError);
}

TEST(CallOp, EveryCallNamesItselfAndOnlyTheGpuOnesAreGpuCalls) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(CallOp::kShiftRight); ++i) {
    auto op = static_cast<CallOp>(i);
    std::string name = call_op_name(op);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(call_op_from_name(name), op) << name;
    bool gpu = op >= CallOp::kThreadBarrier && op <= CallOp::kAsyncWait;
    EXPECT_EQ(is_gpu_call(op), gpu) << name;
    EXPECT_EQ(is_bit_call(op), op >= CallOp::kBitwiseAnd) << name;
  }
  Var x("x", DataType::UInt(16));
  EXPECT_EQ(call(CallOp::kShiftRight, {x, Expr(3)}).dtype(), DataType::UInt(16));
  EXPECT_EQ(call(CallOp::kSin, {Expr(1.0f)}).dtype(), kFloat32);
  EXPECT_THROW(call(CallOp::kBitwiseNot, {Expr(1.5f)}), Error);
}

TEST(Op, FoldsConstantsAndReconcilesLiteralTypes) {
  EXPECT_EQ(to_string(Expr(2) + 3), "5");
  EXPECT_EQ(to_string(floordiv(Expr(-7), 2)), "-4");
  EXPECT_EQ(to_string(floormod(Expr(-7), 2)), "1");
  Var x("x"), f("f", kFloat32), l("l", kInt64);
  EXPECT_EQ((x + 1).dtype(), kInt32);
  EXPECT_EQ((f + 1).dtype(), kFloat32);  // the literal adopts f's type
  EXPECT_EQ((l + x).dtype(), kInt64);    // int32 widens
  EXPECT_EQ((x < 3).dtype(), kBool);
  EXPECT_TRUE((x * 1).same_as(x));
  EXPECT_TRUE((x + 0).same_as(x));
  EXPECT_EQ(to_string(x * 0), "0");
  EXPECT_THROW(floordiv(f, f), Error);
}

TEST(Printer, ParenthesizesByPrecedence) {
  Var x("x"), y("y");
  EXPECT_EQ(to_string((x + y) * 2), "(x + y) * 2");
  EXPECT_EQ(to_string(x + y * 2), "x + y * 2");
  EXPECT_EQ(to_string(x - (y - 1)), "x - (y - 1)");
  EXPECT_EQ(to_string(x - y - 1), "x - y - 1");
  EXPECT_EQ(to_string(floordiv(x + 1, 4)), "(x + 1) // 4");
  EXPECT_EQ(to_string(floormod(x, 4) * 4), "x % 4 * 4");
  EXPECT_EQ(to_string(x < 3 && y >= 2), "x < 3 and y >= 2");
  EXPECT_EQ(to_string(min(x, y)), "min(x, y)");
  EXPECT_EQ(to_string(make_float(0.5)), "0.5f");
  EXPECT_EQ(to_string(make_float(1.0, kFloat64)), "1.0");
  EXPECT_EQ(to_string(make_int(3, kInt64)), "int64(3)");
  EXPECT_EQ(to_string(cast(kFloat32, x)), "float32(x)");
  EXPECT_EQ(to_string(min_value(kFloat32)), "float32(\"-inf\")");
  EXPECT_EQ(to_string(x / 2), "truncdiv(x, 2)");
}

TEST(Printer, DisambiguatesEqualNames) {
  Var a("x"), b("x");
  EXPECT_EQ(to_string(a + b), "x + x_1");
}

TEST(Printer, PrintsMatmul) {
  EXPECT_EQ(to_string(matmul(16)),
            "@prim_func\n"
            "def matmul(A: Buffer((16, 16), \"float32\"), B: Buffer((16, 16), \"float32\"), C: "
            "Buffer((16, 16), \"float32\")):\n"
            "  # outputs: C\n"
            "  with block(\"root\"):\n"
            "    for i in range(16):\n"
            "      for j in range(16):\n"
            "        for k in range(16):\n"
            "          with block(\"C\"):\n"
            "            vi = axis.spatial(16, i)\n"
            "            vj = axis.spatial(16, j)\n"
            "            vk = axis.reduce(16, k)\n"
            "            reads(A[vi, vk], B[vk, vj])\n"
            "            writes(C[vi, vj])\n"
            "            with init():\n"
            "              C[vi, vj] = 0.0f\n"
            "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n");
}

TEST(Structural, EqualModuloRenaming) {
  PrimFunc f = matmul(16), g = matmul(16, "other_");
  EXPECT_FALSE(f.same_as(g));
  EXPECT_TRUE(structural_equal(f, g));
  EXPECT_EQ(structural_hash(f), structural_hash(g));
  EXPECT_TRUE(structural_equal(f, f));
}

TEST(Structural, ChangedExtentIsUnequal) {
  PrimFunc f = matmul(16), g = matmul(32);
  EXPECT_FALSE(structural_equal(f, g));
  EXPECT_NE(structural_hash(f), structural_hash(g));
}

TEST(Structural, DistinguishesVariableIdentity) {
  Var x("x"), y("y"), z("z");
  // x + x and y + z differ: renaming must be one-to-one.
  EXPECT_FALSE(structural_equal(x + x, y + z));
  EXPECT_TRUE(structural_equal(x + y, y + z));
  EXPECT_FALSE(structural_equal(x + y, x * y));
  EXPECT_FALSE(structural_equal(Expr(1), make_int(1, kInt64)));
  EXPECT_FALSE(structural_equal(make_float(1.0), make_float(1.0, kFloat64)));
}

TEST(Structural, BlockNameAndLoopKindCount) {
  Var i("i");
  Buffer a = make_buffer("A", kFloat32, {make_int(4)});
  Stmt s1 = for_loop(i, 0, 4, ForKind::kSerial, buffer_store(a, 1.0, {i}));
  Stmt s2 = for_loop(i, 0, 4, ForKind::kParallel, buffer_store(a, 1.0, {i}));
  EXPECT_FALSE(structural_equal(s1, s2));
  Stmt s3 =
      for_loop(i, 0, 4, ForKind::kSerial, buffer_store(a, 1.0, {i}), "", {{"pragma", int64_t{1}}});
  EXPECT_FALSE(structural_equal(s1, s3));
  EXPECT_NE(structural_hash(s1), structural_hash(s3));
}

class CountingMutator : public StmtExprMutator {
 public:
  int vars = 0;

 protected:
  Expr mutate_var(const VarNode*, const Expr& self) override {
    ++vars;
    return self;
  }
};

TEST(Mutator, ReturnsSameNodeWhenNothingChanges) {
  PrimFunc f = matmul(8);
  CountingMutator m;
  Stmt out = m.mutate_stmt(f->body);
  EXPECT_TRUE(out.same_as(f->body));
  EXPECT_GT(m.vars, 10);
}

TEST(Mutator, SubstituteRebuildsOnlyChangedPaths) {
  Var x("x"), y("y");
  Expr e = (x + 1) * (y + 2);
  Expr r = substitute(e, [&](const Var& v) -> Expr { return v.same_as(x) ? Expr(5) : Expr(); });
  EXPECT_EQ(to_string(r), "6 * (y + 2)");
  auto* mul = r.as_binary();
  ASSERT_NE(mul, nullptr);
  EXPECT_TRUE(mul->b.same_as(e.as_binary()->b));
}

}  // namespace
}  // namespace tyche::ir

namespace tyche::ir {
namespace {

TEST(Printer, KeepsGroupingThatChangesValues) {
  Var x("x"), y("y"), f("f", kFloat32), g("g", kFloat32), h("h", kFloat32);
  EXPECT_EQ(to_string(x * floordiv(y, 2)), "x * (y // 2)");
  EXPECT_EQ(to_string(x * floormod(y, 2)), "x * (y % 2)");
  EXPECT_EQ(to_string(floordiv(x * y, 2)), "x * y // 2");
  EXPECT_EQ(to_string(f * (g / f)), "f * (g / f)");
  EXPECT_EQ(to_string(f + (g - h)), "f + (g - h)");
  EXPECT_EQ(to_string(f + (g + h)), "f + (g + h)");  // float addition is not associative
  EXPECT_EQ(to_string(x + (y + 1)), "x + y + 1");
}

TEST(Op, FoldingWrapsAndRoundsToTheType) {
  EXPECT_EQ(to_string(make_int(2147483647) + 1), "-2147483648");
  EXPECT_EQ(as_const_int(make_int(300, DataType::UInt(8))), 44);
  Expr sum = make_float(0.1) + make_float(0.2);
  auto* f = sum.as<FloatImmNode>();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->value, static_cast<double>(0.1f + 0.2f));
}

}  // namespace
}  // namespace tyche::ir
