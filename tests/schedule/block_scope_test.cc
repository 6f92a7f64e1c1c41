// Block-scope analyses: affine bindings (iter-map detection), injective blocks, stage
// pipelines and region cover, on presets and on small hand-built functions.
#include "schedule/analysis.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "ir/op.h"
#include "schedule_test_util.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using testing::small;

const SRefNode* block_of(Schedule& sch, const std::string& name) {
  return sch.block_sref(sch.get_block(name).value()).value().get();
}

// One loop `for i in range(extent)` around one block whose iter vars are all bound to `i` (one
// per entry of `writes_index`, domain [0, extent)); the block writes
// dst[writes_index(iter vars)] = src[read_index(iter vars)].
struct Stage {
  std::string name;
  int64_t extent;
  ir::Buffer src, dst;
  int num_iters = 1;
  std::function<std::vector<ir::Expr>(const std::vector<ir::Var>&)> write_index =
      [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>{v[0]}; };
};

ir::Stmt make_stage(const Stage& s) {
  ir::Var i(fmt::format("i_{}", s.name));
  std::vector<ir::Var> vs;
  std::vector<ir::IterVar> ivs;
  std::vector<ir::Expr> binds;
  for (int k = 0; k < s.num_iters; ++k) {
    vs.emplace_back(fmt::format("v{}", k));
    ivs.push_back(ir::IterVar{vs.back(), ir::Range(0, s.extent), ir::IterKind::kSpatial});
    binds.push_back(i);
  }
  std::vector<ir::Expr> widx = s.write_index(vs);
  std::vector<ir::Range> wregion;
  for (const ir::Expr& e : widx) wregion.emplace_back(e, 1);
  ir::Block blk = ir::make_block(s.name, ivs, {ir::BufferRegion(s.src, {ir::Range(vs[0], 1)})},
                                 {ir::BufferRegion(s.dst, wregion)}, ir::Stmt(),
                                 ir::buffer_store(s.dst, ir::buffer_load(s.src, {vs[0]}), widx));
  return ir::for_loop(i, 0, s.extent, ir::ForKind::kSerial,
                      ir::block_realize(binds, ir::make_bool(true), blk));
}

ir::PrimFunc make_func(const std::vector<Stage>& stages, const ir::Buffer& in,
                       const ir::Buffer& out, std::vector<ir::Buffer> allocs) {
  std::vector<ir::Stmt> body;
  for (const Stage& s : stages) body.push_back(make_stage(s));
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), ir::seq(body), std::move(allocs));
  return ir::PrimFunc("f", {in, out}, 1, ir::block_realize({}, ir::make_bool(true), root));
}

TEST(BlockScope, PresetsAreAffineStagePipelines) {
  for (const char* preset : {"GMM-1", "C2D-1", "SFM-1"}) {
    auto w = small(preset);
    Schedule sch(w.func);
    const SRefNode* root = sch.state().root().get();
    EXPECT_TRUE(is_stage_pipeline(sch.state(), root)) << preset;
    for (const SRef& b : child_blocks(sch.state(), root)) {
      auto r = detect_block_iter_map(sch.state(), b.get());
      EXPECT_TRUE(r.ok) << preset << " " << b->as_block()->name << ": " << r.reason;
    }
  }
}

TEST(BlockScope, LoopTransformationsKeepBindingsAffine) {
  auto w = small("GMM-1");  // Z[b, i, j] += X[b, i, k] * Y[b, k, j], 32 x 32 x 32
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto i = sch.split(loops[1], {4, 8}).value();
  auto k = sch.split(loops[3], {std::nullopt, 2, 4}).value();
  auto f = sch.fuse({i[1], loops[2]}).value();
  sch.reorder({k[0], f}).value();
  EXPECT_TRUE(has_affine_bindings(sch.state(), block_of(sch, "Z")));
  sch.split(f, {std::nullopt, 7}).value();  // 256 = 37 * 7 - 3: a predicate guards the rest
  auto r = detect_block_iter_map(sch.state(), block_of(sch, "Z"));
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(check_reduction_block(sch.state(), block_of(sch, "Z")).ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));

  auto c = small("C2D-1");
  Schedule sch2(c.func, true);
  auto cl = sch2.get_loops(sch2.get_block("conv2d").value()).value();
  auto fused = sch2.fuse({cl[0], cl[1], cl[2]}).value();
  sch2.split(fused, {std::nullopt, 16}).value();
  auto r2 = detect_block_iter_map(sch2.state(), block_of(sch2, "conv2d"));
  EXPECT_TRUE(r2.ok) << r2.reason;  // uses the predicate and a simplified (f0*4 + f1) % 6
  EXPECT_TRUE(is_stage_pipeline(sch2.state(), sch2.state().root().get()));
}

TEST(BlockScope, SameLoopTwiceIsNotAffine) {
  ir::Buffer a = ir::make_buffer("A", kFloat32, {8}), d = ir::make_buffer("D", kFloat32, {8, 8});
  Stage s{"D", 8, a,
          d,   2, [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>{v[0], v[1]}; }};
  Schedule sch(make_func({s}, a, d, {}));
  auto r = detect_block_iter_map(sch.state(), block_of(sch, "D"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("more than once"), std::string::npos) << r.reason;
  EXPECT_FALSE(has_affine_bindings(sch.state(), block_of(sch, "D")));
}

TEST(BlockScope, InjectiveBlocks) {
  auto c = small("C2D-1");
  Schedule c2d(c.func);
  EXPECT_TRUE(check_injective_block(c2d.state(), block_of(c2d, "pad")).ok());
  auto s = small("SFM-1");
  Schedule sfm(s.func);
  EXPECT_TRUE(check_injective_block(sfm.state(), block_of(sfm, "row_exp")).ok());
  // Injectivity is about writes: GMM's reduction Z writes Z[vb, vi, vj], one element per
  // spatial iteration, so it is injective although its reduce iterations share an element.
  auto g = small("GMM-1");
  Schedule gmm(g.func);
  EXPECT_TRUE(check_injective_block(gmm.state(), block_of(gmm, "Z")).ok());
  // row_max writes M[vi] with reduce var vj: also injective; no reduce var may index a write.
  EXPECT_TRUE(check_injective_block(sfm.state(), block_of(sfm, "row_max")).ok());

  ir::Buffer a = ir::make_buffer("A", kFloat32, {8}), b = ir::make_buffer("B", kFloat32, {4});
  Stage half{"H",
             8,
             a,
             b,
             1,
             [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>{ir::floordiv(v[0], 2)}; }};
  Schedule sch(make_func({half}, a, b, {}));
  Status st = check_injective_block(sch.state(), block_of(sch, "H"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kNotComplete);
  EXPECT_NE(st.error().reason().find("'H'"), std::string::npos) << st.error().reason();

  ir::Buffer d = ir::make_buffer("D", kFloat32, {8, 8});
  Stage diag{"G", 8,
             a,   d,
             2,   [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>{v[0], v[0]}; }};
  Schedule sch2(make_func({diag}, a, d, {}));
  EXPECT_FALSE(
      check_injective_block(sch2.state(), block_of(sch2, "G")).ok());  // v0 twice, v1 unused
}

TEST(BlockScope, StagePipelineNeedsOneWriterPerBuffer) {
  ir::Buffer a = ir::make_buffer("A", kFloat32, {8}), b = ir::make_buffer("B", kFloat32, {8});
  Schedule sch(make_func({Stage{"P", 8, a, b}, Stage{"Q", 8, a, b}}, a, b, {}));
  EXPECT_FALSE(is_stage_pipeline(sch.state(), sch.state().root().get()));
}

TEST(BlockScope, RegionCover) {
  auto c = small("C2D-1");
  Schedule c2d(c.func, true);
  EXPECT_TRUE(region_covered(c2d.state(), block_of(c2d, "conv2d")));
  EXPECT_TRUE(region_covered(c2d.state(), block_of(c2d, "pad")));  // reads only inputs
  auto s = small("SFM-1");
  Schedule sfm(s.func);
  for (const char* name : {"row_max", "row_exp", "row_sum", "softmax"})
    EXPECT_TRUE(region_covered(sfm.state(), block_of(sfm, name))) << name;

  // P writes B[0:8]; Q reads B[0:16] (beyond what P writes) or B[0:8].
  ir::Buffer a = ir::make_buffer("A", kFloat32, {16}), b = ir::make_buffer("B", kFloat32, {16});
  ir::Buffer out = ir::make_buffer("C", kFloat32, {16});
  Schedule beyond(make_func({Stage{"P", 8, a, b}, Stage{"Q", 16, b, out}}, a, out, {b}));
  EXPECT_FALSE(region_covered(beyond.state(), block_of(beyond, "Q")));
  Schedule within(make_func({Stage{"P", 8, a, b}, Stage{"Q", 8, b, out}}, a, out, {b}));
  EXPECT_TRUE(region_covered(within.state(), block_of(within, "Q")));
  // A producer with holes (B[2 * v]) covers nothing, even though its hull is B[0:15].
  Stage holes{"P", 8,
              a,   b,
              1,   [](const std::vector<ir::Var>& v) { return std::vector<ir::Expr>{v[0] * 2}; }};
  Schedule gaps(make_func({holes, Stage{"Q", 8, b, out}}, a, out, {b}));
  EXPECT_FALSE(region_covered(gaps.state(), block_of(gaps, "Q")));
  // A consumer reading before its producer runs is not covered.
  Schedule order(make_func({Stage{"Q", 8, b, out}, Stage{"P", 8, a, b}}, a, out, {b}));
  EXPECT_FALSE(region_covered(order.state(), block_of(order, "Q")));
}

}  // namespace
}  // namespace tyche::schedule
