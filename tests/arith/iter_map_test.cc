// Affine iter-map detection: bijective split/fuse forms are accepted, overlaps and gaps refused.
#include "arith/iter_map.h"

#include <gtest/gtest.h>

#include "ir/op.h"

namespace tyche::arith {
namespace {

using namespace ir;

Range rng(int64_t lo, int64_t extent) {
  return Range(make_int(lo), make_int(extent));
}

IterMapResult detect(const std::vector<Expr>& bindings, const VarRangeMap& loops,
                     const std::vector<Range>& doms, bool allow_predicate = false) {
  Analyzer ana;
  return detect_iter_map(bindings, loops, doms, &ana, allow_predicate);
}

TEST(IterMap, FuseIsBijective) {
  Var f("f");
  auto r = detect({floordiv(f, 8), floormod(f, 8)}, {{f, rng(0, 64)}}, {rng(0, 8), rng(0, 8)});
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.bindings[0].form, "f // 8");
  EXPECT_EQ(r.bindings[1].form, "f % 8");
  EXPECT_EQ(r.bindings[0].strides, std::vector<int64_t>{0});
  EXPECT_TRUE(r.unused_loops.empty());
}

TEST(IterMap, SplitIsBijective) {
  Var i("i"), j("j");
  auto r = detect({i * 8 + j}, {{i, rng(0, 4)}, {j, rng(0, 8)}}, {rng(0, 32)});
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.bindings[0].form, "j + i*8");
  EXPECT_EQ(r.bindings[0].extent, 32);
  ASSERT_EQ(r.bindings[0].loop_vars.size(), 2u);
  EXPECT_TRUE(r.bindings[0].loop_vars[0].same_as(j));
  EXPECT_EQ(r.bindings[0].strides, (std::vector<int64_t>{1, 8}));
  // The same with an offset domain, and the terms in either order.
  EXPECT_TRUE(detect({j + i * 8 + 3}, {{i, rng(0, 4)}, {j, rng(0, 8)}}, {rng(3, 32)}).ok);
}

TEST(IterMap, RefusesOverlapsAndGaps) {
  Var i("i"), j("j"), f("f");
  auto twice = detect({i, i}, {{i, rng(0, 8)}}, {rng(0, 8), rng(0, 8)});
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.reason.find("more than once"), std::string::npos) << twice.reason;
  auto gap = detect({i * 2}, {{i, rng(0, 8)}}, {rng(0, 16)});
  EXPECT_FALSE(gap.ok);
  EXPECT_NE(gap.reason.find("dense"), std::string::npos) << gap.reason;
  // Overlapping strides: i*4 + j with j in [0, 8) hits values twice.
  EXPECT_FALSE(detect({i * 4 + j}, {{i, rng(0, 4)}, {j, rng(0, 8)}}, {rng(0, 32)}).ok);
  // Only part of a fused loop is used.
  auto part = detect({floordiv(f, 8)}, {{f, rng(0, 64)}}, {rng(0, 8)});
  EXPECT_FALSE(part.ok);
  EXPECT_NE(part.reason.find("partly"), std::string::npos) << part.reason;
  // Extent mismatch, wrong offset, non-affine forms.
  EXPECT_FALSE(detect({i}, {{i, rng(0, 8)}}, {rng(0, 16)}).ok);
  EXPECT_FALSE(detect({i}, {{i, rng(0, 16)}}, {rng(0, 8)}).ok);
  EXPECT_FALSE(detect({i + 1}, {{i, rng(0, 8)}}, {rng(0, 8)}).ok);
  EXPECT_FALSE(detect({i * j}, {{i, rng(0, 4)}, {j, rng(0, 8)}}, {rng(0, 32)}).ok);
  EXPECT_FALSE(detect({min(i, 3)}, {{i, rng(0, 4)}}, {rng(0, 4)}).ok);
  EXPECT_FALSE(detect({floordiv(i, j)}, {{i, rng(0, 4)}, {j, rng(1, 8)}}, {rng(0, 4)}).ok);
  EXPECT_FALSE(detect({i, j}, {{i, rng(0, 4)}}, {rng(0, 4)}).ok);  // size mismatch
}

TEST(IterMap, ImperfectSplitNeedsPredicate) {
  Var i0("i0"), i1("i1");
  VarRangeMap loops{{i0, rng(0, 7)}, {i1, rng(0, 5)}};
  auto strict = detect({i0 * 5 + i1}, loops, {rng(0, 32)});
  EXPECT_FALSE(strict.ok);
  auto guarded = detect({i0 * 5 + i1}, loops, {rng(0, 32)}, /*allow_predicate=*/true);
  EXPECT_TRUE(guarded.ok) << guarded.reason;
  // Even with a predicate the image must cover the domain.
  EXPECT_FALSE(detect({i0 * 5 + i1}, loops, {rng(0, 36)}, true).ok);
}

TEST(IterMap, PredicateTightensFusedIterators) {
  // fuse(h, w) of 6 x 6 split by 16: where(f0*16 + f1 < 36); the simplifier wrote the modulo
  // binding with the stride reduced mod 6.
  Var f0("f0"), f1("f1");
  VarRangeMap loops{{f0, rng(0, 3)}, {f1, rng(0, 16)}};
  std::vector<Expr> binds{floordiv(f0 * 16 + f1, 6), floormod(f0 * 4 + f1, 6)};
  Expr pred = f0 * 16 + f1 < 36;
  Analyzer ana;
  auto r = detect_iter_map(binds, loops, {rng(0, 6), rng(0, 6)}, &ana, true, pred);
  EXPECT_TRUE(r.ok) << r.reason;
  // Without the predicate the rows take 48 / 6 = 8 values: only an unknown guard allows that.
  EXPECT_TRUE(detect_iter_map(binds, loops, {rng(0, 6), rng(0, 6)}, &ana, true).ok);
  EXPECT_FALSE(detect_iter_map(binds, loops, {rng(0, 6), rng(0, 6)}, &ana, false, pred).ok);
}

TEST(IterMap, UnusedLoopsAreReported) {
  Var i("i"), j("j"), k("k");
  auto r = detect({i}, {{i, rng(0, 8)}, {j, rng(0, 4)}, {k, rng(0, 1)}}, {rng(0, 8)});
  ASSERT_TRUE(r.ok) << r.reason;
  ASSERT_EQ(r.unused_loops.size(), 1u);  // k has extent 1
  EXPECT_TRUE(r.unused_loops[0].same_as(j));
}

TEST(IterMap, SymbolicOffsets) {
  Var i("i"), vo("vo");
  Analyzer ana;
  ana.bind(vo, rng(0, 4));
  auto r = detect_iter_map({vo * 16 + i}, {{i, rng(0, 16)}}, {Range(vo * 16, make_int(16))}, &ana);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_FALSE(detect_iter_map({floordiv(vo * 16 + i, 4)}, {{i, rng(0, 16)}},
                               {Range(vo * 4, make_int(4))}, &ana)
                   .ok);
}

// GMM's Z block (b, i, j, k) after the loop transformations a schedule applies.
TEST(IterMap, GmmScheduleBindings) {
  Var b("b"), i("i"), j("j"), k("k");
  std::vector<Range> doms{rng(0, 1), rng(0, 32), rng(0, 32), rng(0, 32)};
  // Plain and reordered loops: identity bindings.
  EXPECT_TRUE(detect({b, i, j, k},
                     {{b, rng(0, 1)}, {i, rng(0, 32)}, {j, rng(0, 32)}, {k, rng(0, 32)}}, doms)
                  .ok);
  // split i by (4, 8), split k by (2, 4, 4).
  Var i0("i0"), i1("i1"), k0("k0"), k1("k1"), k2("k2");
  VarRangeMap split{{b, rng(0, 1)},  {i0, rng(0, 4)}, {i1, rng(0, 8)}, {j, rng(0, 32)},
                    {k0, rng(0, 2)}, {k1, rng(0, 4)}, {k2, rng(0, 4)}};
  EXPECT_TRUE(detect({b, i0 * 8 + i1, j, (k0 * 4 + k1) * 4 + k2}, split, doms).ok);
  // fuse i1 and j (then the fused loop split again by (16, 16)).
  Var f("f"), f0("f0"), f1("f1");
  VarRangeMap fused{{b, rng(0, 1)}, {i0, rng(0, 4)}, {f, rng(0, 256)}, {k, rng(0, 32)}};
  auto r = detect({b, i0 * 8 + floordiv(f, 32), floormod(f, 32), k}, fused, doms);
  EXPECT_TRUE(r.ok) << r.reason;
  VarRangeMap refused{
      {b, rng(0, 1)}, {i0, rng(0, 4)}, {f0, rng(0, 16)}, {f1, rng(0, 16)}, {k, rng(0, 32)}};
  r = detect({b, i0 * 8 + floordiv(f0 * 16 + f1, 32), floormod(f0 * 16 + f1, 32), k}, refused,
             doms);
  EXPECT_TRUE(r.ok) << r.reason;
  // fuse everything, then split the fused loop imperfectly (7 x 147 >= 1024): needs a predicate.
  Var g0("g0"), g1("g1");
  VarRangeMap all{{b, rng(0, 1)}, {g0, rng(0, 7)}, {g1, rng(0, 147)}, {k, rng(0, 32)}};
  Expr g = g0 * 147 + g1;
  std::vector<Expr> binds{b, floordiv(g, 32), floormod(g, 32), k};
  EXPECT_FALSE(detect(binds, all, doms).ok);
  r = detect(binds, all, doms, true);
  EXPECT_TRUE(r.ok) << r.reason;
  // A fused loop whose parts are swapped between the bindings is still a bijection; one whose
  // parts are both dropped into one binding is not.
  EXPECT_TRUE(detect({b, floormod(f, 32) + i0 * 0, floordiv(f, 32) * 4 + i0, k}, fused,
                     {rng(0, 1), rng(0, 32), rng(0, 32), rng(0, 32)})
                  .ok);
  EXPECT_FALSE(detect({b, floormod(f, 32), floormod(f, 32), k},
                      {{b, rng(0, 1)}, {f, rng(0, 1024)}, {k, rng(0, 32)}}, doms)
                   .ok);
}

}  // namespace
}  // namespace tyche::arith
