// fuse_qdq: a QDQ model's quantized convolutions and matrix products as the integer operators.
// onnxruntime's quantizer (quantize_static's default format) writes a quantized Conv as
//   y = QuantizeLinear(Conv(DequantizeLinear(xq), DequantizeLinear(wq), DequantizeLinear(bq)))
// with the weights and bias constant; run as written, the weights would fold to float and the
// convolution be a float one. Where the pattern holds (scalar activation scales and zero points,
// weights per tensor or per output channel, the bias quantized at x_scale * w_scale, the float
// result read only by the QuantizeLinear) it becomes QLinearConv on xq and wq, as onnxruntime
// itself does when it loads such a model; MatMul with a constant 2-D right operand becomes
// QLinearMatMul. The DequantizeLinear nodes stay for any other reader; remove_dead drops the rest.
// Runs before infer_and_fold, which would otherwise fold the weights' DequantizeLinear.
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "graph/op_registry.h"
#include "graph/passes.h"

namespace tyche::graph {

namespace {

class QdqFusion {
 public:
  explicit QdqFusion(Graph& g) : g_(g), users_(g.consumers()), producer_(g.values.size(), -1) {
    for (size_t k = 0; k < g.nodes.size(); ++k)
      for (int o : g.nodes[k].outputs)
        if (o >= 0) producer_[static_cast<size_t>(o)] = static_cast<int>(k);
    for (int o : g.outputs) is_output_.insert(o);
  }

  void run() {
    std::map<size_t, Node> at_quantize;  // each fused node, by its QuantizeLinear's index
    std::vector<bool> dead(g_.nodes.size(), false);
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& n = g_.nodes[k];
      if (n.op != "Conv" && n.op != "MatMul") continue;
      std::optional<Node> fused = fuse(n);
      if (!fused) continue;
      size_t q = static_cast<size_t>(quantize_of(n));
      dead[k] = dead[q] = true;
      at_quantize.emplace(q, std::move(*fused));
    }
    if (at_quantize.empty()) return;
    // A fused node takes its QuantizeLinear's place: its inputs are all defined before the Conv.
    std::vector<Node> nodes;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (!dead[k])
        nodes.push_back(std::move(g_.nodes[k]));
      else if (auto it = at_quantize.find(k); it != at_quantize.end())
        nodes.push_back(std::move(it->second));
    }
    g_.nodes = std::move(nodes);
  }

 private:
  // The DequantizeLinear node producing value `v`, or nullptr.
  const Node* dequantize(int v) const {
    if (v < 0 || producer_[static_cast<size_t>(v)] < 0) return nullptr;
    const Node& p = g_.nodes[static_cast<size_t>(producer_[static_cast<size_t>(v)])];
    return p.op == "DequantizeLinear" ? &p : nullptr;
  }
  bool constant(int v) const { return v >= 0 && g_.value(v).is_constant(); }
  bool scalar_constant(int v) const { return constant(v) && g_.value(v).numel() == 1; }
  // The QuantizeLinear that is the only reader of node `n`'s output, or -1.
  int quantize_of(const Node& n) const {
    int y = n.outputs.empty() ? -1 : n.outputs[0];
    if (y < 0 || is_output_.count(y) || users_[static_cast<size_t>(y)].size() != 1) return -1;
    int q = users_[static_cast<size_t>(y)][0];
    const Node& qn = g_.nodes[static_cast<size_t>(q)];
    if (qn.op != "QuantizeLinear" || qn.inputs[0] != y || qn.inputs.size() < 3 ||
        !scalar_constant(qn.inputs[1]) || !scalar_constant(qn.inputs[2]))
      return -1;
    return q;
  }
  // A zero point input: the node's own, or a new scalar zero of `like`'s type.
  int zero_point(const Node& dq, int like) {
    if (dq.inputs.size() > 2 && dq.inputs[2] >= 0) return dq.inputs[2];
    runtime::NDArray zero({}, g_.value(like).dtype);
    zero.set_flat(0, 0);
    return g_.add_value({g_.value(like).name + ".zero_point", {}, zero.dtype(), zero});
  }

  std::optional<Node> fuse(const Node& n) {
    bool conv = n.op == "Conv";
    if (n.inputs.size() < 2 || (!conv && n.inputs.size() != 2)) return std::nullopt;
    const Node* dx = dequantize(n.inputs[0]);
    const Node* dw = dequantize(n.inputs[1]);
    int q = quantize_of(n);
    if (!dx || !dw || q < 0) return std::nullopt;
    if (dx->inputs.size() < 2 || !scalar_constant(dx->inputs[1]) ||
        (dx->inputs.size() > 2 && dx->inputs[2] >= 0 && !scalar_constant(dx->inputs[2])))
      return std::nullopt;
    int wq = dw->inputs[0];
    if (!constant(wq) || dw->inputs.size() < 2 || !constant(dw->inputs[1])) return std::nullopt;
    const Value& w = g_.value(wq);
    if (w.dtype != DataType::Int(8) && w.dtype != DataType::UInt(8)) return std::nullopt;
    // Weights per tensor, or per output channel (Conv's axis 0, MatMul's last).
    int64_t channels = conv ? w.shape.at(0) : w.shape.back();
    int64_t per = g_.value(dw->inputs[1]).numel();
    int64_t want_axis = conv ? 0 : static_cast<int64_t>(w.shape.size()) - 1;
    int64_t axis = dw->get_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(w.shape.size());
    if (per != 1 && (per != channels || axis != want_axis)) return std::nullopt;
    if (dw->inputs.size() > 2 && dw->inputs[2] >= 0 && !constant(dw->inputs[2]))
      return std::nullopt;
    if (!conv && w.shape.size() != 2) return std::nullopt;
    const Node& qn = g_.nodes[static_cast<size_t>(q)];
    int bias = -1;
    if (conv && n.inputs.size() > 2 && n.inputs[2] >= 0) {
      const Node* db = dequantize(n.inputs[2]);
      if (!db || !constant(db->inputs[0]) || g_.value(db->inputs[0]).dtype != kInt32 ||
          db->inputs.size() < 2 || !constant(db->inputs[1]))
        return std::nullopt;
      if (db->inputs.size() > 2 && db->inputs[2] >= 0) {
        const runtime::NDArray& bz = g_.value(db->inputs[2]).constant;
        for (int64_t i = 0; i < bz.numel(); ++i)
          if (bz.get_flat(i) != 0) return std::nullopt;
      }
      // The bias's scale must be x_scale * w_scale (per channel): QLinearConv's int32 bias has no
      // scale of its own.
      const runtime::NDArray& bs = g_.value(db->inputs[1]).constant;
      const runtime::NDArray& ws = g_.value(dw->inputs[1]).constant;
      double xs = g_.value(dx->inputs[1]).constant.get_flat(0);
      for (int64_t c = 0; c < bs.numel(); ++c) {
        double want = xs * ws.get_flat(per == 1 ? 0 : c);
        if (std::abs(bs.get_flat(c) - want) > 1e-6 * std::abs(want)) return std::nullopt;
      }
      bias = db->inputs[0];
    }
    Node f;
    f.op = conv ? "QLinearConv" : "QLinearMatMul";
    f.name = n.name + ".quantized";
    f.attributes = conv ? n.attributes : std::map<std::string, Attribute>{};
    f.inputs = {dx->inputs[0],
                dx->inputs[1],
                zero_point(*dx, dx->inputs[0]),
                wq,
                dw->inputs[1],
                zero_point(*dw, wq),
                qn.inputs[1],
                qn.inputs[2]};
    if (bias >= 0) f.inputs.push_back(bias);
    f.outputs = {qn.outputs[0]};
    return f;
  }

  Graph& g_;
  std::vector<std::vector<int>> users_;
  std::vector<int> producer_;
  std::set<int> is_output_;
};

// The integer products' activation zero point folded into an int32 bias, where the weights are
// constant (sum (x - xz) w = sum x w - xz sum w, the last term known at import). The node keeps
// its inputs and gets the folded bias as input `bias_at` (QLinearConv's own bias input; past the
// end of the others) and the attribute kZeroPointFolded.
void fold_zero_point(Graph& g, Node& n, size_t x, size_t w, size_t x_zp, size_t w_zp,
                     size_t bias_at) {
  auto has = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0; };
  if (!has(x) || !has(w) || !g.value(n.inputs[w]).is_constant()) return;
  const Value& xv = g.value(n.inputs[x]);
  const Value& wv = g.value(n.inputs[w]);
  bool conv = n.op == "QLinearConv" || n.op == "ConvInteger";
  if (xv.dtype != DataType::UInt(8) && xv.dtype != DataType::Int(8)) return;
  if (!conv && wv.shape.size() != 2) return;
  if (has(x_zp) && (!g.value(n.inputs[x_zp]).is_constant() || g.value(n.inputs[x_zp]).numel() != 1))
    return;
  if (has(w_zp)) {
    const Value& z = g.value(n.inputs[w_zp]);
    if (!z.is_constant()) return;
    for (int64_t i = 0; i < z.numel(); ++i)
      if (z.constant.get_flat_int(i) != 0) return;
  }
  // An int8 activation is computed shifted to uint8 (ops_quant.cc): its zero point + 128.
  int64_t xz = (has(x_zp) ? g.value(n.inputs[x_zp]).constant.get_flat_int(0) : 0) +
               (xv.dtype == DataType::Int(8) ? 128 : 0);
  int64_t channels =
      conv ? wv.shape.at(0) : wv.shape.at(1);  // NCHW (CO, ...) or (K, N): before the layout pass
  runtime::NDArray bias({channels}, kInt32);
  const Value* b = has(bias_at) ? &g.value(n.inputs[bias_at]) : nullptr;
  if (b && (!b->is_constant() || b->numel() != channels)) return;
  int64_t per = wv.numel() / channels;
  for (int64_t c = 0; c < channels; ++c) {
    int64_t sum = 0;
    for (int64_t t = 0; t < per; ++t)
      sum += wv.constant.get_flat_int(conv ? c * per + t : t * channels + c);
    int64_t v = (b ? b->constant.get_flat_int(c) : 0) - xz * sum;
    if (v < INT32_MIN || v > INT32_MAX)
      return;  // the int32 accumulator's range: leave it to the kernel
    bias.set_flat_int(c, v);
  }
  int id = g.add_value({n.name + ".bias_zero_point_folded", {channels}, kInt32, bias});
  while (n.inputs.size() <= bias_at) n.inputs.push_back(-1);
  n.inputs[bias_at] = id;
  n.attributes[kZeroPointFolded] = int64_t{1};
}

}  // namespace

void fuse_qdq(Graph& graph) {
  QdqFusion(graph).run();
}

void fold_zero_points(Graph& graph) {
  for (Node& n : graph.nodes) {
    if (n.has(kZeroPointFolded)) continue;
    if (n.op == "QLinearConv")
      fold_zero_point(graph, n, 0, 3, 2, 5, 8);
    else if (n.op == "QLinearMatMul")
      fold_zero_point(graph, n, 0, 3, 2, 5, 8);
    else if (n.op == "ConvInteger")
      fold_zero_point(graph, n, 0, 1, 2, 3, 4);
    else if (n.op == "MatMulInteger")
      fold_zero_point(graph, n, 0, 1, 2, 3, 4);
  }
}

}  // namespace tyche::graph
