#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../common/onnx_builder.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/tasks.h"
#include "support/error.h"
#include "tune/measure/runner.h"
#include "tune/model/model_tasks.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

TEST(ModelTiming, AutoIsMixedAndNamedTimingsAreTakenAsNamed) {
  EXPECT_EQ(timing_name(model_timing("auto")), "mixed");
  EXPECT_TRUE(model_timing("auto").keep_in_llc && model_timing("auto").flush_constants);
  EXPECT_EQ(timing_name(model_timing("llc")), "llc");
  EXPECT_EQ(timing_name(model_timing("mixed")), "mixed");
  EXPECT_EQ(timing_name(model_timing("cold")), "cold");
  EXPECT_EQ(timing_name(model_timing("warm")), "");
  EXPECT_THAT([] { model_timing("tepid"); },
              ::testing::ThrowsMessage<InputError>(
                  HasSubstr("unknown timing 'tepid' (expected auto, llc, mixed, cold or warm)")));
}

TEST(ModelWeightBytes, CountsTheConstantValuesOnly) {
  graph::Graph g;
  g.values.push_back(
      {"w", {1024, 256}, DataType::Float(32), runtime::NDArray({1024, 256}, DataType::Float(32))});
  g.values.push_back({"x", {1, 1024}, DataType::Float(32), {}});  // an activation: not a weight
  EXPECT_EQ(model_weight_bytes(g), size_t{1} << 20);
}

TEST(ModelTuneTasks, MarkTheParamsBoundToWeightsAsConstants) {
  // x -> Conv(w, b) -> Relu -> MatMul(m) where m is an activation: only w and b are weights.
  graph::testing::OnnxBuilder b;
  b.input("x", {1, 4, 6, 6}).input("m", {1, 4, 6, 6}).weight("w", {4, 4, 1, 1}).weight("b", {4});
  b.node("Conv", {"x", "w", "b"}, {"c"});
  b.node("Relu", {"c"}, {"r"});
  b.node("Mul", {"r", "m"}, {"y"});
  b.output("y");
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  graph::TaskTable table = graph::extract_tasks(g);
  std::vector<TuneTask> tasks = model_tune_tasks(table, g);
  ASSERT_EQ(tasks.size(), table.tasks.size());
  size_t constants = 0;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const graph::Call* call = nullptr;
    for (const graph::Call& c : table.calls)
      if (c.task == static_cast<int>(k) && !call) call = &c;
    ASSERT_NE(call, nullptr);
    for (size_t i : tasks[k].workload.constant_params) {
      ASSERT_LT(i, call->inputs.size());
      EXPECT_TRUE(g.value(call->inputs[i]).is_constant()) << g.value(call->inputs[i]).name;
    }
    for (size_t i = 0; i < call->inputs.size(); ++i) {
      bool listed = std::count(tasks[k].workload.constant_params.begin(),
                               tasks[k].workload.constant_params.end(), i) > 0;
      EXPECT_EQ(listed, g.value(call->inputs[i]).is_constant()) << g.value(call->inputs[i]).name;
    }
    constants += tasks[k].workload.constant_params.size();
  }
  EXPECT_EQ(constants, 2u);  // w and b, wherever fusion put them
}

}  // namespace
}  // namespace tyche::tune
