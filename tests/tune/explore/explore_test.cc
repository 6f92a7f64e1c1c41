// Acceptance of the design-space pipeline: rules -> spaces -> sampled, postprocessed candidates
// that compute the reference, on the workloads; mutators on real design spaces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../schedule/schedule_test_util.h"
#include "tune/explore/sample_space.h"
#include "tune/mutator/mutator.h"
#include "tune/postproc/candidate.h"

namespace tyche::tune {
namespace {

using schedule::testing::small;

target::Target cpu() {
  target::Target t;
  t.num_cores = 2;
  return t;
}

void expect_space_valid(const workloads::Workload& w, const target::Target& target, int samples,
                        bool compile = false) {
  SampleSpaceReport r =
      sample_space(w, target, {.samples = samples, .seed = 1, .compile = compile});
  std::string failures;
  for (const std::string& f : r.failures) failures += f + "\n";
  EXPECT_FALSE(r.spaces.empty()) << w.name;
  EXPECT_EQ(r.samples, samples);
  EXPECT_GE(r.valid, samples * 99 / 100) << w.name << "\n" << failures;
  EXPECT_EQ(r.correct, r.checked) << w.name << "\n" << failures;
  EXPECT_EQ(r.checked, r.valid);
}

TEST(SampleSpace, AcceptanceWorkloadsOnCpu) {
  for (const char* name : {"GMM-4", "C2D-2", "SFM-3", "CBR-2", "DEP-1"})
    expect_space_valid(small(name), cpu(), 100);
  expect_space_valid(workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=40,j=39,k=7"),
                     cpu(), 100);
}

TEST(SampleSpace, OddMatmulCompiledAtFullSize) {
  // The 1000 x 999 x 97 matmul: non-divisible, prime extents; checked with compiled code.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=1000,j=999,k=97");
  expect_space_valid(w, cpu(), 8, /*compile=*/true);
}

TEST(SampleSpace, FullShapesPassThePostprocessors) {
  // Spaces depend on the extents (999 = 27 x 37, 97 is prime); validity at the real shapes.
  for (const char* name : {"GMM-4", "C2D-2", "SFM-3", "CBR-2", "DEP-1"}) {
    SampleSpaceReport r = sample_space(workloads::get_preset(name), cpu(),
                                       {.samples = 100, .seed = 4, .check = false});
    EXPECT_GE(r.valid, 99) << name;
  }
  auto mm = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=1000,j=999,k=97");
  EXPECT_EQ(sample_space(mm, cpu(), {.samples = 200, .seed = 4, .check = false}).valid, 200);
}

TEST(SampleSpace, SameSeedSameReport) {
  auto w = small("CBR-2");
  SampleSpaceReport a = sample_space(w, cpu(), {.samples = 30, .seed = 8});
  SampleSpaceReport b = sample_space(w, cpu(), {.samples = 30, .seed = 8});
  EXPECT_EQ(a.spaces, b.spaces);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_NE(sample_space(w, cpu(), {.samples = 0, .seed = 9}).spaces, a.spaces);
}

TEST(SampleSpace, GpuSpacesValidateOnTheIrLevel) {
  target::Target gpu = target::Target::parse("cuda");
  for (const char* name : {"GMM-1", "SFM-1", "NRM-1"}) expect_space_valid(small(name), gpu, 30);
}

// Each mutator, applied to samples of real design spaces, yields a different trace that
// replays and passes the postprocessors at least 80% of the time.
void expect_mutator_rate(const MutatorPtr& mutator, const workloads::Workload& w,
                         const target::Target& target, int tries) {
  TuneContext context{w.func, target};
  auto designs = post_order_apply(default_rules(target))->generate(context, 2);
  auto postprocs = default_postprocs(context);
  mutator->initialize(context);
  RandomEngine rng(9);
  int good = 0;
  for (int i = 0; i < tries; ++i) {
    const schedule::Trace& space =
        *designs[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(designs.size())))]
             .trace();
    // A sampled candidate's trace before its postprocessors, as search holds them.
    schedule::Trace trace;
    auto sampled =
        make_candidate(context, space, {.fresh_decisions = true}, postprocs, 1000 + i, &trace);
    ASSERT_TRUE(std::holds_alternative<schedule::Schedule>(sampled));
    auto mutated = mutator->mutate(trace, rng);
    if (!mutated || mutated->to_json() == trace.to_json()) continue;
    auto candidate = make_candidate(context, *mutated, {}, postprocs, 1);
    good += std::holds_alternative<schedule::Schedule>(candidate);
  }
  EXPECT_GE(good, tries * 8 / 10) << mutator->name() << " on " << w.name << ": " << good << " of "
                                  << tries;
}

TEST(Mutators, ProduceDifferentValidTracesOnRealSpaces) {
  auto gmm = small("GMM-4");
  expect_mutator_rate(mutate_tile_size(), gmm, cpu(), 100);
  expect_mutator_rate(mutate_unroll(), gmm, cpu(), 100);
  expect_mutator_rate(mutate_parallel(), small("C2D-2"), cpu(), 50);
  expect_mutator_rate(mutate_compute_location(), small("CBR-2"), cpu(), 50);
  expect_mutator_rate(mutate_thread_binding(), small("SFM-1"), target::Target::parse("cuda"), 50);
}

TEST(Mutators, DefaultWeights) {
  auto cpu_mutators = default_mutators(cpu());
  ASSERT_EQ(cpu_mutators.size(), 4u);
  std::map<std::string, double> w;
  for (auto& [m, p] : cpu_mutators) w[m->name()] = p;
  EXPECT_EQ(w["MutateTileSize"], 0.9);
  EXPECT_EQ(w["MutateComputeLocation"], 0.05);
  EXPECT_EQ(w["MutateUnroll"], 0.03);
  EXPECT_EQ(w["MutateParallel"], 0.02);
  EXPECT_EQ(default_mutators(target::Target::parse("cuda")).back().first->name(),
            "MutateThreadBinding");
}

}  // namespace
}  // namespace tyche::tune
