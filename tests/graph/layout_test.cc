// The layout pass: conv chains channels last with one transpose at each boundary, conv weights
// and broadcast constants permuted, outputs keeping their names and ONNX layout, and the model
// computing the same as in NCHW.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../common/onnx_builder.h"
#include "executor/executor.h"
#include "graph/layout.h"
#include "graph/onnx_import.h"
#include "graph/op_registry.h"
#include "graph/passes.h"
#include "runtime/compare.h"
#include "support/error.h"

namespace tyche::graph {
namespace {

using testing::OnnxBuilder;

OnnxBuilder conv_chain() {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 10})
      .weight("w1", {6, 3, 3, 3})
      .weight("b1", {6})
      .weight("w2", {6, 2, 3, 3})
      .weight("cbias", {6, 1, 1});
  b.weight("w3", {4, 12, 1, 1});
  auto& c1 = b.node("Conv", {"x", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"});
  auto& c2 = b.node("Conv", {"r1", "w2"}, {"c2"});  // grouped
  OnnxBuilder::attr(c2, "group", int64_t{3});
  OnnxBuilder::attr(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Add", {"c2", "cbias"}, {"a2"});  // a (C, 1, 1) constant broadcast over H, W
  auto& cat = b.node("Concat", {"r1", "a2"}, {"cat"});
  OnnxBuilder::attr(cat, "axis", int64_t{1});
  auto& mp = b.node("MaxPool", {"cat"}, {"p"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  b.node("Conv", {"p", "w3"}, {"y"});
  b.node("Sigmoid", {"y"}, {"z"});
  b.node("ReduceMean", {"p"}, {"m"});  // not layout-aware: reads p back in NCHW
  b.output("z").output("m");
  return b;
}

std::vector<runtime::NDArray> run(const Graph& g, const runtime::NDArray& x) {
  executor::Executor exec(g, extract_tasks(g), {});
  return exec.run({x});
}

TEST(Layout, AConvChainRunsChannelsLastWithOneTransposeAtEachBoundary) {
  Graph nchw = import_onnx_bytes(conv_chain().bytes(), "m.onnx", ".");
  Graph nhwc = nchw;
  convert_layout(nhwc, Layout::kNHWC);
  int transposes = 0;
  for (const Node& n : nhwc.nodes) {
    if (n.op == "Transpose") ++transposes;
    if (n.op == "Conv" || n.op == "MaxPool") {
      EXPECT_EQ(n.get_string(kLayoutAttribute, ""), "NHWC") << n.name;
    }
    if (n.op == "Concat") {
      EXPECT_EQ(n.get_int("axis", 0), 3);
    }
  }
  // In: x. Out: the output z, and p for the ReduceMean.
  EXPECT_EQ(transposes, 3);
  EXPECT_EQ(nhwc.value(nhwc.outputs[0]).name, "z");
  EXPECT_EQ(nhwc.value(nhwc.outputs[0]).shape, nchw.value(nchw.outputs[0]).shape);
  runtime::NDArray x({1, 3, 8, 10}, kFloat32);
  x.fill_uniform(11);
  std::vector<runtime::NDArray> a = run(nchw, x), b = run(nhwc, x);
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o)
    EXPECT_TRUE(runtime::compare(b[o], a[o]).ok) << "output " << o;
}

// A Dropout (inference: a copy, its mask all true) and an Identity between two convolutions keep
// the chain channels last: transposes only at the input and the output (the mask folds to a
// constant; before, the Dropout read NCHW and the second convolution NHWC again: four).
TEST(Layout, CopiesBetweenConvolutionsKeepTheChainChannelsLast) {
  OnnxBuilder b;
  b.input("x", {1, 3, 6, 7}).weight("w1", {5, 3, 3, 3}).weight("w2", {4, 5, 1, 1});
  b.node("Conv", {"x", "w1"}, {"c1"});
  b.node("Dropout", {"c1"}, {"d", "mask"});
  b.node("Identity", {"d"}, {"i"});
  b.node("Conv", {"i", "w2"}, {"y"});
  b.output("y").output("mask");
  Graph nchw = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  Graph nhwc = nchw;
  convert_layout(nhwc, Layout::kNHWC);
  int transposes = 0;
  for (const Node& n : nhwc.nodes) transposes += n.op == "Transpose";
  EXPECT_EQ(transposes, 2);
  for (int o = 0; o < 2; ++o)
    EXPECT_EQ(nhwc.value(nhwc.outputs[o]).shape, nchw.value(nchw.outputs[o]).shape) << o;
  runtime::NDArray x({1, 3, 6, 7}, kFloat32);
  x.fill_uniform(5);
  std::vector<runtime::NDArray> want = run(nchw, x), got = run(nhwc, x);
  ASSERT_EQ(got.size(), 2u);
  for (size_t o = 0; o < 2; ++o) EXPECT_TRUE(runtime::compare(got[o], want[o]).ok) << o;
  // A ratio given as a graph input is not an activation to transpose: that Dropout reads NCHW.
  OnnxBuilder r;
  r.input("x", {1, 3, 6, 7}).input("ratio", {1}).weight("w1", {5, 3, 3, 3});
  r.node("Conv", {"x", "w1"}, {"c1"});
  r.node("Dropout", {"c1", "ratio"}, {"y"});
  r.output("y");
  Graph g = import_onnx_bytes(r.bytes(), "m.onnx", ".");
  convert_layout(g, Layout::kNHWC);
  for (const Node& n : g.nodes) {
    if (n.op == "Transpose") {
      EXPECT_EQ(g.value(n.inputs[0]).shape.size(), 4u) << n.name;
    }
  }
}

TEST(Layout, NchwLeavesTheGraphAloneAndNamesAreChecked) {
  Graph g = import_onnx_bytes(conv_chain().bytes(), "m.onnx", ".");
  size_t nodes = g.nodes.size();
  convert_layout(g, Layout::kNCHW);
  EXPECT_EQ(g.nodes.size(), nodes);
  EXPECT_EQ(parse_layout("nhwc"), Layout::kNHWC);
  EXPECT_THROW(parse_layout("nchw16c"), InputError);
}

}  // namespace
}  // namespace tyche::graph
