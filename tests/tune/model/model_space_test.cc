// The design spaces of a model's tasks: what the converters write must keep the patterns the
// schedule rules look for.
#include <gmock/gmock.h>

#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <functional>
#include <numeric>

#include "../../common/onnx_builder.h"
#include "graph/layout.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/tasks.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "tune/explore/sample_space.h"
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
  b.input("x", {1, 8, 6, 6})
      .weight("wa", {8, 8, 1, 1})
      .weight("ba", {8})
      .weight("wb", {16, 8, 1, 1})
      .weight("wd", {16, 8, 1, 1});
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

  target::Target target;
  target.num_cores = 2;
  target.cpu = "x86-64-v4";
  auto designs = post_order_apply(default_rules(target))
                     ->generate(TuneContext{task->workload.func, target}, 3);
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
  EXPECT_TRUE(fused)
      << "no design runs the bias, the residual add and the ReLU in the convolution's tile";
}

// A quantized convolution (QLinearConv, channels last; ResNet's 7x7 stem) is a u8 x s8
// multiply-accumulate the VNNI rule tiles and tensorizes, its 3 input channels padded to the
// intrinsic's 4, the activation zero point's term folded into the bias at import; every design
// and every sample the tuner would build computes what the unscheduled task does (exactly: the
// requantized bytes).
TEST(ModelTaskSpaces, AQuantizedConvolutionIsTensorizedAndExact) {
  graph::testing::OnnxBuilder b;
  b.input("x", {1, 3, 16, 16})
      .scalar("s", 0.02f)
      .integers("z", {}, onnx::TensorProto::UINT8, 120, 120);
  b.integers("w", {8, 3, 7, 7}, onnx::TensorProto::INT8, -127, 127).scalar("ws", 0.004f);
  b.integers("wz", {}, onnx::TensorProto::INT8, 0, 0)
      .scalar("ys", 0.05f)
      .integers("yz", {}, onnx::TensorProto::UINT8, 3, 3);
  b.integers("bias", {8}, onnx::TensorProto::INT32, -3000, 3000);
  b.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  auto& conv = b.node("QLinearConv", {"q", "s", "z", "w", "ws", "wz", "ys", "yz", "bias"}, {"c"});
  graph::testing::OnnxBuilder::attr(conv, "strides", std::vector<int64_t>{2, 2});
  graph::testing::OnnxBuilder::attr(conv, "pads", std::vector<int64_t>{3, 3, 3, 3});
  b.node("DequantizeLinear", {"c", "ys", "yz"}, {"y"});
  b.output("y");
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  graph::convert_layout(g, graph::Layout::kNHWC);
  graph::TaskTable table = graph::extract_tasks(g);
  std::vector<TuneTask> tasks = model_tune_tasks(table, g);
  const TuneTask* task = nullptr;
  for (const TuneTask& t : tasks)
    if (t.workload.name.find("qlinear_conv") != std::string::npos) task = &t;
  ASSERT_NE(task, nullptr);
  target::Target target = target::Target::parse("llvm -num-cores 2 -mcpu sapphirerapids");
  auto designs = post_order_apply(default_rules(target))
                     ->generate(TuneContext{task->workload.func, target}, 3);
  ASSERT_FALSE(designs.empty());
  auto inputs = workloads::make_inputs(task->workload.func, 5);
  auto expected = interp::run_on_inputs(task->workload.func, inputs);
  for (const schedule::Schedule& d : designs) {
    std::string trace = d.trace()->to_text();
    EXPECT_THAT(trace, HasSubstr("x86_avx_vnni_dot_8x4_u8s8"));
    EXPECT_THAT(trace, HasSubstr("pad_einsum"));
    auto got = interp::run_on_inputs(d.func(), inputs);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(runtime::compare(got[i], expected[i]).ok) << trace;
    // As the builder lowers it. Padded (3 channels to 4), the weights' packed copy is larger than
    // they are, and still made once, at load.
    lower::SplitProgram split = lower::split_layout_rewrites(d.func());
    ASSERT_EQ(split.rewrites.size(), 1u);
    EXPECT_EQ(ir::const_shape(split.rewrites[0].preproc->params[0]),
              (std::vector<int64_t>{7, 7, 3, 8}));
    std::vector<int64_t> packed = ir::const_shape(split.rewrites[0].preproc->params[1]);
    EXPECT_EQ(std::accumulate(packed.begin(), packed.end(), int64_t{1}, std::multiplies<>()),
              7 * 7 * 4 * 8);
    EXPECT_NO_THROW(lower::lower(split.main)) << trace;
    for (const lower::LayoutRewrite& rw : split.rewrites)
      EXPECT_NO_THROW(lower::lower(rw.preproc)) << trace;
  }
  // Sampled, replayed and postprocessed as the tuner does, compiled and run: every sample.
  workloads::Workload w = task->workload;
  w.reference = [f = w.func](const std::vector<runtime::NDArray>& in) {
    return interp::run_on_inputs(f, in);
  };
  SampleSpaceReport r = sample_space(w, target::Target::parse("llvm -num-cores 2"),
                                     {.samples = 8, .seed = 1, .compile = true, .check = true});
  EXPECT_EQ(r.correct, r.samples) << fmt::format("{}", fmt::join(r.failures, "\n"));
}

}  // namespace
}  // namespace tyche::tune
