#include <gmock/gmock.h>

#include "ir/op.h"

#include "../schedule_test_util.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;
using testing::small;

TEST(GetBlock, FindsBlocksAndLoops) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  EXPECT_EQ(loops.size(), 4u);
  auto root = sch.get_block("root").value();
  EXPECT_EQ(sch.get_child_blocks(root).value().size(), 1u);
  EXPECT_EQ(sch.get_child_blocks(loops[1]).value().size(), 1u);
  auto missing = sch.get_block("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kUnknownBlock);
  EXPECT_THAT(missing.error().reason(), HasSubstr("no block named 'nope'"));
}

TEST(GetBlock, ProducersAndConsumers) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  auto exp_block = sch.get_block("row_exp").value();
  auto producers = sch.get_producers(exp_block).value();
  ASSERT_EQ(producers.size(), 1u);
  EXPECT_EQ(sch.block_sref(producers[0]).value()->as_block()->name, "row_max");
  auto consumers = sch.get_consumers(exp_block).value();
  ASSERT_EQ(consumers.size(), 2u);
  EXPECT_EQ(sch.block_sref(consumers[0]).value()->as_block()->name, "row_sum");
  EXPECT_EQ(sch.block_sref(consumers[1]).value()->as_block()->name, "softmax");
}

TEST(Split, PerfectAndInferredFactors) {
  auto w = small("GMM-1");  // 32x32x32
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto ij = sch.split(loops[1], {4, std::nullopt}).value();
  ASSERT_EQ(ij.size(), 2u);
  auto k = sch.split(loops[3], {std::nullopt, 2, 4}).value();
  ASSERT_EQ(k.size(), 3u);
  expect_golden("split_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(Split, ImperfectAddsPredicate) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  sch.split(loops[2], {std::nullopt, 5}).value();  // 32 = 7 * 5 - 3
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("where(j_0 * 5 + j_1 < 32)"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(Split, RefusesFactorsThatDoNotCover) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  std::string before = ir::to_string(sch.func());
  auto r = sch.split(loops[1], {4, 4});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidFactors);
  EXPECT_THAT(r.error().reason(), HasSubstr("do not cover the extent 32"));
  EXPECT_EQ(sch.split(loops[1], {std::nullopt, std::nullopt}).error().code(),
            ErrorCode::kInvalidFactors);
  EXPECT_EQ(sch.split(loops[1], {0, 32}).error().code(), ErrorCode::kInvalidFactors);
  EXPECT_EQ(ir::to_string(sch.func()), before);  // a refusal changes nothing
  std::string rendered = r.error().render(sch.func());
  EXPECT_THAT(rendered, HasSubstr("for i in range(32):  # <-- here"));
}

TEST(Handles, ConsumedLoopIsStale) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  sch.split(loops[1], {8, 4}).value();
  auto again = sch.split(loops[1], {8, 4});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kStaleHandle);
  EXPECT_THROW(sch.parallel(loops[1]).value(), ScheduleException);
  EXPECT_EQ(sch.vectorize(LoopRV{12345}).error().code(), ErrorCode::kStaleHandle);
  // Untouched loops keep working after another loop was split.
  EXPECT_TRUE(sch.parallel(loops[0]).ok());
}

TEST(Fuse, AdjacentLoops) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  LoopRV f = sch.fuse({loops[1], loops[2]}).value();
  EXPECT_TRUE(sch.loop_sref(f).ok());
  expect_golden("fuse_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(Fuse, RefusesNonAdjacent) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto r = sch.fuse({loops[1], loops[3]});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotAdjacent);
}

TEST(Reorder, PermutesAChain) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto i = sch.split(loops[1], {4, 8}).value();
  auto j = sch.split(loops[2], {4, 8}).value();
  sch.reorder({i[0], j[0], loops[3], i[1], j[1]}).value();
  expect_golden("reorder_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // Handles survive a reorder.
  EXPECT_TRUE(sch.vectorize(j[1]).ok());
}

TEST(Reorder, RefusesLoopsOffTheChainOrTwice) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  auto a = sch.get_loops(sch.get_block("row_max").value()).value();
  auto b = sch.get_loops(sch.get_block("row_exp").value()).value();
  auto r = sch.reorder({a[1], b[0]});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotAChain);
  auto twice = sch.reorder({a[1], a[1]});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code(), ErrorCode::kDuplicateLoop);
}

TEST(Reorder, RefusesAcrossSiblings) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  auto root_loops = sch.get_loops(sch.get_block("conv2d").value()).value();
  // The root scope has two loop nests; the n loop of conv2d and the pad block's loop are siblings.
  auto pad_loops = sch.get_loops(sch.get_block("pad").value()).value();
  EXPECT_EQ(sch.reorder({pad_loops[0], root_loops[1]}).error().code(), ErrorCode::kNotAChain);
}

TEST(LoopKinds, ParallelVectorizeUnrollBind) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("conv2d").value()).value();
  sch.parallel(loops[1]).value();
  sch.vectorize(loops[3]).value();
  sch.unroll(loops[4]).value();  // unrolling a reduction loop is fine
  expect_golden("loop_kinds_c2d", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_EQ(sch.parallel(loops[6]).error().code(), ErrorCode::kInvalidLoopKind);  // reduction loop
  EXPECT_EQ(sch.vectorize(loops[5]).error().code(), ErrorCode::kInvalidLoopKind);
  EXPECT_EQ(sch.bind(loops[2], "threadIdx.w").error().code(), ErrorCode::kUnknownName);
  EXPECT_TRUE(sch.bind(loops[2], "threadIdx.x").ok());
}

TEST(Annotate, LoopsAndBlocks) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  sch.annotate(loops[1], "pragma_unroll", int64_t{16}).value();
  sch.annotate(z, "meta_schedule.tiling", std::string("SSRSRS")).value();
  sch.annotate(z, "weight", 0.5).value();
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("for i in range(32, annotations={\"pragma_unroll\": 16}):"));
  EXPECT_THAT(text,
              HasSubstr("block_attr({\"meta_schedule.tiling\": \"SSRSRS\", \"weight\": 0.5})"));
  sch.unannotate(z, "weight").value();
  EXPECT_THAT(ir::to_string(sch.func()), ::testing::Not(HasSubstr("weight")));
  EXPECT_EQ(sch.unannotate(z, "weight").error().code(), ErrorCode::kInvalidAnnotation);
  // The block handle still works after its block was rebuilt.
  EXPECT_EQ(sch.get_loops(z).value().size(), 4u);
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(AddUnitLoop, AroundBlockAndLoop) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  BlockRV b = sch.get_block("softmax").value();
  LoopRV u = sch.add_unit_loop(b).value();
  EXPECT_EQ(sch.loop_sref(u).value()->as_for()->extent.as<ir::IntImmNode>()->value, 1);
  auto loops = sch.get_loops(b).value();
  EXPECT_EQ(loops.size(), 3u);
  sch.add_unit_loop(loops[0]).value();
  EXPECT_EQ(sch.get_loops(b).value().size(), 4u);
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

}  // namespace
}  // namespace tyche::schedule

namespace tyche::schedule {
namespace {

// Fusing a spatial and a reduction loop gives a loop that drives both; once split, swapping its
// parts would let some updates of an output element run before that element's init.
TEST(Reorder, RefusesSwappingMixedSpatialReductionLoops) {
  auto w = testing::small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  LoopRV jk = sch.fuse({loops[2], loops[3]}).value();
  auto parts = sch.split(jk, {std::nullopt, 7}).value();
  auto r = sch.reorder({parts[1], parts[0]});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidLoopKind);
  EXPECT_THAT(r.error().reason(),
              ::testing::HasSubstr("both drive spatial and reduction iterators"));
  // Moving a pure loop across them keeps their order and is fine.
  EXPECT_TRUE(sch.reorder({parts[0], loops[1]}).ok());
  EXPECT_TRUE(testing::computes_reference(w, sch.func()));
}

}  // namespace
}  // namespace tyche::schedule

namespace tyche::schedule {
namespace {

// B[i] = A[i] * 2 over a symbolic length n: loops whose extent is not a constant.
ir::PrimFunc symbolic_scale() {
  ir::Var n("n");
  ir::Buffer a = ir::make_buffer("A", kFloat32, {n});
  ir::Buffer b = ir::make_buffer("B", kFloat32, {n});
  ir::Var i("i"), vi("vi");
  ir::Block blk = ir::make_block("B", {{vi, ir::Range(0, n), ir::IterKind::kSpatial}},
                                 {ir::BufferRegion(a, {ir::Range(vi, 1)})},
                                 {ir::BufferRegion(b, {ir::Range(vi, 1)})}, ir::Stmt(),
                                 ir::buffer_store(b, ir::buffer_load(a, {vi}) * 2.0, {vi}));
  ir::Stmt loop =
      ir::for_loop(i, 0, n, ir::ForKind::kSerial, ir::block_realize({i}, ir::make_bool(true), blk));
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), loop);
  return ir::PrimFunc("scale", {a, b}, 1, ir::block_realize({}, ir::make_bool(true), root));
}

TEST(LoopKinds, VectorizeRefusesNonConstantExtent) {
  Schedule sch(symbolic_scale(), true);
  auto loops = sch.get_loops(sch.get_block("B").value()).value();
  auto v = sch.vectorize(loops[0]);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kNonConstantExtent);
  EXPECT_THAT(v.error().reason(), ::testing::HasSubstr("non-constant extent"));
  EXPECT_EQ(sch.split(loops[0], {std::nullopt, 4}).error().code(), ErrorCode::kNonConstantExtent);
  EXPECT_TRUE(sch.parallel(loops[0]).ok());  // parallel needs no constant extent
}

}  // namespace
}  // namespace tyche::schedule
