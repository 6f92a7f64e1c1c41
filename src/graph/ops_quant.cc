// Quantized operators (ONNX's QOperator form): QuantizeLinear, DequantizeLinear, and the integer
// matrix products and convolutions, plain (MatMulInteger, ConvInteger: int32 out) or requantized
// (QLinearMatMul, QLinearConv: the int32 accumulator scaled, rounded and saturated in the same
// kernel's epilogue).
//
// The products are written so that the CPUs' dot instructions take them: where the weights' zero
// point is 0 (onnxruntime's quantizer makes weights symmetric) the sum is of raw u8 x s8
// products, sum (x - xz) w = sum x w - xz sum w, with the padding taps reading xz; int8
// activations are shifted to uint8 (x + 128, zero point + 128), which changes no difference
// x - xz. Other zero points subtract in int32 before the product.
//
// Rounding: to nearest, halves to even (CallOp::kRound), then saturated to the output type; the
// requantization multiplier is computed in float32 as onnxruntime computes it.
#include <cmath>

#include "graph/narrow_types.h"
#include "graph/ops_window.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

Expr i32(Expr x) {
  return ir::cast(kInt32, std::move(x));
}
Expr f32(Expr x) {
  return ir::cast(kFloat32, std::move(x));
}

bool is_quant_type(DataType t) {
  return t == DataType::UInt(8) || t == DataType::Int(8);
}

// A one-element input read as the function's parameter, not folded into it as a literal: a
// model's convolutions that differ only in their scales and zero points are then one task.
Expr scalar_param(ConvertContext& c, size_t i) {
  return c.input(i)(std::vector<Expr>(static_cast<size_t>(c.rank(i)), Expr(0)));
}

// A scale or zero point: a scalar, or one value per element along `axis` (of `shape`). Input `i`
// absent: `fallback`.
Expr per_axis(ConvertContext& c, size_t i, const std::vector<Expr>& index, int axis,
              const std::vector<int64_t>& shape, Expr fallback, const char* what,
              int64_t block = 0) {
  if (!c.has_input(i)) return fallback;
  if (block > 0) {
    // Blocked: the parameter has x's shape with axis `axis` cut into blocks of `block` elements.
    std::vector<int64_t> want = shape;
    size_t a = static_cast<size_t>(axis);
    want[a] = (shape[a] + block - 1) / block;
    if (c.shape(i) != want)
      c.fail(fmt::format("the {} of blocks of {} on axis {} must have shape {}, not {}", what,
                         block, axis, shape_text(want), shape_text(c.shape(i))));
    std::vector<Expr> at = index;
    at[a] = ir::floordiv(at[a], Expr(block));
    return c.input(i)(at);
  }
  if (c.value(i).numel() == 1) return scalar_param(c, i);
  if (c.rank(i) != 1 || axis < 0 || c.shape(i)[0] != shape.at(static_cast<size_t>(axis)))
    c.fail(fmt::format(
        "the {} must be a scalar or have one value per element of axis {} ({}), not {}", what, axis,
        axis >= 0 ? shape.at(static_cast<size_t>(axis)) : 0, shape_text(c.shape(i))));
  return c.input(i)({index.at(static_cast<size_t>(axis))});
}

// Whether input `i` is absent or a constant of zeros.
bool zero_or_absent(ConvertContext& c, size_t i) {
  if (!c.has_input(i)) return true;
  if (!c.value(i).is_constant()) return false;
  const runtime::NDArray& a = c.value(i).constant;
  for (int64_t k = 0; k < a.numel(); ++k)
    if (a.get_flat(k) != 0) return false;
  return true;
}

// clamp(round(v) + zero point) in `to`'s range, as `to`.
Expr saturate(Expr v, Expr zero_point, DataType to) {
  Expr q = ir::call(ir::CallOp::kRound, {std::move(v)}) + f32(std::move(zero_point));
  q = ir::min(ir::max(q, f32(ir::min_value(to))), f32(ir::max_value(to)));
  return ir::cast(to, q);
}

// An operand's scalar zero point as an int32 expression, built when called (inside a compute):
// its parameter, 0 when absent, + 128 when the operand is shifted to uint8 (as_unsigned).
using ZeroPointFn = std::function<Expr()>;
ZeroPointFn zero_point_of(ConvertContext& c, size_t zp, bool shifted) {
  return [&c, zp, shifted] {
    Expr z = c.has_input(zp) ? i32(scalar_param(c, zp)) : Expr(0);
    return shifted ? z + Expr(128) : z;
  };
}

// Input `x_index` as the dot instructions take it: int8 shifted to uint8 (x + 128).
Tensor as_unsigned(ConvertContext& c, size_t x_index) {
  if (c.dtype(x_index) != DataType::Int(8)) return c.input(x_index);
  return te::compute(
      c.shape(x_index),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return ir::cast(DataType::UInt(8), i32(c.input(x_index)(exprs(v))) + Expr(128));
      },
      c.name("to_uint8"));
}

// The int32 accumulator of a MatMulInteger-like node: inputs a, b and their zero points.
Tensor integer_matmul(ConvertContext& c, size_t a, size_t b, size_t a_zp, size_t b_zp) {
  if (!is_quant_type(c.dtype(a)) || !is_quant_type(c.dtype(b)))
    c.fail(fmt::format("needs uint8 or int8 inputs, not {} and {}", c.dtype(a).str(),
                       c.dtype(b).str()));
  for (auto [x, zp] : {std::pair{a, a_zp}, std::pair{b, b_zp}})
    if (c.has_input(zp) && c.dtype(zp) != c.dtype(x))
      c.fail(fmt::format("a zero point of type {} for an input of type {}", c.dtype(zp).str(),
                         c.dtype(x).str()));
  const std::vector<int64_t>& as = c.shape(a);
  const std::vector<int64_t>& bs = c.shape(b);
  if (as.size() < 2 || bs.size() < 2) c.fail("needs inputs of rank 2 or more");
  bool scalar_az = !c.has_input(a_zp) || c.scalar(a_zp).has_value();
  if (!zero_or_absent(c, b_zp) || !scalar_az || bs.size() != 2) {
    // (a - az) (b - bz) in int32: az per row of a or scalar, bz per column of b or scalar.
    return matmul_sum(
        c, a, b, c.input(a),
        [&](Expr x, Expr y, const std::vector<Expr>& xi, const std::vector<Expr>& yi) {
          Expr az =
              per_axis(c, a_zp, xi, static_cast<int>(as.size()) - 2, as, Expr(0), "a_zero_point");
          Expr bz =
              per_axis(c, b_zp, yi, static_cast<int>(bs.size()) - 1, bs, Expr(0), "b_zero_point");
          return (i32(x) - i32(az)) * (i32(y) - i32(bz));
        });
  }
  bool shifted = c.dtype(a) == DataType::Int(8);
  Tensor acc = matmul_sum(c, a, b, as_unsigned(c, a),
                          [](Expr x, Expr y, const auto&, const auto&) { return i32(x) * i32(y); });
  if (c.node().has(kZeroPointFolded) || (!shifted && c.scalar(a_zp).value_or(0) == 0)) return acc;
  // sum (a - az) b = sum a b - az sum_k b[k, j].
  auto rk = te::reduce_axis(bs[0], "k");
  Tensor bsum = te::compute(
      {bs[1]},
      [&](ir::Var j) -> te::ComputeBody { return te::sum(i32(c.input(b)(rk.var, j)), {rk}); },
      c.name("weight_sum"));
  ZeroPointFn zp = zero_point_of(c, a_zp, shifted);
  return te::compute(
      acc.shape(),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return acc(exprs(v)) - zp() * bsum(v.back());
      },
      c.name("zero_point"));
}

// The int32 accumulator of a ConvInteger-like node: input 0 the activation, `w` the weights.
Tensor integer_conv(ConvertContext& c, size_t w, size_t x_zp, size_t w_zp, Axes* axes) {
  if (!is_quant_type(c.dtype(0)) || !is_quant_type(c.dtype(w)))
    c.fail(fmt::format("needs uint8 or int8 inputs, not {} and {}", c.dtype(0).str(),
                       c.dtype(w).str()));
  for (auto [x, zp] : {std::pair{size_t{0}, x_zp}, std::pair{w, w_zp}})
    if (c.has_input(zp) && c.dtype(zp) != c.dtype(x))
      c.fail(fmt::format("a zero point of type {} for an input of type {}", c.dtype(zp).str(),
                         c.dtype(x).str()));
  *axes = activation_axes(c, 0, /*any_type=*/true);
  const size_t co_dim = axes->channels_last ? c.shape(w).size() - 1 : 0;
  if (c.has_input(x_zp) && !c.scalar(x_zp))
    c.fail(
        fmt::format("the x_zero_point ('{}') must be a one-element constant", c.value(x_zp).name));
  DataType xt = c.dtype(0);
  if (!zero_or_absent(c, w_zp)) {
    // (x - xz) (w - wz[co]) in int32; the padding taps read xz and add nothing.
    const std::vector<int64_t>& ws = c.shape(w);
    ZeroPointFn xz = zero_point_of(c, x_zp, false);
    return conv_sum(
        c, w, c.input(0), [&] { return ir::cast(xt, xz()); },
        [&](Expr x, Expr y, const auto&, const std::vector<Expr>& wi) {
          Expr wz = per_axis(c, w_zp, wi, static_cast<int>(co_dim), ws, Expr(0), "w_zero_point");
          return (i32(x) - xz()) * (i32(y) - i32(wz));
        });
  }
  bool shifted = xt == DataType::Int(8);
  ZeroPointFn xz = zero_point_of(c, x_zp, shifted);
  Tensor acc = conv_sum(
      c, w, as_unsigned(c, 0), [&] { return ir::cast(DataType::UInt(8), xz()); },
      [](Expr a, Expr b, const auto&, const auto&) { return i32(a) * i32(b); });
  if (c.node().has(kZeroPointFolded) || (!shifted && c.scalar(x_zp).value_or(0) == 0)) return acc;
  // sum (x - xz) w = sum x w - xz sum w, over each output channel's taps (folded into the bias
  // at import where the weights are constant: fold_zero_points).
  const std::vector<int64_t>& ws = c.shape(w);
  std::vector<ir::IterVar> taps;
  for (size_t d = 0; d < ws.size(); ++d)
    if (d != co_dim) taps.push_back(te::reduce_axis(ws[d], fmt::format("r{}", d)));
  Tensor wsum = te::compute(
      {ws[co_dim]},
      [&](ir::Var o) -> te::ComputeBody {
        std::vector<Expr> idx;
        for (size_t d = 0, t = 0; d < ws.size(); ++d)
          idx.push_back(d == co_dim ? Expr(o) : Expr(taps[t++].var));
        return te::sum(i32(c.input(w)(idx)), taps);
      },
      c.name("weight_sum"));
  size_t channel = axes->channel();
  return te::compute(
      acc.shape(),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return acc(exprs(v)) - xz() * wsum(v[channel]);
      },
      c.name("zero_point"));
}

// a * b / y in float32, in onnxruntime's order. The scales are parameters (scalar_param), so it
// is computed in the kernel, not folded at import.
Expr multiplier(Expr a, Expr b, Expr y) {
  return f32(std::move(a)) * f32(std::move(b)) / f32(std::move(y));
}

// QuantizeLinear's and DequantizeLinear's axis: resolved only for a per-axis scale or zero point
// (a scalar one makes any axis, even one past the rank, irrelevant).
int quant_axis(ConvertContext& c) {
  if (c.node().get_int("block_size", 0) > 0) return c.axis(c.node().get_int("axis", 1), c.rank(0));
  bool per_axis = false;
  for (size_t i : {size_t{1}, size_t{2}})
    if (c.has_input(i)) per_axis |= c.value(i).numel() > 1;
  return per_axis ? c.axis(c.node().get_int("axis", 1), c.rank(0)) : -1;
}

// The inputs an op cannot do without.
void require_inputs(ConvertContext& c, std::initializer_list<size_t> required) {
  for (size_t i : required)
    if (!c.has_input(i)) c.fail(fmt::format("input {} is required", i));
}

// QuantizeLinear's and DequantizeLinear's integer types (the integer kernels read 8 bits only).
bool is_linear_quant_type(DataType t) {
  return is_quant_type(t) || t == DataType::UInt(16) || t == DataType::Int(16);
}

DataType zero_point_type(ConvertContext& c, size_t zp) {
  DataType t = c.has_input(zp) ? c.dtype(zp) : DataType::UInt(8);
  if (!is_linear_quant_type(t))
    c.fail(fmt::format("cannot quantize to {} (uint8, int8, uint16 or int16)", t.str()));
  return t;
}

// block_size, checked: 0 (per tensor or per axis) or positive.
int64_t block_size(ConvertContext& c) {
  int64_t block = c.node().get_int("block_size", 0);
  if (block < 0) c.fail(fmt::format("block_size must not be negative, not {}", block));
  return block;
}

}  // namespace

// QuantizeLinear's and DequantizeLinear's element-wise compute over input 0: `body` of each
// element, its scale (input 1, "<prefix>_scale") and zero point (input 2, "<prefix>_zero_point", or
// `default_zp`), both read at the element's index on the quantization axis.
template <typename Body>
Tensor per_axis_compute(ConvertContext& c, const std::string& prefix, Expr default_zp,
                        const std::string& name, Body body) {
  const std::vector<int64_t>& shape = c.shape(0);
  int axis = quant_axis(c);
  int64_t block = block_size(c);
  return te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        Expr scale = per_axis(c, 1, idx, axis, shape, Expr(), (prefix + "_scale").c_str(), block);
        Expr zp =
            per_axis(c, 2, idx, axis, shape, default_zp, (prefix + "_zero_point").c_str(), block);
        return body(c.load(0, idx), scale, zp);
      },
      c.name(name));
}

std::vector<Tensor> quantize_linear(ConvertContext& c) {
  require_inputs(c, {0, 1});
  if (!c.dtype(0).is_float()) c.fail(fmt::format("needs a float input, not {}", c.dtype(0).str()));
  std::optional<NarrowType> narrow =
      narrow_type(c.has_input(2) ? c.value(2).narrow_code : c.node().get_int("output_dtype", 0));
  if (c.node().has("output_dtype") && !c.has_input(2) && !narrow) {
    std::optional<DataType> t = dtype_of_onnx(c.node().get_int("output_dtype", 0));
    if (!t || !is_linear_quant_type(*t))
      c.fail("output_dtype must be uint8, int8, uint16, int16 or a float8, int4 or int2 type");
  }
  DataType to =
      narrow ? narrow->storage
      : c.has_input(2)
          ? zero_point_type(c, 2)
          : dtype_of_onnx(c.node().get_int("output_dtype", 2)).value_or(DataType::UInt(8));
  if (narrow && narrow->is_float) {
    // float8 and float4: x / scale + zero point, rounded to the type (saturating unless told).
    bool sat = c.node().get_int("saturate", 1) != 0;
    return {per_axis_compute(c, "y", ir::make_const(to, 0), "quantize",
                             [&](const Expr& x, const Expr& scale, const Expr& zp) {
                               Expr z = c.has_input(2) ? narrow_decode(zp, *narrow) : f32(zp);
                               return narrow_encode(f32(x) / f32(scale) + z, *narrow, sat);
                             })};
  }
  if (narrow) {
    // int4 and int2: rounded, the zero point added, saturated to the type's range.
    int64_t lo = narrow->is_signed ? -(int64_t{1} << (narrow->bits - 1)) : 0;
    int64_t hi = lo + (int64_t{1} << narrow->bits) - 1;
    return {per_axis_compute(c, "y", ir::make_const(to, 0), "quantize",
                             [&](const Expr& x, const Expr& scale, const Expr& zp) {
                               Expr q =
                                   ir::call(ir::CallOp::kRound, {f32(x) / f32(scale)}) + f32(zp);
                               q = ir::min(ir::max(q, ir::make_float(static_cast<double>(lo))),
                                           ir::make_float(static_cast<double>(hi)));
                               return ir::cast(to, q);
                             })};
  }
  return {per_axis_compute(c, "y", ir::make_const(to, 0), "quantize",
                           [&](const Expr& x, const Expr& scale, const Expr& zp) {
                             return saturate(f32(x) / f32(scale), zp, to);
                           })};
}

std::vector<Tensor> dequantize_linear(ConvertContext& c) {
  require_inputs(c, {0, 1});
  DataType t = c.dtype(0);
  if (!is_linear_quant_type(t) && t != kInt32)
    c.fail(fmt::format("needs a uint8, int8, uint16, int16 or int32 input, not {}", t.str()));
  if (c.has_input(2) && c.dtype(2) != t)
    c.fail(
        fmt::format("a zero point of type {} for an input of type {}", c.dtype(2).str(), t.str()));
  if (std::optional<NarrowType> narrow = narrow_type(c.value(0).narrow_code);
      narrow && narrow->is_float) {
    return {per_axis_compute(c, "x", Expr(0), "dequantize",
                             [&](const Expr& x, const Expr& scale, const Expr& zp) {
                               Expr z = c.has_input(2) ? narrow_decode(zp, *narrow) : f32(zp);
                               return (narrow_decode(x, *narrow) - z) * f32(scale);
                             })};
  }
  return {per_axis_compute(c, "x", Expr(0), "dequantize",
                           [](const Expr& x, const Expr& scale, const Expr& zp) {
                             return f32(i32(x) - i32(zp)) * f32(scale);
                           })};
}

// DynamicQuantizeLinear: x to uint8 with the scale and zero point of its own range (widened to
// hold 0): scale = (max - min) / 255, zero point = round(-min / scale) saturated, then y as
// QuantizeLinear computes it.
std::vector<Tensor> dynamic_quantize_linear(ConvertContext& c) {
  if (c.dtype(0) != kFloat32)
    c.fail(fmt::format("needs a float32 input, not {}", c.dtype(0).str()));
  const std::vector<int64_t>& shape = c.shape(0);
  if (c.value(0).numel() == 0) c.fail("an empty input has no range to quantize");
  const Tensor& x = c.input(0);
  auto whole = [&](bool max) {
    std::vector<ir::IterVar> axes;
    for (size_t d = 0; d < shape.size(); ++d)
      axes.push_back(te::reduce_axis(shape[d], fmt::format("r{}", d)));
    return te::compute(
        {},
        [&](const std::vector<ir::Var>&) -> te::ComputeBody {
          std::vector<Expr> idx;
          for (const ir::IterVar& a : axes) idx.push_back(a.var);
          if (axes.empty()) return x(idx);
          if (max) return te::max(x(idx), axes);
          return te::min(x(idx), axes);
        },
        c.name(max ? "range_max" : "range_min"));
  };
  Tensor hi = whole(true), lo = whole(false);
  DataType u8 = DataType::UInt(8);
  Tensor scale = te::compute(
      {},
      [&](const std::vector<ir::Var>&) -> te::ComputeBody {
        Expr top = ir::max(hi({}), ir::make_float(0)), bottom = ir::min(lo({}), ir::make_float(0));
        return (top - bottom) / ir::make_float(255);
      },
      c.name("y_scale"));
  Tensor zero_point = te::compute(
      {},
      [&](const std::vector<ir::Var>&) -> te::ComputeBody {
        Expr bottom = ir::min(lo({}), ir::make_float(0));
        return saturate(-bottom / scale({}), Expr(0), u8);
      },
      c.name("y_zero_point"));
  Tensor y = te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return saturate(x(exprs(v)) / scale({}), ir::cast(kInt32, zero_point({})), u8);
      },
      c.name("dynamic_quantize"));
  return {y, scale, zero_point};
}

// acc + the folded zero-point bias (input `i`, one per output channel: `channel` of acc) when
// fold_zero_points set it.
Tensor add_folded_bias(ConvertContext& c, const Tensor& acc, size_t i, size_t channel) {
  if (!c.node().has(kZeroPointFolded) || !c.has_input(i)) return acc;
  if (c.dtype(i) != kInt32 || c.shape(i) != std::vector<int64_t>{acc.shape()[channel]})
    c.fail("the folded bias does not fit");
  return te::compute(
      acc.shape(),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return acc(exprs(v)) + c.input(i)({v[channel]});
      },
      c.name("bias_add"));
}

std::vector<Tensor> matmul_integer(ConvertContext& c) {
  require_inputs(c, {0, 1});
  Tensor acc = integer_matmul(c, 0, 1, 2, 3);
  return {add_folded_bias(c, acc, 4, acc.shape().size() - 1)};
}

std::vector<Tensor> conv_integer(ConvertContext& c) {
  require_inputs(c, {0, 1});
  Axes ax;
  Tensor acc = integer_conv(c, 1, 2, 3, &ax);
  return {add_folded_bias(c, acc, 4, ax.channel())};
}

std::vector<Tensor> qlinear_matmul(ConvertContext& c) {
  require_inputs(c, {0, 1, 2, 3, 4, 5, 6, 7});
  for (size_t i : {1, 4, 6})
    if (!c.dtype(i).is_float()) c.fail("scales must be float");
  Tensor acc = integer_matmul(c, 0, 3, 2, 5);
  DataType to = zero_point_type(c, 7);
  std::vector<int64_t> shape = acc.shape();
  return {te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        int last = static_cast<int>(shape.size()) - 1;
        Expr m = multiplier(per_axis(c, 1, idx, -1, shape, Expr(), "a_scale"),
                            per_axis(c, 4, idx, last, shape, Expr(), "b_scale"),
                            per_axis(c, 6, idx, -1, shape, Expr(), "y_scale"));
        Expr sum = acc(idx);
        if (c.node().has(kZeroPointFolded) && c.has_input(8)) sum = sum + c.input(8)({idx.back()});
        return saturate(f32(sum) * m, per_axis(c, 7, idx, -1, shape, Expr(0), "y_zero_point"), to);
      },
      c.name("requantize"))};
}

std::vector<Tensor> qlinear_conv(ConvertContext& c) {
  require_inputs(c, {0, 1, 2, 3, 4, 5, 6, 7});
  for (size_t i : {1, 4, 6})
    if (!c.dtype(i).is_float()) c.fail("scales must be float");
  if (c.has_input(8) && c.dtype(8) != kInt32)
    c.fail(fmt::format("the bias must be int32, not {}", c.dtype(8).str()));
  Axes ax;
  Tensor acc = integer_conv(c, 3, 2, 5, &ax);
  DataType to = zero_point_type(c, 7);
  std::vector<int64_t> shape = acc.shape();
  int channel = static_cast<int>(ax.channel());
  if (c.has_input(8) && c.shape(8) != std::vector<int64_t>{shape[ax.channel()]})
    c.fail(fmt::format("the bias must have {} elements", shape[ax.channel()]));
  return {te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        Expr sum = acc(idx);
        if (c.has_input(8)) sum = sum + c.load(8, {idx[ax.channel()]});
        Expr m = multiplier(per_axis(c, 1, idx, -1, shape, Expr(), "x_scale"),
                            per_axis(c, 4, idx, channel, shape, Expr(), "w_scale"),
                            per_axis(c, 6, idx, -1, shape, Expr(), "y_scale"));
        return saturate(f32(sum) * m, per_axis(c, 7, idx, -1, shape, Expr(0), "y_zero_point"), to);
      },
      c.name("requantize"))};
}

}  // namespace tyche::graph::ops
