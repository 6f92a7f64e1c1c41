// The design spaces of the tasks that the coverage issue's operators make (grid sampling, DFT,
// recurrences unrolled into stages, Col2Im, KV-cache scatters, dynamic quantization, narrow
// casts, pooling indices, unrolled control flow): every program the tuner would sample from them
// is valid and computes what the unscheduled task does, as for the preset families.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <functional>

#include "../../common/onnx_builder.h"
#include "graph/onnx_import.h"
#include "graph/tasks.h"
#include "interp/interpreter.h"
#include "tune/explore/sample_space.h"
#include "tune/model/model_tasks.h"

namespace tyche::tune {
namespace {

using graph::testing::OnnxBuilder;

void set_string(onnx::NodeProto& n, const std::string& name, const std::string& value) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

// Every task of the model: its sampled programs (interpreted, against the unscheduled task).
// Returns how many tasks were sampled.
int expect_tasks_sample_correctly(const std::string& what, const std::string& model,
                                  int samples = 6) {
  graph::Graph g = graph::import_onnx_bytes(model, what, ".");
  graph::TaskTable table = graph::extract_tasks(g);
  std::vector<TuneTask> tasks = model_tune_tasks(table, g);
  target::Target target;
  target.num_cores = 2;
  for (const TuneTask& task : tasks) {
    workloads::Workload w = task.workload;
    w.reference = [f = w.func](const std::vector<runtime::NDArray>& in) {
      return interp::run_on_inputs(f, in);
    };
    SampleSpaceReport r = sample_space(w, target, {.samples = samples, .seed = 3});
    std::string failures = fmt::format("{}", fmt::join(r.failures, "\n"));
    EXPECT_FALSE(r.spaces.empty()) << what << ": " << w.name;
    EXPECT_GT(r.valid, 0) << what << ": " << w.name << "\n" << failures;
    EXPECT_EQ(r.checked, r.valid) << what << ": " << w.name;
    EXPECT_EQ(r.correct, r.checked) << what << ": " << w.name << "\n" << failures;
  }
  return static_cast<int>(tasks.size());
}

TEST(NewOperatorSpaces, GridSampleAndAffineGrid) {
  OnnxBuilder b(20);
  b.input("x", {1, 3, 5, 6}).input("t", {1, 2, 3}).ints("s", {1, 3, 4, 7}).output("y");
  b.node("AffineGrid", {"t", "s"}, {"g"});
  set_string(b.node("GridSample", {"x", "g"}, {"y"}), "padding_mode", "border");
  EXPECT_GE(expect_tasks_sample_correctly("grid", b.bytes()), 1);
  OnnxBuilder c(20);
  c.input("x", {1, 2, 5, 6}).input("g", {1, 4, 3, 2}).output("y");
  auto& cubic = c.node("GridSample", {"x", "g"}, {"y"});
  set_string(cubic, "mode", "cubic");
  set_string(cubic, "padding_mode", "reflection");
  EXPECT_GE(expect_tasks_sample_correctly("cubic", c.bytes()), 1);
}

TEST(NewOperatorSpaces, DftAndCol2Im) {
  OnnxBuilder b(20);
  b.input("x", {2, 10, 1}).ints("n", {12}).output("y");
  OnnxBuilder::attr(b.node("DFT", {"x", "n"}, {"y"}), "onesided", int64_t{1});
  EXPECT_GE(expect_tasks_sample_correctly("dft", b.bytes()), 1);
  OnnxBuilder c(18);
  c.input("x", {1, 6, 6}).ints("img", {4, 5}).ints("blk", {2, 3}).output("y");
  OnnxBuilder::attr(c.node("Col2Im", {"x", "img", "blk"}, {"y"}), "strides",
                    std::vector<int64_t>{2, 1});
  EXPECT_GE(expect_tasks_sample_correctly("col2im", c.bytes()), 1);
}

TEST(NewOperatorSpaces, RecurrencesUnrolledIntoStages) {
  OnnxBuilder b;
  b.input("x", {3, 2, 4}).weight("w", {1, 16, 4}).weight("r", {1, 16, 4}).weight("bias", {1, 32});
  b.output("y");
  auto& lstm = b.node("LSTM", {"x", "w", "r", "bias"}, {"y"});
  OnnxBuilder::attr(lstm, "hidden_size", int64_t{4});
  EXPECT_GE(expect_tasks_sample_correctly("lstm", b.bytes(), 3), 1);
  OnnxBuilder c;
  c.input("x", {3, 2, 4}).weight("w", {1, 9, 4}).weight("r", {1, 9, 3}).output("y");
  auto& gru = c.node("GRU", {"x", "w", "r"}, {"y"});
  OnnxBuilder::attr(gru, "hidden_size", int64_t{3});
  set_string(gru, "direction", "reverse");
  EXPECT_GE(expect_tasks_sample_correctly("gru", c.bytes(), 3), 1);
}

TEST(NewOperatorSpaces, CacheScattersQuantizationNarrowCastsAndPoolingIndices) {
  OnnxBuilder b(24);
  b.input("c", {1, 2, 5, 4}).input("u", {1, 2, 2, 4}).ints("w", {3}).output("y");
  set_string(b.node("TensorScatter", {"c", "u", "w"}, {"y"}), "mode", "circular");
  EXPECT_GE(expect_tasks_sample_correctly("scatter", b.bytes()), 1);
  OnnxBuilder q(13);
  q.input("x", {3, 7}).output("y");
  q.node("DynamicQuantizeLinear", {"x"}, {"q", "s", "z"});
  q.node("DequantizeLinear", {"q", "s", "z"}, {"y"});
  EXPECT_GE(expect_tasks_sample_correctly("dynamic quantize", q.bytes()), 1);
  OnnxBuilder f(21);
  f.input("x", {4, 6}).output("y");
  constexpr int64_t kFloat8E4M3FN = 17;  // newer than Debian's libonnx headers
  OnnxBuilder::attr(f.node("Cast", {"x"}, {"f8"}), "to", kFloat8E4M3FN);
  OnnxBuilder::attr(f.node("Cast", {"f8"}, {"y"}), "to", int64_t{onnx::TensorProto::FLOAT});
  EXPECT_GE(expect_tasks_sample_correctly("float8", f.bytes()), 1);
  OnnxBuilder p(12);
  p.input("x", {1, 2, 7, 6}).output("y").output("i");
  auto& pool = p.node("MaxPool", {"x"}, {"y", "i"});
  OnnxBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{3, 2});
  OnnxBuilder::attr(pool, "strides", std::vector<int64_t>{2, 2});
  EXPECT_GE(expect_tasks_sample_correctly("pool indices", p.bytes()), 1);
}

TEST(NewOperatorSpaces, AnUnrolledLoopsIterationsAreOrdinaryTasks) {
  // y = tanh(tanh(x W) W): a Loop of two iterations whose body reads the outer W.
  OnnxBuilder b;
  b.input("x", {3, 4}).weight("w", {4, 4}).output("y");
  onnx::ModelProto probe;
  probe.ParseFromString(b.bytes());
  auto* two = probe.mutable_graph()->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::INT64);
  two->add_int64_data(2);
  onnx::GraphProto body;
  body.set_name("body");
  auto typed = [](onnx::ValueInfoProto* v, const std::string& name, int type) {
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  };
  typed(body.add_input(), "i", onnx::TensorProto::INT64);
  typed(body.add_input(), "c", onnx::TensorProto::BOOL);
  typed(body.add_input(), "v", onnx::TensorProto::FLOAT);
  typed(body.add_output(), "c2", onnx::TensorProto::BOOL);
  typed(body.add_output(), "v2", onnx::TensorProto::FLOAT);
  auto node = [](onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
                 std::vector<std::string> out) {
    auto* n = g.add_node();
    n->set_op_type(op);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  };
  node(body, "Identity", {"c"}, {"c2"});
  node(body, "MatMul", {"v", "w"}, {"vw"});
  node(body, "Tanh", {"vw"}, {"v2"});
  auto* loop = node(*probe.mutable_graph(), "Loop", {"two", "", "x"}, {"y"});
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  graph::Graph g = graph::import_onnx_bytes(probe.SerializeAsString(), "loop", ".");
  int matmuls = 0;
  for (const graph::Node& n : g.nodes) matmuls += n.op == "MatMul";
  EXPECT_EQ(matmuls, 2);
  EXPECT_GE(expect_tasks_sample_correctly("loop", probe.SerializeAsString()), 1);
}

}  // namespace
}  // namespace tyche::tune
