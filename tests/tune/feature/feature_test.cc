// Per-store features against values worked out by hand, their invariances and their cost.
#include <gmock/gmock.h>

#include <chrono>
#include <cmath>

#include "ir/printer.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "tune/feature/per_store_feature.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

float lg(double x) {
  return static_cast<float>(std::log2(1.0 + x));
}

// The row of the store into `buffer` that is not the zero-init (the one with most arithmetic).
int update_row(const FeatureRows& f) {
  int best = 0;
  for (int r = 1; r < f.rows; ++r)
    if (f.at(r, "arith.float_mad") > f.at(best, "arith.float_mad")) best = r;
  return best;
}

TEST(Features, LayoutIsNamedAndVersioned) {
  EXPECT_EQ(feature_count(), static_cast<int>(feature_names().size()));
  EXPECT_EQ(feature_count(), 15 + 3 * 7 + 8 + kFeatureBuffers * 22 + kIntensityPoints + 4 + 3);
  EXPECT_EQ(feature_names()[static_cast<size_t>(feature_index("buf2.stride"))], "buf2.stride");
  EXPECT_THROW(feature_index("buf9.bytes"), Error);
  EXPECT_NE(feature_layout_hash(), 0u);
}

// C[i, j] += A[i, k] * B[k, j], 64 x 64 x 32: i parallel, j split 4 x 16 with the 16 vectorized
// innermost, k between them. Loops around the update: i 64, j0 4, k 32, j1 16.
ir::PrimFunc tiled_matmul() {
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=64,j=64,k=32");
  schedule::Schedule sch(w.func);
  auto c = sch.get_block("C").value();
  auto l = sch.get_loops(c).value();
  auto j = sch.split(l[1], {std::nullopt, 16}).value();
  sch.reorder({l[0], j[0], l[2], j[1]}).value();
  sch.parallel(l[0]).value();
  sch.vectorize(j[1]).value();
  return sch.func();
}

TEST(Features, TiledMatmulByHand) {
  FeatureRows f = per_store_features(tiled_matmul());
  ASSERT_EQ(f.rows, 2);  // the zero-init and the update
  int r = update_row(f);
  const double iters = 64.0 * 4 * 32 * 16;
  // One multiply-add; three index computations j0 * 16 + j1 (the store, the loads of C and B).
  EXPECT_FLOAT_EQ(f.at(r, "arith.float_mad"), lg(iters));
  EXPECT_FLOAT_EQ(f.at(r, "arith.float_addsub"), 0);
  EXPECT_FLOAT_EQ(f.at(r, "arith.int_mul"), lg(3 * iters));
  EXPECT_FLOAT_EQ(f.at(r, "arith.int_addsub"), lg(3 * iters));
  EXPECT_FLOAT_EQ(f.at(r, "loop.vectorize_num"), lg(1));
  EXPECT_FLOAT_EQ(f.at(r, "loop.vectorize_len"), lg(16));
  EXPECT_FLOAT_EQ(f.at(r, "loop.vectorize_pos_inner"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "loop.parallel_prod"), lg(64));
  EXPECT_FLOAT_EQ(f.at(r, "loop.parallel_pos_outer"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "loop.unroll_pos_none"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "loop.is_gpu"), 0);
  EXPECT_FLOAT_EQ(f.at(r, "outer.prod"), lg(iters));
  EXPECT_FLOAT_EQ(f.at(r, "outer.num_loops"), lg(4));
  // Buffers, most lines first: C (read and written), B, A.
  // C: 2 accesses per iteration; 64 x 64 floats; moves by 1 along j1, so a 16-float run is one
  // line per (i, j0, k); reused across k (32 times), 16 iterations apart, while all three buffers
  // touch 16 + 1 + 16 floats.
  EXPECT_FLOAT_EQ(f.at(r, "buf0.access_read_write"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "buf0.bytes"), lg(2 * iters * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.unique_bytes"), lg(64 * 64 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.lines"), lg(2 * 64 * 4 * 32));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.unique_lines"), lg(64 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.stride"), lg(1));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.reuse_loop"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "buf0.reuse_count"), lg(32));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.reuse_distance_iters"), lg(16));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.reuse_distance_bytes"), lg((16 + 1 + 16) * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.bytes_per_reuse"), lg(2 * iters * 4 / 32));
  // What the innermost 1, 2, 3, 4 loops touch: a 16-float run (j1), the same across k, a row (j0),
  // everything (i).
  EXPECT_FLOAT_EQ(f.at(r, "buf0.footprint_1"), lg(16 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.footprint_2"), lg(16 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.footprint_3"), lg(64 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf0.footprint_4"), lg(64 * 64 * 4));
  // B[k, j]: 32 x 64 floats, one line per (i, j0, k); reused across i (64 times) with 4 x 32 x 16
  // iterations between, in which C's row, A's row and all of B are touched.
  EXPECT_FLOAT_EQ(f.at(r, "buf1.access_read"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "buf1.unique_bytes"), lg(32 * 64 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.lines"), lg(64 * 4 * 32));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.reuse_count"), lg(64));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.reuse_distance_iters"), lg(4 * 32 * 16));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.reuse_distance_bytes"), lg((64 + 32 + 32 * 64) * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.footprint_1"), lg(16 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.footprint_2"), lg(32 * 16 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf1.footprint_3"), lg(32 * 64 * 4));
  // A[i, k]: the same float for all 16 lanes of j1 (reused 16 times, at once); along k, 32 floats
  // are 2 lines per (i, j0).
  EXPECT_FLOAT_EQ(f.at(r, "buf2.access_read"), 1);
  EXPECT_FLOAT_EQ(f.at(r, "buf2.bytes"), lg(iters * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.lines"), lg(64 * 4 * 2));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.unique_lines"), lg(64 * 2));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.reuse_count"), lg(16));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.reuse_distance_iters"), lg(1));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.reuse_distance_bytes"), lg(3 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.footprint_1"), lg(4));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.footprint_2"), lg(32 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf2.footprint_4"), lg(64 * 32 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "buf3.bytes"), 0);  // only three buffers
  // Intensity, innermost level: 7 operations x 16 lanes over C's 16 + A's 1 + B's 16 floats.
  EXPECT_FLOAT_EQ(f.at(r, "intensity.0"), lg(7.0 * 16 / ((16 + 1 + 16) * 4)));
  // Outermost: 7 x all iterations over the three whole buffers.
  EXPECT_FLOAT_EQ(f.at(r, "intensity.9"), lg(7.0 * iters / ((64 * 64 + 64 * 32 + 32 * 64) * 4)));
  EXPECT_FLOAT_EQ(f.at(r, "alloc.bytes"), 0);
}

TEST(Features, CacheWriteTileAndConvolutionByHand) {
  // The matmul with C accumulated in a local 16-float tile per (i, j0): the tile is an
  // allocation of 16 floats, made 64 x 4 times.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=64,j=64,k=32");
  schedule::Schedule sch(w.func);
  auto c = sch.get_block("C").value();
  auto tile = sch.cache_write(c, 0, "local").value();
  auto l = sch.get_loops(c).value();
  auto j = sch.split(l[1], {std::nullopt, 16}).value();
  sch.reorder({l[0], j[0], l[2], j[1]}).value();
  sch.reverse_compute_at(tile, j[0]).value();
  sch.vectorize(j[1]).value();
  FeatureRows f = per_store_features(sch.func());
  int r = update_row(f);
  EXPECT_FLOAT_EQ(f.at(r, "alloc.bytes"), lg(16 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "alloc.outer_prod"), lg(64 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "alloc.total_elements"), lg(16 * 64 * 4));
  EXPECT_FLOAT_EQ(f.at(r, "alloc.inner_prod"), lg(32 * 16));

  // 3x3 convolution, 8x8x4 -> 8x8x8, padding inlined: loops n 1, h 8 (parallel), w 8, rh 3,
  // rw 3, ci 4, co 8 (vectorized). The weight W[rh, rw, ci, co] (3x3x4x8 floats) is the same
  // for every w: reused 8 times, 3 x 3 x 4 x 8 iterations apart.
  auto conv = workloads::make_workload("C2D", {1, 8, 8, 4, 8, 3, 1, 1});
  schedule::Schedule cs(conv.func);
  cs.compute_inline(cs.get_block("pad").value()).value();
  auto out = cs.get_child_blocks(cs.get_block("root").value()).value().back();
  auto cl = cs.get_loops(out).value();  // n h w co rh rw ci
  cs.reorder({cl[4], cl[5], cl[6], cl[3]}).value();
  cs.parallel(cl[1]).value();
  cs.vectorize(cl[3]).value();
  FeatureRows g = per_store_features(cs.func());
  int u = update_row(g);
  EXPECT_FLOAT_EQ(g.at(u, "loop.vectorize_len"), lg(8));
  EXPECT_FLOAT_EQ(g.at(u, "loop.parallel_prod"), lg(8));
  EXPECT_FLOAT_EQ(g.at(u, "outer.prod"), lg(8 * 8 * 3 * 3 * 4 * 8));
  EXPECT_GT(g.at(u, "arith.select"), 0);  // the inlined padding
  bool found_weight = false;
  for (int b = 0; b < kFeatureBuffers; ++b) {
    std::string p = "buf" + std::to_string(b) + ".";
    if (g.at(u, p + "unique_bytes") != lg(3 * 3 * 4 * 8 * 4)) continue;
    found_weight = true;
    EXPECT_FLOAT_EQ(g.at(u, p + "access_read"), 1);
    EXPECT_FLOAT_EQ(g.at(u, p + "reuse_loop"), 1);
    EXPECT_FLOAT_EQ(g.at(u, p + "reuse_count"), lg(8));
    EXPECT_FLOAT_EQ(g.at(u, p + "reuse_distance_iters"), lg(3 * 3 * 4 * 8));
    EXPECT_FLOAT_EQ(g.at(u, p + "stride"), lg(1));
    EXPECT_FLOAT_EQ(g.at(u, p + "bytes"), lg(8 * 8 * 3 * 3 * 4 * 8 * 4));
  }
  EXPECT_TRUE(found_weight);
}

// The same program with other names for every buffer, block and loop.
TEST(Features, RenamingChangesNothing) {
  auto a = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=64,j=64,k=32");
  auto b = workloads::from_index_notation("Out[x,y] += Lhs[x,r] * Rhs[r,y]", "x=64,y=64,r=32");
  auto schedule_it = [](const ir::PrimFunc& f, const std::string& block) {
    schedule::Schedule sch(f);
    auto blk = sch.get_block(block).value();
    auto l = sch.get_loops(blk).value();
    auto j = sch.split(l[1], {std::nullopt, 8}).value();
    sch.reorder({l[0], j[0], l[2], j[1]}).value();
    sch.parallel(l[0]).value();
    sch.vectorize(j[1]).value();
    sch.cache_read(blk, 1, "global").value();
    return sch.func();
  };
  FeatureRows fa = per_store_features(schedule_it(a.func, "C")),
              fb = per_store_features(schedule_it(b.func, "Out"));
  ASSERT_EQ(fa.rows, fb.rows);
  EXPECT_EQ(fa.values, fb.values);
}

TEST(Features, GpuBindingsAreFeatures) {
  auto w = workloads::from_index_notation("C[i,j] = A[i,j] * 2.0", "i=64,j=256");
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  sch.bind(l[0], "blockIdx.x").value();
  sch.bind(l[1], "threadIdx.x").value();
  FeatureRows g = per_store_features(sch.func(), {.is_gpu = true});
  ASSERT_EQ(g.rows, 1);
  EXPECT_FLOAT_EQ(g.at(0, "loop.is_gpu"), 1);
  EXPECT_FLOAT_EQ(g.at(0, "loop.blockIdx.x"), lg(64));
  EXPECT_FLOAT_EQ(g.at(0, "loop.threadIdx.x"), lg(256));
  EXPECT_FLOAT_EQ(g.at(0, "loop.threadIdx.y"), 0);
  EXPECT_FLOAT_EQ(g.at(0, "arith.float_mul"), lg(64 * 256));
}

TEST(Features, EveryPresetFamilyGivesFiniteRows) {
  for (const std::string& op : workloads::op_names()) {
    SCOPED_TRACE(op);
    auto w = workloads::get_preset(op + "-1");
    FeatureRows f = per_store_features(w.func);
    EXPECT_GT(f.rows, 0);
    for (float v : f.values) ASSERT_TRUE(std::isfinite(v) && v >= 0) << v;
  }
}

}  // namespace
}  // namespace tyche::tune
