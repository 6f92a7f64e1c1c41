#include <gmock/gmock.h>

#include <cstdio>
#include <random>

#include "../schedule_test_util.h"
#include "ir/op.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;
using testing::small;

LoopRV loop_of(Schedule& sch, const std::string& block, size_t index) {
  return sch.get_loops(sch.get_block(block).value()).value().at(index);
}

// ---------------------------------------------------------------- compute_at

TEST(ComputeAt, C2dPadUnderSplitConvLoop) {
  auto w = small("C2D-1");  // conv2d 1x6x6x8, kernel 7, stride 2; pad 1x18x18x3
  Schedule sch(w.func, true);
  auto h = sch.split(loop_of(sch, "conv2d", 1), {std::nullopt, 3}).value();
  BlockRV pad = sch.get_block("pad").value();
  ASSERT_TRUE(sch.compute_at(pad, h[0]).ok());
  // Per h_0, conv2d reads pad rows [h_0 * 6, h_0 * 6 + 10] and columns [0, 16].
  expect_golden("compute_at_c2d", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The block handle continues; its old loops are gone.
  EXPECT_EQ(sch.get_loops(pad).value().size(), 5u);  // n, h_0 and three new loops
}

TEST(ComputeAt, SharedCacheUnderThreadLoopServesTheWholeThreadBlock) {
  // Rows of Z split 4 x 8, the 8 bound to threadIdx.x. A "shared" copy of X placed under that
  // loop must hold the rows of all 8 threads (they share it); a "local" one only its thread's row.
  auto w = small("GMM-1");  // 32 x 32 x 32
  for (const char* scope : {"shared", "local"}) {
    Schedule sch(w.func, true);
    BlockRV z = sch.get_block("Z").value();
    auto rows = sch.split(loop_of(sch, "Z", 1), {4, 8}).value();
    ASSERT_TRUE(sch.bind(rows[1], "threadIdx.x").ok());
    BlockRV copy = sch.cache_read(z, 0, scope).value();
    ASSERT_TRUE(sch.compute_at(copy, rows[1]).ok());
    int64_t rows_copied = 1;
    for (const LoopRV& l : sch.get_loops(copy).value()) {
      const ir::ForNode* f = sch.loop_sref(l).value()->as_for();
      if (f->for_kind != ir::ForKind::kThreadBinding && f->loop_var.name().starts_with("ax1"))
        rows_copied = *ir::as_const_int(f->extent);
    }
    EXPECT_EQ(rows_copied, std::string(scope) == "shared" ? 8 : 1) << scope << "\n"
                                                                   << ir::to_string(sch.func());
    EXPECT_TRUE(computes_reference(w, sch.func())) << scope;
  }
}

TEST(ComputeAt, CheckAgreesWithComputeAtAndChangesNothing) {
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  auto conv = sch.get_loops(sch.get_block("conv2d").value()).value();
  (void)sch.split(conv[1], {std::nullopt, 2}).value();
  const ir::PrimFunc before = sch.func();
  SRef pad = sch.block_sref(sch.get_block("pad").value()).value();
  int legal = 0, loops = 0;
  for (const ir::ForNode* f : loops_under(sch.state().root()->as_block()->body)) {
    SRef loop = sch.state().get_sref(f);
    if (!loop) continue;
    ++loops;
    bool checked = check_compute_at(sch.state(), pad, loop, false).ok();
    ScheduleState fresh(before);
    bool applied = compute_at(fresh, fresh.get_sref(pad->stmt), fresh.get_sref(f), false).ok();
    EXPECT_EQ(checked, applied) << f->loop_var.name();
    legal += checked;
  }
  EXPECT_TRUE(sch.func().same_as(before));
  EXPECT_GT(legal, 2);
  EXPECT_LT(legal, loops);
}

TEST(ComputeAt, C2dPreserveUnitLoops) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("conv2d").value()).value();
  ASSERT_TRUE(sch.compute_at(sch.get_block("pad").value(), loops[2], true).ok());
  auto pad_loops = sch.get_loops(sch.get_block("pad").value()).value();
  EXPECT_EQ(pad_loops.size(), 7u);  // n, h, w + one loop per pad iterator (extent 1 for the batch)
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("for ax0 in range(1):"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ComputeAt, C2dImperfectSplitClampsWithPredicate) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  // 6 = 2 * 4 - 2: for h_0 = 1 the relaxed window reaches pad row 20 of 18.
  auto h = sch.split(loop_of(sch, "conv2d", 1), {std::nullopt, 4}).value();
  ASSERT_TRUE(sch.compute_at(sch.get_block("pad").value(), h[0]).ok());
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("where(h_0 * 8 + ax1 < 18)"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ComputeAt, CbrConvAndPadUnderBiasAdd) {
  auto w = small("CBR-2");
  Schedule sch(w.func, true);
  LoopRV wl = loop_of(sch, "bias_add", 2);
  // conv2d is a reduction producer: its reduce iterators keep their whole domain.
  ASSERT_TRUE(sch.compute_at(sch.get_block("conv2d").value(), wl).ok());
  ASSERT_TRUE(sch.compute_at(sch.get_block("pad").value(), wl).ok());
  expect_golden("compute_at_cbr", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ComputeAt, SoftmaxChainUnderOuterLoop) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  LoopRV i = loop_of(sch, "softmax", 0);
  ASSERT_TRUE(sch.compute_at(sch.get_block("row_sum").value(), i).ok());
  ASSERT_TRUE(sch.compute_at(sch.get_block("row_exp").value(), i).ok());
  ASSERT_TRUE(sch.compute_at(sch.get_block("row_max").value(), i).ok());
  expect_golden("compute_at_sfm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ComputeAt, PadIntoConvReductionLoop) {
  // A producer may be computed inside its consumer's reduction loop.
  auto w = small("CBR-2");
  Schedule sch(w.func, true);
  ASSERT_TRUE(sch.compute_at(sch.get_block("pad").value(), loop_of(sch, "conv2d", 4)).ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

// ---------------------------------------------------------------- reverse_compute_at

TEST(ReverseComputeAt, DenseReluUnderRowLoop) {
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  BlockRV c = sch.get_block("C").value();
  ASSERT_TRUE(sch.reverse_compute_at(c, loop_of(sch, "dense", 0)).ok());
  expect_golden("compute_at_dense_relu_reverse", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_EQ(sch.get_loops(c).value().size(), 2u);  // the handle continues: i, ax1
}

TEST(ReverseComputeAt, DenseReluUnderReductionLoop) {
  // Each iteration of k recomputes C from partial sums; the last one sees the final values.
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  ASSERT_TRUE(sch.reverse_compute_at(sch.get_block("C").value(), loop_of(sch, "dense", 2)).ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ReverseComputeAt, CbrEpilogueUnderConvLoops) {
  auto w = small("CBR-2");
  Schedule sch(w.func, true);
  LoopRV wl = loop_of(sch, "conv2d", 2);
  for (const char* name : {"bias_add", "bn_mul", "bn_add", "relu"})
    ASSERT_TRUE(sch.reverse_compute_at(sch.get_block(name).value(), wl).ok()) << name;
  expect_golden("compute_at_cbr_reverse", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ReverseComputeAt, SoftmaxReductionAndDivideUnderRowExp) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  LoopRV i = loop_of(sch, "row_exp", 0);
  // softmax reads row_sum, which is not under the loop yet.
  auto early = sch.reverse_compute_at(sch.get_block("softmax").value(), i);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().code(), ErrorCode::kNotAncestor);
  ASSERT_TRUE(sch.reverse_compute_at(sch.get_block("row_sum").value(), i).ok());
  ASSERT_TRUE(sch.reverse_compute_at(sch.get_block("softmax").value(), i).ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ReverseComputeAtErrors, ConvolutionWindowIsNotDerivable) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  auto r = sch.reverse_compute_at(sch.get_block("conv2d").value(), loop_of(sch, "pad", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotCovered);
  EXPECT_THAT(r.error().reason(), HasSubstr("reads 'pad' at index 'vh * 2 + vrh'"));
}

// ---------------------------------------------------------------- refusals

TEST(ComputeAtErrors, ConsumerOutsideTheLoop) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  std::string before = ir::to_string(sch.func());
  auto r = sch.compute_at(sch.get_block("row_max").value(), loop_of(sch, "softmax", 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotAncestor);
  EXPECT_THAT(r.error().reason(), HasSubstr("not an ancestor of block 'row_exp'"));
  // row_exp's consumers are row_sum and softmax; a loop of softmax leaves row_sum outside.
  auto r2 = sch.compute_at(sch.get_block("row_exp").value(), loop_of(sch, "softmax", 1));
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code(), ErrorCode::kNotAncestor);
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(ComputeAtErrors, RootBlockAndOwnLoop) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  std::string before = ir::to_string(sch.func());
  auto root = sch.compute_at(sch.get_block("root").value(), loop_of(sch, "conv2d", 0));
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.error().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(root.error().reason(), HasSubstr("root block"));
  auto own = sch.compute_at(sch.get_block("pad").value(), loop_of(sch, "pad", 1));
  ASSERT_FALSE(own.ok());
  EXPECT_THAT(own.error().reason(), HasSubstr("already under loop"));
  // A consumer cannot be computed at its producer's loops, nor a producer reverse-computed.
  auto after = sch.compute_at(sch.get_block("conv2d").value(), loop_of(sch, "pad", 0));
  ASSERT_FALSE(after.ok());
  EXPECT_THAT(after.error().reason(), HasSubstr("comes after loop"));
  auto before_loop =
      sch.reverse_compute_at(sch.get_block("pad").value(), loop_of(sch, "conv2d", 0));
  ASSERT_FALSE(before_loop.ok());
  EXPECT_THAT(before_loop.error().reason(), HasSubstr("comes before loop"));
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(ComputeAtErrors, LoopOfAnotherScope) {
  // Wrap softmax's loop nest in a block of its own: its loops are in another scope.
  auto w = small("SFM-1");
  const auto* root_realize = w.func->body.as<ir::BlockRealizeNode>();
  const ir::BlockNode* root = root_realize->block.get();
  auto seq = root->body.as<ir::SeqStmtNode>()->seq;
  ir::Block wrap = ir::make_block("wrap", {}, {}, {}, ir::Stmt(), seq.back());
  seq.back() = ir::block_realize({}, ir::make_bool(true), wrap);
  ir::Block new_root =
      ir::make_block(root->name, root->iter_vars, root->reads, root->writes, root->init,
                     ir::seq(seq), root->alloc_buffers, root->annotations);
  ir::PrimFunc f = w.func.with_body(ir::block_realize({}, ir::make_bool(true), new_root));
  Schedule sch(f, true);
  auto r = sch.compute_at(sch.get_block("row_sum").value(), loop_of(sch, "softmax", 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotAncestor);
  EXPECT_THAT(r.error().reason(), HasSubstr("is not in the scope of block 'row_sum'"));
}

TEST(ComputeAtErrors, StaleHandles) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  LoopRV h = loop_of(sch, "conv2d", 1);
  LoopRV pad_loop = loop_of(sch, "pad", 1);
  sch.split(h, {2, 3}).value();
  BlockRV pad = sch.get_block("pad").value();
  auto r = sch.compute_at(pad, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kStaleHandle);
  // After a move, the producer's old loops are gone.
  ASSERT_TRUE(sch.compute_at(pad, loop_of(sch, "conv2d", 2)).ok());
  auto r2 = sch.split(pad_loop, {2, 9});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.reverse_compute_at(BlockRV{12345}, loop_of(sch, "conv2d", 0)).error().code(),
            ErrorCode::kStaleHandle);
}

TEST(ReverseComputeAtErrors, ProducerOutsideTheLoop) {
  auto w = small("CBR-2");
  Schedule sch(w.func, true);
  std::string before = ir::to_string(sch.func());
  auto r = sch.reverse_compute_at(sch.get_block("bn_mul").value(), loop_of(sch, "conv2d", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotAncestor);
  EXPECT_THAT(r.error().reason(), HasSubstr("block 'bias_add', a producer of block 'bn_mul'"));
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

// ---------------------------------------------------------------- randomized

// Random splits and fuses, then compute_at / reverse_compute_at of random blocks (mostly a
// producer or consumer of the loop's block) at random loops: every accepted program computes
// the reference; every refusal is a ScheduleError, never an exception.
TEST(ComputeAtRandom, AcceptedMovesComputeTheReference) {
  int accepted = 0, refused = 0;
  for (const char* preset : {"GMM-1", "C2D-1", "SFM-1", "CBR-2", "DENSE_RELU-1"}) {
    auto w = small(preset);
    std::vector<std::string> names;
    {
      Schedule probe(w.func);
      for (const BlockRV& b : probe.get_child_blocks(probe.get_block("root").value()).value())
        names.push_back(probe.block_sref(b).value()->as_block()->name);
    }
    std::mt19937 rng(1234);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    for (int trial = 0; trial < 40; ++trial) {
      Schedule sch(w.func, true);
      for (int step = 0; step < 4; ++step) {
        // Reshape a random block's loops first (imperfect splits leave predicates behind).
        auto any_loops = sch.get_loops(sch.get_block(names[pick(names.size())]).value()).value();
        if (any_loops.size() >= 2 && rng() % 4 == 0) {
          size_t at = pick(any_loops.size() - 1);
          (void)sch.fuse({any_loops[at], any_loops[at + 1]});
        } else if (!any_loops.empty() && rng() % 2 == 0) {
          (void)sch.split(any_loops[pick(any_loops.size())],
                          {std::nullopt, 2 + static_cast<int64_t>(rng() % 4)});
        }
        BlockRV target = sch.get_block(names[pick(names.size())]).value();
        auto loops = sch.get_loops(target).value();
        if (loops.empty()) continue;
        LoopRV loop = loops[pick(loops.size())];
        bool forward = rng() % 2;
        auto related =
            forward ? sch.get_producers(target).value() : sch.get_consumers(target).value();
        BlockRV moved = !related.empty() && rng() % 4 != 0
                            ? related[pick(related.size())]
                            : sch.get_block(names[pick(names.size())]).value();
        bool preserve = rng() % 2;
        Status st = forward ? sch.compute_at(moved, loop, preserve)
                            : sch.reverse_compute_at(moved, loop, preserve);
        if (!st.ok()) {
          if (std::getenv("CA_VERBOSE")) std::printf("  %s\n", st.error().reason().c_str());
          ++refused;
          continue;
        }
        ++accepted;
        ASSERT_TRUE(computes_reference(w, sch.func())) << preset << " trial " << trial;
      }
    }
    if (std::getenv("CA_VERBOSE"))
      std::printf("%s: accepted %d refused %d\n", preset, accepted, refused);
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace tyche::schedule
