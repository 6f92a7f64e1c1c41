// Runs the `tyche` binary and checks exit codes and the one-line error contract.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

struct Result {
  int code;
  std::string out, err;
};

// Runs `tyche args`, with `env` ("NAME=value") in its environment when given.
Result run(const std::string& args, const std::string& env = "") {
  std::string bin =
      (env.empty() ? "" : "env " + env + " ") + std::string(TYCHE_BINARY_DIR) + "/tools/tyche";
  // One file per call and process: ctest runs the tests of this binary in parallel.
  static int calls = 0;
  std::string err_file = testing::TempDir() + "/tyche_cli_stderr_" + std::to_string(getpid()) +
                         "_" + std::to_string(calls++) + ".txt";
  std::string cmd = bin + " " + args + " 2>" + err_file;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = fopen(err_file.c_str(), "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    fclose(f);
  }
  std::remove(err_file.c_str());
  return r;
}

// The file's text (empty if it cannot be read); the file is removed.
std::string take_file(const std::string& path) {
  std::string text;
  if (FILE* f = fopen(path.c_str(), "r")) {
    std::array<char, 4096> buf;
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), f)) > 0;) text.append(buf.data(), n);
    fclose(f);
  }
  std::remove(path.c_str());
  return text;
}

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

void expect_usage_error(const std::string& args, const std::string& needle) {
  Result r = run(args);
  EXPECT_EQ(r.code, 2) << args;
  EXPECT_EQ(count_lines(r.err), 1) << args << " stderr: " << r.err;
  EXPECT_THAT(r.err, testing::HasSubstr(needle)) << args;
  EXPECT_EQ(r.out, "") << args;
}

TEST(Cli, ListsWorkloads) {
  Result r = run("workloads");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, testing::HasSubstr("GMM-4"));
  EXPECT_THAT(r.out, testing::HasSubstr("2.1475"));  // 2 * 1024^3 FLOP
  EXPECT_EQ(count_lines(r.out), 59);  // a header, the 56 presets, DENSE-BERT and the typed variants
}

TEST(Cli, ShowPrintsIr) {
  Result r = run("show GMM-1");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, testing::HasSubstr("with block(\"Z\")"));
  r = run("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4,k=4");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, testing::HasSubstr("axis.reduce(4, k)"));
}

TEST(Cli, CheckPassesWithExitZero) {
  Result r = run("check GMM-4 --scale-down");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("max abs error"));
  EXPECT_THAT(r.out, testing::HasSubstr("OK"));
  r = run("check C2D-1 --scale-down");
  EXPECT_EQ(r.code, 0) << r.err;
  r =
      run("check 'O[n,h,w,co] += I[n,h*2+rh,w*2+rw,ci] * W[rh,rw,ci,co]' --extents "
          "n=1,h=4,w=4,co=4,rh=3,rw=3,ci=2");
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Cli, BadInputsExitTwoWithOneLine) {
  expect_usage_error("show NOPE-1", "unknown workload");
  expect_usage_error("check GMM-9 --scale-down", "unknown workload");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j' --extents i=4,j=4,k=4", "column");
  expect_usage_error("check 'C[i,j] += A[i,k] * * B[k,j]' --extents i=4,j=4,k=4", "column 20");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]'", "--extents");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4", "'k'");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4,k=4,z=3", "'z'");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=x,k=4", "extents");
  expect_usage_error("frobnicate", "frobnicate");
  expect_usage_error("show", "workload");
  expect_usage_error("check GMM-1 --bogus", "bogus");
}

// ---- --trace ----

std::string example_trace() {
  return std::string(TYCHE_SOURCE_DIR) + "/examples/traces/gmm_tiled.py";
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/tyche_cli_" + std::to_string(getpid()) + "_" + name;
  FILE* f = fopen(path.c_str(), "w");
  fputs(text.c_str(), f);
  fclose(f);
  return path;
}

TEST(CliTrace, ShowAndCheckApplyTheTrace) {
  Result show = run("show GMM-1 --trace " + example_trace());
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, testing::HasSubstr("for i_0 in parallel(16):"));
  EXPECT_THAT(show.out, testing::HasSubstr("for j_1 in vectorized(16):"));
  Result check = run("check GMM-4 --scale-down --trace " + example_trace());
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_THAT(check.out, testing::HasSubstr("OK"));
  EXPECT_EQ(check.err, "");
}

TEST(CliTrace, JsonTracesAndSamplingWithoutDecisions) {
  std::string json = write_temp("t.json", R"({"format":"tyche.trace","version":1,"instructions":[
    {"kind":"get_block","args":{"name":"Z"},"outputs":["b0"]},
    {"kind":"get_loops","args":{"block":{"rv":"b0"}},"outputs":["l1","l2","l3","l4"]},
    {"kind":"sample_perfect_tile","args":{"loop":{"rv":"l2"},"n":3,"max_innermost_factor":8},"outputs":["v5","v6","v7"]},
    {"kind":"split","args":{"loop":{"rv":"l2"},"factors":[{"rv":"v5"},{"rv":"v6"},{"rv":"v7"}]},"outputs":["l8","l9","l10"]}]})");
  for (int seed : {0, 1, 2}) {
    Result r = run("check GMM-1 --scale-down --seed " + std::to_string(seed) + " --trace " + json);
    EXPECT_EQ(r.code, 0) << r.err;
  }
  EXPECT_EQ(run("show GMM-1 --trace " + json).code, 0);
  // An index-notation workload takes a trace too.
  std::string t = write_temp("c.py",
                             "b0 = sch.get_block(name=\"C\")\nl1, l2, l3 = "
                             "sch.get_loops(block=b0)\nsch.reorder(l1, l3, l2)\n");
  Result r = run("check 'C[i,j] += A[i,k] * B[k,j]' --extents i=8,j=8,k=8 --trace " + t);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(CliTrace, BadTracesExitTwoWithOneLine) {
  expect_usage_error("show GMM-1 --trace /nonexistent/t.py",
                     "cannot read trace file '/nonexistent/t.py'");
  std::string bad_syntax =
      write_temp("bad1.py", "b0 = sch.get_block(name=\"Z\")\nl1 = sch.get_loops(block=b0\n");
  expect_usage_error("show GMM-1 --trace " + bad_syntax,
                     "trace line 2, column 28: expected ',' or ')'");
  std::string unknown = write_temp("bad2.py", "b0 = sch.get_blok(name=\"Z\")\n");
  expect_usage_error("check GMM-1 --trace " + unknown,
                     "trace line 1, column 10: unknown instruction 'get_blok'");
  std::string fails =
      write_temp("bad3.py",
                 "b0 = sch.get_block(name=\"Z\")\nl1, l2, l3, l4 = sch.get_loops(block=b0)\n"
                 "sch.split(loop=l2, factors=[3, 5])\n");
  expect_usage_error("check GMM-1 --trace " + fails, "line 3 (split): ");
  std::string wrong_block = write_temp("bad4.py", "b0 = sch.get_block(name=\"C\")\n");
  expect_usage_error("show GMM-1 --trace " + wrong_block, "line 1 (get_block): no block named 'C'");
  std::string bad_decision =
      write_temp("bad5.py",
                 "b0 = sch.get_block(name=\"Z\")\nl1, l2, l3, l4 = sch.get_loops(block=b0)\n"
                 "v5, v6 = sch.sample_perfect_tile(loop=l2, n=2, decision=[3, 16])\n");
  expect_usage_error(
      "show GMM-1 --trace " + bad_decision,
      "line 3 (sample_perfect_tile): sample_perfect_tile: decision [3, 16] is not legal");
  std::string bad_json =
      write_temp("bad6.json", R"({"format":"tyche.trace","version":9,"instructions":[]})");
  expect_usage_error("show GMM-1 --trace " + bad_json, "unsupported version 9");
}

// A tuning record's trace leaves the parallel/vectorize plan on the root for the postprocessors:
// without --postprocess the loops stay serial (and a note says so), with it they are rewritten.
TEST(CliTrace, PostprocessAppliesTheRootPlanAndItsAbsenceIsNoted) {
  std::string plan = write_temp(
      "plan.py",
      "b0 = sch.get_block(name=\"root\")\n"
      "sch.annotate(block_or_loop=b0, ann_key=\"meta_schedule.parallel\", ann_val=64)\n"
      "sch.annotate(block_or_loop=b0, ann_key=\"meta_schedule.vectorize\", ann_val=16)\n");
  Result bare = run("show GMM-1 --scale-down --trace " + plan);
  ASSERT_EQ(bare.code, 0) << bare.err;
  EXPECT_THAT(bare.out, testing::Not(testing::HasSubstr("parallel(")));
  EXPECT_EQ(count_lines(bare.err), 1) << bare.err;
  EXPECT_THAT(bare.err,
              testing::HasSubstr(
                  "note: the trace leaves meta_schedule.parallel, meta_schedule.vectorize for the "
                  "postprocessors (as a tuning record does): add --postprocess"));
  Result done = run("show GMM-1 --scale-down --postprocess --trace " + plan);
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_EQ(done.err, "");
  EXPECT_THAT(done.out, testing::HasSubstr("in parallel("));
  EXPECT_THAT(done.out, testing::Not(testing::HasSubstr("meta_schedule.parallel")));
  Result checked = run("check GMM-1 --scale-down --postprocess --trace " + plan);
  EXPECT_EQ(checked.code, 0) << checked.err;
  EXPECT_THAT(checked.out, testing::HasSubstr("OK"));
  // A trace without the plan gets no note.
  EXPECT_EQ(run("show GMM-1 --trace " + example_trace()).err, "");
  expect_usage_error("show GMM-1 --db /nonexistent --postprocess",
                     "--db applies the postprocessors already: drop --postprocess");
}

// ---- run ----

std::string gmm_trace() {
  return std::string(TYCHE_SOURCE_DIR) + "/examples/traces/gmm_1024.py";
}

TEST(CliRun, CompilesChecksTimesAndWritesJson) {
  std::string json = testing::TempDir() + "/tyche_run_" + std::to_string(getpid()) + ".json";
  Result r = run("run GMM-1 --scale-down --repeat 2 --json " + json);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("GFLOP/s"));
  EXPECT_THAT(r.out, testing::HasSubstr("correct"));
  std::string text = take_file(json);
  ASSERT_FALSE(text.empty()) << json;
  for (const char* key : {"\"workload\": \"GMM-1 (scaled down)\"", "\"gflop\"", "\"latency_s\"",
                          "\"gflops\"", "\"correct\": true"})
    EXPECT_THAT(text, testing::HasSubstr(key));
}

TEST(CliRun, EmitsEveryForm) {
  Result a = run("run GMM-1 --repeat 1 --trace " + gmm_trace() + " --emit asm");
  EXPECT_EQ(a.code, 0) << a.err;
  Result cpu = run("cpu");
  EXPECT_THAT(a.out, testing::HasSubstr(cpu.out.find(" fma ") != std::string::npos ? "vfmadd231ps"
                                                                                   : "mulps"));
  Result c = run("run GMM-1 --scale-down --repeat 1 --emit c");
  EXPECT_THAT(c.out, testing::HasSubstr("int32_t GMM("));
  Result l = run("run GMM-1 --scale-down --repeat 1 --emit llvm");
  EXPECT_THAT(l.out, testing::HasSubstr("i32 @GMM_packed("));
  Result i = run("run GMM-1 --scale-down --repeat 1 --emit ir --dump-ir --threads 1");
  EXPECT_THAT(i.out, testing::HasSubstr("# after lower_blocks"));
  EXPECT_THAT(i.out, testing::HasSubstr("1 threads"));
  Result note = run("run C2D-1 --scale-down --repeat 1 --trace " +
                    write_temp("vec_pad.py",
                               "b0 = sch.get_block(name=\"pad\")\nl1, l2, l3, l4 = "
                               "sch.get_loops(block=b0)\nsch.vectorize(loop=l3)\n"));
  EXPECT_EQ(note.code, 0);
  EXPECT_THAT(note.err, testing::HasSubstr("note: vectorized loop"));
}

TEST(CliRun, LayoutFreeWeightsAreLaidOutOnceOutsideTheTimedKernel) {
  // C2D's weights W are layout-free: a nest that walks them out of order reads a copy laid out
  // in its order (RewriteLayout, a postprocessor), which `run` makes once and does not time, as
  // the tuner and a model's executor do.
  std::string trace = write_temp(
      "c2d_co_outer.py",
      "b0 = sch.get_block(name=\"conv2d\")\nl1, l2, l3, l4, l5, l6, l7 = sch.get_loops(block=b0)\n"
      "l8, l9 = sch.split(loop=l4, factors=[None, 4])\nsch.reorder(l1, l2, l3, l8, l5, l6, l7, "
      "l9)\n");
  Result r = run("run C2D-1 --scale-down --repeat 1 --emit ir --postprocess --trace " + trace);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("W laid out anew once, before timing"));
  EXPECT_THAT(r.out, testing::HasSubstr("correct"));
  // The timed kernel takes the copy as its parameter and does not make it.
  EXPECT_THAT(r.out, testing::HasSubstr("W_global: Buffer("));
  EXPECT_THAT(r.out, testing::Not(testing::ContainsRegex("\n *W_global\\[[^\n]*\\] = "))) << r.out;
}

TEST(CliRun, GeneratesCodeForTheCpuAsked) {
  // x86-64-v2 (SSE4.2) runs on every x86-64 CPU in use: 4-wide vectors, no FMA, no AVX.
  Result a = run("run GMM-1 --repeat 1 --trace " + gmm_trace() + " --emit asm --cpu x86-64-v2");
  EXPECT_EQ(a.code, 0) << a.err;
  EXPECT_THAT(a.out, testing::HasSubstr("mulps"));
  EXPECT_THAT(a.out, testing::Not(testing::HasSubstr("ymm")));
  EXPECT_THAT(a.out, testing::HasSubstr("cpu x86-64-v2 (128-bit vectors)"));
  Result env = run("run GMM-1 --scale-down --repeat 1", "TYCHE_CPU=x86-64-v2");
  EXPECT_THAT(env.out, testing::HasSubstr("cpu x86-64-v2 (128-bit vectors)"));
  Result c = run("cpu --cpu x86-64-v3");
  EXPECT_EQ(c.code, 0);
  EXPECT_THAT(c.out, testing::HasSubstr("vector bits: 256\n"));
  EXPECT_THAT(c.out, testing::HasSubstr("host levels: x86-64 x86-64-v2"));
  Result s = run("space GMM-1 --samples 2 --compile --cpu x86-64-v2");
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, testing::HasSubstr("on llvm -mcpu=x86-64-v2 -num-cores="));
}

TEST(CliRun, CpusThatAreUnknownOrCannotRunHereAreOneLineErrors) {
  expect_usage_error("run GMM-1 --cpu pentium-9000", "unknown CPU 'pentium-9000'");
  expect_usage_error("cpu --cpu pentium-9000", "unknown CPU 'pentium-9000'");
  expect_usage_error("space GMM-1 --cpu pentium-9000", "unknown CPU 'pentium-9000'");
  expect_usage_error("space GMM-1 --target 'llvm -mcpu x86-64-v3' --cpu x86-64-v2", "contradicts");
  expect_usage_error("space GMM-1 --target cuda --cpu x86-64-v2", "--cpu is for the llvm target");
  Result env = run("run GMM-1", "TYCHE_CPU=pentium-9000");
  EXPECT_EQ(env.code, 2);
  EXPECT_THAT(env.err, testing::HasSubstr("TYCHE_CPU: unknown CPU"));
  // No host has both AMD's sse4a and Intel's AMX: one of these two cannot run here.
  Result zen = run("run GMM-1 --scale-down --cpu znver3");
  Result spr = run("run GMM-1 --scale-down --cpu sapphirerapids");
  const Result& refused = zen.code != 0 ? zen : spr;
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(count_lines(refused.err), 1) << refused.err;
  EXPECT_THAT(refused.err, testing::HasSubstr("on this host"));
  EXPECT_EQ(refused.out, "");
}

TEST(CliFeatures, PrintsATableAndJson) {
  std::string json = testing::TempDir() + "/tyche_features_" + std::to_string(getpid()) + ".json";
  Result r = run("features GMM-1 --trace " + gmm_trace() + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("4 stores x 171 features (layout version 1)"));
  EXPECT_THAT(r.out, testing::HasSubstr("\nbuf0.reuse_count "));
  EXPECT_THAT(take_file(json), testing::HasSubstr("\"names\":[\"arith.float_addsub\""));
  Result p = run("features SFM-1 --postprocess");
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_THAT(p.out, testing::HasSubstr("loop.parallel_num"));
  expect_usage_error("features NOPE", "unknown workload 'NOPE'");
  expect_usage_error("features GMM-1 --target vulkan", "unknown kind 'vulkan'");
}

TEST(CliModel, SampleMeasureTrainAndEvaluate) {
  std::string dir = testing::TempDir() + "/tyche_cli_model_" + std::to_string(getpid());
  std::string records = dir + "_records.jsonl", model = dir + "_model.json";
  std::remove(records.c_str());
  Result m =
      run("sample-measure GMM-1 --samples 6 --batch 3 --records " + records + " --timeout 20");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_THAT(m.out, testing::HasSubstr("batch 2: "));
  EXPECT_THAT(m.out, testing::HasSubstr("6 records appended"));
  // Measured programs are not measured again.
  Result again = run("sample-measure GMM-1 --samples 2 --records " + records + " --timeout 20");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, testing::HasSubstr("2 records appended"));
  EXPECT_THAT(again.out, testing::HasSubstr("6 already measured"));
  {  // a torn line and a foreign one are skipped with a warning, not fatal
    FILE* f = fopen(records.c_str(), "a");
    fputs("{\"format\": \"tyche.record\", \"vers\n", f);
    fclose(f);
  }
  Result t = run("model train --records " + records + " -o " + model);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_THAT(t.out, testing::HasSubstr("trained xgboost on 8 records of 1 workloads (1 skipped)"));
  EXPECT_THAT(t.err, testing::HasSubstr("skipped: not JSON"));
  std::string json = dir + "_eval.json";
  Result e =
      run("model eval --model " + model + " --records " + records + " --top-k 3 --json " + json);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_THAT(e.out, testing::HasSubstr("top-3 recall"));
  EXPECT_THAT(e.out, testing::HasSubstr("GMM-1"));
  EXPECT_THAT(take_file(json), testing::HasSubstr("\"pairwise_accuracy\""));
  expect_usage_error("model eval --model /nonexistent.json --records " + records,
                     "cannot read model file");
  expect_usage_error("model eval --model " + records + " --records " + records, "is not JSON");
  expect_usage_error("model train --records /nonexistent.jsonl -o " + model,
                     "cannot read records file");
  expect_usage_error("sample-measure GMM-1 --samples 1 --records /nonexistent/dir/r.jsonl",
                     "cannot write records file");
  // A GPU target's device must be here (as if there were no driver, whatever this machine has).
  ::setenv("TYCHE_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  expect_usage_error(
      "sample-measure GMM-1 --samples 1 --records " + records + " --target 'cuda -arch=sm_90'",
      "cannot load the CUDA driver");
  expect_usage_error("tune GMM-1 --trials 4 --target cuda", "cannot load the CUDA driver");
  ::unsetenv("TYCHE_CUDA_DRIVER_LIBRARY");
  expect_usage_error("model", "A subcommand is required");
  std::remove(records.c_str());
  std::remove(model.c_str());
}

TEST(CliTune, JsonProgressResumeAndTheBestRecord) {
  std::string db = testing::TempDir() + "/tyche_cli_tune_" + std::to_string(getpid());
  std::string json = db + ".json";
  std::filesystem::remove_all(db);
  // Four leaders timed again: the confirmation's output, records and resumption, at a quarter of
  // the default's time.
  Result t = run("tune GMM-1 --trials 16 --batch 8 --strategy replay-trace --confirm 4 --db " + db +
                 " --json " + json);
  ASSERT_EQ(t.code, 0) << t.err;
  // Not a terminal: one progress line per round.
  EXPECT_THAT(t.out, testing::HasSubstr("[8/16] GMM-1: best "));
  EXPECT_THAT(t.out, testing::HasSubstr("[16/16] GMM-1: best "));
  EXPECT_THAT(t.out, testing::HasSubstr("16 trials (0 failed), best "));
  EXPECT_THAT(t.out, testing::HasSubstr("sch.get_block(name=\"Z\")"));
  EXPECT_THAT(t.out, testing::HasSubstr("outside building and running"));
  EXPECT_THAT(t.out, testing::HasSubstr("(the fastest of the 4 best timed again, 5 rounds;"));
  EXPECT_THAT(t.out, testing::HasSubstr("leaders timed again"));
  std::string j = take_file(json);
  for (const char* key :
       {"\"workload\": \"GMM-1\"", "\"trials\": 16", "\"best_latency_s\"", "\"best_gflops\"",
        "\"wall_s\"", "\"history\"", "\"elapsed_s\"", "\"corrected_best_gflops\"", "\"best_trace\"",
        "\"confirmed\": 4", "\"search_best_latency_s\"", "\"refusals\"", "\"confirm_s\""})
    EXPECT_THAT(j, testing::HasSubstr(key));
  Result again =
      run("tune GMM-1 --trials 8 --batch 8 --confirm 0 --population 64 --generations 2 --db " + db);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out,
              testing::HasSubstr("resumed from 20 records"));  // 16 and the 4 timed again
  EXPECT_THAT(again.out, testing::Not(testing::HasSubstr("timed again,")));
  // The best record, applied.
  Result r = run("run GMM-1 --repeat 1 --db " + db);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("correct"));
  Result s = run("show GMM-1 --db " + db);
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, testing::HasSubstr("parallel"));
  expect_usage_error("run GMM-2 --db " + db, "has no measured GMM-2");
  expect_usage_error("run GMM-1 --db /nonexistent/db", "no tuning database at '/nonexistent/db'");
  expect_usage_error("run GMM-1 --db " + db + " --trace " + gmm_trace(),
                     "--db and --trace both give a schedule");
  // The best record, exported: a header and a static library.
  std::string out = db + "_export";
  Result e = run("export GMM-1 --db " + db + " --name gmm -o " + out);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_THAT(e.out, testing::HasSubstr("exported gmm (GMM-1 ["));
  EXPECT_TRUE(std::filesystem::exists(out + "/gmm.h"));
  EXPECT_TRUE(std::filesystem::exists(out + "/libgmm.a"));
  EXPECT_THAT(take_file(out + "/gmm.h"), testing::HasSubstr("the best record of " + db));
  expect_usage_error("export GMM-2 --db " + db + " --name g2 -o " + out, "has no measured GMM-2");
  std::filesystem::remove_all(out);
  expect_usage_error("tune GMM-1 --trials 8 --model /nonexistent/model.json",
                     "cannot read model file");
  expect_usage_error("tune GMM-1 --trials 8 --strategy bayes", "--strategy");
  expect_usage_error("tune GMM-1 --trials 8 --confirm -1", "--confirm");
  expect_usage_error("tune NOPE-1 --trials 8", "unknown workload 'NOPE-1'");
  {  // a corrupt workloads file is refused
    FILE* f = fopen((db + "/workloads.jsonl").c_str(), "a");
    fputs("garbage\n{}\n", f);
    fclose(f);
  }
  expect_usage_error("tune GMM-1 --trials 8 --db " + db, "is corrupt at line");
  std::filesystem::remove_all(db);
}

TEST(CliTune, CtrlCStopsAfterSavingAndExits130) {
  std::string db = testing::TempDir() + "/tyche_cli_interrupt_" + std::to_string(getpid());
  std::filesystem::remove_all(db);
  std::string bin = std::string(TYCHE_BINARY_DIR) + "/tools/tyche";
  // SIGINT once the first round is saved (however long a loaded machine takes to get there),
  // while later rounds are being searched, built or measured.
  std::string log = db + ".log", code = db + ".code";
  std::string cmd = "(" + bin + " tune GMM-1 --trials 100000 --batch 4 --db " + db + " > " + log +
                    " 2>&1 & pid=$!; " + "for i in $(seq 1200); do [ -s " + db +
                    "/records.jsonl ] && break; sleep 0.1; done; sleep 0.5; " +
                    "kill -INT $pid; wait $pid; echo $? > " + code + ")";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string out = take_file(log);
  EXPECT_EQ(take_file(code), "130\n") << out;
  EXPECT_THAT(out, testing::HasSubstr("interrupted: what was measured is saved in " + db));
  std::ifstream records(db + "/records.jsonl");
  int lines = 0;
  for (std::string line; std::getline(records, line);) ++lines;
  EXPECT_GT(lines, 0) << out;
  std::filesystem::remove_all(db);
}

TEST(CliRun, BadInputsExitTwoWithOneLine) {
  expect_usage_error("run NOPE", "unknown workload 'NOPE'");
  expect_usage_error("run GMM-1 --emit bogus", "--emit");
  expect_usage_error("run GMM-1 --threads 0", "--threads");
  expect_usage_error("run GMM-1 --json /nonexistent/dir/x.json",
                     "cannot write '/nonexistent/dir/x.json'");
  expect_usage_error("run GMM-1 --trace /nonexistent.py", "cannot read trace file");
  expect_usage_error("run GMM-1 --target opencl --emit llvm", "--emit llvm is for CPU code");
  expect_usage_error("run GMM-1 --emit cuda", "--emit cuda needs --target cuda");
  expect_usage_error("run GMM-1 --target 'opencl -arch=sm_90'",
                     "unknown option '-arch' for opencl");
}

// check --target: a GPU program must lower to kernels (AutoBind's without a trace; a CPU
// schedule's parallel loop is refused), and the interpreter checks it.
TEST(CliCheck, GpuTargetsLowerTheBoundProgramToKernels) {
  Result ok = run("check SFM-1 --scale-down --target cuda");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_THAT(ok.out, testing::HasSubstr("4 cuda kernel(s)"));
  EXPECT_THAT(ok.out, testing::HasSubstr(": OK"));
  expect_usage_error("check GMM-1 --scale-down --target opencl --trace " +
                         write_temp("cpu_par.py",
                                    "b0 = sch.get_block(name=\"Z\")\nl1, l2, l3, l4 = "
                                    "sch.get_loops(block=b0)\nsch.parallel(loop=l2)\n"),
                     "is parallel");
}

// tune and sample-measure on the OpenCL device (PoCL here): candidates built in the tuner, run,
// checked and timed in the isolated worker.
TEST(CliTune, TunesForOpenCL) {
  Result t =
      run("tune GMM-1 --trials 6 --target opencl --population 64 --generations 2 --confirm 2");
  if (t.code != 0 && t.err.find("OpenCL") != std::string::npos) GTEST_SKIP() << t.err;
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_THAT(t.out, testing::HasSubstr("6 trials (0 failed)"));
  std::string records = ::testing::TempDir() + "/tyche_opencl_records.jsonl";
  Result s = run("sample-measure GMM-1 --samples 3 --target opencl --records " + records);
  ASSERT_EQ(s.code, 0) << s.err;
  std::string text = take_file(records);
  EXPECT_THAT(text, testing::HasSubstr("\"kind\":\"opencl\""));
  EXPECT_THAT(text, testing::HasSubstr("\"seconds\":["));
}

// A GPU target: AutoBind's program lowered for the GPU; OpenCL runs it on the device (PoCL here)
// and checks it, CUDA prints it and compiles it with NVRTC (running it needs a driver).
TEST(CliRun, GpuTargetsRunOnOpenCLAndCompileForCuda) {
  Result cl = run("run SFM-1 --scale-down --repeat 2 --target opencl --emit opencl");
  if (cl.code != 0 && cl.err.find("OpenCL") != std::string::npos && cl.out.empty())
    GTEST_SKIP() << cl.err;
  ASSERT_EQ(cl.code, 0) << cl.err;
  EXPECT_THAT(cl.out, testing::HasSubstr("__kernel"));
  EXPECT_THAT(cl.out, testing::HasSubstr("4 kernel(s), OpenCL device"));
  EXPECT_THAT(cl.out, testing::HasSubstr("correct"));
  Result ir =
      run("run GMM-1 --scale-down --repeat 1 --target opencl --emit ir --trace " +
          write_temp("gpu_gmm.py",
                     "b0 = sch.get_block(name=\"Z\")\nl1, l2, l3, l4 = "
                     "sch.get_loops(block=b0)\nsch.bind(loop=l2, thread_axis=\"blockIdx.x\")\n"
                     "sch.bind(loop=l3, thread_axis=\"threadIdx.x\")\n"));
  ASSERT_EQ(ir.code, 0) << ir.err;
  EXPECT_THAT(ir.out,
              testing::HasSubstr("# kernel GMM_kernel0: grid (32, 1, 1), block (32, 1, 1)"));
  Result cu = run("run GMM-1 --scale-down --target 'cuda -arch=sm_90' --emit cuda");
  EXPECT_THAT(cu.out, testing::HasSubstr("extern \"C\""));
  EXPECT_THAT(cu.out, testing::HasSubstr("__global__ void __launch_bounds__("));
  if (cu.code != 0) {
    EXPECT_EQ(count_lines(cu.err), 1) << cu.err;  // no NVRTC, or no driver
  }
}

}  // namespace

namespace {

// A GPU target: the kernels and their host side (AutoBind's program without a trace).
TEST(CliExport, GpuTargetsWriteKernelsAndTheirHostSide) {
  std::string out = testing::TempDir() + "/tyche_cli_export_gpu_" + std::to_string(getpid());
  std::filesystem::remove_all(out);
  Result cl = run("export SFM-1 --scale-down --target opencl --name sfm -o " + out);
  ASSERT_EQ(cl.code, 0) << cl.err;
  for (const char* f : {"/sfm.h", "/sfm.cl", "/sfm.c"})
    EXPECT_TRUE(std::filesystem::exists(out + f)) << f;
  EXPECT_THAT(take_file(out + "/sfm.h"),
              testing::HasSubstr("int sfm_run(struct sfm_program* program, cl_command_queue queue, "
                                 "cl_mem A, cl_mem softmax)"));
  Result cu = run("export GMM-1 --scale-down --target 'cuda -arch=sm_90' --name gmm -o " + out);
  ASSERT_EQ(cu.code, 0) << cu.err;
  EXPECT_THAT(take_file(out + "/gmm.cu"), testing::HasSubstr("gmm_kernel0<<<dim3("));
  expect_usage_error("export GMM-1 --target vulkan --name g -o " + out, "unknown kind 'vulkan'");
  expect_usage_error("export GMM-1 --target cuda --db " + out + " --name g -o " + out,
                     "has no measured GMM-1 for cuda");
  expect_usage_error("export GMM-1 --target opencl --name 9g -o " + out, "9g");
  std::filesystem::remove_all(out);
}

TEST(CliExport, WritesHeaderAndLibraryOrCSourceAndRefusesBadInputs) {
  std::string out = testing::TempDir() + "/tyche_cli_export_" + std::to_string(getpid());
  std::filesystem::remove_all(out);
  Result lib = run("export GMM-4 --scale-down --trace " + example_trace() +
                   " --name gmm --library kernels --cpu x86-64-v2 -o " + out);
  ASSERT_EQ(lib.code, 0) << lib.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/libkernels.a"));
  std::string header = take_file(out + "/gmm.h");
  EXPECT_THAT(header, testing::HasSubstr("int32_t gmm(const float* "));
  EXPECT_THAT(header, testing::HasSubstr("machine code for x86-64-v2"));
  EXPECT_THAT(header, testing::HasSubstr("gmm_tiled.py"));
  Result c = run("export SFM-1 --scale-down --trace " +
                 write_temp("sfm.py", "b = sch.get_block(name=\"row_exp\")\n") +
                 " --name softmax --target c --threads 1 -o " + out);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/softmax.c"));
  EXPECT_FALSE(std::filesystem::exists(out + "/tyche_rt1_runtime.c"))
      << "serial C needs no runtime";
  EXPECT_THAT(take_file(out + "/softmax.h"),
              testing::HasSubstr("serial (exported with --threads 1)"));
  std::string trace = " --scale-down --trace " + example_trace();
  expect_usage_error(
      "export GMM-4 --name gmm -o " + out,
      "export needs the schedule to export: --db DIR (its best record) or --trace FILE");
  expect_usage_error("export GMM-4" + trace + " --name my-gemm -o " + out,
                     "'my-gemm' is not a C identifier");
  expect_usage_error("export GMM-4" + trace + " --name int -o " + out,
                     "'int' is a C or C++ keyword");
  expect_usage_error("export GMM-4" + trace + " --name gmm --cpu pentium-9000 -o " + out,
                     "unknown CPU 'pentium-9000'");
  expect_usage_error("export GMM-4" + trace + " --name gmm --target c --cpu x86-64-v3 -o " + out,
                     "--cpu is for --target llvm");
  expect_usage_error("export GMM-4" + trace + " --name gmm --threads 4 -o " + out,
                     "--threads takes 1");
  std::string file = write_temp("not_a_dir", "x");
  expect_usage_error("export GMM-4" + trace + " --name gmm -o " + file + "/sub",
                     "cannot create the directory");
  // A file that is not a library is refused, and left as it was.
  std::string bad = write_temp("bad_lib", "not an archive");
  std::filesystem::create_directories(out + "/bad");
  std::filesystem::copy_file(bad, out + "/bad/libgmm.a");
  expect_usage_error("export GMM-4" + trace + " --name gmm -o " + out + "/bad",
                     "is not a static library");
  EXPECT_EQ(take_file(out + "/bad/libgmm.a"), "not an archive");
  EXPECT_FALSE(std::filesystem::exists(out + "/bad/gmm.h"));
  std::filesystem::remove_all(out);
  std::remove(file.c_str());
  std::remove(bad.c_str());
}

TEST(CliSpace, PrintsSpacesSamplesAndWritesJson) {
  std::string json = testing::TempDir() + "/tyche_space_" + std::to_string(getpid()) + ".json";
  // The CPU is named: with AVX2's 16 registers the default rules add designs (12, not TVM's 3).
  Result r = run("space GMM-4 --samples 20 --seed 3 --cpu x86-64-v4 --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("# design space 2\n"));
  EXPECT_THAT(r.out, testing::HasSubstr("sch.sample_perfect_tile(loop="));
  EXPECT_THAT(
      r.out, testing::HasSubstr(
                 "3 design spaces; 20 samples, 20 valid (100.0%), 20 of 20 correct (interpreter)"));
  std::string text = take_file(json);
  ASSERT_FALSE(text.empty()) << json;
  for (const char* key : {"\"workload\"", "\"spaces\": 3", "\"samples\": 20", "\"valid\": 20",
                          "\"correct\": 20", "\"invalid_reasons\": {}"})
    EXPECT_THAT(text, testing::HasSubstr(key));
  EXPECT_THAT(run("space GMM-4 --samples 20 --seed 3 --cpu x86-64-v3").out,
              testing::HasSubstr("12 design spaces; 20 samples, 20 valid"));
  // The same seed gives the same spaces; the GPU target gives its own.
  EXPECT_EQ(run("space GMM-4 --samples 0 --seed 3").out,
            run("space GMM-4 --samples 0 --seed 3").out);
  Result gpu = run("space SFM-1 --samples 10 --target cuda");
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  EXPECT_THAT(gpu.out, testing::HasSubstr("threadIdx.x"));
  // OpenCL shares the GPU design space: bound, valid for its limits, correct in the interpreter.
  Result cl = run("space SFM-1 --samples 10 --target 'opencl -max-threads-per-block=256'");
  ASSERT_EQ(cl.code, 0) << cl.err;
  EXPECT_THAT(cl.out, testing::HasSubstr("threadIdx.x"));
  EXPECT_THAT(cl.out, testing::HasSubstr("on opencl -max-threads-per-block=256"));
  EXPECT_THAT(cl.out, testing::HasSubstr("10 of 10 correct (interpreter)"));
  // OpenCL runs the samples on the device (PoCL here); CUDA compiles them at full size with NVRTC.
  Result on_device = run("space SFM-1 --samples 3 --target opencl --compile");
  if (on_device.err.find("OpenCL: ") == std::string::npos) {
    ASSERT_EQ(on_device.code, 0) << on_device.err;
    EXPECT_THAT(on_device.out, testing::HasSubstr("3 of 3 correct (OpenCL, scaled down)"));
  }
  std::string cuda_json =
      testing::TempDir() + "/tyche_space_cuda_" + std::to_string(getpid()) + ".json";
  Result nvrtc =
      run("space SFM-4 --samples 4 --target 'cuda -arch=sm_90' --compile --json " + cuda_json);
  if (nvrtc.err.find("NVRTC") == std::string::npos) {
    ASSERT_EQ(nvrtc.code, 0) << nvrtc.err;
    EXPECT_THAT(nvrtc.out, testing::HasSubstr("4 of 4 compiled (NVRTC, sm_90, within its limits)"));
    std::string text = take_file(cuda_json);
    EXPECT_THAT(text, testing::HasSubstr("\"compiled\": 4"));
    EXPECT_THAT(text, testing::HasSubstr("\"intrinsics\": {}"));
  }
  Result compiled =
      run("space 'C[i,j] += A[i,k] * B[k,j]' --extents i=50,j=49,k=7 --samples 3 --compile");
  ASSERT_EQ(compiled.code, 0) << compiled.err;
  EXPECT_THAT(compiled.out, testing::HasSubstr("3 of 3 correct (compiled)"));
}

TEST(CliSpace, BadInputsExitTwoWithOneLine) {
  expect_usage_error("space NOPE-1", "NOPE-1");
  expect_usage_error("space GMM-1 --target vulkan", "unknown kind 'vulkan'");
  expect_usage_error("space GMM-1 --target 'opencl -arch=sm_90'",
                     "unknown option '-arch' for opencl");
  expect_usage_error("space GMM-1 --target 'llvm -num-cores x'", "positive integer");
  expect_usage_error("space GMM-1 --samples -3", "--samples");
  expect_usage_error("space GMM-1 --json /nonexistent/dir/out.json", "cannot write");
  expect_usage_error("space", "workload");
}

}  // namespace

// Element types: a u8 x s8 -> s32 formula is checked exactly by the interpreter and the compiled
// code, tuned with its types kept in the records (a resumed tune and `run --db` rebuild it), and a
// typed preset runs; bad types are one-line errors.
TEST(CliTypes, TypedFormulasAndPresetsCheckRunAndTune) {
  const std::string f =
      "'C[i,j] += A[i,k] * B[k,j]' --extents i=16,j=32,k=64 --dtypes A=uint8,B=int8,C=int32";
  Result c = run("check " + f);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_THAT(c.out, testing::HasSubstr("max abs error 0"));
  Result r = run("run " + f + " --repeat 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("correct (max abs error 0)"));
  std::string db = testing::TempDir() + "/tyche_cli_types_" + std::to_string(getpid());
  std::filesystem::remove_all(db);
  Result t = run("tune " + f +
                 " --trials 8 --batch 8 --confirm 0 --no-warm-start --population 64 --db " + db);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_THAT(t.out, testing::HasSubstr("8 trials (0 failed)"));
  std::ifstream records(db + "/records.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(records, line));
  EXPECT_THAT(line, testing::HasSubstr("\"dtypes\":\"C=int32,A=uint8,B=int8\""));
  Result again = run("tune " + f + " --trials 4 --batch 4 --confirm 0 --db " + db);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, testing::HasSubstr("resumed from 8 records"));
  Result best = run("run " + f + " --repeat 1 --db " + db);
  EXPECT_EQ(best.code, 0) << best.err;
  EXPECT_THAT(best.out, testing::HasSubstr("correct (max abs error 0)"));
  std::filesystem::remove_all(db);
  Result preset = run("check C2D-3-U8S8 --scale-down");
  EXPECT_EQ(preset.code, 0) << preset.err;
  Result list = run("workloads");
  EXPECT_THAT(list.out, testing::HasSubstr("DENSE-BERT-BF16"));
  expect_usage_error("check " + f + ",A=int8", "'A' is given a type twice");
  expect_usage_error("check 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4,k=4 --dtypes C=int32",
                     "never converts a float to an integer");
  expect_usage_error("run GMM-4 --dtypes A=int8", "--dtypes is only for index-notation formulas");
  expect_usage_error("check SFM-1-BF16", "SFM has no BF16 variant");
}

// Tuning for a CPU without VNNI (AVX2 only, which every host here runs) says which intrinsics it
// lacks and what it uses instead, and still tunes, exactly.
TEST(CliTypes, ACpuWithoutTheIntrinsicsSaysSoAndTunes) {
  Result t =
      run("tune GMM-1-U8S8 --cpu x86-64-v3 --trials 4 --batch 4 --confirm 0 --no-warm-start "
          "--population 64");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_THAT(t.out, testing::HasSubstr("GMM-1-U8S8: note: the CPU (x86-64-v3) lacks "
                                        "x86_amx_tile_16x16x64_u8s8 (amx-tile+amx-int8), "
                                        "x86_avx512_vnni_dot_16x4_u8s8 (avx512vnni)"));
  EXPECT_THAT(t.out, testing::HasSubstr("using x86_avx2_dot_8x4_u8s8 instead"));
  EXPECT_THAT(t.out, testing::HasSubstr("4 trials (0 failed)"));
  Result f32 =
      run("tune GMM-1 --cpu x86-64-v3 --trials 2 --batch 2 --confirm 0 --no-warm-start "
          "--population 64");
  EXPECT_THAT(f32.out, testing::Not(testing::HasSubstr("lacks")));
}

// ---- hardening: flags, threads, inputs, outputs, read-only and damaged databases ----

// Each numeric flag refused in one line a person reads, not CLI11's 309-digit range.
TEST(CliFlags, NumbersOutOfRangeAreRefusedInWords) {
  const std::pair<const char*, const char*> cases[] = {
      {"tune GMM-1 --trials 0", "--trials must be at least 1 (got 0)"},
      {"tune GMM-1 --batch 0", "--batch must be at least 1 (got 0)"},
      {"tune GMM-1 --population 1", "--population must be at least 2 (got 1)"},
      {"tune GMM-1 --generations 0", "--generations must be at least 1 (got 0)"},
      {"tune GMM-1 --timeout 0", "--timeout must be more than 0 seconds (got 0)"},
      {"tune GMM-1 --timeout 1e300", "--timeout must be at most 86400 seconds"},
      {"tune GMM-1 --timeout nan", "--timeout takes a number of seconds (got 'nan')"},
      {"tune GMM-1 --threads 0", "--threads must be at least 1 (got 0)"},
      {"tune GMM-1 --confirm -1", "--confirm must be at least 0 (got -1)"},
      {"tune GMM-1 --trials 1.5", "--trials takes a whole number (got '1.5')"},
      {"tune GMM-1 --trials 99999999999", "--trials must be at most 2147483647 (got 99999999999)"},
      {"run GMM-1 --threads 0", "--threads must be at least 1 (got 0)"},
      {"run GMM-1 --threads -1", "--threads must be at least 1 (got -1)"},
      {"run GMM-1 --repeat 0", "--repeat must be at least 1 (got 0)"},
      {"export GMM-1 --name g -o /tmp/x --threads 0", "--threads must be at least 1 (got 0)"},
      {"sample-measure GMM-1 --records r.jsonl --samples 0",
       "--samples must be at least 1 (got 0)"},
      {"sample-measure GMM-1 --records r.jsonl --batch 0", "--batch must be at least 1 (got 0)"},
      {"sample-measure GMM-1 --records r.jsonl --timeout -2",
       "--timeout must be more than 0 seconds (got -2)"},
      {"space GMM-1 --samples -1", "--samples must be at least 0 (got -1)"},
      {"model eval --model m.json --records r.jsonl --top-k 0",
       "--top-k must be at least 1 (got 0)"},
      {"model train --records r.jsonl -o m.json --threads 0",
       "--threads must be at least 1 (got 0)"},
      {"tune-model m.onnx --db d --trials 0", "--trials must be at least 1 (got 0)"},
      {"tune-model m.onnx --db d --trials 8 --threads 0", "--threads must be at least 1 (got 0)"},
      {"run-model m.onnx --repeat 0", "--repeat must be at least 1 (got 0)"},
      {"run-model m.onnx --threads -1", "--threads must be at least 1 (got -1)"},
      {"export-model m.onnx --name m -o out --threads 0", "--threads must be at least 1 (got 0)"},
  };
  for (const auto& [args, message] : cases) {
    Result r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_THAT(r.err, testing::StartsWith(std::string("tyche: error: ") + message)) << args;
    EXPECT_EQ(count_lines(r.err), 1) << args << ": " << r.err;
    EXPECT_THAT(r.err, testing::Not(testing::HasSubstr("0000000"))) << args;
  }
}

// --threads above 4 x the CPUs is refused before a thread starts (2147483647 used to spawn
// threads for 15 s until EAGAIN); so is TYCHE_NUM_THREADS, which sizes the pool.
TEST(CliFlags, ThreadsAreCappedAtFourTimesTheCpus) {
  int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
  int cap = std::max(4, 4 * cpus);
  std::string said =
      "is more than 4 x the " + std::to_string(cap / 4) + " CPUs (" + std::to_string(cap) + ")";
  for (const char* args :
       {"run GMM-1 --threads 2147483647", "tune GMM-1 --threads 2147483647",
        "run-model m.onnx --threads 2147483647",
        "model train --records r.jsonl -o m.json --threads 99999999999999999999"}) {
    auto start = std::chrono::steady_clock::now();
    expect_usage_error(args, said);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << args;
  }
  expect_usage_error("run GMM-1 --threads " + std::to_string(cap + 1),
                     "--threads " + std::to_string(cap + 1) + " " + said);
  Result r = run("run GMM-1 --scale-down --repeat 1", "TYCHE_NUM_THREADS=2147483647");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "tyche: error: TYCHE_NUM_THREADS=2147483647 " + said + "\n");
  r = run("cpu", "TYCHE_NUM_THREADS=lots");
  EXPECT_EQ(r.err, "tyche: error: TYCHE_NUM_THREADS takes a whole number (got 'lots')\n");
  r = run("cpu", "TYCHE_NUM_THREADS=" + std::to_string(cap));  // the cap itself is allowed
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("host threads: " + std::to_string(cap)));
}

// A tiny ONNX model, its protobuf written by hand (this test links no ONNX library): X[1,4]
// float -> Y = Relu(X), Z = Sigmoid(X).
std::string pb_varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>((v & 0x7f) | 0x80);
  return s + static_cast<char>(v);
}
std::string pb_int(int field, uint64_t v) {
  return pb_varint(static_cast<uint64_t>(field) << 3) + pb_varint(v);
}
std::string pb_bytes(int field, const std::string& s) {
  return pb_varint(static_cast<uint64_t>(field) << 3 | 2) + pb_varint(s.size()) + s;
}

std::string two_output_model() {
  auto value_info = [](const std::string& name) {
    std::string shape = pb_bytes(1, pb_int(1, 1)) + pb_bytes(1, pb_int(1, 4));
    std::string tensor = pb_int(1, 1 /* FLOAT */) + pb_bytes(2, shape);
    return pb_bytes(1, name) + pb_bytes(2, pb_bytes(1, tensor));
  };
  auto node = [](const std::string& op, const std::string& in, const std::string& out) {
    return pb_bytes(1, in) + pb_bytes(2, out) + pb_bytes(3, op + "_" + out) + pb_bytes(4, op);
  };
  std::string graph = pb_bytes(1, node("Relu", "X", "Y")) + pb_bytes(1, node("Sigmoid", "X", "Z")) +
                      pb_bytes(2, "two") + pb_bytes(11, value_info("X")) +
                      pb_bytes(12, pb_bytes(1, "Y")) + pb_bytes(12, pb_bytes(1, "Z"));
  std::string model =
      pb_int(1, 8) + pb_bytes(7, graph) + pb_bytes(8, pb_bytes(1, "") + pb_int(2, 17));
  std::string path =
      testing::TempDir() + "/tyche_cli_" + std::to_string(getpid()) + "_two_outputs.onnx";
  std::ofstream(path, std::ios::binary) << model;  // holds NUL bytes: not write_temp's fputs
  return path;
}

// A .npy file of a float32 [1, 4] array.
std::string write_npy(const std::string& name) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // the data starts 64-byte aligned
  header += '\n';
  std::string text =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  float values[4] = {-1, 0, 1, 2};
  text.append(reinterpret_cast<const char*>(values), sizeof values);
  std::string path = testing::TempDir() + "/tyche_cli_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CliRunModel, AnInputNamedTwiceIsRefused) {
  std::string model = two_output_model(), x = write_npy("x.npy");
  Result ok = run("run-model " + model + " --repeat 1 --input X=" + x);
  ASSERT_EQ(ok.code, 0) << ok.err;
  expect_usage_error("run-model " + model + " --input X=" + x + " --input X=" + x,
                     "--input names 'X' twice");
  std::filesystem::remove(model);
  std::filesystem::remove(x);
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// --save-outputs writes every output or none: into a temporary folder beside DIR first.
TEST(CliRunModel, SaveOutputsWritesAllOrNothing) {
  std::string model = two_output_model();
  std::string parent = testing::TempDir() + "/tyche_cli_save_" + std::to_string(getpid());
  std::filesystem::remove_all(parent);
  std::filesystem::create_directories(parent);
  // A new DIR: both files, no temporary folder left.
  Result r = run("run-model " + model + " --repeat 1 --save-outputs " + parent + "/new");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(listing(parent + "/new"), (std::vector<std::string>{"Y.npy", "Z.npy"}));
  EXPECT_EQ(listing(parent), std::vector<std::string>{"new"});
  // An existing DIR: the files are replaced, others kept.
  std::ofstream(parent + "/new/other.txt") << "kept";
  std::ofstream(parent + "/new/Y.npy") << "old";
  r = run("run-model " + model + " --repeat 1 --save-outputs " + parent + "/new");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(listing(parent + "/new"), (std::vector<std::string>{"Y.npy", "Z.npy", "other.txt"}));
  EXPECT_GT(std::filesystem::file_size(parent + "/new/Y.npy"), 3u);
  // One output that cannot be written (a directory is in its place): nothing new in DIR.
  std::string dir = parent + "/blocked";
  std::filesystem::create_directories(dir + "/Z.npy/inside");
  r = run("run-model " + model + " --repeat 1 --save-outputs " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, testing::HasSubstr("Z.npy' is a directory; nothing was saved"));
  EXPECT_EQ(listing(dir), std::vector<std::string>{"Z.npy"});
  EXPECT_EQ(listing(parent),
            (std::vector<std::string>{"blocked", "new"}));  // no temporary folder left
  // DIR is a file: refused before the model runs.
  std::ofstream(parent + "/file") << "x";
  expect_usage_error("run-model " + model + " --save-outputs " + parent + "/file",
                     "--save-outputs '" + parent + "/file' is not a directory");
  std::filesystem::remove_all(parent);
  std::filesystem::remove(model);
}

// Every file of `dir` with its size and modification time.
std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> snapshot(
    const std::string& dir) {
  std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out[e.path().filename().string()] = {std::filesystem::file_size(e.path()),
                                         std::filesystem::last_write_time(e.path())};
  return out;
}

// The value of "key":{...} (an object, strings respected) in a JSON line: [begin, end).
std::pair<size_t, size_t> json_object_at(const std::string& line, const std::string& key) {
  size_t begin = line.find("\"" + key + "\":{");
  if (begin == std::string::npos) return {std::string::npos, std::string::npos};
  begin += key.size() + 3;
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < line.size(); ++i) {
    char c = line[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return {begin, i + 1};
    }
  }
  return {std::string::npos, std::string::npos};
}

// One tuned database serves both: commands that only read it write nothing, and a best record
// whose trace is broken gives way to the next best with one warning.
TEST(CliDatabase, ReadersWriteNothingAndSkipARecordThatDoesNotReplay) {
  std::string db = testing::TempDir() + "/tyche_cli_readonly_" + std::to_string(getpid());
  std::filesystem::remove_all(db);
  Result t = run("tune GMM-1 --trials 8 --batch 8 --confirm 0 --strategy replay-trace --db " + db);
  ASSERT_EQ(t.code, 0) << t.err;
  std::string model = two_output_model(), out = db + "_export";
  auto before = snapshot(db);
  for (const std::string& args :
       {"run GMM-1 --repeat 1 --db " + db, "show GMM-1 --db " + db,
        "export GMM-1 --name g -o " + out + " --db " + db,
        "run-model " + model + " --repeat 1 --db " + db,
        "export-model " + model + " --name m -o " + out + " --db " + db}) {
    Result r = run(args);
    EXPECT_EQ(r.code, 0) << args << ": " << r.err;
  }
  EXPECT_EQ(snapshot(db), before) << "a reader created or changed a file of the database";
  // Where writing fails for root too (an immutable directory), the readers still read.
  if (getuid() == 0 &&
      std::system(("chattr +i " + db + "/* " + db + " 2>/dev/null").c_str()) == 0) {
    Result r = run("run GMM-1 --repeat 1 --db " + db);
    EXPECT_EQ(r.code, 0) << r.err;
    r = run("run-model " + model + " --repeat 1 --db " + db);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(std::system(("chattr -i " + db + " " + db + "/* 2>/dev/null").c_str()), -1);
  }
  // A hand-edited record: valid JSON, its trace broken, and the fastest of all.
  std::string records = db + "/records.jsonl";
  std::string first;
  {
    std::ifstream in(records);
    std::getline(in, first);
  }
  auto [begin, end] = json_object_at(first, "trace");
  ASSERT_NE(begin, std::string::npos) << first;
  std::string broken =
      first.substr(0, begin) +
      R"({"format":"tyche.trace","version":1,"instructions":[{"kind":"Frobnicate"}]})" +
      first.substr(end);
  size_t seconds = broken.find("\"seconds\":[");
  ASSERT_NE(seconds, std::string::npos);
  broken.replace(seconds, broken.find(']', seconds) + 1 - seconds, "\"seconds\":[1e-9]");
  size_t program = broken.find("\"program\":\"");
  if (program != std::string::npos) broken.replace(program + 11, 16, "00000000000000ff");
  int lines = 0;
  for (std::ifstream in(records); std::getline(in, first);) ++lines;
  std::ofstream(records, std::ios::app) << broken << "\n";
  for (const std::string& args :
       {"run GMM-1 --repeat 1 --db " + db, "export GMM-1 --name g -o " + out + " --db " + db}) {
    Result r = run(args);
    EXPECT_EQ(r.code, 0) << args << ": " << r.err;
    EXPECT_THAT(
        r.err,
        testing::HasSubstr(
            "warning: the best record of GMM-1 (" + records + ":" + std::to_string(lines + 1) +
            ") does not replay (trace JSON: instruction 0: unknown instruction 'Frobnicate'); "
            "using the next best\n"))
        << args;
    EXPECT_EQ(r.err.find("warning:"), r.err.rfind("warning:")) << "one warning: " << r.err;
  }
  std::filesystem::remove_all(db);
  std::filesystem::remove_all(out);
  std::filesystem::remove(model);
}
