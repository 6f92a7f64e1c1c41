// Builder and isolated Runner: failures stay with their candidate and the batch goes on.
#include <gmock/gmock.h>

#include <chrono>
#include <filesystem>

#include "interp/interpreter.h"
#include "ir/op.h"
#include "measure_test_util.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "tune/measure/builder.h"
#include "tune/measure/runner.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

using testing::temp_dir;
using testing::worker_path;

ir::PrimFunc tiled_gmm(const workloads::Workload& w, int64_t tile) {
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("Z").value()).value();
  auto j = sch.split(l[2], {std::nullopt, tile}).value();
  sch.vectorize(j[1]).value();
  sch.parallel(l[1]).value();
  return sch.func();
}

// A 1-d float buffer of n elements.
ir::Buffer flat(const std::string& name, int64_t n) {
  return ir::make_buffer(name, kFloat32, {ir::make_int(n, kInt64)});
}

// Stores far past the end of its 16-element output: a crash.
ir::PrimFunc out_of_bounds() {
  ir::Buffer a = flat("A", 16);
  ir::Var i("i", kInt64);
  ir::Stmt body = ir::for_loop(
      i, ir::make_int(0, kInt64), ir::make_int(1000000000, kInt64), ir::ForKind::kSerial,
      ir::buffer_store(a, ir::make_float(1.0), {i * ir::make_int(1 << 20, kInt64)}));
  return ir::PrimFunc("oob", {a}, 1, body);
}

// A loop of 10^18 iterations no compiler can shorten: a hang.
ir::PrimFunc endless() {
  ir::Buffer a = flat("A", 16);
  ir::Var i("i", kInt64);
  ir::Expr zero = ir::make_int(0, kInt64);
  ir::Stmt body = ir::for_loop(
      i, zero, ir::make_int(1000000000000000000LL, kInt64), ir::ForKind::kSerial,
      ir::buffer_store(
          a, ir::buffer_load(a, {zero}) * ir::make_float(1.0000001) + ir::make_float(1.0), {zero}));
  return ir::PrimFunc("endless", {a}, 1, body);
}

RunInput input_for(const BuildResult& b, const ir::PrimFunc& f, const workloads::Workload* w) {
  return run_input_for(
      b.object_path, b.name, f,
      w ? w->reference(workloads::make_inputs(w->func, 42)) : std::vector<runtime::NDArray>{});
}

TEST(Builder, BuildsABatchConcurrentlyAndKeepsEachFailure) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ir::Buffer sym = ir::make_buffer("S", kFloat32, {ir::Var("n", kInt64)});
  ir::PrimFunc bad("bad", {sym}, 1, ir::buffer_store(sym, ir::make_float(0.0), {ir::make_int(0)}));
  Builder builder(BuilderOptions{.max_workers = 2});
  auto results = builder.build({tiled_gmm(w, 8), bad, tiled_gmm(w, 16)});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok()) << results[0].error;
  EXPECT_FALSE(results[1].ok());
  EXPECT_THAT(results[1].error, HasSubstr("symbolic shape"));
  EXPECT_TRUE(results[2].ok()) << results[2].error;
  ASSERT_TRUE(results[0].kernel);
  auto inputs = workloads::make_inputs(w.func, 1);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args = inputs;
  args.push_back(runtime::NDArray(expected[0].shape(), kFloat32));
  results[2].kernel->run(args);
  EXPECT_TRUE(runtime::compare(args.back(), expected[0]).ok);
}

TEST(Builder, BuildsForTheCpuAskedAndRefusesOnesThatCannotRunHere) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  std::string dir = temp_dir("objects_v2");
  Builder v2(BuilderOptions{.max_workers = 1, .object_dir = dir, .cpu = "x86-64-v2"});
  auto built = v2.build({tiled_gmm(w, 8)});
  ASSERT_TRUE(built[0].ok()) << built[0].error;
  Runner runner(RunnerOptions{.worker_path = worker_path(),
                              .timeout_s = 60,
                              .time = {.warmup = 0,
                                       .number = 1,
                                       .repeat = 1,
                                       .min_repeat_ms = 0,
                                       .flush_cache = false,
                                       .flush_ranges = {}}});
  RunResult r = runner.run(input_for(built[0], tiled_gmm(w, 8), &w));
  EXPECT_TRUE(r.ok() && r.correct) << r.error << r.mismatch;
  std::filesystem::remove_all(dir);
  EXPECT_THAT([] { Builder(BuilderOptions{.cpu = "pentium-9000"}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("unknown CPU")));
  // No host has both AMD's sse4a and Intel's AMX.
  auto refuses = [](const char* cpu) {
    try {
      Builder b(BuilderOptions{.cpu = cpu});
      return false;
    } catch (const Error& e) {
      return std::string(e.what()).find("cannot run code for CPU") != std::string::npos;
    }
  };
  EXPECT_TRUE(refuses("znver3") || refuses("sapphirerapids"));
}

TEST(Builder, TimeoutIsThatCandidatesFailure) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  Builder builder(BuilderOptions{.max_workers = 1, .timeout_s = 0.0001});
  auto results = builder.build({tiled_gmm(w, 8), tiled_gmm(w, 16)});
  for (const BuildResult& r : results) {
    EXPECT_FALSE(r.ok());
    EXPECT_THAT(r.error, HasSubstr("build timed out"));
  }
}

TEST(Runner, CrashesAndHangsAreCandidateFailuresAndTheNextCandidateRuns) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ir::PrimFunc good = tiled_gmm(w, 16);
  ir::PrimFunc oob = out_of_bounds(), hang = endless();
  std::string dir = temp_dir("objects");
  Builder builder(BuilderOptions{.object_dir = dir});
  auto built = builder.build({oob, good, hang, good});
  for (const BuildResult& b : built) ASSERT_TRUE(b.ok()) << b.error;
  Runner runner(RunnerOptions{.worker_path = worker_path(),
                              .timeout_s = 2,
                              .time = {.warmup = 1,
                                       .number = 1,
                                       .repeat = 3,
                                       .min_repeat_ms = 0,
                                       .flush_cache = false,
                                       .flush_ranges = {}}});
  std::vector<RunInput> inputs = {input_for(built[0], oob, nullptr), input_for(built[1], good, &w),
                                  input_for(built[2], hang, nullptr),
                                  input_for(built[3], good, &w)};
  auto results = runner.run(inputs);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_FALSE(results[0].ok());
  EXPECT_THAT(results[0].error,
              HasSubstr("crashed the worker"));  // "signal 11 (Segmentation fault)"
  EXPECT_TRUE(results[1].ok()) << results[1].error;
  EXPECT_TRUE(results[1].checked && results[1].correct) << results[1].mismatch;
  EXPECT_GT(results[1].time.median, 0);
  EXPECT_FALSE(results[2].ok());
  EXPECT_THAT(results[2].error, HasSubstr("timed out after 2 s"));
  EXPECT_TRUE(results[3].ok()) << results[3].error;
  EXPECT_TRUE(results[3].correct);
  EXPECT_EQ(runner.worker_starts(), 3);  // first, after the crash, after the kill
  std::filesystem::remove_all(dir);
}

TEST(Runner, ASlowCandidateIsTimedByOneRunAfterItsCheckingRunAndMayHaveItsOwnTimeout) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ir::PrimFunc good = tiled_gmm(w, 16);
  ir::PrimFunc hang = endless();
  std::string dir = temp_dir("objects3");
  Builder builder(BuilderOptions{.object_dir = dir});
  auto built = builder.build({good, hang});
  for (const BuildResult& b : built) ASSERT_TRUE(b.ok()) << b.error;
  Runner runner(RunnerOptions{.worker_path = worker_path(),
                              .timeout_s = 60,
                              .time = {.warmup = 1,
                                       .number = 1,
                                       .repeat = 3,
                                       .min_repeat_ms = 0,
                                       .flush_cache = false,
                                       .flush_ranges = {}}});
  RunInput all = input_for(built[0], good, &w);
  RunResult r = runner.run(all);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.time.seconds.size(), 3u);
  RunInput slow = all;
  slow.single_run_after_s =
      1e-9;  // every run lasts longer: the run after the checking run is the measurement
  r = runner.run(slow);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.checked && r.correct);
  ASSERT_EQ(r.time.seconds.size(), 1u);
  EXPECT_GT(r.time.seconds[0], 0);
  EXPECT_EQ(r.time.median, r.time.seconds[0]);
  slow.single_run_after_s = 1e9;  // no run lasts that long: all repeats
  r = runner.run(slow);
  EXPECT_EQ(r.time.seconds.size(), 3u);
  RunInput hung = input_for(built[1], hang, nullptr);
  hung.timeout_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  r = runner.run(hung);
  EXPECT_THAT(r.error, HasSubstr("timed out after 0.5 s"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
  std::filesystem::remove_all(dir);
}

TEST(Runner, WrongResultsAndBadObjectsAreReported) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ir::PrimFunc good = tiled_gmm(w, 8);
  std::string dir = temp_dir("objects2");
  Builder builder(BuilderOptions{.object_dir = dir});
  auto built = builder.build({good});
  ASSERT_TRUE(built[0].ok());
  // Correctness only: a few quick timings, and a timeout far from what a loaded host needs.
  Runner runner(RunnerOptions{.worker_path = worker_path(),
                              .timeout_s = 60,
                              .time = {.warmup = 1,
                                       .number = 1,
                                       .repeat = 2,
                                       .min_repeat_ms = 0,
                                       .flush_cache = false,
                                       .flush_ranges = {}}});
  RunInput wrong = input_for(built[0], good, &w);
  wrong.seed = 7;  // inputs differ from those the expected outputs came from
  RunResult r = runner.run(wrong);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.checked);
  EXPECT_FALSE(r.correct);
  RunInput missing = input_for(built[0], good, nullptr);
  missing.object_path = dir + "/nope.o";
  r = runner.run(missing);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.error, HasSubstr("cannot read object file"));
  EXPECT_EQ(runner.worker_starts(), 1);  // a reported failure keeps the worker
  EXPECT_THROW(Runner(RunnerOptions{.worker_path = "/nonexistent/worker"}), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tyche::tune
