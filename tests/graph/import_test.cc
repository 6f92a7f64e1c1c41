// ONNX import: shapes inferred, constants folded, and every kind of bad file or input refused
// with one line.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "../common/onnx_builder.h"
#include "graph/onnx_import.h"
#include "graph/onnx_schemas.h"
#include "graph/passes.h"
#include "support/error.h"

namespace tyche::graph {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::OnnxBuilder;

std::string error_of(const std::string& bytes, const ImportOptions& options = {}) {
  try {
    import_onnx_bytes(bytes, "m.onnx", ".", options);
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  return "no error";
}

// x reshaped to (its batch, -1) through Shape -> Gather -> Concat -> Reshape, as y; needs
// initializers "zero" ({0}) and "minus_one" ({-1}).
void reshape_by_own_batch(OnnxBuilder& b) {
  b.node("Shape", {"x"}, {"s"});
  auto& g = b.node("Gather", {"s", "zero"}, {"n"});
  OnnxBuilder::attr(g, "axis", int64_t{0});
  auto& c = b.node("Concat", {"n", "minus_one"}, {"target"});
  OnnxBuilder::attr(c, "axis", int64_t{0});
  b.node("Reshape", {"x", "target"}, {"y"});
}

TEST(Import, InfersShapesAndFoldsShapeArithmetic) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the target shape is known at compile time.
  OnnxBuilder b;
  b.input("x", {2, 3, 4}).ints("zero", {0}).ints("minus_one", {-1});
  reshape_by_own_batch(b);
  b.node("Relu", {"y"}, {"z"});
  b.output("z");
  Graph graph = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  ASSERT_EQ(graph.nodes.size(), 2u);  // Reshape and Relu remain
  EXPECT_EQ(graph.nodes[0].op, "Reshape");
  EXPECT_EQ(graph.value(graph.outputs[0]).shape, (std::vector<int64_t>{2, 12}));
  EXPECT_TRUE(graph.value(graph.nodes[0].inputs[1]).is_constant());
}

TEST(Import, ASymbolicBatchAndItsShapeChainFoldAtEachBinding) {
  // x: (batch, 3, 4) with batch symbolic; Shape -> Gather -> Concat -> Reshape to (batch, 12),
  // then Expand of a constant to Shape(x) and ConstantOfShape of it: every shape folds once the
  // batch is bound, a different one at each binding.
  OnnxBuilder b;
  b.input("x", {0, 3, 4}, onnx::TensorProto::FLOAT, {"batch", "", ""})
      .ints("zero", {0})
      .ints("minus_one", {-1});
  reshape_by_own_batch(b);
  b.node("ConstantOfShape", {"s"}, {"zeros"});
  b.node("Add", {"x", "zeros"}, {"w"});
  b.output("y").output("w");
  for (int64_t batch : {2, 5}) {
    ImportOptions options;
    parse_input_shape(fmt::format("x={}x3x4", batch), options);
    Graph graph = import_onnx_bytes(b.bytes(), "m.onnx", ".", options);
    EXPECT_EQ(graph.value(graph.outputs[0]).shape, (std::vector<int64_t>{batch, 12}));
    EXPECT_EQ(graph.value(graph.outputs[1]).shape, (std::vector<int64_t>{batch, 3, 4}));
    for (const Node& n : graph.nodes) {
      EXPECT_NE(n.op, "Shape");
      EXPECT_NE(n.op, "Concat");
      EXPECT_NE(n.op, "ConstantOfShape");
    }
  }
}

TEST(Import, RefusesWhatIsNotAModel) {
  EXPECT_THAT(error_of("this is a text file, not a model\n"),
              HasSubstr("'m.onnx' is not an ONNX model"));
  OnnxBuilder b;
  b.input("x", {4}).output("y").node("Relu", {"x"}, {"y"});
  std::string bytes = b.bytes();
  EXPECT_THAT(error_of(bytes.substr(0, bytes.size() / 2)), HasSubstr("is not an ONNX model"));
  EXPECT_THAT(error_of(""), HasSubstr("is not an ONNX model"));
}

TEST(Import, ListsEveryUnsupportedOperatorWithItsCount) {
  OnnxBuilder b;
  b.input("x", {4}).input("s", {4}, onnx::TensorProto::INT64);
  b.node("NonZero", {"x"}, {"a"});
  b.node("NonZero", {"x"}, {"b"});
  b.node("Unique", {"s"}, {"c"});
  b.output("b").output("c");
  EXPECT_THAT(error_of(b.bytes()), AllOf(HasSubstr("unsupported operators"),
                                         HasSubstr("Unique (1)"), HasSubstr("NonZero (2)")));
}

TEST(Import, RefusesOpsetsOutsideTheRange) {
  for (int opset : {0, -3}) {
    OnnxBuilder b(opset);
    b.input("x", {4}).output("y").node("Relu", {"x"}, {"y"});
    EXPECT_THAT(error_of(b.bytes()),
                HasSubstr(fmt::format("opset {} is not an ONNX opset", opset)));
  }
  OnnxBuilder b(newest_known_opset() + 1);
  b.input("x", {4}).output("y").node("Relu", {"x"}, {"y"});
  EXPECT_THAT(error_of(b.bytes()),
              HasSubstr(fmt::format("opset {} is newer than the newest Tyche knows ({})",
                                    newest_known_opset() + 1, newest_known_opset())));
}

TEST(Import, OlderOpsetsAreUpgradedByOnnxsVersionConverter) {
  // Opset 11: Unsqueeze's axes and Split's sizes are attributes (inputs from 13), Softmax
  // flattens from `axis` (one axis from 13). The converter rewrites all three.
  OnnxBuilder b(11);
  b.input("x", {2, 6});
  auto& u = b.node("Unsqueeze", {"x"}, {"u"});
  OnnxBuilder::attr(u, "axes", std::vector<int64_t>{0});
  auto& sp = b.node("Split", {"u"}, {"a", "c"});
  OnnxBuilder::attr(sp, "axis", int64_t{2});
  OnnxBuilder::attr(sp, "split", std::vector<int64_t>{2, 4});
  auto& sm = b.node("Softmax", {"c"}, {"y"});
  OnnxBuilder::attr(sm, "axis", int64_t{1});
  b.output("a").output("y");
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  EXPECT_EQ(g.opset_read, 11);
  EXPECT_EQ(g.opset, kUpgradeToOpset);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(g.value(g.outputs[1]).shape, (std::vector<int64_t>{1, 2, 4}));
  // Softmax-11 over axes 1.. of a [1, 2, 4]: the adapter flattens to [1, 8] around Softmax-13.
  bool flattened = std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return n.op == "Softmax" && g.value(n.inputs[0]).shape == std::vector<int64_t>{1, 8};
  });
  EXPECT_TRUE(flattened);
}

TEST(Import, AnOpset6PReluSlopeOfTheChannelCountAppliesPerChannel) {
  // Before opset 7 a 1-D slope of C values scales channel c of (N, C, H); from opset 7 it would
  // broadcast against H. The upgrade reshapes it to (C, 1).
  OnnxBuilder b(6);
  b.input("x", {2, 3, 4}).weight("slope", {3});
  b.node("PRelu", {"x", "slope"}, {"y"});
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.value(g.nodes[0].inputs[1]).shape, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(g.value(g.outputs[0]).shape, (std::vector<int64_t>{2, 3, 4}));
  // At opset 7 the same slope broadcasts from the right, so (2, 3, 4) against (3) is refused.
  OnnxBuilder b7(7);
  b7.input("x", {2, 3, 4}).weight("slope", {3});
  b7.node("PRelu", {"x", "slope"}, {"y"});
  b7.output("y");
  EXPECT_THAT(error_of(b7.bytes()), HasSubstr("do not broadcast"));
}

TEST(Import, ReductionsOverAnEmptyAxisFoldToTheirIdentities) {
  // x is (2, 0, 3): nothing to read, so each reduction over axis 1 is a constant (2, 1, 3).
  OnnxBuilder b(18);
  b.input("x", {2, 0, 3}).ints("axis", {1});
  b.node("ReduceMax", {"x", "axis"}, {"max"});
  b.node("ReduceProd", {"x", "axis"}, {"prod"});
  b.node("ReduceSum", {"x", "axis"}, {"sum"});
  b.node("ReduceLogSumExp", {"x", "axis"}, {"lse"});
  b.output("max").output("prod").output("sum").output("lse");
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  EXPECT_TRUE(g.nodes.empty());
  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> want = {-inf, 1, 0, -inf};
  for (size_t o = 0; o < want.size(); ++o) {
    const Value& v = g.value(g.outputs[o]);
    ASSERT_TRUE(v.is_constant()) << o;
    EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 1, 3}));
    for (int64_t i = 0; i < v.numel(); ++i) EXPECT_EQ(v.constant.get_flat(i), want[o]) << o;
  }
}

TEST(Import, AMalformedOldModelIsRefusedBeforeTheVersionConverterSeesIt) {
  // libonnx's converter crashes on a value nothing defines: the import refuses it first.
  OnnxBuilder b(9);
  b.input("x", {4}).output("y").node("Relu", {"missing"}, {"y"});
  EXPECT_THAT(error_of(b.bytes()), HasSubstr("reads 'missing', which nothing defines before it"));
  OnnxBuilder twice(9);
  twice.input("x", {4}).output("y");
  twice.node("Relu", {"x"}, {"y"});
  twice.node("Relu", {"x"}, {"y"});
  EXPECT_THAT(error_of(twice.bytes()), HasSubstr("value 'y' is defined twice"));
  // Its shape inference divides by a Conv's strides (found by the fuzz test: SIGFPE).
  OnnxBuilder zero(9);
  zero.input("x", {1, 3, 8, 8}).output("y").weight("w", {4, 3, 3, 3});
  OnnxBuilder::attr(zero.node("Conv", {"x", "w"}, {"y"}), "strides", std::vector<int64_t>{1, 0});
  EXPECT_THAT(error_of(zero.bytes()),
              HasSubstr("node 0 (Conv): attribute 'strides' must be positive"));
}

TEST(Import, NewerOpsetsReadEachOpAtItsOwnVersion) {
  // Relu last changed in opset 14, Add in 14, Cast in 25 (more types): opset 28 reads them all.
  OnnxBuilder b(newest_known_opset());
  b.input("x", {4}).output("y");
  b.node("Relu", {"x"}, {"r"});
  b.node("Add", {"r", "x"}, {"s"});
  auto& c = b.node("Cast", {"s"}, {"y"});
  OnnxBuilder::attr(c, "to", int64_t{onnx::TensorProto::FLOAT});
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  EXPECT_EQ(g.opset, newest_known_opset());
  EXPECT_EQ(g.opset_read, newest_known_opset());
  ASSERT_NE(schema_at("Cast", newest_known_opset()), nullptr);
  EXPECT_GT(schema_at("Cast", newest_known_opset())->since_version, kConvertersOpset);
  EXPECT_EQ(schema_at("Relu", 28)->since_version, 14);
  EXPECT_EQ(schema_at("Gelu", 19), nullptr);  // since opset 20
}

TEST(Import, RefusesWhatANewerOpVersionAddsAndOpsBeforeTheirOpset) {
  // Cast-24 adds round_mode; Gelu does not exist before opset 20.
  OnnxBuilder b(newest_known_opset());
  b.input("x", {4}).output("y");
  auto& c = b.node("Cast", {"x"}, {"y"});
  OnnxBuilder::attr(c, "to", int64_t{onnx::TensorProto::FLOAT});
  c.add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("round_mode");
    a.set_type(onnx::AttributeProto::STRING);
    a.set_s("up");
    return a;
  }());
  c.set_name("cast_node");
  EXPECT_THAT(error_of(b.bytes()),
              AllOf(HasSubstr("node 'cast_node' (Cast, version"),
                    HasSubstr(fmt::format("at opset {}): attribute 'round_mode' is newer than "
                                          "opset {}",
                                          newest_known_opset(), kConvertersOpset))));
  OnnxBuilder old(18);
  old.input("x", {4}).output("y").node("Gelu", {"x"}, {"y"});
  EXPECT_THAT(error_of(old.bytes()), HasSubstr("(Gelu): no such operator at opset 18"));
}

TEST(Import, SymbolicDimensionsNeedAnInputShape) {
  OnnxBuilder b;
  b.input("x", {0, 3}, onnx::TensorProto::FLOAT, {"batch", ""})
      .output("y")
      .node("Relu", {"x"}, {"y"});
  EXPECT_THAT(error_of(b.bytes()),
              AllOf(HasSubstr("input 'x'"), HasSubstr("'batch'"), HasSubstr("--input-shape x=")));
  ImportOptions options;
  parse_input_shape("x=2x3", options);
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".", options);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (std::vector<int64_t>{2, 3}));
  ImportOptions wrong;
  parse_input_shape("y=2x3", wrong);
  EXPECT_THAT(error_of(b.bytes(), wrong),
              HasSubstr("--input-shape names 'y', which is not an input"));
  ImportOptions rank;
  parse_input_shape("x=2x3x4", rank);
  EXPECT_THAT(error_of(b.bytes(), rank), HasSubstr("has rank 3, the input has rank 2"));
  ImportOptions commas;
  parse_input_shape("x=4,3", commas);
  EXPECT_EQ(commas.input_shapes.at("x"), (std::vector<int64_t>{4, 3}));
  ImportOptions bad;
  EXPECT_THROW(parse_input_shape("x=2,q", bad), InputError);
  EXPECT_THROW(parse_input_shape("x=2xq", bad), InputError);
  EXPECT_THROW(parse_input_shape("2x3", bad), InputError);
}

TEST(Import, ConverterErrorsNameTheNode) {
  OnnxBuilder b;
  b.input("a", {2, 3}).input("c", {4, 5}).output("y").node("MatMul", {"a", "c"}, {"y"});
  EXPECT_THAT(error_of(b.bytes()),
              AllOf(HasSubstr("node 'y' (MatMul)"), HasSubstr("cannot be multiplied")));
  OnnxBuilder r;
  r.input("a", {2, 3})
      .input("shape", {2}, onnx::TensorProto::INT64)
      .output("y")
      .node("Reshape", {"a", "shape"}, {"y"});
  EXPECT_THAT(error_of(r.bytes()), HasSubstr("the shape ('shape') must be a constant"));
}

TEST(Import, BoundInputsBecomeConstantsThatOpsCanRead) {
  // Unsqueeze's axes and Reshape's shape as graph inputs: refused until bound.
  OnnxBuilder b;
  b.input("x", {2, 3})
      .input("axes", {1}, onnx::TensorProto::INT64)
      .input("shape", {2}, onnx::TensorProto::INT64);
  b.node("Unsqueeze", {"x", "axes"}, {"u"});
  b.node("Reshape", {"u", "shape"}, {"y"});
  b.output("y");
  EXPECT_THAT(error_of(b.bytes()), HasSubstr("the axes ('axes') must be a constant"));
  auto ints = [](std::vector<int64_t> v) {
    runtime::NDArray a({static_cast<int64_t>(v.size())}, kInt64);
    for (size_t i = 0; i < v.size(); ++i) a.set_flat_int(static_cast<int64_t>(i), v[i]);
    return a;
  };
  ImportOptions options;
  options.bound_inputs["axes"] = ints({0});
  options.bound_inputs["shape"] = ints({3, 2});
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".", options);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  EXPECT_EQ(g.value(g.outputs[0]).shape, (std::vector<int64_t>{3, 2}));

  ImportOptions wrong_type = options;
  wrong_type.bound_inputs["axes"] = runtime::NDArray({1}, kFloat32);
  EXPECT_THAT(error_of(b.bytes(), wrong_type),
              HasSubstr("--bind axes: the value is float32, the input is int64"));
  ImportOptions wrong_shape = options;
  wrong_shape.bound_inputs["axes"] = ints({0, 1});
  EXPECT_THAT(error_of(b.bytes(), wrong_shape),
              HasSubstr("--bind axes: the value's shape 2 does not fit the input's"));
  ImportOptions unknown = options;
  unknown.bound_inputs["z"] = ints({1});
  EXPECT_THAT(error_of(b.bytes(), unknown),
              HasSubstr("--bind names 'z', which is not an input of the model"));
}

TEST(Import, BatchNormFoldsIntoTheConvBefore) {
  // The variance goes through a Relu (folded to a constant) so that it is not negative.
  OnnxBuilder m;
  m.input("x", {1, 3, 5, 5}).weight("w", {4, 3, 3, 3}).weight("bias", {4});
  m.weight("scale", {4}).weight("shift", {4}).weight("mean", {4});
  m.weight("var", {4}, 0.2f);
  m.node("Conv", {"x", "w", "bias"}, {"c"});
  m.node("Relu", {"var"}, {"vpos"});  // folded: a constant
  m.node("BatchNormalization", {"c", "scale", "shift", "mean", "vpos"}, {"y"});
  m.output("y");
  Graph g = import_onnx_bytes(m.bytes(), "m.onnx", ".");
  ASSERT_EQ(g.nodes.size(), 2u);
  fold_batch_norm(g);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "Conv");
  EXPECT_EQ(g.nodes[0].outputs[0], g.outputs[0]);
}

}  // namespace
}  // namespace tyche::graph
