// Weights stored in the layout their kernel walks (RewriteLayout), laid out once at load: the
// postprocessor's rewrite, its split into a kernel and a preproc, and the three places that run
// such a program (the tuner's isolated worker, the graph executor, an exported model) all
// computing what the unrewritten program does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../../common/onnx_builder.h"
#include "executor/executor.h"
#include "executor/export_model.h"
#include "graph/layout.h"
#include "graph/onnx_import.h"
#include "graph/tasks.h"
#include "ir/annotation_keys.h"
#include "ir/layout_free.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "lower/layout_rewrite.h"
#include "runtime/compare.h"
#include "tune/measure/builder.h"
#include "tune/measure/measure_batch.h"
#include "tune/model/model_tasks.h"
#include "tune/postproc/candidate.h"
#include "tune/space/schedule_rule.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string worker_path() {
  return std::string(TYCHE_BINARY_DIR) + "/tools/tyche-worker";
}

int64_t numel(const ir::Buffer& b) {
  int64_t n = 1;
  for (int64_t d : ir::const_shape(b)) n *= d;
  return n;
}

// conv 3x3 (16 -> 32 channels, pads 1) + bias + relu on a 10 x 10 image.
struct ConvModel {
  graph::Graph graph;
  graph::TaskTable table;
  std::vector<TuneTask> tasks;
  size_t conv = 0;  // the task with the convolution

  ConvModel() {
    graph::testing::OnnxBuilder b;
    b.input("x", {1, 16, 10, 10}).weight("w", {32, 16, 3, 3}).weight("b", {32});
    auto& c = b.node("Conv", {"x", "w", "b"}, {"c"});
    graph::testing::OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.node("Relu", {"c"}, {"y"});
    b.output("y");
    graph = graph::import_onnx_bytes(b.bytes(), "m.onnx", ".");
    graph::convert_layout(graph, graph::Layout::kNHWC);  // as every model command does
    table = graph::extract_tasks(graph);
    tasks = model_tune_tasks(table, graph);
    while (conv < tasks.size() && tasks[conv].workload.name.find("conv") == std::string::npos)
      ++conv;
  }
  std::vector<ir::PrimFunc> rewritten_programs() const;
  static executor::ExecutorOptions executor_options() {
    executor::ExecutorOptions options;
    options.compile.cpu = "x86-64-v3";
    return options;
  }
  static runtime::NDArray input() {
    runtime::NDArray x({1, 16, 10, 10}, DataType::Float(32));
    x.fill_uniform(7);
    return x;
  }
};

target::Target avx2_target() {
  target::Target target;
  target.num_cores = 2;
  target.cpu = "x86-64-v3";  // every host of this project runs AVX2
  return target;
}

// Candidates of the default design spaces, finished by the default postprocessors, whose weight
// RewriteLayout re-laid out.
std::vector<schedule::Schedule> rewritten_candidates(const workloads::Workload& w,
                                                     const target::Target& target, size_t want) {
  TuneContext ctx{w.func, target};
  auto space = post_order_apply(default_rules(target));
  space->initialize(ctx);
  auto postprocs = default_postprocs(ctx);
  std::vector<schedule::Schedule> out;
  for (schedule::Schedule& design : space->generate(ctx, 7)) {
    for (int64_t seed = 1; seed <= 6 && out.size() < want; ++seed) {
      auto c = make_candidate(ctx, *design.trace(), {.fresh_decisions = true}, postprocs, seed);
      auto* sch = std::get_if<schedule::Schedule>(&c);
      if (sch &&
          ir::to_string(sch->func()).find(ir::ann::kLayoutRewritePreproc) != std::string::npos)
        out.push_back(std::move(*sch));
    }
  }
  return out;
}

// The model's programs with the convolution's a rewritten candidate (the rest default); empty
// when no candidate rewrote its weight.
std::vector<ir::PrimFunc> ConvModel::rewritten_programs() const {
  if (conv >= tasks.size()) return {};
  std::vector<schedule::Schedule> candidates =
      rewritten_candidates(tasks[conv].workload, avx2_target(), 1);
  if (candidates.empty()) return {};
  std::vector<ir::PrimFunc> programs(table.tasks.size());
  programs[conv] = candidates[0].func();
  return programs;
}

TEST(RewriteLayout, ModelTasksNameTheirWeightsAsLayoutFree) {
  ConvModel m;
  ASSERT_LT(m.conv, m.tasks.size());
  const workloads::Workload& w = m.tasks[m.conv].workload;
  EXPECT_EQ(ir::layout_free_params(w.func), w.constant_params);
  EXPECT_EQ(w.constant_params.size(), 2u);  // the weight and the bias
}

TEST(RewriteLayout, AConvolutionsWeightIsStoredInTheOrderItsTileWalksItAndComputesTheSame) {
  ConvModel m;
  ASSERT_LT(m.conv, m.tasks.size());
  const workloads::Workload& w = m.tasks[m.conv].workload;
  std::vector<schedule::Schedule> candidates = rewritten_candidates(w, avx2_target(), 4);
  ASSERT_FALSE(candidates.empty()) << "no design rewrote the weight's layout";

  for (const schedule::Schedule& sch : candidates) {
    SCOPED_TRACE(sch.trace()->to_text());
    EXPECT_THAT(sch.trace()->to_text(), HasSubstr("transform_layout"));
    lower::SplitProgram split = lower::split_layout_rewrites(sch.func());
    ASSERT_EQ(split.rewrites.size(), 1u);
    const size_t param = split.rewrites[0].param;
    // The weight (OIHW imported, stored (KH, KW, CI, CO)), not the bias, is the one re-laid out.
    ASSERT_EQ(ir::const_shape(w.func->params[param]), (std::vector<int64_t>{3, 3, 16, 32}));
    const ir::Buffer& packed = split.main->params[param];
    EXPECT_NE(ir::const_shape(packed), ir::const_shape(w.func->params[param]));
    EXPECT_EQ(numel(packed), numel(w.func->params[param]));
    EXPECT_THAT(ir::to_string(split.main), Not(HasSubstr(ir::ann::kLayoutRewritePreproc)));
    EXPECT_EQ(split.rewrites[0].preproc->params.size(), 2u);

    // Built in-process: the preproc on the weight, then the kernel, against the reference.
    BuildResult built =
        Builder(BuilderOptions{.max_workers = 1, .cpu = "x86-64-v3"}).build({sch.func()})[0];
    ASSERT_TRUE(built.ok()) << built.error;
    ASSERT_EQ(built.preprocs.size(), 1u);
    std::vector<runtime::NDArray> inputs = workloads::make_inputs(w.func, 42);
    std::vector<runtime::NDArray> expected = w.reference(inputs);
    std::vector<runtime::NDArray> args = inputs;
    runtime::NDArray weight(args[param].shape(), args[param].dtype());
    void* pack_args[] = {args[param].data(), weight.data()};
    built.preprocs[0].kernel->run(pack_args);
    args[param] = weight;
    std::vector<runtime::NDArray> outs;
    for (const runtime::NDArray& e : expected) outs.emplace_back(e.shape(), e.dtype());
    std::vector<void*> ptrs;
    for (auto& a : args) ptrs.push_back(a.data());
    for (auto& o : outs) ptrs.push_back(o.data());
    built.kernel->run(ptrs.data());
    auto cmp = runtime::compare_outputs(outs, expected);
    EXPECT_TRUE(cmp.ok) << cmp.message;
    // Without its preproc the kernel reads the weight in the wrong order: the rewrite matters.
    ptrs[param] = inputs[param].data();
    built.kernel->run(ptrs.data());
    EXPECT_FALSE(runtime::compare_outputs(outs, expected).ok);
  }
}

TEST(RewriteLayout, TheIsolatedWorkerRunsThePreprocBeforeCheckingAndTiming) {
  ConvModel m;
  ASSERT_LT(m.conv, m.tasks.size());
  const workloads::Workload& w = m.tasks[m.conv].workload;
  target::Target target = avx2_target();
  std::vector<schedule::Schedule> candidates = rewritten_candidates(w, target, 1);
  ASSERT_FALSE(candidates.empty());
  Measurer measurer(target, RunnerOptions{.worker_path = worker_path(), .timeout_s = 60});
  MeasureTask task{
      RecordWorkload{w.name, "", ir::structural_hash(w.func), w.shape, w.flop, w.dtypes},
      record_target(target), w.reference(workloads::make_inputs(w.func, 42)), w.constant_params};
  std::vector<Trial> trials{Trial::of(*candidates[0].trace(), candidates[0].func(), false)};
  measurer.measure_batch(trials, task, [](const std::vector<TuningRecord>&) {});
  EXPECT_TRUE(trials[0].ok()) << trials[0].error;
}

TEST(RewriteLayout, TheExecutorLaysTheWeightsOutOnceAndMatchesTheDefaultSchedule) {
  ConvModel m;
  std::vector<ir::PrimFunc> programs = m.rewritten_programs();
  ASSERT_FALSE(programs.empty());
  executor::ExecutorOptions options = ConvModel::executor_options();
  executor::Executor tuned(m.graph, m.table, programs, options);
  executor::Executor plain(m.graph, m.table, {}, options);
  runtime::NDArray x = ConvModel::input();
  std::vector<runtime::NDArray> a = tuned.run({x}), b = plain.run({x});
  auto cmp = runtime::compare_outputs(a, b);
  EXPECT_TRUE(cmp.ok) << cmp.message;
  // A second run reads the same laid-out weights.
  auto again = runtime::compare_outputs(tuned.run({x}), b);
  EXPECT_TRUE(again.ok) << again.message;
}

TEST(RewriteLayout, AnExportedModelStoresTheWeightsLaidOut) {
  ConvModel m;
  std::vector<ir::PrimFunc> programs = m.rewritten_programs();
  ASSERT_FALSE(programs.empty());
  executor::ExecutorOptions options = ConvModel::executor_options();
  runtime::NDArray x = ConvModel::input();
  std::vector<runtime::NDArray> expected =
      executor::Executor(m.graph, m.table, {}, options).run({x});

  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("tyche_layout_export_{}", ::getpid());
  std::filesystem::remove_all(dir);
  executor::export_model(m.graph, m.table, programs, dir.string(),
                         {.name = "net",
                          .cpu = "x86-64-v3",
                          .parallel = true,
                          .description = "a layout test",
                          .max_stack_bytes = 64 * 1024});
  std::ofstream(dir / "in.bin", std::ios::binary)
      .write(static_cast<const char*>(x.data()), static_cast<std::streamsize>(x.nbytes()));
  std::ofstream(dir / "driver.c") << R"(#include <stdio.h>
#include <stdlib.h>
#include "net.h"
int main(int argc, char** argv) {
  (void)argc;
  static float in[net_INPUT0_ELEMENTS], out[net_OUTPUT0_ELEMENTS];
  char path[4096];
  snprintf(path, sizeof path, "%s/in.bin", argv[1]);
  FILE* f = fopen(path, "rb");
  if (!f || fread(in, 1, sizeof in, f) != sizeof in) return 3;
  fclose(f);
  int status = net(in, out);
  if (status != TYCHE_OK) return 4;
  snprintf(path, sizeof path, "%s/out.bin", argv[1]);
  f = fopen(path, "wb");
  if (!f || fwrite(out, 1, sizeof out, f) != sizeof out) return 5;
  return fclose(f) != 0;
}
)";
  std::string exe = (dir / "driver").string();
  ASSERT_EQ(std::system(
                fmt::format("cc -std=c11 -O1 -I {0} {0}/driver.c -L {0} -lnet -lm -lpthread -o {1}",
                            dir.string(), exe)
                    .c_str()),
            0);
  ASSERT_EQ(std::system(fmt::format("{} {}", exe, dir.string()).c_str()), 0);
  std::ifstream in(dir / "out.bin", std::ios::binary);
  runtime::NDArray got(expected[0].shape(), expected[0].dtype());
  in.read(static_cast<char*>(got.data()), static_cast<std::streamsize>(got.nbytes()));
  ASSERT_TRUE(in.good());
  runtime::Comparison c = runtime::compare(got, expected[0]);
  EXPECT_TRUE(c.ok) << c.message;
  std::filesystem::remove_all(dir);
}

// A quantized convolution tuned around a dot intrinsic: its weights' packing is the layout rewrite,
// split off whole, and the postprocessor adds no second one (which would leave the packing to run
// at every call).
TEST(RewriteLayout, AnIntrinsicsPackingIsTheOneRewrite) {
  workloads::Workload w = workloads::get_preset("C2D-3-U8S8");
  ASSERT_EQ(ir::layout_free_params(w.func), std::vector<size_t>{1});
  target::Target target =
      target::Target::parse("llvm -num-cores 2 -mcpu icelake-server");  // AVX512-VNNI
  std::vector<schedule::Schedule> candidates = rewritten_candidates(w, target, 3);
  ASSERT_FALSE(candidates.empty());
  for (const schedule::Schedule& c : candidates) {
    std::string trace = c.trace()->to_text();
    size_t annotations = 0;
    for (size_t at = 0; (at = trace.find(ir::ann::kLayoutRewritePreproc, at)) != std::string::npos;
         ++at)
      ++annotations;
    EXPECT_EQ(annotations, 1u) << trace;
    lower::SplitProgram split = lower::split_layout_rewrites(c.func());
    ASSERT_EQ(split.rewrites.size(), 1u) << trace;
    // The main program reads the packed weights and copies nothing of them.
    EXPECT_THAT(ir::to_string(split.main), Not(HasSubstr("block(\"W_global")));
    EXPECT_THAT(ir::to_string(split.rewrites[0].preproc), HasSubstr("block(\"W_global\")"));
  }
}

TEST(RewriteLayout, ProgramsWithoutLayoutFreeParamsAreLeftAlone) {
  // The same convolution as a workload of its own (no weights): no stage, nothing to split.
  ConvModel m;
  ASSERT_LT(m.conv, m.tasks.size());
  workloads::Workload w = m.tasks[m.conv].workload;
  w.func = ir::with_layout_free_params(w.func, {});
  EXPECT_TRUE(ir::layout_free_params(w.func).empty());
  EXPECT_TRUE(rewritten_candidates(w, avx2_target(), 1).empty());
}

}  // namespace
}  // namespace tyche::tune
