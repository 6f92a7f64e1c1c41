#include "graph/op_registry.h"

#include <algorithm>

#include "ir/op.h"
#include "support/error.h"

namespace tyche::graph {

const char* pattern_name(OpPattern p) {
  switch (p) {
    case OpPattern::kElementwise:
      return "elementwise";
    case OpPattern::kBroadcast:
      return "broadcast";
    case OpPattern::kInjective:
      return "injective";
    case OpPattern::kReduction:
      return "reduction";
    case OpPattern::kAnchor:
      return "anchor";
    case OpPattern::kView:
      return "view";
  }
  return "?";
}

std::string NameGen::operator()(const std::string& base) {
  int& n = used_[base];
  return n++ == 0 ? base : fmt::format("{}_{}", base, n - 1);
}

ConvertContext::ConvertContext(const Graph& graph, const Node& node, std::vector<te::Tensor> inputs,
                               NameGen& names)
    : graph_(graph), node_(node), inputs_(std::move(inputs)), names_(names) {}

const Value& ConvertContext::value(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is missing", i + 1));
  return graph_.value(node_.inputs[i]);
}

const te::Tensor& ConvertContext::input(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is missing", i + 1));
  return inputs_.at(i);
}

const runtime::NDArray& ConvertContext::constant(size_t i, const char* what) const {
  const Value& v = value(i);
  if (!v.is_constant())
    fail(fmt::format("{} ('{}') must be a constant: Tyche compiles static shapes", what, v.name));
  return v.constant;
}

std::vector<int64_t> ConvertContext::constant_ints(size_t i, const char* what) const {
  const runtime::NDArray& a = constant(i, what);
  if (!a.dtype().is_int()) fail(fmt::format("{} must be integers, not {}", what, a.dtype().str()));
  std::vector<int64_t> out(static_cast<size_t>(a.numel()));
  for (int64_t k = 0; k < a.numel(); ++k) out[static_cast<size_t>(k)] = a.get_flat_int(k);
  return out;
}

std::optional<double> ConvertContext::scalar(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  const Value& v = value(i);
  if (!v.is_constant() || v.constant.numel() != 1) return std::nullopt;
  return v.constant.get_flat(0);
}

ir::Expr ConvertContext::load(size_t i, const std::vector<ir::Expr>& indices) const {
  if (std::optional<double> s = scalar(i)) return ir::make_const(dtype(i), *s);
  return input(i)(indices);
}

ir::Expr ConvertContext::load_broadcast(size_t i, const std::vector<ir::Expr>& out,
                                        const std::vector<int64_t>& out_shape) const {
  return load(i, broadcast_index(shape(i), out, out_shape));
}

std::vector<ir::Expr> broadcast_index(const std::vector<int64_t>& in,
                                      const std::vector<ir::Expr>& out,
                                      const std::vector<int64_t>& out_shape) {
  size_t offset = out.size() - in.size();
  std::vector<ir::Expr> idx;
  for (size_t d = 0; d < in.size(); ++d)
    idx.push_back(in[d] == 1 && out_shape[offset + d] != 1 ? ir::Expr(0) : out[offset + d]);
  return idx;
}

int ConvertContext::axis(int64_t axis, int rank, const char* what) const {
  if (axis < -rank || axis >= std::max(rank, 1))
    fail(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

void ConvertContext::fail(const std::string& message) const {
  throw InputError(fmt::format("node '{}' ({}): {}", node_.name, node_.op, message));
}

std::vector<int64_t> broadcast_shapes(const Node& node, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t x = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    int64_t y = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1)
      throw_input_error("node '{}' ({}): shapes {} and {} do not broadcast", node.name, node.op,
                        shape_text(a), shape_text(b));
    out[d] = x == 1 ? y : x;
  }
  return out;
}

namespace {

using P = OpPattern;

// Sorted by name (find_op searches it).
constexpr OpSpec kOps[] = {
    {"Abs", P::kElementwise, ops::abs},
    {"Acos", P::kElementwise, ops::float_call<ir::CallOp::kAcos>},
    {"Acosh", P::kElementwise, ops::float_call<ir::CallOp::kAcosh>},
    {"Add", P::kBroadcast, ops::add},
    {"AffineGrid", P::kInjective, ops::affine_grid},
    {"And", P::kBroadcast, ops::logical_and},
    {"ArgMax", P::kReduction, ops::arg_max},
    {"ArgMin", P::kReduction, ops::arg_min},
    {"Asin", P::kElementwise, ops::float_call<ir::CallOp::kAsin>},
    {"Asinh", P::kElementwise, ops::float_call<ir::CallOp::kAsinh>},
    {"Atan", P::kElementwise, ops::float_call<ir::CallOp::kAtan>},
    {"Atanh", P::kElementwise, ops::float_call<ir::CallOp::kAtanh>},
    {"Attention", P::kReduction, ops::attention},
    {"AveragePool", P::kReduction, ops::average_pool},
    {"BatchNormalization", P::kBroadcast, ops::batch_norm},
    {"BitShift", P::kBroadcast, ops::bit_shift},
    {"BitwiseAnd", P::kBroadcast, ops::bit_op<ir::CallOp::kBitwiseAnd>},
    {"BitwiseNot", P::kElementwise, ops::bit_op<ir::CallOp::kBitwiseNot>},
    {"BitwiseOr", P::kBroadcast, ops::bit_op<ir::CallOp::kBitwiseOr>},
    {"BitwiseXor", P::kBroadcast, ops::bit_op<ir::CallOp::kBitwiseXor>},
    {"BlackmanWindow", P::kInjective, ops::blackman_window},
    {"Cast", P::kElementwise, ops::cast},
    {"CastLike", P::kElementwise, ops::cast_like},
    {"CausalConvWithState", P::kReduction, ops::causal_conv_with_state},
    {"Ceil", P::kElementwise, ops::ceil},
    {"Celu", P::kElementwise, ops::celu},
    {"CenterCropPad", P::kInjective, ops::center_crop_pad},
    {"Clip", P::kElementwise, ops::clip},
    {"Col2Im", P::kReduction, ops::col2im},
    {"Concat", P::kInjective, ops::concat},
    {"ConstantOfShape", P::kInjective, ops::constant_of_shape},
    {"Conv", P::kAnchor, ops::conv},
    {"ConvInteger", P::kAnchor, ops::conv_integer},
    {"ConvTranspose", P::kAnchor, ops::conv_transpose},
    {"Cos", P::kElementwise, ops::float_call<ir::CallOp::kCos>},
    {"Cosh", P::kElementwise, ops::float_call<ir::CallOp::kCosh>},
    {"CumProd", P::kReduction, ops::cum_prod},
    {"CumSum", P::kReduction, ops::cum_sum},
    {"DFT", P::kReduction, ops::dft},
    {"DepthToSpace", P::kInjective, ops::depth_to_space},
    {"DequantizeLinear", P::kElementwise, ops::dequantize_linear},
    {"Div", P::kBroadcast, ops::div},
    {"Dropout", P::kView, ops::identity},
    {"DynamicQuantizeLinear", P::kReduction, ops::dynamic_quantize_linear},
    {"Einsum", P::kAnchor, ops::einsum},
    {"Elu", P::kElementwise, ops::elu},
    {"Equal", P::kBroadcast, ops::equal},
    {"Erf", P::kElementwise, ops::erf},
    {"Exp", P::kElementwise, ops::exp},
    {"Expand", P::kInjective, ops::expand},
    {"EyeLike", P::kInjective, ops::eye_like},
    {"Flatten", P::kView, ops::flatten},
    {"Floor", P::kElementwise, ops::floor},
    {"GRU", P::kReduction, ops::gru},
    {"Gather", P::kInjective, ops::gather},
    {"GatherElements", P::kInjective, ops::gather_elements},
    {"GatherND", P::kInjective, ops::gather_nd},
    {"Gelu", P::kElementwise, ops::gelu},
    {"Gemm", P::kAnchor, ops::gemm},
    {"GlobalAveragePool", P::kReduction, ops::global_average_pool},
    {"GlobalMaxPool", P::kReduction, ops::global_max_pool},
    {"Greater", P::kBroadcast, ops::greater},
    {"GreaterOrEqual", P::kBroadcast, ops::greater_or_equal},
    {"GridSample", P::kInjective, ops::grid_sample},
    {"GroupNormalization", P::kReduction, ops::group_norm},
    {"HammingWindow", P::kInjective, ops::hamming_window},
    {"HannWindow", P::kInjective, ops::hann_window},
    {"HardSigmoid", P::kElementwise, ops::hard_sigmoid},
    {"HardSwish", P::kElementwise, ops::hard_swish},
    {"Hardmax", P::kReduction, ops::hardmax},
    {"Identity", P::kView, ops::identity},
    {"If", P::kView, ops::control_flow},
    {"InstanceNormalization", P::kReduction, ops::instance_norm},
    {"IsInf", P::kElementwise, ops::is_inf},
    {"IsNaN", P::kElementwise, ops::is_nan},
    {"LRN", P::kReduction, ops::lrn},
    {"LSTM", P::kReduction, ops::lstm},
    {"LayerNormalization", P::kReduction, ops::layer_norm},
    {"LeakyRelu", P::kElementwise, ops::leaky_relu},
    {"Less", P::kBroadcast, ops::less},
    {"LessOrEqual", P::kBroadcast, ops::less_or_equal},
    {"LinearAttention", P::kReduction, ops::linear_attention},
    {"Log", P::kElementwise, ops::log},
    {"LogSoftmax", P::kReduction, ops::log_softmax},
    {"Loop", P::kView, ops::control_flow},
    {"LpNormalization", P::kReduction, ops::lp_norm},
    {"LpPool", P::kReduction, ops::lp_pool},
    {"MatMul", P::kAnchor, ops::matmul},
    {"MatMulInteger", P::kAnchor, ops::matmul_integer},
    {"Max", P::kBroadcast, ops::variadic_max},
    {"MaxPool", P::kReduction, ops::max_pool},
    {"Mean", P::kBroadcast, ops::variadic_mean},
    {"MeanVarianceNormalization", P::kReduction, ops::mean_variance_norm},
    {"Min", P::kBroadcast, ops::variadic_min},
    {"Mish", P::kElementwise, ops::mish},
    {"Mod", P::kBroadcast, ops::mod},
    {"Mul", P::kBroadcast, ops::mul},
    {"Neg", P::kElementwise, ops::neg},
    {"NegativeLogLikelihoodLoss", P::kReduction, ops::negative_log_likelihood_loss},
    {"Not", P::kElementwise, ops::logical_not},
    {"OneHot", P::kInjective, ops::one_hot},
    {"Or", P::kBroadcast, ops::logical_or},
    {"PRelu", P::kBroadcast, ops::prelu},
    {"Pad", P::kInjective, ops::pad},
    {"Pow", P::kBroadcast, ops::pow},
    {"QLinearConv", P::kAnchor, ops::qlinear_conv},
    {"QLinearMatMul", P::kAnchor, ops::qlinear_matmul},
    {"QuantizeLinear", P::kElementwise, ops::quantize_linear},
    {"RMSNormalization", P::kReduction, ops::rms_norm},
    {"RNN", P::kReduction, ops::rnn},
    {"Range", P::kInjective, ops::range},
    {"Reciprocal", P::kElementwise, ops::reciprocal},
    {"ReduceL1", P::kReduction, ops::reduce_l1},
    {"ReduceL2", P::kReduction, ops::reduce_l2},
    {"ReduceLogSum", P::kReduction, ops::reduce_log_sum},
    {"ReduceLogSumExp", P::kReduction, ops::reduce_log_sum_exp},
    {"ReduceMax", P::kReduction, ops::reduce_max},
    {"ReduceMean", P::kReduction, ops::reduce_mean},
    {"ReduceMin", P::kReduction, ops::reduce_min},
    {"ReduceProd", P::kReduction, ops::reduce_prod},
    {"ReduceSum", P::kReduction, ops::reduce_sum},
    {"ReduceSumSquare", P::kReduction, ops::reduce_sum_square},
    {"Relu", P::kElementwise, ops::relu},
    {"Reshape", P::kView, ops::reshape},
    {"Resize", P::kInjective, ops::resize},
    {"RotaryEmbedding", P::kInjective, ops::rotary_embedding},
    {"Round", P::kElementwise, ops::round},
    {"Scan", P::kView, ops::control_flow},
    {"ScatterElements", P::kReduction, ops::scatter_elements},
    {"ScatterND", P::kReduction, ops::scatter_nd},
    {"Selu", P::kElementwise, ops::selu},
    {"Shape", P::kInjective, ops::shape},
    {"Shrink", P::kElementwise, ops::shrink},
    {"Sigmoid", P::kElementwise, ops::sigmoid},
    {"Sign", P::kElementwise, ops::sign},
    {"Sin", P::kElementwise, ops::float_call<ir::CallOp::kSin>},
    {"Sinh", P::kElementwise, ops::float_call<ir::CallOp::kSinh>},
    {"Size", P::kInjective, ops::size},
    {"Slice", P::kInjective, ops::slice},
    {"Softmax", P::kReduction, ops::softmax},
    {"SoftmaxCrossEntropyLoss", P::kReduction, ops::softmax_cross_entropy_loss},
    {"Softplus", P::kElementwise, ops::softplus},
    {"Softsign", P::kElementwise, ops::softsign},
    {"SpaceToDepth", P::kInjective, ops::space_to_depth},
    {"Split", P::kInjective, ops::split},
    {"Sqrt", P::kElementwise, ops::sqrt},
    {"Squeeze", P::kView, ops::squeeze},
    {"Sub", P::kBroadcast, ops::sub},
    {"Sum", P::kBroadcast, ops::variadic_sum},
    {"SwiGLU", P::kElementwise, ops::swiglu},
    {"Swish", P::kElementwise, ops::swish},
    {"Tan", P::kElementwise, ops::float_call<ir::CallOp::kTan>},
    {"Tanh", P::kElementwise, ops::tanh},
    {"TensorScatter", P::kInjective, ops::tensor_scatter},
    {"ThresholdedRelu", P::kElementwise, ops::thresholded_relu},
    {"Tile", P::kInjective, ops::tile},
    {"TopK", P::kReduction, ops::top_k},
    {"Transpose", P::kInjective, ops::transpose},
    {"Trilu", P::kInjective, ops::trilu},
    {"Unsqueeze", P::kView, ops::unsqueeze},
    {"Where", P::kBroadcast, ops::where},
    {"Xor", P::kBroadcast, ops::logical_xor},
};

}  // namespace

const OpSpec* find_op(std::string_view op_type) {
  auto it = std::lower_bound(std::begin(kOps), std::end(kOps), op_type,
                             [](const OpSpec& s, std::string_view n) { return s.name < n; });
  return it != std::end(kOps) && it->name == op_type ? &*it : nullptr;
}

std::vector<te::Tensor> convert_node(const Graph& graph, const Node& node,
                                     const std::vector<te::Tensor>& inputs, NameGen& names) {
  const OpSpec* spec = find_op(node.op);
  if (!spec) throw_input_error("node '{}': unsupported operator {}", node.name, node.op);
  ConvertContext context(graph, node, inputs, names);
  std::vector<te::Tensor> outs = spec->convert(context);
  if (outs.size() < node.outputs.size()) {
    for (size_t o = outs.size(); o < node.outputs.size(); ++o)
      if (node.outputs[o] >= 0) context.fail(fmt::format("output {} is not supported", o + 1));
    outs.resize(node.outputs.size());
  }
  return outs;
}

std::set<const te::OperationNode*> reachable_operations(const std::vector<te::Tensor>& outs) {
  std::set<const te::OperationNode*> seen;
  std::vector<te::Tensor> stack;
  for (const te::Tensor& t : outs)
    if (t.defined()) stack.push_back(t);
  while (!stack.empty()) {
    te::Tensor t = stack.back();
    stack.pop_back();
    if (!seen.insert(t.op()).second) continue;
    for (const te::Tensor& in : t.op()->inputs) stack.push_back(in);
  }
  return seen;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const OpSpec& s : kOps) names.emplace_back(s.name);
  names.emplace_back("Constant");  // becomes a constant value on import
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tyche::graph
