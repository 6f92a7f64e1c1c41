// What search needs beyond replay: editing an instruction's argument, replaying a prefix and
// mapping its handles, listing the legal compute locations, and binding a reduction to threads.
#include <gmock/gmock.h>

#include <algorithm>

#include "ir/printer.h"
#include "schedule_test_util.h"
#include "support/error.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using ::testing::HasSubstr;
using testing::small;

TEST(TraceEdit, WithArgumentReplacesOneArgument) {
  auto w = small("GMM-1");
  Schedule sch(w.func, ScheduleOptions{.seed = 1});
  auto z = sch.get_block("Z").value();
  ASSERT_TRUE(sch.annotate(z, "meta_schedule.parallel", int64_t{32}).ok());
  Trace edited = sch.trace()->with_argument(1, "ann_val", Value::integer(8));
  EXPECT_THAT(edited.to_text(), HasSubstr("ann_val=8"));
  EXPECT_THAT(sch.trace()->to_text(), HasSubstr("ann_val=32"));  // the original is untouched
  Schedule replay(w.func);
  ASSERT_TRUE(edited.apply_to(replay).ok());
  EXPECT_THAT(ir::to_string(replay.func()), HasSubstr("\"meta_schedule.parallel\": 8"));
  EXPECT_THROW(sch.trace()->with_argument(5, "block_or_loop", Value::integer(1)), InputError);
  EXPECT_THROW(sch.trace()->with_argument(1, "no_such_parameter", Value::integer(1)), InputError);
  EXPECT_THROW(sch.trace()->with_argument(1, "ann_key", Value::integer(1)),
               InputError);  // the key is a string
}

TEST(TraceEdit, PrefixReplayMapsHandles) {
  auto w = small("GMM-1");
  Schedule sch(w.func, ScheduleOptions{.seed = 2});
  auto z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  auto parts = sch.split(loops[1], {std::nullopt, 4}).value();
  ASSERT_TRUE(sch.vectorize(parts[1]).ok());
  const Trace& trace = *sch.trace();
  Schedule prefix(w.func);
  std::unordered_map<int64_t, Value> handles;
  ASSERT_TRUE(trace.apply_to(prefix, {.stop_before = 3, .handles = &handles}).ok());
  EXPECT_EQ(prefix.trace()->size(), 3u);
  EXPECT_THAT(ir::to_string(prefix.func()), ::testing::Not(HasSubstr("vectorized")));
  // The vectorize instruction's loop argument, mapped into the prefix schedule.
  const Value& arg = trace.instructions()[3].args[0];
  ASSERT_TRUE(handles.count(arg.i));
  EXPECT_TRUE(prefix.vectorize(LoopRV{handles.at(arg.i).i}).ok());
  EXPECT_TRUE(computes_reference(w, prefix.func()));
}

TEST(TraceEdit, ComputeLocationChoicesMatchTheSampler) {
  auto w = small("CBR-1");
  Schedule sch(w.func, ScheduleOptions{.seed = 3});
  auto pad = sch.get_block("pad").value();
  auto choices = sch.compute_location_choices(pad).value();
  ASSERT_GE(choices.size(), 3u);
  EXPECT_EQ(choices[0], kComputeLocationRoot);
  for (int64_t c : choices) {
    Schedule s(w.func);
    auto p = s.get_block("pad").value();
    auto at = s.sample_compute_location(p, c);
    ASSERT_TRUE(at.ok()) << c;
    ASSERT_TRUE(s.compute_at(p, at.value()).ok()) << c;
    EXPECT_TRUE(computes_reference(w, s.func())) << c;
  }
  auto relu = sch.get_block("relu").value();  // an output: stays, no loop of a consumer
  EXPECT_EQ(sch.compute_location_choices(relu).value(), std::vector<int64_t>{kComputeLocationRoot});
}

TEST(TraceEdit, AFreshComputeLocationNeverRecomputesTheSameRegionOnEveryIteration) {
  // row_sum[i] is legal under each of the softmax's loops i and j; under j it would be summed
  // again for every j. A fresh draw (and a mutation) skips j; a replay may still name it.
  auto w = small("SFM-1");
  Schedule sch(w.func);
  auto all = sch.compute_location_choices(sch.get_block("row_sum").value()).value();
  auto useful =
      sch.compute_location_choices(sch.get_block("row_sum").value(), /*useful_only=*/true).value();
  std::vector<int64_t> skipped;
  for (int64_t c : all)
    if (std::find(useful.begin(), useful.end(), c) == useful.end()) skipped.push_back(c);
  ASSERT_EQ(skipped.size(), 1u);
  ASSERT_GE(useful.size(), 2u);  // stay, and the softmax's row loop
  for (int64_t seed = 0; seed < 64; ++seed) {
    Schedule s(w.func, ScheduleOptions{.seed = seed});
    ASSERT_TRUE(s.sample_compute_location(s.get_block("row_sum").value()).ok());
    const Trace& t = *s.trace();
    int64_t drawn = t.decisions().at(t.size() - 1).i;
    EXPECT_NE(std::find(useful.begin(), useful.end(), drawn), useful.end())
        << "seed " << seed << " drew " << drawn;
  }
  Schedule replay(w.func);
  auto sum = replay.get_block("row_sum").value();
  auto at = replay.sample_compute_location(sum, skipped[0]);
  ASSERT_TRUE(at.ok());
  ASSERT_TRUE(replay.compute_at(sum, at.value()).ok());
  EXPECT_TRUE(computes_reference(w, replay.func()));
}

TEST(TraceEdit, ReductionMayBeBoundToThreadsOnly) {
  auto w = small("NRM-1");
  Schedule sch(w.func);
  auto loops = sch.get_loops(sch.get_block("sum_sq").value()).value();
  LoopRV last = loops.back();
  EXPECT_EQ(sch.bind(last, "blockIdx.x").error().code(), ErrorCode::kInvalidLoopKind);
  EXPECT_EQ(sch.parallel(last).error().code(), ErrorCode::kInvalidLoopKind);
  ASSERT_TRUE(sch.bind(last, "threadIdx.x").ok());  // a cross-thread reduction on a GPU
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

}  // namespace
}  // namespace tyche::schedule
