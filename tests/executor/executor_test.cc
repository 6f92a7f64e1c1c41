// The executor against a node-by-node reference (each ONNX node's te function interpreted, no
// fusion, no arena), with the arena poisoned between calls so that a plan letting live buffers
// share bytes shows up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "../common/onnx_builder.h"
#include "executor/executor.h"
#include "graph/onnx_import.h"
#include "graph/op_registry.h"
#include "graph/passes.h"
#include "interp/interpreter.h"
#include "runtime/compare.h"
#include "runtime/npy.h"
#include "support/error.h"

namespace tyche::executor {
namespace {

using namespace tyche::graph;  // the models these tests build and import

using graph::testing::OnnxBuilder;

std::vector<runtime::NDArray> reference(const Graph& g,
                                        const std::vector<runtime::NDArray>& inputs) {
  std::map<int, runtime::NDArray> values;
  for (size_t i = 0; i < g.inputs.size(); ++i) values[g.inputs[i]] = inputs[i];
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].is_constant()) values[static_cast<int>(v)] = g.values[v].constant;
  for (const Node& n : g.nodes) {
    std::vector<te::Tensor> ph, args;
    std::vector<runtime::NDArray> ins;
    for (int in : n.inputs) {
      if (in < 0) {
        ph.emplace_back();
        continue;
      }
      ph.push_back(
          te::placeholder(g.value(in).shape, g.value(in).dtype, fmt::format("p{}", ph.size())));
      args.push_back(ph.back());
      ins.push_back(values.at(in));
    }
    NameGen names;
    std::vector<te::Tensor> outs = convert_node(g, n, ph, names);
    for (const te::Tensor& t : outs)
      if (t.defined()) args.push_back(t);
    std::vector<runtime::NDArray> res = interp::run_on_inputs(te::create_prim_func(args), ins);
    size_t next = 0;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (outs[o].defined()) values[n.outputs[o]] = res.at(next++);
  }
  std::vector<runtime::NDArray> outs;
  for (int o : g.outputs) outs.push_back(values.at(o));
  return outs;
}

// A little of everything: conv + BN (folded) + relu, a residual, pooling, a view, a gemm, softmax.
OnnxBuilder mixed_model() {
  OnnxBuilder b;
  b.input("x", {1, 3, 7, 9});
  b.node("Softmax", {graph::testing::add_conv_residual_gemm(b, "x")}, {"y"});
  b.output("y").output("r1");
  return b;
}

TEST(Executor, MatchesTheNodeByNodeReferenceWithThePoisonedArena) {
  OnnxBuilder b = mixed_model();
  Graph unfolded = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  Graph g = unfolded;
  fold_batch_norm(g);
  runtime::NDArray x({1, 3, 7, 9}, kFloat32);
  x.fill_uniform(3);
  std::vector<runtime::NDArray> expected = reference(unfolded, {x});
  for (bool poison : {false, true}) {
    ExecutorOptions options;
    options.poison_dead = poison;
    TaskTable table = extract_tasks(g);
    Executor exec(g, table, {}, options);
    std::vector<runtime::NDArray> got = exec.run({x});
    ASSERT_EQ(got.size(), 2u);
    for (size_t o = 0; o < got.size(); ++o) {
      runtime::Comparison c = runtime::compare(got[o], expected[o]);
      EXPECT_TRUE(c.ok) << "output " << o << " poison " << poison << ": " << c.message;
    }
    EXPECT_LE(exec.memory().arena_bytes, exec.memory().naive_bytes);
    EXPECT_GE(exec.memory().arena_bytes, exec.memory().lower_bound);
  }
}

// Dequantizations computed by their readers (fusion moves them there) give what the graph
// computes node by node. The fused requantization of the sum rounds once where the nodes round
// after each product (the kernel may contract a product and the add into an FMA), so a sum at a
// rounding boundary may land one step away: the quantized sum within one step, and no more than
// a few of its elements.
TEST(Executor, AQuantizedResidualBlockMatchesTheNodeByNodeReference) {
  for (bool projection : {false, true}) {
    OnnxBuilder b = testing::qdq_residual_block(projection, true);
    Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
    runtime::NDArray x({1, 4, 6, 6}, kFloat32);
    x.fill_uniform(5);
    std::vector<runtime::NDArray> expected = reference(g, {x});
    TaskTable table = extract_tasks(g);
    Executor exec(g, table, {}, {});
    std::vector<runtime::NDArray> got = exec.run({x});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].dtype(), DataType::UInt(8));
    runtime::Comparison pooled = runtime::compare(got[0], expected[0]);
    EXPECT_TRUE(pooled.ok) << "projection " << projection << ": " << pooled.message;
    ASSERT_EQ(got[1].numel(), expected[1].numel());
    int off = 0;
    for (int64_t i = 0; i < got[1].numel(); ++i) {
      int64_t step = got[1].get_flat_int(i) - expected[1].get_flat_int(i);
      EXPECT_LE(std::abs(step), 1) << "projection " << projection << " element " << i;
      off += step != 0;
    }
    EXPECT_LE(off, 2) << "projection " << projection;
  }
}

TEST(Executor, RefusesInputsOfTheWrongTypeOrShape) {
  OnnxBuilder b;
  b.input("x", {2, 3}).output("y").node("Relu", {"x"}, {"y"});
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", ".");
  Executor exec(g, extract_tasks(g), {});
  try {
    exec.run({runtime::NDArray({2, 3}, kFloat64)});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("input 'x' must be float32 2x3, not float64 2x3"));
  }
  EXPECT_THROW(exec.run({runtime::NDArray({3, 2}, kFloat32)}), InputError);
  EXPECT_THROW(exec.run({}), InputError);
}

TEST(Npy, RoundTripsEveryType) {
  std::string dir = ::testing::TempDir();
  for (DataType t :
       {kFloat32, kFloat64, kInt64, kInt32, DataType::Int(8), DataType::UInt(8), kBool}) {
    runtime::NDArray a({2, 3, 1}, t);
    a.fill_uniform(5, 0, 2);
    std::string path = dir + "/a.npy";
    runtime::save_npy(path, a);
    runtime::NDArray b = runtime::load_npy(path);
    ASSERT_EQ(b.dtype(), t);
    ASSERT_EQ(b.shape(), a.shape());
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.get_flat(i), b.get_flat(i));
  }
  runtime::NDArray s({}, kFloat32);
  runtime::save_npy(dir + "/s.npy", s);
  EXPECT_TRUE(runtime::load_npy(dir + "/s.npy").shape().empty());
  EXPECT_THROW(runtime::load_npy(dir + "/missing.npy"), InputError);
}

}  // namespace
}  // namespace tyche::executor
