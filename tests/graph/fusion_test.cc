// Fusion golden tests (which ops land in which group) and task extraction (dedup, weights).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../common/onnx_builder.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/tasks.h"

namespace tyche::graph {
namespace {

using testing::OnnxBuilder;

// "Conv+Add+Relu | Reshape(view) | ..." : each group's ops in order.
std::string groups_text(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::vector<std::string> parts;
  for (const FusedGroup& grp : groups) {
    std::vector<std::string> ops;
    for (int n : grp.nodes) ops.push_back(g.nodes[static_cast<size_t>(n)].op);
    parts.push_back(fmt::format("{}{}", fmt::join(ops, "+"), grp.is_view ? "(view)" : ""));
  }
  return fmt::format("{}", fmt::join(parts, " | "));
}

Graph load(const OnnxBuilder& b) {
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  fold_batch_norm(g);
  return g;
}

TEST(Fusion, ConvTakesBiasResidualAddAndRelu) {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6})
      .weight("w1", {4, 4, 3, 3})
      .weight("b1", {4})
      .weight("w2", {4, 4, 1, 1});
  auto& c1 = b.node("Conv", {"x", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"});
  b.node("Conv", {"r1", "w2"}, {"c2"});
  b.node("Add", {"c2", "x"}, {"s"});  // the residual
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  Graph g = load(b);
  EXPECT_EQ(groups_text(g, fuse(g)), "Conv+Relu | Conv+Add+Relu");
}

TEST(Fusion, MatmulTakesBiasAndGeluWhoseInputHasTwoReaders) {
  OnnxBuilder b;
  b.input("x", {4, 8})
      .weight("w", {8, 16})
      .weight("bias", {16})
      .scalar("sqrt2", 1.41421356f)
      .scalar("one", 1)
      .scalar("half", 0.5f);
  b.node("MatMul", {"x", "w"}, {"m"});
  b.node("Add", {"m", "bias"}, {"h"});
  b.node("Div", {"h", "sqrt2"}, {"d"});
  b.node("Erf", {"d"}, {"e"});
  b.node("Add", {"e", "one"}, {"e1"});
  b.node("Mul", {"h", "e1"}, {"p"});
  b.node("Mul", {"p", "half"}, {"y"});
  b.output("y");
  Graph g = load(b);
  EXPECT_EQ(groups_text(g, fuse(g)), "MatMul+Add+Div+Erf+Add+Mul+Mul");
}

TEST(Fusion, SoftmaxTakesItsScaleAndMaskAndMatmulTakesATransposedOperand) {
  OnnxBuilder b;
  b.input("q", {2, 5, 8}).input("k", {2, 5, 8}).input("mask", {1, 1, 5}).scalar("scale", 0.125f);
  auto& t = b.node("Transpose", {"k"}, {"kt"});
  OnnxBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Mul", {"s", "scale"}, {"ss"});
  b.node("Add", {"ss", "mask"}, {"sm"});
  b.node("Softmax", {"sm"}, {"p"});
  b.output("p");
  Graph g = load(b);
  EXPECT_EQ(groups_text(g, fuse(g)), "Transpose+MatMul | Mul+Add+Softmax");
}

TEST(Fusion, ViewsAreNoKernelUnlessAPrologue) {
  OnnxBuilder b;
  b.input("x", {2, 6}).weight("w", {3, 4}).ints("shape", {4, 3});
  b.node("Relu", {"x"}, {"r"});
  b.node("Reshape", {"r", "shape"}, {"v"});
  b.node("MatMul", {"v", "w"}, {"m"});  // the reshape is the matmul's prologue
  b.node("Flatten", {"m"}, {"y"});      // a view: no kernel
  b.output("y");
  Graph g = load(b);
  EXPECT_EQ(groups_text(g, fuse(g)), "Relu | Reshape+MatMul | Flatten(view)");
}

TEST(Fusion, ElementwiseMathBeforeAMatmulStaysOut) {
  OnnxBuilder b;
  b.input("x", {4, 8}).weight("w", {8, 8});
  b.node("Tanh", {"x"}, {"t"});
  b.node("MatMul", {"t", "w"}, {"y"});
  b.output("y");
  Graph g = load(b);
  EXPECT_EQ(groups_text(g, fuse(g)), "Tanh | MatMul");
}

// A dequantization's float result is four times its int8 input: its reader dequantizes as it
// reads. The residual's own dequantization (its int8 value has other readers) joins the Add's
// group; the one after the conv stays with the conv, whose group takes the Add; the one after the
// sum moves to the pooling that reads it.
TEST(Fusion, DequantizationsJoinTheirReadersSoInt8CrossesBetweenKernels) {
  Graph identity = load(testing::qdq_residual_block(false));
  EXPECT_EQ(groups_text(identity, fuse(identity)),
            "QuantizeLinear | DequantizeLinear+QLinearConv+DequantizeLinear+Add+QuantizeLinear | "
            "DequantizeLinear+MaxPool+QuantizeLinear+DequantizeLinear");
  Graph projection = load(testing::qdq_residual_block(true));
  EXPECT_EQ(groups_text(projection, fuse(projection)),
            "QuantizeLinear | QLinearConv | "
            "QLinearConv+DequantizeLinear+DequantizeLinear+Add+QuantizeLinear | "
            "DequantizeLinear+MaxPool+QuantizeLinear+DequantizeLinear");
  // The sum is also a graph output: its dequantization's reader still takes it, the int8 sum
  // leaves the Add's group.
  Graph both = load(testing::qdq_residual_block(true, true));
  EXPECT_EQ(groups_text(both, fuse(both)),
            "QuantizeLinear | QLinearConv | "
            "QLinearConv+DequantizeLinear+DequantizeLinear+Add+QuantizeLinear | "
            "DequantizeLinear+MaxPool+QuantizeLinear+DequantizeLinear");
}

// A float value with several readers keeps its own group (widening or not), and a Cast down
// stays where it is made.
TEST(Fusion, AValueWithSeveralReadersOrANarrowingCastStaysPut) {
  OnnxBuilder b;
  b.input("x", {4, 8}, onnx::TensorProto::INT8).input("y", {4, 8});
  auto& up = b.node("Cast", {"x"}, {"xf"});
  OnnxBuilder::attr(up, "to", int64_t{onnx::TensorProto::FLOAT});
  b.node("Add", {"xf", "y"}, {"a"});
  b.node("Mul", {"xf", "y"}, {"m"});  // a second reader of the widened value
  b.node("Relu", {"y"}, {"r"});
  auto& down = b.node("Cast", {"r"}, {"rh"});
  OnnxBuilder::attr(down, "to", int64_t{onnx::TensorProto::INT8});
  OnnxBuilder::attr(b.node("Cast", {"rh"}, {"rf"}), "to", int64_t{onnx::TensorProto::FLOAT});
  b.output("a").output("m").output("rf");
  Graph g = load(b);
  EXPECT_EQ(groups_text(g, fuse(g)), "Cast | Add | Mul | Relu+Cast+Cast");
}

TEST(Tasks, IdenticalGroupsShareATaskWithTheirCountAsWeight) {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6});
  std::string in = "x";
  for (int i = 0; i < 3; ++i) {
    std::string w = fmt::format("w{}", i), c = fmt::format("c{}", i), r = fmt::format("r{}", i);
    b.weight(w, {4, 4, 3, 3});
    auto& conv = b.node("Conv", {in, w}, {c});
    OnnxBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.node("Relu", {c}, {r});
    in = r;
  }
  b.weight("w_last", {2, 4, 1, 1});
  b.node("Conv", {in, "w_last"}, {"y"});
  b.output("y");
  Graph g = load(b);
  TaskTable t = extract_tasks(g);
  ASSERT_EQ(t.tasks.size(), 2u);
  EXPECT_EQ(t.tasks[0].name, "fused_conv_relu");
  EXPECT_EQ(t.tasks[0].weight, 3);
  EXPECT_EQ(t.tasks[1].name, "fused_conv");
  EXPECT_EQ(t.tasks[1].weight, 1);
  EXPECT_EQ(t.calls.size(), 4u);
  // 2 * (N C H W) * (C K K) multiply-adds, the relu not counted... plus one max per output.
  EXPECT_DOUBLE_EQ(t.tasks[0].flop, 2.0 * 4 * 36 * 4 * 9 + 4 * 36);
  EXPECT_EQ(t.tasks[0].func->params.size(), 3u);  // input, weight, output
}

}  // namespace
}  // namespace tyche::graph
