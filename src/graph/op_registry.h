// ONNX operators as Tyche knows them: one table entry per op type (op_registry.cc), each with
// its fusion pattern and a converter that defines the op's outputs as te computes over its
// inputs. The same converter serves shape inference (run on placeholders), constant folding (the
// computes interpreted on constant inputs) and the fused functions that become tuning tasks, so
// an op's meaning is written once.
#pragma once

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "ir/op.h"
#include "te/tensor.h"

namespace tyche::graph {

// The attribute the layout pass (layout.h) sets to "NHWC" on a node whose activations it moved
// to channels last; converters of layout-aware ops read it.
inline constexpr const char* kLayoutAttribute = "tyche.layout";
// Set by fold_zero_points (passes.h) on a quantized product whose activation zero point's term is
// in its int32 bias input (QLinearConv's, or input 4 of ConvInteger and MatMulInteger, input 8
// of QLinearMatMul).
inline constexpr const char* kZeroPointFolded = "tyche.zero_point_folded";

// How an op may fuse (MetaSchedule's/TVM's op patterns).
enum class OpPattern : uint8_t {
  kElementwise,  // out[i] = f(in[i]): joins its producer's group
  kBroadcast,    // elementwise with broadcast inputs: joins its producer's group
  kInjective,    // a gather of its input (transpose, slice, concat): fuses into a consumer anchor
  kReduction,    // softmax, normalizations, reductions, pooling: an anchor
  kAnchor,       // conv, matmul, gemm: an anchor whose epilogue and prologue fuse into it
  kView,         // reshape-like: the same bytes under a new shape, no kernel
};
const char* pattern_name(OpPattern p);

// Unique te names inside one function under construction ("conv", "conv_1", ...), so the same
// structure always gets the same names and identical functions hash alike.
class NameGen {
 public:
  std::string operator()(const std::string& base);

 private:
  std::map<std::string, int> used_;
};

// What a converter sees of the node it converts.
class ConvertContext {
 public:
  ConvertContext(const Graph& graph, const Node& node, std::vector<te::Tensor> inputs,
                 NameGen& names);

  const Node& node() const { return node_; }
  int opset() const { return graph_.opset; }
  size_t num_inputs() const { return node_.inputs.size(); }
  bool has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] >= 0; }
  const Value& value(size_t i) const;
  const std::vector<int64_t>& shape(size_t i) const { return value(i).shape; }
  DataType dtype(size_t i) const { return value(i).dtype; }
  int rank(size_t i) const { return static_cast<int>(shape(i).size()); }
  const te::Tensor& input(size_t i) const;

  // Input `i`'s contents, which the op needs at compile time (a Reshape's shape); InputError
  // naming the node when the input is not a constant.
  const runtime::NDArray& constant(size_t i, const char* what) const;
  std::vector<int64_t> constant_ints(size_t i, const char* what) const;
  // The one element of a one-element constant input, else nothing.
  std::optional<double> scalar(size_t i) const;

  // Element `indices` of input `i`, or its literal value when it is a one-element constant.
  ir::Expr load(size_t i, const std::vector<ir::Expr>& indices) const;
  // Element of input `i` under numpy broadcasting to an output of shape `out_shape` indexed by
  // `out` (broadcast_index).
  ir::Expr load_broadcast(size_t i, const std::vector<ir::Expr>& out,
                          const std::vector<int64_t>& out_shape) const;

  // A fresh compute name in the function being built.
  std::string name(const std::string& base) const { return names_(base); }
  // An axis in [0, rank) from ONNX's possibly negative `axis`; InputError when out of range.
  int axis(int64_t axis, int rank, const char* what = "axis") const;
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Graph& graph_;
  const Node& node_;
  std::vector<te::Tensor> inputs_;
  NameGen& names_;
};

using Converter = std::vector<te::Tensor> (*)(ConvertContext&);

struct OpSpec {
  std::string_view name;
  OpPattern pattern;
  Converter convert;
};

// The op type's entry, or nullptr when Tyche does not support it.
const OpSpec* find_op(std::string_view op_type);
// Every supported op type, sorted.
std::vector<std::string> supported_ops();

// Converts `node` with te tensors for its inputs (undefined where an input is left out): one
// tensor per output of the node (an output left out gets an undefined tensor's place too).
std::vector<te::Tensor> convert_node(const Graph& graph, const Node& node,
                                     const std::vector<te::Tensor>& inputs, NameGen& names);

// Operations reachable from `outs`: a placeholder a converter never read is not among them.
std::set<const te::OperationNode*> reachable_operations(const std::vector<te::Tensor>& outs);

// Numpy broadcasting of two shapes; InputError (naming `node`) when they do not broadcast.
std::vector<int64_t> broadcast_shapes(const Node& node, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b);
// The index into an operand of shape `in` that broadcasts to an output of shape `out_shape`
// indexed by `out` (right-aligned). A size-1 dimension is read at 0 only where the output's is
// longer: an operand of the output's own shape keeps the output's indices, the element-wise
// pattern that inlining and consumer fusion look for (a residual add read at [0, h, w, c] is not
// one).
std::vector<ir::Expr> broadcast_index(const std::vector<int64_t>& in,
                                      const std::vector<ir::Expr>& out,
                                      const std::vector<int64_t>& out_shape);

// The op families' converters (ops_*.cc), for the table.
namespace ops {

// A compute's iteration variables as index expressions.
inline std::vector<ir::Expr> exprs(const std::vector<ir::Var>& vars) {
  return {vars.begin(), vars.end()};
}
// Refuses (naming the node) a first input that is not a float tensor.
inline void require_float(ConvertContext& c) {
  if (!c.dtype(0).is_float()) c.fail(fmt::format("needs a float input, not {}", c.dtype(0).str()));
}
// A float64 literal (the ops that compute coordinates and weights in double precision).
inline ir::Expr f64(double v) {
  return ir::make_float(v, kFloat64);
}
// An int32 constant (shape arithmetic, indices).
inline ir::Expr const_i32(int64_t v) {
  return ir::Expr(static_cast<int>(v));
}
// An index read from an integer tensor, as int32, counted from the end of `n` when negative.
inline ir::Expr index_from_end(ir::Expr k, int64_t n) {
  if (k.dtype() != kInt32) k = ir::cast(kInt32, k);
  return ir::select(k < ir::Expr(0), k + const_i32(n), k);
}
// `k` clamped into [0, n): a bad index never reads outside the data.
inline ir::Expr clamped_index(ir::Expr k, int64_t n) {
  return ir::max(ir::min(std::move(k), const_i32(n - 1)), ir::Expr(0));
}

// If, Loop and Scan never reach a converter: control_flow.h expands them first.
std::vector<te::Tensor> control_flow(ConvertContext& c);
std::vector<te::Tensor> relu(ConvertContext& c);
std::vector<te::Tensor> clip(ConvertContext& c);
std::vector<te::Tensor> leaky_relu(ConvertContext& c);
std::vector<te::Tensor> sigmoid(ConvertContext& c);
std::vector<te::Tensor> tanh(ConvertContext& c);
std::vector<te::Tensor> erf(ConvertContext& c);
std::vector<te::Tensor> gelu(ConvertContext& c);
// A float op that is one math call per element (Sin, Cos, ..., Atanh).
std::vector<te::Tensor> float_call(ConvertContext& c, ir::CallOp op);
// BitwiseAnd/Or/Xor/Not on integers, and BitShift (unsigned).
std::vector<te::Tensor> bit_op(ConvertContext& c, ir::CallOp op);
template <ir::CallOp Op>
std::vector<te::Tensor> bit_op(ConvertContext& c) {
  return bit_op(c, Op);
}
std::vector<te::Tensor> bit_shift(ConvertContext& c);
template <ir::CallOp Op>
std::vector<te::Tensor> float_call(ConvertContext& c) {
  return float_call(c, Op);
}
std::vector<te::Tensor> hard_swish(ConvertContext& c);
std::vector<te::Tensor> sqrt(ConvertContext& c);
std::vector<te::Tensor> exp(ConvertContext& c);
std::vector<te::Tensor> neg(ConvertContext& c);
std::vector<te::Tensor> reciprocal(ConvertContext& c);
std::vector<te::Tensor> cast(ConvertContext& c);
std::vector<te::Tensor> add(ConvertContext& c);
std::vector<te::Tensor> sub(ConvertContext& c);
std::vector<te::Tensor> mul(ConvertContext& c);
std::vector<te::Tensor> div(ConvertContext& c);
std::vector<te::Tensor> pow(ConvertContext& c);
std::vector<te::Tensor> where(ConvertContext& c);
std::vector<te::Tensor> batch_norm(ConvertContext& c);
std::vector<te::Tensor> conv(ConvertContext& c);
std::vector<te::Tensor> conv_transpose(ConvertContext& c);
std::vector<te::Tensor> matmul(ConvertContext& c);
std::vector<te::Tensor> gemm(ConvertContext& c);
std::vector<te::Tensor> softmax(ConvertContext& c);
std::vector<te::Tensor> layer_norm(ConvertContext& c);
std::vector<te::Tensor> reduce_mean(ConvertContext& c);
std::vector<te::Tensor> reduce_sum(ConvertContext& c);
std::vector<te::Tensor> reduce_max(ConvertContext& c);
std::vector<te::Tensor> reduce_min(ConvertContext& c);
std::vector<te::Tensor> reduce_prod(ConvertContext& c);
std::vector<te::Tensor> reduce_sum_square(ConvertContext& c);
std::vector<te::Tensor> reduce_l1(ConvertContext& c);
std::vector<te::Tensor> reduce_l2(ConvertContext& c);
std::vector<te::Tensor> reduce_log_sum(ConvertContext& c);
std::vector<te::Tensor> reduce_log_sum_exp(ConvertContext& c);
std::vector<te::Tensor> log_softmax(ConvertContext& c);
std::vector<te::Tensor> group_norm(ConvertContext& c);
std::vector<te::Tensor> abs(ConvertContext& c);
std::vector<te::Tensor> sign(ConvertContext& c);
std::vector<te::Tensor> log(ConvertContext& c);
std::vector<te::Tensor> floor(ConvertContext& c);
std::vector<te::Tensor> ceil(ConvertContext& c);
std::vector<te::Tensor> round(ConvertContext& c);
std::vector<te::Tensor> elu(ConvertContext& c);
std::vector<te::Tensor> celu(ConvertContext& c);
std::vector<te::Tensor> selu(ConvertContext& c);
std::vector<te::Tensor> softplus(ConvertContext& c);
std::vector<te::Tensor> softsign(ConvertContext& c);
std::vector<te::Tensor> mish(ConvertContext& c);
std::vector<te::Tensor> hard_sigmoid(ConvertContext& c);
std::vector<te::Tensor> thresholded_relu(ConvertContext& c);
std::vector<te::Tensor> shrink(ConvertContext& c);
std::vector<te::Tensor> prelu(ConvertContext& c);
std::vector<te::Tensor> is_nan(ConvertContext& c);
std::vector<te::Tensor> is_inf(ConvertContext& c);
std::vector<te::Tensor> less(ConvertContext& c);
std::vector<te::Tensor> less_or_equal(ConvertContext& c);
std::vector<te::Tensor> greater(ConvertContext& c);
std::vector<te::Tensor> greater_or_equal(ConvertContext& c);
std::vector<te::Tensor> equal(ConvertContext& c);
std::vector<te::Tensor> logical_and(ConvertContext& c);
std::vector<te::Tensor> logical_or(ConvertContext& c);
std::vector<te::Tensor> logical_xor(ConvertContext& c);
std::vector<te::Tensor> logical_not(ConvertContext& c);
std::vector<te::Tensor> variadic_max(ConvertContext& c);
std::vector<te::Tensor> variadic_min(ConvertContext& c);
std::vector<te::Tensor> variadic_sum(ConvertContext& c);
std::vector<te::Tensor> variadic_mean(ConvertContext& c);
std::vector<te::Tensor> cast_like(ConvertContext& c);
std::vector<te::Tensor> mod(ConvertContext& c);
std::vector<te::Tensor> constant_of_shape(ConvertContext& c);
std::vector<te::Tensor> size(ConvertContext& c);
std::vector<te::Tensor> range(ConvertContext& c);
std::vector<te::Tensor> max_pool(ConvertContext& c);
std::vector<te::Tensor> average_pool(ConvertContext& c);
std::vector<te::Tensor> global_average_pool(ConvertContext& c);
std::vector<te::Tensor> lrn(ConvertContext& c);
std::vector<te::Tensor> global_max_pool(ConvertContext& c);
std::vector<te::Tensor> swish(ConvertContext& c);
std::vector<te::Tensor> arg_max(ConvertContext& c);
std::vector<te::Tensor> arg_min(ConvertContext& c);
std::vector<te::Tensor> hardmax(ConvertContext& c);
std::vector<te::Tensor> rms_norm(ConvertContext& c);
std::vector<te::Tensor> lp_norm(ConvertContext& c);
std::vector<te::Tensor> instance_norm(ConvertContext& c);
std::vector<te::Tensor> mean_variance_norm(ConvertContext& c);
// ops_index.cc
std::vector<te::Tensor> gather_elements(ConvertContext& c);
std::vector<te::Tensor> trilu(ConvertContext& c);
std::vector<te::Tensor> tile(ConvertContext& c);
std::vector<te::Tensor> space_to_depth(ConvertContext& c);
std::vector<te::Tensor> depth_to_space(ConvertContext& c);
std::vector<te::Tensor> one_hot(ConvertContext& c);
std::vector<te::Tensor> cum_sum(ConvertContext& c);
std::vector<te::Tensor> cum_prod(ConvertContext& c);
std::vector<te::Tensor> pad(ConvertContext& c);
std::vector<te::Tensor> eye_like(ConvertContext& c);
std::vector<te::Tensor> center_crop_pad(ConvertContext& c);
std::vector<te::Tensor> col2im(ConvertContext& c);
std::vector<te::Tensor> swiglu(ConvertContext& c);
std::vector<te::Tensor> dynamic_quantize_linear(ConvertContext& c);
std::vector<te::Tensor> dft(ConvertContext& c);
std::vector<te::Tensor> causal_conv_with_state(ConvertContext& c);
std::vector<te::Tensor> rnn(ConvertContext& c);
std::vector<te::Tensor> gru(ConvertContext& c);
std::vector<te::Tensor> lstm(ConvertContext& c);
std::vector<te::Tensor> linear_attention(ConvertContext& c);
std::vector<te::Tensor> grid_sample(ConvertContext& c);
std::vector<te::Tensor> affine_grid(ConvertContext& c);
std::vector<te::Tensor> tensor_scatter(ConvertContext& c);
std::vector<te::Tensor> hann_window(ConvertContext& c);
std::vector<te::Tensor> hamming_window(ConvertContext& c);
std::vector<te::Tensor> blackman_window(ConvertContext& c);
std::vector<te::Tensor> lp_pool(ConvertContext& c);
std::vector<te::Tensor> top_k(ConvertContext& c);
// ops_attention.cc
std::vector<te::Tensor> attention(ConvertContext& c);
std::vector<te::Tensor> rotary_embedding(ConvertContext& c);
// ops_scatter.cc
std::vector<te::Tensor> gather_nd(ConvertContext& c);
std::vector<te::Tensor> scatter_elements(ConvertContext& c);
std::vector<te::Tensor> scatter_nd(ConvertContext& c);
// ops_einsum.cc
std::vector<te::Tensor> einsum(ConvertContext& c);
// ops_resize.cc
std::vector<te::Tensor> resize(ConvertContext& c);
// ops_loss.cc
std::vector<te::Tensor> negative_log_likelihood_loss(ConvertContext& c);
std::vector<te::Tensor> softmax_cross_entropy_loss(ConvertContext& c);
std::vector<te::Tensor> transpose(ConvertContext& c);
std::vector<te::Tensor> reshape(ConvertContext& c);
std::vector<te::Tensor> flatten(ConvertContext& c);
std::vector<te::Tensor> squeeze(ConvertContext& c);
std::vector<te::Tensor> unsqueeze(ConvertContext& c);
std::vector<te::Tensor> identity(ConvertContext& c);
std::vector<te::Tensor> concat(ConvertContext& c);
std::vector<te::Tensor> split(ConvertContext& c);
std::vector<te::Tensor> slice(ConvertContext& c);
std::vector<te::Tensor> gather(ConvertContext& c);
std::vector<te::Tensor> expand(ConvertContext& c);
std::vector<te::Tensor> shape(ConvertContext& c);
std::vector<te::Tensor> quantize_linear(ConvertContext& c);
std::vector<te::Tensor> dequantize_linear(ConvertContext& c);
std::vector<te::Tensor> matmul_integer(ConvertContext& c);
std::vector<te::Tensor> conv_integer(ConvertContext& c);
std::vector<te::Tensor> qlinear_matmul(ConvertContext& c);
std::vector<te::Tensor> qlinear_conv(ConvertContext& c);
}  // namespace ops

}  // namespace tyche::graph
