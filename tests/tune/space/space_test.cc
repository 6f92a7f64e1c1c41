// Design spaces from the built-in rules: their shape on GMM (golden traces), every workload of
// the acceptance list gives a non-empty space whose random samples compute the reference, and
// each rule's own behaviour and refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../schedule/schedule_test_util.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "support/error.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using schedule::Schedule;
using schedule::testing::computes_reference;
using schedule::testing::expect_golden;
using schedule::testing::small;

// The CPU is named: the default spaces depend on its vector registers (16 with AVX2, 32 with
// AVX-512), and a test must not depend on the host it runs on.
target::Target space_cpu(const std::string& name = "x86-64-v4", int cores = 2) {
  target::Target t;
  t.num_cores = cores;
  t.cpu = name;
  return t;
}

std::vector<Schedule> spaces(const workloads::Workload& w, const target::Target& target,
                             int64_t seed = 1) {
  return post_order_apply(default_rules(target))->generate(TuneContext{w.func, target}, seed);
}

std::string all_traces(const std::vector<Schedule>& designs) {
  std::string out;
  for (size_t i = 0; i < designs.size(); ++i)
    out += fmt::format("# design {}\n{}", i, designs[i].trace()->simplified().to_text());
  return out;
}

TEST(PostOrderApply, GmmHasThreeCpuDesigns) {
  auto w = small("GMM-1");
  auto designs = spaces(w, space_cpu());  // AVX-512: TVM's spaces
  ASSERT_EQ(designs.size(), 3u);          // write cache: none, under level 1, under level 2
  expect_golden("gmm_cpu_spaces", all_traces(designs), "tune");
  for (const Schedule& d : designs) {
    std::string text = ir::to_string(d.func());
    EXPECT_THAT(text, ::testing::HasSubstr("meta_schedule.parallel"));
    EXPECT_THAT(text, ::testing::HasSubstr("meta_schedule.unroll_explicit"));
    EXPECT_TRUE(computes_reference(w, d.func()));
  }
}

// Replaying a design's trace with fresh decisions explores the space; every sample is a legal
// program that computes the reference (postprocessing is tested with the postprocessors).
void expect_samples_correct(const workloads::Workload& w, const target::Target& target,
                            int n_samples) {
  auto designs = spaces(w, target);
  ASSERT_FALSE(designs.empty()) << w.name;
  RandomEngine rng(7);
  int replayed = 0;
  for (int i = 0; i < n_samples; ++i) {
    const Schedule& d =
        designs[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(designs.size())))];
    Schedule sch(w.func, schedule::ScheduleOptions{.seed = 100 + i});
    auto st = d.trace()->apply_to(sch, {.fresh_decisions = true});
    ASSERT_TRUE(st.ok()) << w.name << ": " << st.error().reason();
    ++replayed;
    ASSERT_TRUE(computes_reference(w, sch.func())) << w.name << " sample " << i << "\n"
                                                   << sch.trace()->to_text();
  }
  EXPECT_EQ(replayed, n_samples);
}

// With AVX2's 16 registers: x 2 packed or not, x 2 with a padded 6-row register tile or not
// (GMM-1 scaled down has 32 rows: 6 x 6 = 36, 4 rows of padding).
TEST(PostOrderApply, GmmHasTwelveDesignsOnAnAvx2Cpu) {
  auto w = small("GMM-1");
  auto designs = spaces(w, space_cpu("x86-64-v3"));
  ASSERT_EQ(designs.size(), 12u);
  int padded = 0, packed = 0;
  for (const Schedule& d : designs) {
    std::string text = d.trace()->to_text();
    padded += text.find("factors=[None, 6]") != std::string::npos;
    packed += text.find("cache_read") != std::string::npos;
    EXPECT_TRUE(computes_reference(w, d.func()));
  }
  EXPECT_EQ(padded, 6);
  EXPECT_EQ(packed, 6);
}

TEST(PostOrderApply, AcceptanceWorkloadsSampleCorrectly) {
  for (const std::string cpu_name : {"x86-64-v4", "x86-64-v3"}) {
    for (const char* name : {"GMM-4", "C2D-2", "SFM-3", "CBR-2", "DEP-1"})
      expect_samples_correct(small(name), space_cpu(cpu_name), 40);
    expect_samples_correct(
        workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=20,j=19,k=7"),
        space_cpu(cpu_name), 40);
    expect_samples_correct(
        workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=50,j=32,k=16"),
        space_cpu(cpu_name), 40);
  }
}

TEST(PostOrderApply, GpuSpacesSampleCorrectly) {
  target::Target gpu = target::Target::parse("cuda");
  for (const char* name : {"GMM-1", "SFM-1", "NRM-1", "CBR-1"})
    expect_samples_correct(small(name), gpu, 20);
}

}  // namespace
}  // namespace tyche::tune
