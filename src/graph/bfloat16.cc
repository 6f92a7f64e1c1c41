// convert_to_bfloat16: a float32 model run in bfloat16, as `--dtype bfloat16` asks: the weights
// and the activations the convolutions and matrix products read are bfloat16 (a Cast before each
// product, which fuses into the producing kernel's epilogue, so the activation is stored in
// bfloat16), and the products accumulate in float32 (the AVX512-BF16 dot's form). Element-wise
// math, normalizations and the model's inputs and outputs stay float32.
#include "graph/passes.h"
#include "support/error.h"

namespace tyche::graph {

namespace {

constexpr int64_t kOnnxBFloat16 = 16;

bool is_product(const std::string& op) {
  return op == "Conv" || op == "MatMul" || op == "Gemm";
}

}  // namespace

void convert_to_bfloat16(Graph& graph) {
  const DataType bf16 = DataType::BFloat16();
  std::map<int, int> cast_of;  // an activation -> its bfloat16 copy, made once
  std::vector<Node> nodes;
  for (Node& n : graph.nodes) {
    if (is_product(n.op)) {
      for (size_t i : {size_t{0}, size_t{1}}) {
        if (i >= n.inputs.size() || n.inputs[i] < 0) continue;
        int v = n.inputs[i];
        if (graph.value(v).dtype != kFloat32) continue;
        if (graph.value(v).is_constant()) {
          const Value& w = graph.value(v);
          runtime::NDArray a(w.shape, bf16);
          for (int64_t k = 0; k < a.numel(); ++k)
            a.set_flat(k, w.constant.get_flat(k));  // rounded to nearest even
          n.inputs[i] = graph.add_value({w.name + ".bf16", w.shape, bf16, a});
          continue;
        }
        auto it = cast_of.find(v);
        if (it == cast_of.end()) {
          std::string name = graph.value(v).name + ".bf16";
          int out = graph.add_value({name, graph.value(v).shape, bf16, {}});
          Node cast{"Cast", name, {v}, {out}, {}, {}};
          cast.attributes["to"] = kOnnxBFloat16;
          nodes.push_back(std::move(cast));
          it = cast_of.emplace(v, out).first;
        }
        n.inputs[i] = it->second;
      }
    }
    nodes.push_back(std::move(n));
  }
  graph.nodes = std::move(nodes);
  infer_and_fold(graph);  // every shape and type again from the converters: a check of the rewrite
  graph.remove_dead();
}

void apply_dtype(Graph& graph, const std::string& dtype) {
  if (dtype == "bfloat16")
    convert_to_bfloat16(graph);
  else if (dtype != "float32")
    throw_input_error("dtype '{}': float32 or bfloat16", dtype);
}

}  // namespace tyche::graph
