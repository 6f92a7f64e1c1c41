// Simplifier, constant bounds and proofs on hand-picked index expressions.
#include <gtest/gtest.h>

#include "arith/analyzer.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::arith {
namespace {

using namespace ir;

class SimplifyTest : public ::testing::Test {
 protected:
  Var i{"i"}, j{"j"}, k{"k"}, x{"x"}, y{"y"};
  Analyzer ana;
  std::string s(const Expr& e) { return to_string(ana.simplify(e)); }
  void bind(const Var& v, int64_t lo, int64_t extent) {
    ana.bind(v, Range(make_int(lo), make_int(extent)));
  }
};

TEST_F(SimplifyTest, LinearCancellation) {
  EXPECT_EQ(s(i * 4 + j - i * 4), "j");
  EXPECT_EQ(s((i + 1) * 2 - 2), "i * 2");
  EXPECT_EQ(s(i + j - j + i), "i * 2");
  EXPECT_EQ(s(i * 3 + j * 2 + 5 - j - 7), "i * 3 + j - 2");
  EXPECT_EQ(s(3 - i + 0), "3 - i");
  EXPECT_EQ(s(Expr(0) - i * 2 - j), "i * -2 - j");
  EXPECT_EQ(s((i + j) * 3 - i * 3), "j * 3");
  EXPECT_EQ(s(Expr(2) * 3 + 4), "10");
  EXPECT_EQ(s(i - i), "0");
}

TEST_F(SimplifyTest, Products) {
  EXPECT_EQ(s((x * 2) * (y * 3)), "x * y * 6");
  EXPECT_EQ(s((x * 2) * (y * 3) - x * y * 6), "0");
  EXPECT_EQ(s((x + 1) * y - (x + 1) * y), "0");
}

TEST_F(SimplifyTest, DivModByConstant) {
  EXPECT_EQ(s(floordiv(x * 8 + y, 8)), "x + y // 8");
  EXPECT_EQ(s(floormod(x * 8 + y, 8)), "y % 8");
  EXPECT_EQ(s(floordiv(x * 4 + 8, 12)), "(x + 2) // 3");
  EXPECT_EQ(s(floormod(x * 4 + 8, 12)), "(x + 2) % 3 * 4");
  EXPECT_EQ(s(floormod(x + 13, 4)), "(x + 1) % 4");
  EXPECT_EQ(s(floordiv(floordiv(x, 4), 8)), "x // 32");
  EXPECT_EQ(s(floordiv(floormod(x, 32), 4)), "x // 4 % 8");
  EXPECT_EQ(s(floormod(floormod(x, 32), 8)), "x % 8");
  EXPECT_EQ(s(floordiv(x, 4) * 4 + floormod(x, 4)), "x");
  EXPECT_EQ(s(x - floordiv(x, 4) * 4), "x % 4");
  EXPECT_EQ(s(floordiv(x, 1)), "x");
  EXPECT_EQ(s(floormod(x, 1)), "0");
  EXPECT_EQ(s(floordiv(Expr(-7), 2)), "-4");
  EXPECT_EQ(s(floormod(Expr(-7), 2)), "1");
}

TEST_F(SimplifyTest, DivModWithBounds) {
  bind(i, 0, 16);
  bind(j, 0, 8);
  EXPECT_EQ(s(floordiv(j, 8)), "0");
  EXPECT_EQ(s(floormod(j, 8)), "j");
  EXPECT_EQ(s(floordiv(i * 8 + j, 8)), "i");
  EXPECT_EQ(s(floormod(i * 8 + j, 8)), "j");
  EXPECT_EQ(s(floordiv(i * 8 + j + 8, 8)), "i + 1");
  EXPECT_EQ(s(floordiv(i, 16)), "0");
  EXPECT_EQ(s((i * 8 + j) / 8), "i");  // truncdiv of a non-negative value
  // Fused-then-split loops come back to the original index.
  Expr fused = i * 8 + j;
  EXPECT_EQ(s(floordiv(fused, 8) * 8 + floormod(fused, 8)), "i * 8 + j");
}

TEST_F(SimplifyTest, MinMax) {
  bind(i, 0, 16);
  EXPECT_EQ(s(min(i, 20)), "i");
  EXPECT_EQ(s(max(i, 20)), "20");
  EXPECT_EQ(s(min(i, 10)), "min(i, 10)");
  EXPECT_EQ(s(min(x, x)), "x");
  EXPECT_EQ(s(max(x + 1, x + 3)), "x + 3");
  EXPECT_EQ(s(min(x * 2 + 1, x * 2)), "x * 2");
  EXPECT_EQ(s(min(Expr(3), Expr(5))), "3");
}

TEST_F(SimplifyTest, Comparisons) {
  bind(i, 0, 16);
  bind(j, 0, 4);
  EXPECT_EQ(s(i * 4 + j < 64), "True");
  EXPECT_EQ(s(i * 4 + j < 63), "i * 4 + j < 63");
  EXPECT_EQ(s(i >= 16), "False");
  EXPECT_EQ(s(x + 1 < y + 1), "x < y");
  EXPECT_EQ(s(x + 1 < 5), "x < 4");
  EXPECT_EQ(s(Expr(5) < x), "x > 5");
  EXPECT_EQ(s(x == x), "True");
  EXPECT_EQ(s(x * 2 + 1 == x * 2), "False");
  EXPECT_EQ(s(!(x < y)), "x >= y");
  EXPECT_EQ(s(!(i < 100)), "False");
}

TEST_F(SimplifyTest, Logic) {
  bind(i, 0, 16);
  Expr c = x < y;
  EXPECT_EQ(s(c && (i < 16)), "x < y");
  EXPECT_EQ(s(c || (i < 16)), "True");
  EXPECT_EQ(s(c && (i > 16)), "False");
  EXPECT_EQ(s(c || (i > 16)), "x < y");
  EXPECT_EQ(s(c && c), "x < y");
  EXPECT_EQ(s(!!c), "x < y");
  EXPECT_EQ(s(select(i < 16, x, y)), "x");
  EXPECT_EQ(s(select(c, x + 1, 1 + x)), "x + 1");
  EXPECT_EQ(s(select(c, x, y)), "select(x < y, x, y)");
}

TEST_F(SimplifyTest, FloatsOnlyFold) {
  Var f("f", kFloat32);
  EXPECT_EQ(s(f + 1.0 - 1.0), "f + 1.0f - 1.0f");
  EXPECT_EQ(s(Expr(1.5) * 2.0 + f), "3.0f + f");
  EXPECT_EQ(s(f * 0.0), "f * 0.0f");
}

TEST_F(SimplifyTest, BindValueSubstitutes) {
  ana.bind(x, i * 2);
  EXPECT_EQ(s(x - i), "i");
  bind(i, 0, 4);
  EXPECT_EQ(s(floordiv(x, 8)), "0");  // the value's bounds are re-read at simplify time
}

TEST_F(SimplifyTest, LetAndCast) {
  bind(i, 0, 8);
  Var t("t");
  EXPECT_EQ(s(let(t, Expr(3), t + i - 3)), "i");
  EXPECT_EQ(s(let(t, i * 2, floordiv(t, 16))), "0");
  EXPECT_EQ(s(cast(kInt64, i + 1 - 1)), "int64(i)");
  EXPECT_EQ(s(cast(kInt32, Expr(2.7))), "2");
}

TEST_F(SimplifyTest, Int64Arithmetic) {
  Var a("a", kInt64);
  bind(i, 0, 16);
  bind(j, 0, 4);
  // Widening casts distribute over sums that cannot overflow.
  EXPECT_EQ(s(cast(kInt64, i * 4 + j) - cast(kInt64, i) * 4), "int64(j)");
  EXPECT_EQ(s(cast(kInt64, x * 4 + j)), "int64(x * 4 + j)");  // x is unbounded
  EXPECT_EQ(s(a * 4 + 2 - a * 4), "int64(2)");
  EXPECT_EQ(s(floordiv(a * 4 + 4, 4)), "a + int64(1)");
}

TEST_F(SimplifyTest, Idempotent) {
  bind(i, 0, 16);
  bind(j, 0, 8);
  for (Expr e : {floordiv(i * 8 + j + 3, 6) - x, min(x * 4, y) + floormod(x + 5, 3) * 2,
                 (x + y) * (x - 2) + floordiv(y * 6, 4), Expr(0) - x - y * 3 + 7}) {
    Expr once = ana.simplify(e);
    EXPECT_EQ(to_string(ana.simplify(once)), to_string(once)) << to_string(e);
  }
}

TEST_F(SimplifyTest, ConstIntBound) {
  bind(i, 0, 16);
  bind(j, -3, 7);
  auto b = [&](const Expr& e) { return ana.const_int_bound(e); };
  EXPECT_EQ(b(i), (ConstIntBound{0, 15}));
  EXPECT_EQ(b(j), (ConstIntBound{-3, 3}));
  EXPECT_EQ(b(i * 4 + j), (ConstIntBound{-3, 63}));
  EXPECT_EQ(b(i - j), (ConstIntBound{-3, 18}));
  EXPECT_EQ(b(i * j), (ConstIntBound{-45, 45}));
  EXPECT_EQ(b(floordiv(j, 2)), (ConstIntBound{-2, 1}));
  EXPECT_EQ(b(floormod(j, 4)), (ConstIntBound{0, 3}));
  EXPECT_EQ(b(floormod(i, 32)), (ConstIntBound{0, 15}));
  EXPECT_EQ(b(Expr(make_binary(ExprKind::kDiv, j, Expr(2)))), (ConstIntBound{-1, 1}));
  EXPECT_EQ(b(min(i, j)), (ConstIntBound{-3, 3}));
  EXPECT_EQ(b(max(i, j)), (ConstIntBound{0, 15}));
  EXPECT_EQ(b(select(x < 0, i, j + 100)), (ConstIntBound{0, 103}));
  EXPECT_EQ(b(cast(kInt64, i)), (ConstIntBound{0, 15}));
  EXPECT_EQ(b(cast(DataType::Int(8), i * 100)), (ConstIntBound{-128, 127}));
  EXPECT_EQ(b(i < 3), (ConstIntBound{0, 1}));
  // Unknown int64 variables are unbounded and arithmetic saturates instead of overflowing.
  Var a("a", kInt64);
  EXPECT_TRUE(b(a).is_everything());
  EXPECT_EQ(b(a * 0), (ConstIntBound{0, 0}));
  EXPECT_EQ(b(floormod(a, 8)), (ConstIntBound{0, 7}));
  EXPECT_TRUE(b(a * a + a).is_everything());
  EXPECT_EQ(b(x).min_value, -(int64_t{1} << 31));
}

TEST_F(SimplifyTest, CanProve) {
  bind(i, 0, 16);
  bind(j, 0, 4);
  EXPECT_TRUE(ana.can_prove(i * 4 + j < 64));
  EXPECT_FALSE(ana.can_prove(i * 4 + j < 63));
  EXPECT_TRUE(ana.can_prove(i * 4 + j >= 0));
  EXPECT_TRUE(ana.can_prove(floordiv(i * 4 + j, 4) == i));
  EXPECT_TRUE(ana.can_prove(x + 1 > x));
  EXPECT_FALSE(ana.can_prove(x > 0));
  EXPECT_TRUE(ana.can_prove((i < 16) && (j < 4)));
  EXPECT_FALSE(ana.can_prove((i < 16) && (j < 3)));
  EXPECT_TRUE(ana.can_prove(min(i, 20) == i));
  EXPECT_TRUE(ana.can_prove_equal(i * 4 + j - i * 4, j));
  EXPECT_TRUE(ana.can_prove_equal(floordiv(x, 4) * 4 + floormod(x, 4), x));
  EXPECT_FALSE(ana.can_prove_equal(x, y));
}

}  // namespace
}  // namespace tyche::arith
