// The warm start across shapes: tile decisions re-cut for another extent, a measured program's
// decisions carried to a workload of the same structure, and the evolutionary search leading its
// first batch with them.
#include <gmock/gmock.h>

#include <algorithm>

#include "ir/structural.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"
#include "tune/postproc/candidate.h"
#include "tune/search/search_strategy.h"
#include "tune/search/transfer.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

TEST(Transfer, TileDecisionsAreRecutKeepingTheInnerFactorsThatDivide) {
  EXPECT_EQ(adapt_tile({4, 8, 16}, 512, 64), (std::vector<int64_t>{4, 8, 16}));  // fits as it is
  EXPECT_EQ(adapt_tile({4, 8, 16}, 96, 64),
            (std::vector<int64_t>{1, 6, 16}));  // the register tile kept
  EXPECT_EQ(adapt_tile({2, 2, 7}, 12, 64),
            (std::vector<int64_t>{1, 2, 6}));  // 7 does not divide 12: 6
  EXPECT_EQ(adapt_tile({1, 32}, 13, 16),
            (std::vector<int64_t>{1, 13}));  // a prime within the limit: all inside
  EXPECT_EQ(adapt_tile({1, 32}, 17, 16),
            (std::vector<int64_t>{17, 1}));  // one beyond it: all outside
  EXPECT_EQ(adapt_tile({1, 1, 64}, 256, 16),
            (std::vector<int64_t>{16, 1, 16}));  // the innermost limit holds
  for (int64_t e : {1, 7, 12, 60, 97, 224})
    for (const std::vector<int64_t>& f :
         {std::vector<int64_t>{3, 5, 8}, std::vector<int64_t>{16, 1},
          std::vector<int64_t>{2, 2, 2, 2}}) {
      std::vector<int64_t> g = adapt_tile(f, e, 8);
      EXPECT_EQ(product(g), e);
      EXPECT_LE(g.back(), std::max<int64_t>(8, g.size() == 1 ? e : 1));
    }
}

target::Target two_core_target() {
  target::Target t;
  t.num_cores = 2;
  return t;
}

std::vector<schedule::Trace> spaces_of(const TuneContext& ctx) {
  std::vector<schedule::Trace> out;
  for (const schedule::Schedule& d : post_order_apply(default_rules(ctx.target))->generate(ctx, 0))
    out.push_back(d.trace()->simplified());
  return out;
}

// A measured program of a 14 x 14 convolution, carried to a 28 x 28 one with the same channels.
TEST(Transfer, AConvolutionsDecisionsCarryToAnotherShape) {
  TuneContext from{workloads::make_workload("C2D", {1, 14, 14, 16, 32, 3, 1, 1}).func,
                   two_core_target()};
  TuneContext to{workloads::make_workload("C2D", {1, 28, 28, 16, 32, 3, 1, 1}).func,
                 two_core_target()};
  auto postprocs = default_postprocs(from);
  std::vector<schedule::Trace> from_spaces = spaces_of(from), to_spaces = spaces_of(to);
  int carried = 0;
  for (int64_t seed = 1; seed <= 4; ++seed) {
    schedule::Trace measured;
    auto c =
        make_candidate(from, from_spaces[0], {.fresh_decisions = true}, postprocs, seed, &measured);
    ASSERT_TRUE(std::holds_alternative<schedule::Schedule>(c));
    std::optional<schedule::Trace> t;
    for (const schedule::Trace& space : to_spaces)
      if ((t = transfer_decisions(to, space, measured))) break;
    ASSERT_TRUE(t) << measured.to_text();
    ++carried;
    // Every decision but the tiles of the spatial loops that changed (h, w) is the measured one.
    for (const auto& [i, d] : measured.decisions()) {
      const schedule::Instruction& inst = measured.instructions()[i];
      if (inst.is(schedule::kind_sample_perfect_tile())) continue;
      EXPECT_EQ(t->decisions().at(i).i, d.i) << inst.kind->name;
    }
    schedule::Schedule sch(to.func, schedule::ScheduleOptions{.seed = 0});
    EXPECT_TRUE(t->apply_to(sch).ok());
  }
  EXPECT_EQ(carried, 4);
  // Another structure (a matmul's space) does not take a convolution's trace.
  TuneContext gmm{workloads::make_workload("GMM", {1, 32, 32, 32}).func, two_core_target()};
  schedule::Trace measured;
  (void)make_candidate(from, from_spaces[0], {.fresh_decisions = true}, postprocs, 1, &measured);
  for (const schedule::Trace& space : spaces_of(gmm))
    EXPECT_FALSE(transfer_decisions(gmm, space, measured));
}

// Softmax's spaces differ in which loop of a split each reduction is rfactored on, with the same
// instruction kinds: a program lands on the space it was measured in, and on no other.
TEST(Transfer, AProgramLandsOnTheSpaceItWasMeasuredInNotOneWithTheSameKindsOnOtherLoops) {
  TuneContext from{workloads::make_workload("SFM", {64, 128}).func, two_core_target()};
  TuneContext to{workloads::make_workload("SFM", {128, 256}).func, two_core_target()};
  auto postprocs = default_postprocs(from);
  std::vector<schedule::Trace> from_spaces = spaces_of(from), to_spaces = spaces_of(to);
  ASSERT_EQ(from_spaces.size(), to_spaces.size());
  int alike_kinds = 0;
  for (size_t i = 0; i < from_spaces.size(); ++i) {
    schedule::Trace measured;
    auto c =
        make_candidate(from, from_spaces[i], {.fresh_decisions = true}, postprocs, 7, &measured);
    ASSERT_TRUE(std::holds_alternative<schedule::Schedule>(c));
    std::vector<size_t> landed;
    for (size_t j = 0; j < to_spaces.size(); ++j) {
      if (j != i && to_spaces[j].size() == from_spaces[i].size()) ++alike_kinds;
      if (transfer_decisions(to, to_spaces[j], measured)) landed.push_back(j);
    }
    EXPECT_THAT(landed, testing::ElementsAre(i)) << measured.to_text();
  }
  EXPECT_GT(alike_kinds, 0);  // the case this guards: other spaces of the same length
}

TEST(Transfer, TheEvolutionarySearchLeadsItsFirstBatchWithTheWarmStart) {
  TuneContext from{workloads::make_workload("GMM", {1, 48, 64, 32}).func, two_core_target()};
  workloads::Workload w = workloads::make_workload("GMM", {1, 96, 64, 32});
  std::unique_ptr<CostModel> model = make_random_model(1);
  SearchTask task;
  task.context = TuneContext{w.func, two_core_target()};
  task.spaces = spaces_of(task.context);
  task.postprocs = default_postprocs(task.context);
  task.mutators = default_mutators(task.context.target);
  for (auto& [m, weight] : task.mutators) m->initialize(task.context);
  task.model = model.get();
  task.workload = ir::structural_hash(w.func);
  task.threads = 2;
  auto postprocs = default_postprocs(from);
  std::vector<schedule::Trace> from_spaces = spaces_of(from);
  std::vector<uint64_t> expected;
  for (int64_t seed = 1; seed <= 3; ++seed) {
    schedule::Trace measured;
    (void)make_candidate(from, from_spaces[0], {.fresh_decisions = true}, postprocs, seed,
                         &measured);
    for (const schedule::Trace& space : task.spaces)
      if (auto t = transfer_decisions(task.context, space, measured)) {
        task.warm_start.push_back(*t);
        if (auto trial = task.replay(*t, 0)) expected.push_back(trial->program_hash);
        break;
      }
  }
  ASSERT_EQ(task.warm_start.size(), 3u);
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()),
                 expected.end());  // two may replay to one program
  SearchStrategyPtr s =
      make_search_strategy("evolutionary", {.population = 32, .init_min_unmeasured = 8});
  s->initialize(&task, 0);
  std::vector<Trial> first = s->generate(8);
  ASSERT_GE(first.size(), expected.size());
  std::vector<uint64_t> leading;
  for (size_t i = 0; i < expected.size(); ++i) leading.push_back(first[i].program_hash);
  std::sort(leading.begin(), leading.end());
  EXPECT_EQ(leading, expected);
}

}  // namespace
}  // namespace tyche::tune
