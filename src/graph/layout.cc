#include "graph/layout.h"

#include <map>
#include <optional>
#include <set>

#include "graph/op_registry.h"
#include "graph/passes.h"
#include "support/error.h"

namespace tyche::graph {

namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

std::vector<int64_t> permuted(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(shape[static_cast<size_t>(p)]);
  return out;
}

// `a` (rank 4) with its axes permuted: out[i...] = a[...] with out axis d = a axis perm[d].
runtime::NDArray permute(const runtime::NDArray& a, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& s = a.shape();
  runtime::NDArray out(permuted(s, perm), a.dtype());
  const std::vector<int64_t>& o = out.shape();
  std::vector<int64_t> stride(4, 1);
  for (int d = 2; d >= 0; --d)
    stride[static_cast<size_t>(d)] =
        stride[static_cast<size_t>(d) + 1] * s[static_cast<size_t>(d) + 1];
  int64_t k = 0;
  for (int64_t i0 = 0; i0 < o[0]; ++i0)
    for (int64_t i1 = 0; i1 < o[1]; ++i1)
      for (int64_t i2 = 0; i2 < o[2]; ++i2)
        for (int64_t i3 = 0; i3 < o[3]; ++i3, ++k) {
          int64_t idx[4] = {i0, i1, i2, i3};
          int64_t src = 0;
          for (size_t d = 0; d < 4; ++d) src += idx[d] * stride[static_cast<size_t>(perm[d])];
          out.set_flat(k, a.get_flat(src));
        }
  return out;
}

// The constant weight input of the convolutions the pass moves: Conv and ConvInteger read it
// second, QLinearConv fourth (after the activation's scale and zero point).
std::optional<size_t> conv_weight_input(const std::string& op) {
  if (op == "Conv" || op == "ConvInteger") return 1;
  if (op == "QLinearConv") return 3;
  return std::nullopt;
}

// Ops whose 1-D constants are per-axis (a scale per channel), not numpy-broadcast operands.
bool is_per_axis_op(const std::string& op) {
  return op == "QuantizeLinear" || op == "DequantizeLinear";
}

bool is_pointwise(const std::string& op) {
  const OpSpec* spec = find_op(op);
  return spec &&
         (spec->pattern == OpPattern::kElementwise || spec->pattern == OpPattern::kBroadcast) &&
         op != "BatchNormalization" && op != "Where";
}

class LayoutPass {
 public:
  explicit LayoutPass(Graph& g) : g_(g), nhwc_(g.values.size(), false) {}

  void run() {
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    for (Node& n : nodes) {
      if (channels_last(n))
        move_to_nhwc(n);
      else
        for (int& in : n.inputs)
          if (in >= 0 && is_nhwc(in)) in = transposed(in, false);
      g_.nodes.push_back(std::move(n));
    }
    for (int& out : g_.outputs)
      if (is_nhwc(out)) {
        std::string name = g_.value(out).name;
        g_.value(out).name = name + ".nhwc";
        out = transposed(out, false);
        g_.value(out).name = name;
      }
  }

 private:
  bool is_nhwc(int v) const {
    return static_cast<size_t>(v) < nhwc_.size() && nhwc_[static_cast<size_t>(v)];
  }
  bool is_activation(int v) const {
    return v >= 0 && !g_.value(v).is_constant() && g_.value(v).shape.size() == 4;
  }

  bool any_nhwc_input(const Node& n) const {
    for (int in : n.inputs)
      if (in >= 0 && is_nhwc(in)) return true;
    return false;
  }

  // Identity, and Dropout at inference (its mask, where named, is all true): a copy, which keeps
  // its input's layout rather than sending it back to NCHW and the next convolution's input to
  // NHWC again (SqueezeNet's and Inception v1's Dropout sit between 4-D activations).
  static bool is_copy(const Node& n) { return n.op == "Identity" || n.op == "Dropout"; }

  bool channels_last(const Node& n) const {
    if (is_copy(n)) {
      for (size_t i = 1; i < n.inputs.size(); ++i)  // Dropout's ratio and mode: not activations
        if (n.inputs[i] >= 0 && !g_.value(n.inputs[i]).is_constant()) return false;
      return !n.inputs.empty() && n.inputs[0] >= 0 && is_nhwc(n.inputs[0]) && !n.outputs.empty() &&
             n.outputs[0] >= 0;
    }
    if (n.outputs.size() != 1 || n.outputs[0] < 0 || g_.value(n.outputs[0]).shape.size() != 4)
      return false;
    if (auto w = conv_weight_input(n.op))
      return is_activation(n.inputs[0]) && *w < n.inputs.size() && n.inputs[*w] >= 0 &&
             g_.value(n.inputs[*w]).is_constant();
    if (n.op == "MaxPool" || n.op == "AveragePool" || n.op == "GlobalAveragePool" ||
        n.op == "GlobalMaxPool" || n.op == "LRN")
      return is_nhwc(n.inputs[0]);
    if (n.op == "Concat" || is_pointwise(n.op)) {
      for (int in : n.inputs)
        if (in >= 0 && !g_.value(in).is_constant() && g_.value(in).shape.size() != 4) return false;
      return any_nhwc_input(n);
    }
    return false;
  }

  // The value `v` transposed to NHWC (to_nhwc) or back to NCHW, made once and shared.
  int transposed(int v, bool to_nhwc) {
    auto& cache = to_nhwc ? to_nhwc_ : to_nchw_;
    auto it = cache.find(v);
    if (it != cache.end()) return it->second;
    const std::vector<int64_t>& perm = to_nhwc ? kToNhwc : kToNchw;
    std::string name = g_.value(v).name + (to_nhwc ? ".to_nhwc" : ".to_nchw");
    int out = g_.add_value({name, permuted(g_.value(v).shape, perm), g_.value(v).dtype, {}});
    nhwc_.resize(g_.values.size(), false);
    nhwc_[static_cast<size_t>(out)] = to_nhwc;
    Node t{"Transpose", name, {v}, {out}, {}, {}};
    t.attributes["perm"] = perm;
    g_.nodes.push_back(std::move(t));
    return cache[v] = out;
  }

  int constant(runtime::NDArray a, const std::string& name) {
    int id = g_.add_value({name, a.shape(), a.dtype(), a});
    nhwc_.resize(g_.values.size(), false);
    return id;
  }

  void move_to_nhwc(Node& n) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int in = n.inputs[i];
      if (in < 0) continue;
      const Value& v = g_.value(in);
      if (!v.is_constant()) {
        if (!is_nhwc(in)) n.inputs[i] = transposed(in, true);
        continue;
      }
      auto weight = conv_weight_input(n.op);
      if (weight && i == *weight) {
        n.inputs[i] = constant(permute(v.constant, {2, 3, 1, 0}),
                               v.name + ".hwio");  // (CO, CI/g, KH, KW) -> (KH, KW, CI/g, CO)
      } else if (!weight && !is_per_axis_op(n.op) && v.constant.numel() > 1 &&
                 v.shape.size() <= 4) {
        // A broadcast constant: right-aligned to rank 4 as NCHW broadcasting reads it, then
        // permuted.
        std::vector<int64_t> shape4(4 - v.shape.size(), 1);
        shape4.insert(shape4.end(), v.shape.begin(), v.shape.end());
        runtime::NDArray a(shape4, v.dtype);
        for (int64_t k = 0; k < a.numel(); ++k) a.set_flat(k, v.constant.get_flat(k));
        n.inputs[i] = constant(permute(a, kToNhwc), v.name + ".nhwc");
      }
    }
    if (is_per_axis_op(n.op)) {
      int64_t axis = n.get_int("axis", 1);
      if (axis < 0) axis += 4;
      if (axis >= 0 && axis < 4) n.attributes["axis"] = kToNchw[static_cast<size_t>(axis)];
    } else if (n.op == "Concat") {
      int64_t axis = n.get_int("axis", 0);
      if (axis < 0) axis += 4;
      n.attributes["axis"] =
          kToNchw[static_cast<size_t>(axis)];  // where NCHW axis `axis` sits in NHWC
    } else if (!is_pointwise(n.op) && !is_copy(n)) {
      n.attributes[kLayoutAttribute] = std::string("NHWC");
    }
    for (int out : n.outputs) {  // a copy's outputs all have its input's shape (Dropout's mask)
      if (out < 0) continue;
      g_.value(out).shape = permuted(g_.value(out).shape, kToNhwc);
      nhwc_[static_cast<size_t>(out)] = true;
    }
  }

  Graph& g_;
  std::vector<bool> nhwc_;
  std::map<int, int> to_nhwc_, to_nchw_;
};

}  // namespace

Layout parse_layout(const std::string& name) {
  if (name == "nchw") return Layout::kNCHW;
  if (name == "nhwc") return Layout::kNHWC;
  throw_input_error("unknown layout '{}' (nchw or nhwc)", name);
}

void convert_layout(Graph& graph, Layout layout) {
  if (layout == Layout::kNCHW) return;
  LayoutPass(graph).run();
  infer_and_fold(graph);  // every shape again from the converters: a check of the rewrite
  graph.remove_dead();
}

}  // namespace tyche::graph
