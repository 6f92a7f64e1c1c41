// Sampling instructions: distributions, decision validation, and state-dependent candidates.
#include <gmock/gmock.h>

#include <map>

#include "../schedule_test_util.h"
#include "ir/structural.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using ::testing::HasSubstr;
using testing::small;

workloads::Workload elementwise_chain(int64_t n) {
  return workloads::from_index_notation("B[i,j] = A[i,j] * 2.0; C[i,j] = B[i,j] + 1.0",
                                        fmt::format("i={},j={}", n, n));
}

std::vector<int64_t> draw_tile(Schedule& sch, const LoopRV& loop, int n, int64_t max_inner) {
  auto rvs = sch.sample_perfect_tile(loop, n, max_inner).value();
  std::vector<int64_t> v;
  for (const ExprRV& rv : rvs) v.push_back(sch.get(rv).value());
  return v;
}

TEST(SamplePerfectTile, UniformOverAllFactorizationsOf64IntoThree) {
  auto w = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=64");
  Schedule sch(w.func, ScheduleOptions{.seed = 20261130, .trace = false});
  LoopRV i = sch.get_loops(sch.get_block("B").value()).value()[0];
  std::map<std::vector<int64_t>, int> counts;
  const int draws = 28000;
  for (int t = 0; t < draws; ++t) {
    auto f = draw_tile(sch, i, 3, 64);
    ASSERT_EQ(f[0] * f[1] * f[2], 64);
    ++counts[f];
  }
  // 64 = 2^6 into 3 ordered factors: C(8, 2) = 28 factorizations, each expected 1000 times.
  ASSERT_EQ(counts.size(), 28u);
  double chi2 = 0;
  for (const auto& [f, c] : counts) chi2 += (c - 1000.0) * (c - 1000.0) / 1000.0;
  // 27 degrees of freedom: P(chi2 > 55.48) = 0.001.
  EXPECT_LT(chi2, 55.48) << "chi-square " << chi2;
  std::printf("sample_perfect_tile(64, n=3): 28 factorizations, chi-square %.2f (27 dof)\n", chi2);
}

TEST(SamplePerfectTile, InnermostLimitAndNonPowerOfTwoExtents) {
  auto w = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=60");
  Schedule sch(w.func, ScheduleOptions{.seed = 3, .trace = false});
  LoopRV i = sch.get_loops(sch.get_block("B").value()).value()[0];
  std::map<std::vector<int64_t>, int> counts;
  for (int t = 0; t < 6000; ++t) {
    auto f = draw_tile(sch, i, 2, 5);
    ASSERT_EQ(f[0] * f[1], 60);
    ASSERT_LE(f[1], 5);
    ++counts[f];
  }
  EXPECT_EQ(counts.size(), 5u);  // innermost 1, 2, 3, 4, 5
  for (const auto& [f, c] : counts) EXPECT_NEAR(c, 1200, 150);
  // n = 1 and unlimited innermost (-1).
  EXPECT_EQ(draw_tile(sch, i, 1, -1), std::vector<int64_t>{60});
  // A prime extent: only 1 x p fits an innermost limit below p.
  auto p = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=97");
  Schedule sp(p.func, ScheduleOptions{.seed = 3});
  LoopRV pi = sp.get_loops(sp.get_block("B").value()).value()[0];
  for (int t = 0; t < 20; ++t) {
    auto f = draw_tile(sp, pi, 3, 16);
    EXPECT_EQ(f[2], 1);
    EXPECT_EQ(f[0] * f[1], 97);
  }
}

TEST(SamplePerfectTile, Refusals) {
  auto w = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=60");
  Schedule sch(w.func, ScheduleOptions{.seed = 3});
  LoopRV i = sch.get_loops(sch.get_block("B").value()).value()[0];
  EXPECT_EQ(sch.sample_perfect_tile(i, 0, 16).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(sch.sample_perfect_tile(i, 2, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(sch.sample_perfect_tile(i, 1, 16).error().reason(),
              HasSubstr("exceeds max_innermost_factor 16"));
  EXPECT_THAT(
      sch.sample_perfect_tile(i, 2, 16, std::vector<int64_t>{7, 8}).error().reason(),
      HasSubstr("decision [7, 8] is not legal for loop 'i': its product is not the extent 60"));
  EXPECT_EQ(sch.sample_perfect_tile(i, 2, 16, std::vector<int64_t>{0, 60}).error().code(),
            ErrorCode::kIllegalDecision);
  EXPECT_EQ(sch.sample_perfect_tile(LoopRV{999}, 2, 16).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.trace()->size(), 2u);  // get_block, get_loops: refusals are not recorded
}

TEST(SampleCategorical, FollowsProbabilitiesAndChecksDecisions) {
  auto w = elementwise_chain(4);
  Schedule sch(w.func, ScheduleOptions{.seed = 8, .trace = false});
  std::map<int64_t, int> counts;
  for (int t = 0; t < 20000; ++t)
    ++counts[sch.get(sch.sample_categorical({0, 16, 64, 512}, {0.5, 0.0, 0.25, 0.25}).value())
                 .value()];
  EXPECT_EQ(counts.count(16), 0u);
  EXPECT_NEAR(counts[0], 10000, 400);
  EXPECT_NEAR(counts[64], 5000, 300);
  EXPECT_EQ(sch.get(sch.sample_categorical({7, 9}, {1, 1}, int64_t{1}).value()).value(), 9);
  EXPECT_EQ(sch.sample_categorical({7, 9}, {1, 0}, int64_t{1}).error().code(),
            ErrorCode::kIllegalDecision);
  EXPECT_EQ(sch.sample_categorical({7, 9}, {1, 1}, int64_t{2}).error().code(),
            ErrorCode::kIllegalDecision);
  EXPECT_THAT(sch.sample_categorical({7, 9}, {1.0}).error().reason(),
              HasSubstr("2 candidates but 1 probabilities"));
  EXPECT_THAT(sch.sample_categorical({7}, {0.0}).error().reason(), HasSubstr("sum to 0"));
  EXPECT_THAT(sch.sample_categorical({7}, {-1.0}).error().reason(),
              HasSubstr("invalid probability"));
  EXPECT_EQ(sch.get(ExprRV{100000000}).error().code(), ErrorCode::kStaleHandle);
}

// Every decision sample_compute_location accepts for `block`, by trying them in turn.
std::vector<int64_t> legal_locations(const Schedule& base_trace_owner, const workloads::Workload& w,
                                     const std::string& block) {
  std::vector<int64_t> legal;
  for (int64_t d = -2; d < 64; ++d) {
    Schedule s(w.func, ScheduleOptions{.seed = 0});
    EXPECT_TRUE(base_trace_owner.trace()->apply_to(s).ok());
    if (s.sample_compute_location(s.get_block(block).value(), d).ok()) legal.push_back(d);
  }
  return legal;
}

TEST(SampleComputeLocation, CandidatesDependOnEarlierDecisions) {
  auto w = elementwise_chain(16);
  // C's loops untouched: B can go under C's i or j loop, stay, or be inlined.
  Schedule plain(w.func, ScheduleOptions{.seed = 1});
  EXPECT_EQ(legal_locations(plain, w, "B"), (std::vector<int64_t>{-2, -1, 0, 1}));
  // After a sampled split of C's j loop into two, there is one more loop to compute B at.
  Schedule tiled(w.func, ScheduleOptions{.seed = 1});
  auto cl = tiled.get_loops(tiled.get_block("C").value()).value();
  auto t = tiled.sample_perfect_tile(cl[1], 2, 16, std::vector<int64_t>{4, 4}).value();
  tiled.split(cl[1], {t[0], t[1]}).value();
  EXPECT_EQ(legal_locations(tiled, w, "B"), (std::vector<int64_t>{-2, -1, 0, 1, 2}));
  // Every legal location computes the reference, through compute_at with the sampled loop.
  for (int64_t d : legal_locations(tiled, w, "B")) {
    Schedule s(w.func, ScheduleOptions{.seed = 0});
    ASSERT_TRUE(tiled.trace()->apply_to(s).ok());
    BlockRV b = s.get_block("B").value();
    LoopRV where = s.sample_compute_location(b, d).value();
    auto st = s.compute_at(b, where);
    ASSERT_TRUE(st.ok()) << d << ": " << st.error().reason();
    EXPECT_TRUE(computes_reference(w, s.func())) << d;
    if (d == kComputeLocationRoot) {
      EXPECT_TRUE(ir::structural_equal(s.func(), tiled.func()));
    }
    if (d == kComputeLocationInline) {
      EXPECT_FALSE(s.get_block("B").ok());
    }
    // The trace replays to the same program.
    Schedule r(w.func, ScheduleOptions{.seed = 5});
    ASSERT_TRUE(Trace::parse_text(s.trace()->to_text()).apply_to(r).ok());
    EXPECT_TRUE(ir::structural_equal(r.func(), s.func()));
  }
}

TEST(SampleComputeLocation, MarksAreOnlyForComputeAt) {
  auto w = elementwise_chain(8);
  Schedule sch(w.func, ScheduleOptions{.seed = 1});
  BlockRV b = sch.get_block("B").value();
  LoopRV root = sch.sample_compute_location(b, kComputeLocationRoot).value();
  EXPECT_EQ(sch.split(root, {2, 4}).error().code(), ErrorCode::kWrongHandleKind);
  EXPECT_THAT(sch.parallel(root).error().reason(), HasSubstr("compute-location mark"));
  // A block that cannot be inlined (an output) has no inline option.
  EXPECT_THAT(sch.sample_compute_location(sch.get_block("C").value(), kComputeLocationInline)
                  .error()
                  .reason(),
              HasSubstr("inlining is not"));
  // Fresh draws only produce legal choices, all of them over many draws.
  std::map<int64_t, int> seen;
  for (int t = 0; t < 400; ++t) {
    Schedule s(w.func, ScheduleOptions{.seed = t, .trace = true});
    s.sample_compute_location(s.get_block("B").value()).value();
    ++seen[s.trace()->decisions().begin()->second.i];
  }
  EXPECT_EQ(seen.size(), 4u);  // inline, root, C's i, C's j
  for (const auto& [d, c] : seen) EXPECT_NEAR(c, 100, 40) << d;
}

}  // namespace
}  // namespace tyche::schedule
