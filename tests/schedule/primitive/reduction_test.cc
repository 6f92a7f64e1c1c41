// decompose_reduction and rfactor: goldens, reference checks on several op families, refusals,
// and a seeded random test mixing splits with both primitives.
#include <gmock/gmock.h>

#include <iostream>
#include <random>

#include "../schedule_test_util.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {
namespace {

using testing::block_name;
using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;
using testing::small;

// The refusal left the program as it was.
void expect_refused(const Schedule& sch, const Status& s, ErrorCode code,
                    const std::string& before) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), code) << s.error().reason();
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

template <typename T>
Status status_of(const Result<T>& r) {
  if (r.ok()) return ok_status();
  return r.error();
}

// ---- decompose_reduction ----

TEST(DecomposeReduction, GmmAtOuterSpatialLoop) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  sch.split(loops[3], {std::nullopt, 4}).value();
  BlockRV init = sch.decompose_reduction(z, loops[1]).value();
  EXPECT_EQ(block_name(sch, init), "Z_init");
  EXPECT_EQ(block_name(sch, z), "Z");  // the handle continues, now without init
  EXPECT_FALSE(sch.block_sref(z).value()->as_block()->init.defined());
  expect_golden("reduction_decompose_gmm_i", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The original loops keep their handles.
  EXPECT_TRUE(sch.parallel(loops[1]).ok());
}

TEST(DecomposeReduction, GmmAtReductionLoop) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  auto k = sch.split(loops[3], {std::nullopt, 4}).value();
  BlockRV init = sch.decompose_reduction(z, k[0]).value();
  std::string text = ir::to_string(sch.func());
  expect_golden("reduction_decompose_gmm_k", text);
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The init block sits right under j, before the k_0 loop, with no loop of its own.
  EXPECT_EQ(sch.get_loops(init).value().size(), 3u);
}

TEST(DecomposeReduction, C2dAtOutputChannelLoop) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  BlockRV conv = sch.get_block("conv2d").value();
  auto loops = sch.get_loops(conv).value();  // n h w co rh rw rc
  BlockRV init = sch.decompose_reduction(conv, loops[3]).value();
  EXPECT_EQ(sch.get_loops(init).value().size(), 4u);
  expect_golden("reduction_decompose_c2d_co", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(DecomposeReduction, InterleavedReduceLoopAndImperfectSplits) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  auto i = sch.split(loops[1], {std::nullopt, 5}).value();  // 32 = 7 * 5 - 3: a predicate
  auto k = sch.split(loops[3], {std::nullopt, 3}).value();  // another predicate, on k
  sch.reorder({i[0], k[0], loops[2], i[1], k[1]}).value();
  // k_0 is above j and i_1: decomposing at k_0 keeps j and i_1 and drops k_0 and k_1.
  BlockRV init = sch.decompose_reduction(z, k[0]).value();
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("for j_init in range(32)"));
  EXPECT_THAT(text, HasSubstr("for i_1_init in range(5)"));
  EXPECT_THAT(text, HasSubstr("where(i_0 * 5 + i_1_init < 32)"));
  EXPECT_EQ(sch.get_loops(init).value().size(), 4u);  // b, i_0, j_init, i_1_init
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(DecomposeReduction, MaxAndSumReductionsOfSoftmax) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  for (const char* name : {"row_max", "row_sum"}) {
    BlockRV b = sch.get_block(name).value();
    auto loops = sch.get_loops(b).value();
    BlockRV init = sch.decompose_reduction(b, loops[0]).value();
    EXPECT_EQ(block_name(sch, init), std::string(name) + "_init");
  }
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("row_max[vi] = float32(\"-inf\")"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(DecomposeReduction, RefusesNonReductionBlocks) {
  auto c2d = small("C2D-1");
  Schedule sch(c2d.func, true);
  std::string before = ir::to_string(sch.func());
  BlockRV pad = sch.get_block("pad").value();
  auto r = sch.decompose_reduction(pad, sch.get_loops(pad).value()[0]);
  expect_refused(sch, status_of(r), ErrorCode::kNotReduction, before);
  EXPECT_THAT(r.error().reason(), HasSubstr("'pad'"));

  auto sfm = small("SFM-1");
  Schedule s2(sfm.func, true);
  before = ir::to_string(s2.func());
  BlockRV softmax = s2.get_block("softmax").value();
  expect_refused(s2, status_of(s2.decompose_reduction(softmax, s2.get_loops(softmax).value()[0])),
                 ErrorCode::kNotReduction, before);
}

TEST(DecomposeReduction, RefusesLoopThatIsNotAnAncestor) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  std::string before = ir::to_string(sch.func());
  BlockRV row_max = sch.get_block("row_max").value();
  LoopRV other = sch.get_loops(sch.get_block("row_sum").value()).value()[0];
  auto r = sch.decompose_reduction(row_max, other);
  expect_refused(sch, status_of(r), ErrorCode::kNotAncestor, before);
  EXPECT_THAT(r.error().reason(), HasSubstr("is not an ancestor of block 'row_max'"));
}

TEST(DecomposeReduction, RefusesLoopBelowAReductionLoop) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto k = sch.split(sch.get_loops(z).value()[3], {4, 8}).value();
  std::string before = ir::to_string(sch.func());
  auto r = sch.decompose_reduction(z, k[1]);
  expect_refused(sch, status_of(r), ErrorCode::kNotAncestor, before);
  EXPECT_THAT(r.error().reason(), HasSubstr("loop 'k_1' is below loop 'k_0'"));
}

TEST(DecomposeReduction, StaleHandles) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  sch.split(loops[1], {4, 8}).value();
  EXPECT_EQ(sch.decompose_reduction(z, loops[1]).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.decompose_reduction(BlockRV{999}, loops[0]).error().code(),
            ErrorCode::kStaleHandle);
  // Decomposed once, the block has no init left: a second decomposition is refused.
  sch.decompose_reduction(z, loops[0]).value();
  EXPECT_EQ(sch.decompose_reduction(z, loops[0]).error().code(), ErrorCode::kNotReduction);
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

// ---- rfactor ----

TEST(RFactor, NormOverASplitReduction) {
  auto w = small("NRM-1");
  Schedule sch(w.func, true);
  BlockRV sum = sch.get_block("sum_sq").value();
  auto loops = sch.get_loops(sum).value();  // b ri rj
  auto rj = sch.split(loops[2], {std::nullopt, 8}).value();
  BlockRV rf = sch.rfactor(rj[1], 0).value();
  EXPECT_EQ(block_name(sch, rf), "sum_sq_rf");
  EXPECT_EQ(block_name(sch, sum), "sum_sq");  // the handle is now the write-back block
  expect_golden("reduction_rfactor_nrm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The rfactor loop and its siblings keep their handles.
  EXPECT_EQ(sch.get_loops(rf).value().size(), 4u);
  EXPECT_TRUE(sch.loop_sref(rj[1]).ok());
}

TEST(RFactor, SoftmaxMaxAndSum) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  BlockRV row_max = sch.get_block("row_max").value();
  auto k = sch.split(sch.get_loops(row_max).value()[1], {std::nullopt, 8}).value();
  BlockRV max_rf = sch.rfactor(k[1], 1).value();
  BlockRV row_sum = sch.get_block("row_sum").value();
  BlockRV sum_rf = sch.rfactor(sch.get_loops(row_sum).value()[1], 0).value();
  EXPECT_EQ(block_name(sch, max_rf), "row_max_rf");
  EXPECT_EQ(block_name(sch, sum_rf), "row_sum_rf");
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("row_max_rf = alloc_buffer((32, 8), \"float32\")"));
  EXPECT_THAT(text, HasSubstr("row_sum_rf = alloc_buffer((64, 32), \"float32\")"));
  expect_golden("reduction_rfactor_sfm", text);
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(RFactor, DenseFactorAxisFirstAndLast) {
  auto w = small("DENSE_RELU-1");
  for (int axis : {0, -1}) {
    Schedule sch(w.func, true);
    BlockRV dense = sch.get_block("dense").value();
    auto loops = sch.get_loops(dense).value();
    auto k = sch.split(loops[2], {std::nullopt, 4}).value();
    BlockRV rf = sch.rfactor(k[0], axis).value();
    std::string text = ir::to_string(sch.func());
    expect_golden(axis == 0 ? "reduction_rfactor_dense_axis0" : "reduction_rfactor_dense_axis_last",
                  text);
    EXPECT_THAT(text, HasSubstr(axis == 0 ? "dense_rf = alloc_buffer((8, 32, 32)"
                                          : "dense_rf = alloc_buffer((32, 32, 8)"));
    EXPECT_TRUE(computes_reference(w, sch.func())) << "factor_axis " << axis;
    // The rfactor block is itself a reduction that can be decomposed; so is the write-back.
    sch.decompose_reduction(rf, sch.get_loops(rf).value()[0]).value();
    sch.decompose_reduction(dense, sch.get_loops(dense).value()[0]).value();
    EXPECT_TRUE(computes_reference(w, sch.func())) << "factor_axis " << axis;
  }
}

TEST(RFactor, AnOuterPartOfOneLeavesEveryFusedReduceIteratorToTheNewLoops) {
  // A global average pool's sum: the window fused (49) and split [1, 49]. The binding of k,
  // (o * 49 + r) % 7, simplifies to r % 7 and no longer names the rfactor loop o; were k kept as
  // an iterator of its own beside r's, r would drive two iterators, and compute_at would give
  // each a loop (the sum taken 7 times over, as a tuned ResNet-50 candidate once computed).
  auto w = workloads::from_index_notation("S[i] += A[i, j, k]", "i=16,j=7,k=7");
  Schedule sch(w.func, true);
  BlockRV s = sch.get_block("S").value();
  auto loops = sch.get_loops(s).value();  // i j k
  LoopRV fused = sch.fuse({loops[1], loops[2]}).value();
  auto parts = sch.split(fused, {1, 49}).value();
  BlockRV rf = sch.rfactor(parts[0], 0).value();
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // Every reduce iterator of the rfactor block now has its own loop: each iterator once.
  const ir::BlockNode* rf_block = sch.block_sref(rf).value()->as_block();
  size_t reduce = 0;
  for (const ir::IterVar& iv : rf_block->iter_vars) reduce += iv.kind == ir::IterKind::kReduce;
  EXPECT_EQ(reduce, 1u) << ir::to_string(sch.func());
  ASSERT_TRUE(sch.compute_at(rf, sch.get_loops(s).value()[0], false).ok());
  EXPECT_TRUE(computes_reference(w, sch.func())) << ir::to_string(sch.func());
}

TEST(RFactor, GemmImperfectSplitAndBothHalves) {
  auto w = small("GMM-1");
  for (int half : {0, 1}) {
    Schedule sch(w.func, true);
    BlockRV z = sch.get_block("Z").value();
    auto k = sch.split(sch.get_loops(z).value()[3], {std::nullopt, 5}).value();  // 32 = 7 * 5 - 3
    sch.rfactor(k[half], -2).value();
    EXPECT_TRUE(computes_reference(w, sch.func())) << "half " << half;
  }
}

TEST(RFactor, RefusesPartialResultsThePredicateNeverInitializes) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto k = sch.split(sch.get_loops(z).value()[3], {std::nullopt, 8, 8})
               .value();  // k_0 = 1: 64 slots for 32
  std::string before = ir::to_string(sch.func());
  auto r = sch.rfactor(k[1], 0);
  expect_refused(sch, status_of(r), ErrorCode::kUnsupported, before);
  EXPECT_THAT(r.error().reason(), HasSubstr("uninitialized"));
  EXPECT_TRUE(sch.rfactor(k[2], 0).ok());  // k_2 = 0..7 all occur with k_1 = 0
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(RFactor, RefusesSpatialLoop) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  std::string before = ir::to_string(sch.func());
  auto r = sch.rfactor(loops[1], 0);
  expect_refused(sch, status_of(r), ErrorCode::kSpatialLoop, before);
  EXPECT_EQ(r.error().reason(), "rfactor: loop 'i' is not a reduction loop");
  // A loop of a block that does not reduce at all.
  auto c2d = small("C2D-1");
  Schedule s2(c2d.func, true);
  before = ir::to_string(s2.func());
  auto pad_loops = s2.get_loops(s2.get_block("pad").value()).value();
  expect_refused(s2, status_of(s2.rfactor(pad_loops[1], 0)), ErrorCode::kNotReduction, before);
}

TEST(RFactor, RefusesInvalidFactorAxis) {
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("dense").value()).value();
  std::string before = ir::to_string(sch.func());
  for (int axis : {3, -4, 100}) {
    auto r = sch.rfactor(loops[2], axis);
    expect_refused(sch, status_of(r), ErrorCode::kOutOfRange, before);
    EXPECT_THAT(r.error().reason(), HasSubstr("factor_axis"));
  }
  EXPECT_TRUE(sch.rfactor(loops[2], -3).ok());  // -3 counts from the end: axis 0
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("dense_rf = alloc_buffer((32, 32, 32)"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(RFactor, StaleHandlesAndLoopKinds) {
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("dense").value()).value();
  sch.split(loops[2], {4, 8}).value();
  EXPECT_EQ(sch.rfactor(loops[2], 0).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.rfactor(LoopRV{4242}, 0).error().code(), ErrorCode::kStaleHandle);
  auto w2 = small("NRM-1");
  Schedule s2(w2.func, true);
  auto nl = s2.get_loops(s2.get_block("sum_sq").value()).value();
  ASSERT_TRUE(s2.unroll(nl[2]).ok());
  EXPECT_EQ(s2.rfactor(nl[2], 0).error().code(), ErrorCode::kInvalidLoopKind);
  EXPECT_TRUE(s2.rfactor(nl[1], 0).ok());  // the unrolled loop stays in the rfactor block's nest
  EXPECT_TRUE(computes_reference(w2, s2.func()));
}

TEST(RFactor, RefusesWhenAConsumerSharesTheNest) {
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  BlockRV dense = sch.get_block("dense").value();
  auto loops = sch.get_loops(dense).value();
  ASSERT_TRUE(sch.reverse_compute_at(sch.get_block("C").value(), loops[1]).ok());
  std::string before = ir::to_string(sch.func());
  auto r = sch.rfactor(loops[2], 0);
  expect_refused(sch, status_of(r), ErrorCode::kDependenceViolated, before);
  EXPECT_THAT(r.error().reason(), HasSubstr("block 'C' under loop 'i' accesses 'dense'"));
  // decompose_reduction has no such limit: the consumer still runs after the updates.
  sch.decompose_reduction(dense, loops[0]).value();
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(RFactor, AfterDecomposeTheBlockIsNoLongerAReduction) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  sch.decompose_reduction(z, loops[2]).value();
  std::string before = ir::to_string(sch.func());
  expect_refused(sch, status_of(sch.rfactor(loops[3], 0)), ErrorCode::kNotReduction, before);
  // The loops above bind spatial iterators of both Z_init and Z.
  expect_refused(sch, status_of(sch.rfactor(loops[1], 0)), ErrorCode::kSpatialLoop, before);
}

// ---- random sequences ----

// Random splits, then decompose_reduction and rfactor on random blocks and loops: each call
// either computes the reference or refuses with the program unchanged.
TEST(RFactor, RandomizedWithDecomposeReduction) {
  const std::vector<std::string> presets = {"GMM-1", "C2D-1", "SFM-1", "NRM-1", "DENSE_RELU-1"};
  std::mt19937_64 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int decomposed = 0, factored = 0, refused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    auto w = small(presets[static_cast<size_t>(trial) % presets.size()]);
    Schedule sch(w.func, true);
    auto blocks = [&]() {
      std::vector<std::string> names;
      ir::post_order_visit(sch.func()->body, [&](const ir::Stmt& s) {
        if (auto* b = s.as<ir::BlockNode>(); b && b->name != "root") names.push_back(b->name);
      });
      return names;
    };
    for (int step = 0; step < 6; ++step) {
      auto names = blocks();
      BlockRV b =
          sch.get_block(names[static_cast<size_t>(uniform(0, static_cast<int>(names.size()) - 1))])
              .value();
      auto loops = sch.get_loops(b).value();
      if (loops.empty()) continue;
      LoopRV loop = loops[static_cast<size_t>(uniform(0, static_cast<int>(loops.size()) - 1))];
      std::string before = ir::to_string(sch.func());
      int action = uniform(0, 7);
      Status s = ok_status();
      if (action == 6) {  // reorders and fuses make interleaved and mixed spatial/reduce loops
        std::shuffle(loops.begin(), loops.end(), rng);
        (void)sch.reorder(loops);
        continue;
      }
      if (action == 7) {
        size_t i = static_cast<size_t>(uniform(0, static_cast<int>(loops.size()) - 1));
        if (i + 1 < loops.size()) (void)sch.fuse({loops[i], loops[i + 1]});
        continue;
      }
      if (action <= 1) {
        int64_t extent = *ir::as_const_int(sch.loop_sref(loop).value()->as_for()->extent);
        int64_t f = uniform(1, static_cast<int>(std::min<int64_t>(extent, 9)));
        std::vector<std::optional<schedule::ExprArg>> factors = {std::nullopt, f};
        if (uniform(0, 2) == 0) factors = {std::nullopt, f, static_cast<int64_t>(uniform(1, 3))};
        if (uniform(0, 1)) std::swap(factors[0], factors[1]);
        (void)sch.split(loop, factors);
        continue;
      }
      if (action <= 3) {
        // Sometimes a loop of another block: must be refused as not an ancestor.
        if (uniform(0, 3) == 0) {
          auto other = sch.get_loops(sch.get_block(names[static_cast<size_t>(uniform(
                                                       0, static_cast<int>(names.size()) - 1))])
                                         .value())
                           .value();
          if (!other.empty()) loop = other[0];
        }
        s = status_of(sch.decompose_reduction(b, loop));
        decomposed += s.ok();
      } else {
        s = status_of(sch.rfactor(loop, uniform(-3, 3)));
        factored += s.ok();
      }
      if (s.ok()) {
        ASSERT_TRUE(computes_reference(w, sch.func()))
            << "trial " << trial << " step " << step << "\nbefore:\n"
            << before;
      } else {
        ++refused;
        ASSERT_EQ(ir::to_string(sch.func()), before) << s.error().reason();
      }
    }
  }
  std::cout << "decomposed " << decomposed << ", factored " << factored << ", refused " << refused
            << "\n";
  EXPECT_GT(decomposed, 10);
  EXPECT_GT(factored, 10);
  EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace tyche::schedule
