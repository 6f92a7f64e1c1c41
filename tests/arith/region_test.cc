// Interval evaluation and block access-region inference.
#include "arith/region.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "arith/int_set.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::arith {
namespace {

using namespace ir;

Range region_range(int64_t lo, int64_t extent) {
  return Range(make_int(lo), make_int(extent));
}

std::string str(const IntervalSet& s) {
  return fmt::format("[{}, {}]", s.has_lower_bound() ? to_string(s.min_value) : "-inf",
                     s.has_upper_bound() ? to_string(s.max_value) : "+inf");
}

// "A[i, 0:16]": printer style, one printer per call so variable names are stable.
std::string str(const std::vector<BufferRegion>& regions) {
  Analyzer ana;
  std::string out;
  for (const BufferRegion& r : regions) {
    std::string dims;
    for (const Range& rg : r.region) {
      if (!dims.empty()) dims += ", ";
      if (is_const_int(rg.extent, 1))
        dims += to_string(rg.min);
      else
        dims += to_string(rg.min) + ":" + to_string(ana.simplify(rg.min + rg.extent));
    }
    if (!out.empty()) out += ", ";
    out += r.buffer->name + "[" + dims + "]";
  }
  return out;
}

TEST(EvalInterval, AffineIsExact) {
  Var h("h"), rh("rh"), j("j");
  Analyzer ana;
  VarRangeMap dom{{h, region_range(0, 112)}, {rh, region_range(0, 7)}};
  EXPECT_EQ(str(eval_interval(h * 2 + rh - 3, dom, &ana)), "[-3, 225]");
  EXPECT_EQ(str(eval_interval(h * 4 + j - h * 4, dom, &ana)), "[j, j]");
  EXPECT_EQ(str(eval_interval(h * 4 + j, dom, &ana)), "[j, j + 444]");
  EXPECT_EQ(str(eval_interval(j - rh * 2, dom, &ana)), "[j - 12, j]");
  EXPECT_TRUE(eval_interval(j * 3, dom, &ana).is_point());
}

TEST(EvalInterval, Conservative) {
  Var i("i"), j("j"), k("k"), n("n");
  Analyzer ana;
  VarRangeMap dom{{i, region_range(0, 16)}, {j, region_range(-2, 5)}};
  EXPECT_EQ(str(eval_interval(floordiv(i, 4), dom, &ana)), "[0, 3]");
  EXPECT_EQ(str(eval_interval(floordiv(i * 3 + 2, 4), dom, &ana)), "[0, 11]");
  EXPECT_EQ(str(eval_interval(floormod(i, 4), dom, &ana)), "[0, 3]");
  EXPECT_EQ(str(eval_interval(floormod(k * 8 + floordiv(i, 8), 8), dom, &ana)), "[0, 1]");
  EXPECT_EQ(str(eval_interval(i * j, dom, &ana)), "[-30, 30]");
  EXPECT_EQ(str(eval_interval(min(i, 5) + max(j, 0), dom, &ana)), "[0, 7]");
  EXPECT_EQ(str(eval_interval(select(k < 0, i, j), dom, &ana)), "[-2, 15]");
  EXPECT_EQ(str(eval_interval(i * k, dom, &ana)), "[min(0, k * 15), max(0, k * 15)]");
  EXPECT_EQ(str(eval_interval(i / 4, dom, &ana)), "[0, 3]");  // truncdiv, non-negative
  // Truncation by a negative divisor is not floor division; unknown signs give nothing.
  EXPECT_EQ(str(eval_interval(i / -4, dom, &ana)), "[-inf, +inf]");
  EXPECT_EQ(str(eval_interval(floordiv(i, k), dom, &ana)), "[-inf, +inf]");
  // A range depending on another relaxed variable, and a symbolic extent.
  VarRangeMap nested{{i, region_range(0, 4)}, {k, Range(make_int(0), i + 1)}};
  EXPECT_EQ(str(eval_interval(k, nested, &ana)), "[0, 3]");
  VarRangeMap sym{{i, Range(make_int(0), n)}};
  EXPECT_EQ(str(eval_interval(i * 2, sym, &ana)), "[0, n * 2 - 2]");
}

TEST(EvalInterval, UsesAnalyzerBindings) {
  Var i("i"), o("o");
  Analyzer ana;
  ana.bind(o, region_range(0, 4));
  VarRangeMap dom{{i, region_range(0, 8)}};
  // o stays symbolic, but its bounds let min(...) resolve.
  EXPECT_EQ(str(eval_interval(min(o * 8 + i, 31), dom, &ana)), "[o * 8, o * 8 + 7]");
  IntervalSet u = union_interval({o, o + 2}, {o - 1, o}, &ana);
  EXPECT_EQ(str(u), "[o - 1, o + 2]");
}

class RegionTest : public ::testing::Test {
 protected:
  Analyzer ana;
  static IterVar iv(const Var& v, int64_t extent, IterKind k = IterKind::kSpatial) {
    return IterVar{v, region_range(0, extent), k};
  }
};

TEST_F(RegionTest, MatmulUpdateBlock) {
  Buffer X = make_buffer("X", kFloat32, {4, 64, 32});
  Buffer Y = make_buffer("Y", kFloat32, {4, 32, 48});
  Buffer Z = make_buffer("Z", kFloat32, {4, 64, 48});
  Var vb("vb"), vi("vi"), vj("vj"), vk("vk");
  Stmt init = buffer_store(Z, Expr(0.0), {vb, vi, vj});
  Stmt body = buffer_store(
      Z, buffer_load(Z, {vb, vi, vj}) + buffer_load(X, {vb, vi, vk}) * buffer_load(Y, {vb, vk, vj}),
      {vb, vi, vj});
  Block blk =
      make_block("matmul", {iv(vb, 4), iv(vi, 64), iv(vj, 48), iv(vk, 32, IterKind::kReduce)}, {},
                 {}, init, body);
  AccessRegions r = infer_access_regions(*blk.get(), &ana);
  EXPECT_EQ(str(r.reads), "X[vb, vi, vk], Y[vb, vk, vj]");
  EXPECT_EQ(str(r.writes), "Z[vb, vi, vj]");
  ASSERT_EQ(r.reads.size(), 2u);
  EXPECT_TRUE(r.reads[0].buffer.same_as(X));
  EXPECT_TRUE(r.reads[0].region[2].min.same_as(vk));
  EXPECT_TRUE(is_const_int(r.reads[0].region[2].extent, 1));
  EXPECT_FALSE(ana.is_bound(vb));  // the caller's analyzer is untouched

  // Without an init (e.g. after decompose_reduction) the read-back of Z is a real read.
  Block update = make_block("update", blk->iter_vars, {}, {}, Stmt(), body);
  EXPECT_EQ(str(infer_access_regions(*update.get(), &ana).reads),
            "Z[vb, vi, vj], X[vb, vi, vk], Y[vb, vk, vj]");
}

TEST_F(RegionTest, InnerLoopIsRelaxed) {
  Buffer A = make_buffer("A", kFloat32, {8, 16});
  Buffer S = make_buffer("S", kFloat32, {8});
  Var vi("vi"), k("k");
  Stmt body = for_loop(k, 0, 16, ForKind::kSerial,
                       buffer_store(S, buffer_load(S, {vi}) + buffer_load(A, {vi, k}), {vi}));
  Block blk = make_block("rowsum", {iv(vi, 8)}, {}, {}, Stmt(), body);
  AccessRegions r = infer_access_regions(*blk.get(), &ana);
  EXPECT_EQ(str(r.reads), "S[vi], A[vi, 0:16]");
  EXPECT_EQ(str(r.writes), "S[vi]");
  EXPECT_TRUE(is_const_int(r.reads[1].region[1].extent, 16));

  Block with_init =
      make_block("rowsum", {iv(vi, 8)}, {}, {}, buffer_store(S, Expr(0.0), {vi}), body);
  EXPECT_EQ(str(infer_access_regions(*with_init.get(), &ana).reads), "A[vi, 0:16]");
}

TEST_F(RegionTest, ConvLikePaddedIndex) {
  Buffer X = make_buffer("X", kFloat32, {1, 56, 56});
  Buffer W = make_buffer("W", kFloat32, {3, 3});
  Buffer O = make_buffer("O", kFloat32, {1, 28, 28});
  Var vh("vh"), vw("vw"), rh("rh"), rw("rw");
  // Stride 2, pad 1, 3x3 window: the window loops are inside the block.
  Expr load = buffer_load(X, {Expr(0), vh * 2 + rh - 1, vw * 2 + rw - 1});
  Stmt body = for_loop(
      rh, 0, 3, ForKind::kSerial,
      for_loop(rw, 0, 3, ForKind::kSerial,
               buffer_store(O, buffer_load(O, {Expr(0), vh, vw}) + load * buffer_load(W, {rh, rw}),
                            {Expr(0), vh, vw})));
  Block blk = make_block("conv", {iv(vh, 28), iv(vw, 28)}, {}, {},
                         buffer_store(O, Expr(0.0), {Expr(0), vh, vw}), body);
  AccessRegions r = infer_access_regions(*blk.get(), &ana);
  EXPECT_EQ(str(r.reads), "X[0, vh * 2 - 1:vh * 2 + 2, vw * 2 - 1:vw * 2 + 2], W[0:3, 0:3]");
  EXPECT_EQ(str(r.writes), "O[0, vh, vw]");
  EXPECT_TRUE(is_const_int(r.reads[0].region[1].extent, 3));

  // The padding block reads a shifted point; the guard does not narrow it.
  Buffer P = make_buffer("P", kFloat32, {1, 58, 58});
  Var pi("pi"), pj("pj");
  Expr inside = (pi >= 1) && (pi < 57) && (pj >= 1) && (pj < 57);
  Stmt pad = buffer_store(P, select(inside, buffer_load(X, {Expr(0), pi - 1, pj - 1}), Expr(0.0)),
                          {Expr(0), pi, pj});
  Block pblk = make_block("pad", {iv(pi, 58), iv(pj, 58)}, {}, {}, Stmt(), pad);
  EXPECT_EQ(str(infer_access_regions(*pblk.get(), &ana).reads), "X[0, pi - 1, pj - 1]");
}

TEST_F(RegionTest, HullOfSeveralAccesses) {
  Buffer A = make_buffer("A", kFloat32, {64});
  Buffer B = make_buffer("B", kFloat32, {64});
  Var vi("vi");
  Stmt body = buffer_store(
      B, buffer_load(A, {vi + 2}) + buffer_load(A, {vi}) + buffer_load(A, {vi + 1}), {vi});
  Block blk = make_block("stencil", {iv(vi, 62)}, {}, {}, Stmt(), body);
  EXPECT_EQ(str(infer_access_regions(*blk.get(), &ana).reads), "A[vi:vi + 3]");
}

TEST_F(RegionTest, NestedBlockUsesItsRegions) {
  Buffer A = make_buffer("A", kFloat32, {32});
  Buffer B = make_buffer("B", kFloat32, {32});
  Buffer T = make_buffer("T", kFloat32, {8}, "local");
  Var vo("vo"), i("i"), v("v");
  // The inner block declares its regions; its body is not scanned (it would mention T).
  Block inner = make_block("inner", {iv(v, 32)}, {BufferRegion(A, {Range(v, 1)})},
                           {BufferRegion(B, {Range(v, 1)})}, Stmt(),
                           buffer_store(B, buffer_load(A, {v}), {v}));
  Stmt body =
      for_loop(i, 0, 8, ForKind::kSerial, block_realize({vo * 8 + i}, make_bool(true), inner));
  body = seq({body, buffer_store(T, Expr(1.0), {Expr(0)})});
  Block outer = make_block("outer", {iv(vo, 4)}, {}, {}, Stmt(), body, {T});
  AccessRegions r = infer_access_regions(*outer.get(), &ana);
  EXPECT_EQ(str(r.reads), "A[vo * 8:vo * 8 + 8]");
  EXPECT_EQ(str(r.writes), "B[vo * 8:vo * 8 + 8]");  // T is allocated by the block: internal
}

TEST_F(RegionTest, LetAndIndirectAccess) {
  Buffer A = make_buffer("A", kFloat32, {16});
  Buffer I = make_buffer("I", kInt32, {4});
  Buffer B = make_buffer("B", kFloat32, {4});
  Var vi("vi"), k("k"), t("t");
  Expr val = let(t, k * 2, buffer_load(A, {t + 1})) + buffer_load(A, {buffer_load(I, {k})});
  Stmt body = for_loop(k, 0, 4, ForKind::kSerial, buffer_store(B, val, {vi}));
  Block blk = make_block("gather", {iv(vi, 4)}, {}, {}, Stmt(), body);
  // A[t + 1] with t = k*2 covers [1, 7]; A[I[k]] is unknown, so A is read whole.
  EXPECT_EQ(str(infer_access_regions(*blk.get(), &ana).reads), "A[0:16], I[0:4]");
}

TEST_F(RegionTest, RelaxRegions) {
  Buffer A = make_buffer("A", kFloat32, {32, 32});
  Var i("i"), j("j"), n("n");
  std::vector<BufferRegion> regs{BufferRegion(A, {Range(i * 4, 4), Range(j + n, 1)})};
  VarRangeMap dom{{i, region_range(0, 8)}, {j, region_range(0, 2)}};
  EXPECT_EQ(str(relax_regions(regs, dom, &ana)), "A[0:32, n:n + 2]");
  VarRangeMap only_j{{j, region_range(0, 2)}};
  EXPECT_EQ(str(relax_regions(regs, only_j, &ana)), "A[i * 4:i * 4 + 4, n:n + 2]");
}

}  // namespace
}  // namespace tyche::arith
