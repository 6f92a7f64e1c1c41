// The model pipeline (model/pipeline.h): what the CLI and Python both call. Its refusals, the
// tasks it extracts for each option, default schedules without a database, and a compiled model
// run. That the CLI and Python agree on tasks and records is python/tests/test_model_pipeline.py.
#include "model/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "../common/onnx_builder.h"
#include "support/error.h"

namespace tyche::model {
namespace {

using graph::testing::OnnxBuilder;
using ::testing::HasSubstr;

// x[batch, 12] -> MatMul -> Add -> Relu -> MatMul -> Softmax, batch symbolic.
ModelSource mlp() {
  OnnxBuilder b;
  b.input("x", {1, 12}, onnx::TensorProto::FLOAT, {"batch", ""})
      .weight("w1", {12, 16})
      .weight("b1", {16})
      .weight("w2", {16, 4});
  b.node("MatMul", {"x", "w1"}, {"h"});
  b.node("Add", {"h", "b1"}, {"hb"});
  b.node("Relu", {"hb"}, {"r"});
  b.node("MatMul", {"r", "w2"}, {"logits"});
  OnnxBuilder::attr(b.node("Softmax", {"logits"}, {"prob"}), "axis", int64_t{-1});
  b.output("prob");
  return ModelSource::in_memory(b.bytes(), "mlp", "");
}

LoadOptions batch(int64_t n, const std::string& dtype = "float32") {
  LoadOptions o;
  o.input_shapes["x"] = {n, 12};
  o.dtype = dtype;
  return o;
}

std::vector<uint64_t> hashes(const LoadedModel& m) {
  std::vector<uint64_t> out;
  for (const graph::Task& t : m.table.tasks) out.push_back(t.hash);
  return out;
}

template <typename F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(ModelPipeline, TasksDependOnTheBoundShapeAndTheDtypeAndOnNothingElse) {
  LoadedModel a = load_model(mlp(), batch(3)), again = load_model(mlp(), batch(3));
  ASSERT_GE(a.table.tasks.size(), 2u);
  EXPECT_EQ(hashes(a), hashes(again));
  EXPECT_EQ(a.what, "mlp");
  EXPECT_NE(hashes(a), hashes(load_model(mlp(), batch(5))));
  EXPECT_NE(hashes(a), hashes(load_model(mlp(), batch(3, "bfloat16"))));
}

TEST(ModelPipeline, RefusesBadShapesDtypesAndTuningSetups) {
  EXPECT_THAT(input_error([] { load_model(mlp(), batch(-2)); }),
              HasSubstr("the shape of input 'x': -2 is not a dimension"));
  EXPECT_THAT(input_error([] { load_model(mlp(), batch(2, "float13")); }), HasSubstr("float13"));
  LoadedModel m = load_model(mlp(), batch(2));
  TuneSetup ok;
  ok.trials = 4;
  ok.db = "unused";
  TuneSetup s = ok;
  s.trials = 0;
  EXPECT_THAT(input_error([&] { prepare_tuning(m, s); }), HasSubstr("trials must be positive"));
  s = ok;
  s.threads = -1;
  EXPECT_THAT(input_error([&] { prepare_tuning(m, s); }), HasSubstr("threads must be positive"));
  s = ok;
  s.db = "";
  EXPECT_THAT(input_error([&] { prepare_tuning(m, s); }), HasSubstr("database directory"));
  s = ok;
  s.timing = "tepid";
  EXPECT_THAT(input_error([&] { prepare_tuning(m, s); }), HasSubstr("unknown timing 'tepid'"));
  s = ok;
  s.cpu = "no-such-cpu";
  EXPECT_THAT(input_error([&] { prepare_tuning(m, s); }), HasSubstr("no-such-cpu"));
}

TEST(ModelPipeline, PreparesOneWeightedTuningTaskPerModelTask) {
  LoadedModel m = load_model(mlp(), batch(2));
  TuneSetup s;
  s.trials = 8;
  s.db = "db";
  s.seed = 3;
  s.timing = "warm";
  ModelTuning t = prepare_tuning(m, s);
  ASSERT_EQ(t.tasks.size(), m.table.tasks.size());
  for (size_t k = 0; k < t.tasks.size(); ++k) {
    EXPECT_EQ(t.tasks[k].workload.name, m.table.tasks[k].name);
    EXPECT_EQ(t.tasks[k].weight, m.table.tasks[k].weight);
  }
  EXPECT_EQ(t.options.trials, 8);
  EXPECT_EQ(t.options.db_dir, "db");
  EXPECT_EQ(t.options.seed, 3);
  EXPECT_EQ(t.target.str(), model_target("").str());
}

TEST(ModelPipeline, TheLatencyEstimateWeighsEachTasksBest) {
  LoadedModel m = load_model(mlp(), batch(2));
  TuneSetup s;
  s.trials = 1;
  s.db = "db";
  ModelTuning t = prepare_tuning(m, s);
  LatencyEstimate e(t.tasks);
  e.update(t.tasks[0].workload.name, 2e-3);
  e.update(t.tasks[1].workload.name, 0);  // nothing measured yet: ignored
  EXPECT_EQ(e.measured(), 1);
  EXPECT_DOUBLE_EQ(e.seconds(), t.tasks[0].weight * 2e-3);
  tune::TuneResult r;
  for (size_t k = 0; k < t.tasks.size(); ++k) {
    tune::TaskResult task;
    task.name = t.tasks[k].workload.name;
    task.best_seconds = k == 0 ? 1e-3 : 3e-3;
    r.tasks.push_back(task);
  }
  TuningSummary sum = summarize_tuning(t, r);
  double total = 0, shares = 0;
  for (size_t k = 0; k < t.tasks.size(); ++k) total += t.tasks[k].weight * (k == 0 ? 1e-3 : 3e-3);
  for (const TaskSummary& row : sum.tasks) shares += row.share;
  EXPECT_DOUBLE_EQ(sum.estimated_seconds, total);
  EXPECT_EQ(sum.measured, static_cast<int>(t.tasks.size()));
  EXPECT_NEAR(shares, 1.0, 1e-12);
}

TEST(ModelPipeline, WithoutADatabaseEveryTaskRunsItsDefaultScheduleAndAMissingOneIsRefused) {
  LoadedModel m = load_model(mlp(), batch(2));
  ModelPrograms none = model_programs(m, "", model_target());
  EXPECT_EQ(none.tuned, 0);
  ASSERT_EQ(none.programs.size(), m.table.tasks.size());
  for (size_t t = 0; t < none.programs.size(); ++t) {
    EXPECT_FALSE(none.programs[t].defined());
    EXPECT_EQ(none.program_hash[t], 0u);
  }
  std::string missing = (std::filesystem::temp_directory_path() / "tyche-no-such-db").string();
  EXPECT_THAT(input_error([&] { model_programs(m, missing, model_target()); }),
              HasSubstr("no tuning database at"));
  CompileSetup setup;
  CompiledModel c = compile_model(std::move(m), setup);
  runtime::NDArray x({2, 12}, DataType::Float(32));
  x.fill_uniform(1);
  std::vector<runtime::NDArray> out = c.executor->run({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 4}));
  for (int64_t i = 0; i < 2; ++i) {  // softmax rows sum to 1
    double row = 0;
    for (int64_t j = 0; j < 4; ++j) row += out[0].get_flat(i * 4 + j);
    EXPECT_NEAR(row, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace tyche::model
