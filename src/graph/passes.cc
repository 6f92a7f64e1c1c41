#include "graph/passes.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "graph/control_flow.h"
#include "graph/narrow_types.h"
#include "graph/op_registry.h"
#include "interp/interpreter.h"
#include "support/error.h"

namespace tyche::graph {

namespace {

// A Shape node's result straight from its input's static shape.
runtime::NDArray fold_shape(const te::Tensor& out, const std::vector<int64_t>& in, const Node& n) {
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = n.get_int("start", 0), end = n.get_int("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  runtime::NDArray a(out.shape(), kInt64);
  for (int64_t d = start; d < end; ++d) a.set_flat_int(d - start, in[static_cast<size_t>(d)]);
  return a;
}

std::vector<runtime::NDArray> evaluate(const Graph& graph, const Node& n,
                                       const std::vector<te::Tensor>& placeholders,
                                       const std::vector<te::Tensor>& outs) {
  std::vector<te::Tensor> args;
  std::vector<runtime::NDArray> inputs;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0) continue;
    args.push_back(placeholders[i]);
    const Value& v = graph.value(n.inputs[i]);
    // An empty input is never read, whatever it holds: an empty array stands for it.
    inputs.push_back(v.is_constant() ? v.constant : runtime::NDArray(v.shape, v.dtype));
  }
  for (const te::Tensor& t : outs)
    if (t.defined()) args.push_back(t);
  ir::PrimFunc f = te::create_prim_func(args, "fold");
  std::vector<runtime::NDArray> results = interp::run_on_inputs(f, inputs);
  return results;
}

// Whether every input is a constant, or (with `or_empty`) a constant or empty: a node whose
// inputs are constants or empty computes its outputs (a reduction over nothing) without data.
bool all_constant(const Graph& graph, const Node& n, bool or_empty = false) {
  for (int in : n.inputs)
    if (in >= 0 && !graph.value(in).is_constant() && !(or_empty && graph.value(in).numel() == 0))
      return false;
  return true;
}

// Narrow values (narrow_types.h) are read only by the ops that convert them; any other op would
// compute on their storage bytes.
void check_narrow_inputs(const Graph& graph, const Node& n) {
  static const std::set<std::string> kReaders = {"Cast", "CastLike", "QuantizeLinear",
                                                 "DequantizeLinear", "Identity"};
  for (int in : n.inputs) {
    if (in < 0 || graph.value(in).narrow_code == 0 || kReaders.count(n.op)) continue;
    const Value& v = graph.value(in);
    throw_input_error(
        "node '{}' ({}): input '{}' is {}, which only Cast, CastLike, QuantizeLinear, "
        "DequantizeLinear and Identity read (no CPU computes in it)",
        n.name, n.op, v.name, onnx_dtype_name(v.narrow_code));
  }
}

// The narrow type (its ONNX code) a node's output holds, or 0.
int64_t narrow_output_code(const Graph& graph, const Node& n) {
  auto narrow_of = [&](size_t i) {
    return i < n.inputs.size() && n.inputs[i] >= 0 ? graph.value(n.inputs[i]).narrow_code : 0;
  };
  auto narrow_attr = [&](const char* attr) -> int64_t {
    std::optional<NarrowType> t = narrow_type(n.get_int(attr, 0));
    return t ? t->code : 0;
  };
  if (n.op == "Cast") return narrow_attr("to");
  if (n.op == "CastLike") return narrow_of(1);
  if (n.op == "Identity") return narrow_of(0);
  if (n.op == "QuantizeLinear")
    return n.inputs.size() > 2 && n.inputs[2] >= 0 ? narrow_of(2) : narrow_attr("output_dtype");
  return 0;
}

}  // namespace

void infer_and_fold(Graph& graph) {
  std::vector<bool> folded(graph.nodes.size(), false);
  te::AllowEmptyExtents empty_tensors_have_shapes;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    while (k < graph.nodes.size() && is_control_flow(graph.nodes[k].op)) {
      // Its body's nodes take its place, and are inferred and folded next.
      std::vector<Node> expansion = expand_control_flow(graph, graph.nodes[k]);
      auto at = graph.nodes.begin() + static_cast<std::ptrdiff_t>(k);
      graph.nodes.erase(at);
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(k),
                         std::make_move_iterator(expansion.begin()),
                         std::make_move_iterator(expansion.end()));
      folded.erase(folded.begin() + static_cast<std::ptrdiff_t>(k));
      folded.insert(folded.begin() + static_cast<std::ptrdiff_t>(k), expansion.size(), false);
    }
    if (k >= graph.nodes.size()) break;
    const Node& n = graph.nodes[k];
    std::vector<te::Tensor> placeholders;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) {
        placeholders.emplace_back();
        continue;
      }
      const Value& v = graph.value(n.inputs[i]);
      placeholders.push_back(te::placeholder(v.shape, v.dtype, fmt::format("p{}", i)));
    }
    check_narrow_inputs(graph, n);
    NameGen names;
    std::vector<te::Tensor> outs = convert_node(graph, n, placeholders, names);
    bool all_empty = true;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] < 0) continue;
      Value& v = graph.value(n.outputs[o]);
      v.shape = outs[o].shape();
      v.dtype = outs[o].dtype();
      v.narrow_code = narrow_output_code(graph, n);
      v.bytes();  // refuses a value past the tensor limit before anything folds or runs it
      all_empty = all_empty && v.numel() == 0;
    }
    if (all_empty) {
      // Nothing to compute: each output is an empty constant.
      for (int o : n.outputs)
        if (o >= 0)
          graph.value(o).constant = runtime::NDArray(graph.value(o).shape, graph.value(o).dtype);
      folded[k] = true;
      continue;
    }
    if (n.op != "Shape" && !all_constant(graph, n, /*or_empty=*/true)) {
      // An output that reads none of the node's inputs (Dropout's mask at inference) is a
      // constant, and the node no longer makes it.
      for (size_t o = 0; o < outs.size(); ++o) {
        if (n.outputs[o] < 0 || !outs[o].defined()) continue;
        std::set<const te::OperationNode*> read = reachable_operations({outs[o]});
        if (std::none_of(placeholders.begin(), placeholders.end(),
                         [&](const te::Tensor& p) { return p.defined() && read.count(p.op()); })) {
          ir::PrimFunc f = te::create_prim_func({outs[o]}, "fold");
          graph.value(n.outputs[o]).constant = interp::run_on_inputs(f, {}).at(0);
          graph.nodes[k].outputs[o] = -1;
        }
      }
      if (std::all_of(n.outputs.begin(), n.outputs.end(), [](int o) { return o < 0; })) {
        folded[k] = true;
        continue;
      }
      std::set<const te::OperationNode*> read = reachable_operations(outs);
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] >= 0 && graph.value(n.inputs[i]).numel() == 0 &&
            read.count(placeholders[i].op()))
          throw_input_error(
              "node '{}' ({}): input '{}' is empty, and empty tensors are computed only where "
              "they are constants",
              n.name, n.op, graph.value(n.inputs[i]).name);
      continue;
    }
    std::vector<runtime::NDArray> results;
    if (n.op == "Shape")
      results.push_back(fold_shape(outs[0], graph.value(n.inputs[0]).shape, n));
    else
      results = evaluate(graph, n, placeholders, outs);
    size_t next = 0;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0 && outs[o].defined())
        graph.value(n.outputs[o]).constant = results.at(next++);
    folded[k] = true;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < graph.nodes.size(); ++k)
    if (!folded[k]) kept.push_back(std::move(graph.nodes[k]));
  graph.nodes = std::move(kept);
}

void fold_batch_norm(Graph& graph) {
  std::vector<std::vector<int>> users = graph.consumers();
  std::vector<bool> is_output(graph.values.size(), false);
  for (int o : graph.outputs) is_output[static_cast<size_t>(o)] = true;
  std::vector<int> producer(graph.values.size(), -1);
  for (size_t k = 0; k < graph.nodes.size(); ++k)
    for (int o : graph.nodes[k].outputs)
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(k);
  std::vector<bool> removed(graph.nodes.size(), false);
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    Node& bn = graph.nodes[k];
    if (bn.op != "BatchNormalization" || bn.get_int("training_mode", 0) != 0) continue;
    int x = bn.inputs[0];
    int p = producer[static_cast<size_t>(x)];
    if (p < 0 || users[static_cast<size_t>(x)].size() != 1 || is_output[static_cast<size_t>(x)])
      continue;
    Node& prev = graph.nodes[static_cast<size_t>(p)];
    bool conv = prev.op == "Conv";
    if (!conv && !(prev.op == "Gemm" && graph.value(x).shape.size() == 2)) continue;
    bool params_known = true;
    for (size_t i = 1; i <= 4; ++i)
      params_known = params_known && graph.value(bn.inputs[i]).is_constant();
    int w = prev.inputs[1];
    if (!params_known || !graph.value(w).is_constant() || graph.value(w).dtype != kFloat32)
      continue;
    int bias = prev.inputs.size() > 2 ? prev.inputs[2] : -1;
    if (bias >= 0 && !graph.value(bias).is_constant()) continue;
    bool trans_b = !conv && prev.get_int("transB", 0) != 0;
    double beta = conv ? 1 : prev.get_float("beta", 1);
    const Value& wv = graph.value(w);
    int64_t channels = graph.value(x).shape[1];
    if (bias >= 0 && !conv && graph.value(bias).numel() != channels &&
        graph.value(bias).numel() != 1)
      continue;
    // a = scale / sqrt(var + eps); W' = W a (per output channel); b' = (b - mean) a + B.
    double eps = bn.get_float("epsilon", 1e-5);
    const auto& scale = graph.value(bn.inputs[1]).constant;
    const auto& shift = graph.value(bn.inputs[2]).constant;
    const auto& mean = graph.value(bn.inputs[3]).constant;
    const auto& var = graph.value(bn.inputs[4]).constant;
    std::vector<double> a(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c)
      a[static_cast<size_t>(c)] = scale.get_flat(c) / std::sqrt(var.get_flat(c) + eps);
    runtime::NDArray nw = wv.constant.copy();
    int64_t n = nw.numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t c = conv ? i / (n / channels) : trans_b ? i / wv.shape[1] : i % wv.shape[1];
      nw.set_flat(i, nw.get_flat(i) * a[static_cast<size_t>(c)]);
    }
    runtime::NDArray nb({channels}, kFloat32);
    for (int64_t c = 0; c < channels; ++c) {
      double b =
          bias < 0
              ? 0
              : graph.value(bias).constant.get_flat(graph.value(bias).numel() == 1 ? 0 : c) * beta;
      nb.set_flat(c, (b - mean.get_flat(c)) * a[static_cast<size_t>(c)] + shift.get_flat(c));
    }
    prev.inputs.resize(3);
    prev.inputs[1] = graph.add_value({wv.name + "_bn_folded", nw.shape(), kFloat32, nw});
    prev.inputs[2] = graph.add_value({bn.name + "_bias", {channels}, kFloat32, nb});
    if (!conv) prev.attributes["beta"] = 1.0;  // alpha A (B a) + ((beta C - mean) a + B)
    prev.outputs[0] = bn.outputs[0];
    removed[k] = true;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < graph.nodes.size(); ++k)
    if (!removed[k]) kept.push_back(std::move(graph.nodes[k]));
  graph.nodes = std::move(kept);
  graph.remove_dead();
}

}  // namespace tyche::graph
