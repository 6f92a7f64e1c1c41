// The presets' weights are layout-free, so every host's multi-level tiling reads them as packed
// panels (RewriteLayout): the rewrite of a hand-tiled dense layer (golden IR, and the numbers with
// and without the split-off preproc), and the default space's samples on odd shapes, on every ISA
// level this host runs, all valid and all computing the reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../schedule/schedule_test_util.h"
#include "ir/annotation_keys.h"
#include "ir/layout_free.h"
#include "ir/printer.h"
#include "lower/layout_rewrite.h"
#include "runtime/compare.h"
#include "target/cpu.h"
#include "tune/explore/sample_space.h"
#include "tune/measure/builder.h"
#include "tune/postproc/candidate.h"
#include "tune/postproc/postproc.h"
#include "tune/space/schedule_rule.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

using schedule::Schedule;
using schedule::testing::expect_golden;
using ::testing::HasSubstr;
using ::testing::Not;

bool rewrites_a_layout(const ir::PrimFunc& f) {
  return ir::to_string(f).find(ir::ann::kLayoutRewritePreproc) != std::string::npos;
}

TEST(PresetWeights, AreLayoutFreeWhereTheyAreALayersConstants) {
  auto free_of = [](const std::string& name) {
    return ir::layout_free_params(workloads::get_preset(name).func);
  };
  for (const char* conv :
       {"C1D-1", "C2D-3", "C3D-1", "GRP-3", "DIL-3", "DEP-3", "T2D-3", "CAP-3", "DENSE_RELU-3"})
    EXPECT_EQ(free_of(conv), (std::vector<size_t>{1})) << conv;
  EXPECT_EQ(free_of("CBR-3"), (std::vector<size_t>{1, 2, 3, 4}));
  for (const char* activations : {"GMM-3", "TBG-3", "NRM-3", "SFM-3"})
    EXPECT_TRUE(free_of(activations).empty()) << activations;
}

// DENSE_RELU (N 4, M 32, K 8) with the dense block's j split [2, 16] and ordered (j0, i, k, j1):
// B[k, j] is walked as (j0, k, j1), so RewriteLayout stores it as [2, 8, 16], panels of 16 columns.
TEST(RewriteLayout, AHandTiledDenseLayerReadsItsWeightAsPanels) {
  workloads::Workload w = workloads::make_workload("DENSE_RELU", {4, 32, 8});
  Schedule sch(w.func, schedule::ScheduleOptions{.seed = 1});
  schedule::BlockRV dense = sch.get_block("dense").value();
  std::vector<schedule::LoopRV> loops = sch.get_loops(dense).value();
  std::vector<schedule::LoopRV> j = sch.split(loops[1], {2, 16}).value();
  ASSERT_TRUE(sch.reorder({j[0], loops[0], loops[2], j[1]}).ok());
  TuneContext ctx{w.func, target::Target::parse("llvm -num-cores 2")};
  PostprocPtr rewrite = rewrite_layout();
  rewrite->initialize(ctx);
  ASSERT_TRUE(rewrite->apply(sch).ok());
  expect_golden("rewrite_layout_dense_panels", ir::to_string(sch.func()), "tune");

  lower::SplitProgram split = lower::split_layout_rewrites(sch.func());
  ASSERT_EQ(split.rewrites.size(), 1u);
  EXPECT_EQ(split.rewrites[0].param, 1u);
  EXPECT_EQ(ir::const_shape(split.main->params[1]), (std::vector<int64_t>{2, 8, 16}));
  EXPECT_THAT(ir::to_string(split.main), Not(HasSubstr(ir::ann::kLayoutRewritePreproc)));

  // The numbers: the whole program, and the kernel after its preproc, compute the reference; the
  // kernel fed the weight as it was does not.
  std::vector<runtime::NDArray> inputs = workloads::make_inputs(w.func, 3);
  std::vector<runtime::NDArray> expected = w.reference(inputs);
  EXPECT_EQ(check_outputs(sch.func(), inputs, expected, /*compile=*/false), "");
  EXPECT_EQ(check_outputs(sch.func(), inputs, expected, /*compile=*/true), "");
  BuildResult built = Builder(BuilderOptions{.max_workers = 1}).build({BuildInput{sch.func()}})[0];
  ASSERT_TRUE(built.ok()) << built.error;
  ASSERT_EQ(built.preprocs.size(), 1u);
  std::vector<runtime::NDArray> args = inputs;
  args.emplace_back(expected[0].shape(), expected[0].dtype());
  built.kernel->run(args);  // no preproc
  std::vector<runtime::NDArray> out = {args.back()};
  EXPECT_FALSE(runtime::compare_outputs(out, expected).ok);
}

// Odd extents (primes, channels no vector width divides): every sample of the default space is
// valid, and every one, rewritten or not, computes the reference compiled for each ISA level.
TEST(RewriteLayout, DefaultSpaceSamplesOnOddShapesAreValidAndCorrectOnEveryLevel) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> odd = {
      {"DENSE_RELU", {7, 13, 19}},
      {"DIL", {1, 11, 11, 6, 10, 3, 1, 1}},
      {"GRP", {1, 9, 9, 12, 20, 3, 2, 1}}};
  for (const std::string& level : target::host_levels()) {
    target::Target target = target::Target::parse("llvm -num-cores 2");
    target.cpu = level;
    int rewritten = 0;
    for (const auto& [op, params] : odd) {
      SCOPED_TRACE(level + " " + op);
      workloads::Workload w = workloads::make_workload(op, params);
      std::vector<runtime::NDArray> inputs = workloads::make_inputs(w.func, 5);
      std::vector<runtime::NDArray> expected = w.reference(inputs);
      TuneContext ctx{w.func, target};
      auto space = post_order_apply(default_rules(target));
      space->initialize(ctx);
      auto postprocs = default_postprocs(ctx);
      int valid = 0;
      for (schedule::Schedule& design : space->generate(ctx, 3)) {
        for (int64_t seed : {1, 4}) {
          auto c = make_candidate(ctx, *design.trace(), {.fresh_decisions = true}, postprocs, seed);
          if (auto* e = std::get_if<CandidateError>(&c)) {
            ADD_FAILURE() << e->reason() << ": " << e->message;
            continue;
          }
          const Schedule& sch = std::get<Schedule>(c);
          ++valid;
          rewritten += rewrites_a_layout(sch.func());
          EXPECT_EQ(check_outputs(sch.func(), inputs, expected, /*compile=*/true, level), "")
              << sch.trace()->to_text();
        }
      }
      EXPECT_GT(valid, 0);
    }
    EXPECT_GT(rewritten, 0) << "no sample on " << level << " read a weight in a layout of its own";
  }
}

}  // namespace
}  // namespace tyche::tune
