// DFT (opsets 17 and 20): the discrete Fourier transform along one axis of a real ([..., 1]) or
// complex ([..., 2]) signal, forward or inverse, full or one-sided, at dft_length points (the
// signal zero-padded or cut to it). Each output element is a sum over the axis (a reduction) of
// the signal times the twiddle factor at (k n mod L) / L, in double precision: direct, O(L^2) per
// transform, which the models that carry a DFT (spectrogram front ends) keep short.
#include <cmath>
#include <numbers>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {}  // namespace

std::vector<Tensor> dft(ConvertContext& c) {
  if (!c.dtype(0).is_float()) c.fail(fmt::format("needs a float signal, not {}", c.dtype(0).str()));
  const std::vector<int64_t>& xs = c.shape(0);
  int rank = c.rank(0);
  if (rank < 2 || (xs.back() != 1 && xs.back() != 2))
    c.fail(fmt::format("the signal's last axis must be 1 (real) or 2 (complex), not {}",
                       shape_text(xs)));
  int64_t axis_attr = c.opset() >= 20 ? -2 : 1;
  if (c.opset() >= 20 && c.has_input(2)) {
    std::optional<double> a = c.scalar(2);
    if (!a) c.fail(fmt::format("the axis ('{}') must be a constant", c.value(2).name));
    axis_attr = static_cast<int64_t>(*a);
  } else if (c.opset() < 20) {
    axis_attr = c.node().get_int("axis", 1);
  }
  int axis = c.axis(axis_attr, rank);
  if (axis == rank - 1) c.fail("the axis cannot be the last (real, imaginary) one");
  bool inverse = c.node().get_int("inverse", 0) != 0;
  bool onesided = c.node().get_int("onesided", 0) != 0;
  auto a = static_cast<size_t>(axis);
  int64_t n_in = xs[a];
  int64_t length = inverse && onesided ? 2 * (n_in - 1) : n_in;
  if (c.has_input(1)) {
    std::optional<double> l = c.scalar(1);
    if (!l) c.fail(fmt::format("dft_length ('{}') must be a constant", c.value(1).name));
    length = static_cast<int64_t>(*l);
  }
  if (length < 1) c.fail(fmt::format("dft_length must be positive, not {}", length));
  bool complex_in = xs.back() == 2;
  // Inverse and one-sided: the one-sided spectrum to the real signal (numpy's irfft).
  bool irfft = inverse && onesided;
  std::vector<int64_t> out = xs;
  out[a] = irfft ? length : onesided ? length / 2 + 1 : length;
  out.back() = irfft ? 1 : 2;
  const Tensor& x = c.input(0);
  double two_pi_over_l = 2 * std::numbers::pi / static_cast<double>(length);
  auto load = [&](std::vector<Expr> idx, Expr at, int part) -> Expr {  // 0 past the signal's end
    if (part == 1 && !complex_in) return f64(0);
    Expr inside = at < const_i32(n_in);
    idx[a] = ir::min(at, const_i32(n_in - 1));
    idx.back() = Expr(part);
    return ir::select(inside, ir::cast(kFloat64, x(idx)), f64(0));
  };
  ir::IterVar r = te::reduce_axis(length, "rn");
  Tensor sum = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        Expr k = v[a], n = r.var;
        Expr kn = ir::floormod(ir::cast(kInt64, k) * ir::cast(kInt64, n),
                               ir::make_const(kInt64, length));  // exact: no phase drifts
        Expr theta = ir::cast(kFloat64, kn) * f64(two_pi_over_l);
        Expr cs = ir::call(ir::CallOp::kCos, {theta}), sn = ir::call(ir::CallOp::kSin, {theta});
        if (irfft) {
          // X[n] = x[n] up to length / 2, conj(x[length - n]) past it; the imaginary parts of
          // the first and (for an even length) the middle term ignored, as numpy ignores them.
          int64_t half = length / 2;
          Expr mirrored = n > const_i32(half);
          Expr j = ir::select(mirrored, const_i32(length) - n, n);
          Expr xr = load(idx, j, 0), xi = load(idx, j, 1);
          Expr real_only = n == Expr(0);
          if (length % 2 == 0) real_only = real_only || n == const_i32(half);
          xi = ir::select(real_only, f64(0), ir::select(mirrored, -xi, xi));
          return te::sum(xr * cs - xi * sn, {r});
        }
        Expr xr = load(idx, n, 0), xi = load(idx, n, 1);
        Expr sign = f64(inverse ? 1 : -1);  // e^{sign i theta}
        Expr re = xr * cs - sign * xi * sn, im = xi * cs + sign * xr * sn;
        return te::sum(ir::select(v.back() == Expr(0), re, im), {r});
      },
      c.name("dft_sum"));
  DataType t = c.dtype(0);
  double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return ir::cast(t, sum(exprs(v)) * f64(scale));
      },
      c.name("dft"))};
}

// CausalConvWithState (opset 27): a depthwise causal 1-D convolution over (batch, channels,
// length) that carries its last k - 1 inputs between calls: the input is read after the past
// state (zeros without one), the output optionally passed through SiLU, and the present state is
// the padded signal's last k - 1 columns. 16-bit inputs are computed in float32.
std::vector<Tensor> causal_conv_with_state(ConvertContext& c) {
  DataType t = c.dtype(0);
  if (!t.is_float()) c.fail(fmt::format("needs a float input, not {}", t.str()));
  if (c.rank(0) != 3 || c.rank(1) != 3)
    c.fail("needs an input (batch, channels, length) and a weight (channels, 1, k)");
  const std::vector<int64_t>& xs = c.shape(0);
  int64_t batch = xs[0], channels = xs[1], length = xs[2], k = c.shape(1)[2];
  if (c.shape(1)[0] != channels || c.shape(1)[1] != 1 || k < 1)
    c.fail(fmt::format("a weight of shape {} for {} channels (want ({}, 1, k))",
                       shape_text(c.shape(1)), channels, channels));
  if (c.has_input(2) && c.shape(2) != std::vector<int64_t>{channels})
    c.fail(fmt::format("a bias of shape {}, not ({})", shape_text(c.shape(2)), channels));
  bool past = c.has_input(3);
  if (past && c.shape(3) != std::vector<int64_t>{batch, channels, k - 1})
    c.fail(fmt::format("a past state of shape {}, not ({}, {}, {})", shape_text(c.shape(3)), batch,
                       channels, k - 1));
  std::string activation = c.node().get_string("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    c.fail(fmt::format("unknown activation '{}' (none, silu or swish)", activation));
  // The padded signal's column j: the past state's below k - 1, the input's from there.
  auto padded = [&](Expr b, Expr ch, Expr j) {
    Expr from_input = j >= const_i32(k - 1);
    Expr xi = c.load(0, {b, ch, ir::max(j - const_i32(k - 1), Expr(0))});
    Expr pi = past ? c.load(3, {b, ch, ir::min(j, const_i32(std::max<int64_t>(k - 2, 0)))})
                   : ir::make_const(t, 0);
    if (k == 1) return ir::cast(kFloat32, xi);
    return ir::cast(kFloat32, ir::select(from_input, xi, pi));
  };
  ir::IterVar r = te::reduce_axis(k, "rk");
  Tensor sum = te::compute(
      {batch, channels, length},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr w = ir::cast(kFloat32, c.load(1, {v[1], Expr(0), r.var}));
        return te::sum(padded(v[0], v[1], Expr(v[2]) + r.var) * w, {r});
      },
      c.name("causal_conv_sum"));
  Tensor out = te::compute(
      {batch, channels, length},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr y = sum(exprs(v));
        if (c.has_input(2)) y = y + ir::cast(kFloat32, c.load(2, {v[1]}));
        if (activation != "none") y = y * ir::sigmoid(y);
        return ir::cast(t, y);
      },
      c.name("causal_conv"));
  Tensor state = te::compute(
      {batch, channels, k - 1},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return ir::cast(t, padded(v[0], v[1], Expr(v[2]) + const_i32(length)));
      },
      c.name("present_state"));
  return {out, state};
}

}  // namespace tyche::graph::ops
