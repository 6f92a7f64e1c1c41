// The design spaces of a model's tasks: what the converters write must keep the patterns the
// schedule rules look for.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../graph/onnx_builder.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/tasks.h"
#include "ir/printer.h"
#include "tune/model/model_tasks.h"
#include "tune/space/schedule_rule.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Depth of the first line holding `what` (its indentation), npos when absent.
size_t indentation(const std::string& ir, const std::string& what) {
  size_t at = ir.find(what);
  return at == std::string::npos ? at : at - ir.rfind('\n', at);
}

TEST(ModelTaskSpaces, AResidualAddRunsInTheConvolutionsTileAsItsEpilogue) {
  // ResNet's bottleneck end: relu(conv(a) + bias + residual), the residual another conv's output,
  // so both are channels-last and of the same shape, batch 1 included. Broadcasting must read the
  // residual at the output's own indices (not [0, h, w, c]), or the epilogue is no element-wise
  // consumer and runs as a second pass over the whole output after the convolution.
  graph::testing::OnnxBuilder b;
  b.input("x", {1, 8, 6, 6}).weight("wa", {8, 8, 1, 1}).weight("ba", {8}).weight("wb", {16, 8, 1, 1}).weight("wd", {16, 8, 1, 1});
  b.node("Conv", {"x", "wa", "ba"}, {"a0"});
  b.node("Relu", {"a0"}, {"a"});
  b.node("Conv", {"x", "wd"}, {"d"});
  b.node("Conv", {"a", "wb"}, {"c"});
  b.node("Add", {"c", "d"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  graph::TaskTable table = graph::extract_tasks(g);
  std::vector<TuneTask> tasks = model_tune_tasks(table, g);
  const TuneTask* task = nullptr;
  for (const TuneTask& t : tasks)
    if (t.workload.name == "fused_conv_add_relu") task = &t;
  ASSERT_NE(task, nullptr);

  Target target;
  target.num_cores = 2;
  target.cpu = "x86-64-v4";
  auto designs = post_order_apply(default_rules(target))->generate(TuneContext{task->workload.func, target}, 3);
  // The design without a write cache leaves the epilogue in a nest of its own at the root; the
  // design that fuses it places it under the convolution's outer tiles, loops deeper.
  ASSERT_FALSE(designs.empty());
  size_t at_root = indentation(ir::to_string(designs[0].func()), "block(\"relu\")");
  ASSERT_NE(at_root, std::string::npos);
  bool fused = false;
  for (const schedule::Schedule& d : designs) {
    std::string trace = d.trace()->to_text();
    if (trace.find("sch.get_consumers(") == std::string::npos) continue;
    fused = true;
    EXPECT_THAT(trace, Not(HasSubstr("cache_write")));
    std::string ir = ir::to_string(d.func());
    EXPECT_GT(indentation(ir, "block(\"relu\")"), at_root + 2 * 3) << ir;
  }
  EXPECT_TRUE(fused) << "no design runs the bias, the residual add and the ReLU in the convolution's tile";
}

}  // namespace
}  // namespace tyche::tune
