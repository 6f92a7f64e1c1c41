// fuse_qdq and fold_zero_points: a QDQ convolution becomes one QLinearConv on the integers only
// where the pattern holds; the activation zero point's term lands in the int32 bias.
#include <gmock/gmock.h>

#include "../common/onnx_builder.h"
#include "graph/onnx_import.h"
#include "graph/op_registry.h"
#include "graph/passes.h"

namespace tyche::graph {
namespace {

using testing::OnnxBuilder;

// x (float) -> QuantizeLinear -> DequantizeLinear -> Conv (weights and bias through
// DequantizeLinear) -> QuantizeLinear -> DequantizeLinear -> y; `extra_reader`: the Conv's float
// output is also a graph output.
std::string qdq_conv(bool extra_reader, float bias_scale) {
  OnnxBuilder m;
  m.input("x", {1, 4, 6, 6})
      .scalar("xs", 0.02f)
      .integers("xz", {}, onnx::TensorProto::UINT8, 100, 100);
  m.integers("w", {8, 4, 3, 3}, onnx::TensorProto::INT8, -100, 100).scalar("ws", 0.005f);
  m.integers("b", {8}, onnx::TensorProto::INT32, 250, 250)
      .scalar("bs", bias_scale);  // every bias 250
  m.scalar("ys", 0.04f).integers("yz", {}, onnx::TensorProto::UINT8, 7, 7);
  m.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xf"});
  m.node("DequantizeLinear", {"w", "ws"}, {"wf"});
  m.node("DequantizeLinear", {"b", "bs"}, {"bf"});
  auto& conv = m.node("Conv", {"xf", "wf", "bf"}, {"c"});
  OnnxBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("QuantizeLinear", {"c", "ys", "yz"}, {"cq"});
  m.node("DequantizeLinear", {"cq", "ys", "yz"}, {"y"});
  m.output("y");
  if (extra_reader) m.output("c");
  return m.bytes();
}

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) out.push_back(n.op);
  return out;
}

TEST(Qdq, AQuantizedConvolutionBecomesQLinearConvWithItsZeroPointInTheBias) {
  Graph g = import_onnx_bytes(qdq_conv(false, 0.02f * 0.005f), "m.onnx", ".");
  EXPECT_THAT(ops(g), ::testing::ElementsAre("QuantizeLinear", "QLinearConv", "DequantizeLinear"));
  const Node& conv = g.nodes[1];
  EXPECT_TRUE(conv.has(kZeroPointFolded));
  // bias' = b - xz * sum w per output channel (b = 250, xz = 100).
  const Value& bias = g.value(conv.inputs[8]);
  const Value& w = g.value(conv.inputs[3]);
  ASSERT_TRUE(bias.is_constant() && w.is_constant());
  EXPECT_EQ(bias.dtype, kInt32);
  for (int64_t c = 0; c < 8; ++c) {
    int64_t sum = 0;
    for (int64_t t = 0; t < 36; ++t) sum += w.constant.get_flat_int(c * 36 + t);
    EXPECT_EQ(bias.constant.get_flat_int(c), 250 - 100 * sum) << c;
  }
}

TEST(Qdq, NotFusedWhenTheFloatResultHasAnotherReaderOrTheBiasScaleDiffers) {
  Graph shared = import_onnx_bytes(qdq_conv(true, 0.02f * 0.005f), "m.onnx", ".");
  EXPECT_THAT(ops(shared), ::testing::Contains("Conv"));
  EXPECT_THAT(ops(shared), ::testing::Not(::testing::Contains("QLinearConv")));
  Graph scaled =
      import_onnx_bytes(qdq_conv(false, 0.001f), "m.onnx", ".");  // not x_scale * w_scale
  EXPECT_THAT(ops(scaled), ::testing::Contains("Conv"));
  EXPECT_THAT(ops(scaled), ::testing::Not(::testing::Contains("QLinearConv")));
}

}  // namespace
}  // namespace tyche::graph
