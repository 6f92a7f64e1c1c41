// Resize (opsets 11-19; older models are upgraded to 13, Upsample with them): nearest, linear
// and cubic interpolation, every coordinate transformation mode, scales or sizes with axes and
// keep_aspect_ratio_policy, exclude_outside, antialiasing when downsampling. Interpolation is
// separable: one stage per resized axis, each output element a fixed number of taps along that
// axis whose positions and weights are functions of its output index alone, computed in double
// precision as ONNX's reference computes them.
#include <cmath>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

struct ResizeAttrs {
  std::string mode, coordinates, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

// One axis: `n` input elements to `m` outputs at `scale`, with the region of interest [roi0, roi1]
// for tf_crop_and_resize.
struct AxisResize {
  int64_t n = 0, m = 0;
  double scale = 1, roi0 = 0, roi1 = 1;
};

// The taps along an axis: how many, and each one's weight given the ratio and its offset.
int tap_count(const ResizeAttrs& a, double scale) {
  if (a.mode == "nearest") return 2;
  double s = std::min(scale, 1.0);
  if (a.mode == "linear") return a.antialias ? 2 - 2 * static_cast<int>(std::floor(-1 / s) + 1) : 2;
  return a.antialias ? 2 - 2 * static_cast<int>(std::floor(-2 / s) + 1) : 4;
}

std::vector<Expr> tap_weights(const ResizeAttrs& a, Expr ratio, double scale, int taps) {
  std::vector<Expr> w;
  if (a.mode == "nearest") {
    // ratio is in (0, 1]; 1 where the coordinate is an integer (the right tap is it).
    Expr right;
    if (a.nearest == "round_prefer_ceil")
      right = ratio >= f64(0.5);
    else if (a.nearest == "floor")
      right = ratio == f64(1);
    else if (a.nearest == "ceil")
      right = ir::make_bool(true);
    else
      right = ratio > f64(0.5);
    return {ir::select(right, f64(0), f64(1)), ir::select(right, f64(1), f64(0))};
  }
  double s = std::min(scale, 1.0);
  if (a.mode == "linear") {
    if (!a.antialias) return {f64(1) - ratio, ratio};
    int start = static_cast<int>(std::floor(-1 / s) + 1);
    for (int k = 0; k < taps; ++k) {
      Expr arg = (f64(start + k) - ratio) * f64(s);
      w.push_back(ir::max(ir::min(f64(1) - ir::abs(arg), f64(1)), f64(0)));
    }
  } else {
    double A = a.cubic_a;
    auto cubic = [&](Expr x) {  // x >= 0
      Expr x2 = x * x, x3 = x2 * x;
      Expr near = f64(A + 2) * x3 - f64(A + 3) * x2 + f64(1);
      Expr far = f64(A) * x3 - f64(5 * A) * x2 + f64(8 * A) * x - f64(4 * A);
      return ir::select(x <= f64(1), near, ir::select(x < f64(2), far, f64(0)));
    };
    if (!a.antialias) {
      Expr one_minus = f64(1) - ratio;
      return {cubic(ratio + f64(1)), cubic(ratio), cubic(one_minus), cubic(one_minus + f64(1))};
    }
    int start = static_cast<int>(std::floor(-2 / s) + 1);
    for (int k = 0; k < taps; ++k) w.push_back(cubic(ir::abs((f64(start + k) - ratio) * f64(s))));
  }
  Expr sum = w[0];
  for (size_t k = 1; k < w.size(); ++k) sum = sum + w[k];
  for (Expr& e : w) e = e / sum;
  return w;
}

// The input coordinate of output index `y` along `ax`.
Expr source_coordinate(ConvertContext& c, const ResizeAttrs& a, const AxisResize& ax, Expr y) {
  Expr yf = ir::cast(kFloat64, y);
  double n = static_cast<double>(ax.n), out_w = ax.scale * n;
  const std::string& mode = a.coordinates;
  if (mode == "align_corners") return out_w == 1 ? f64(0) : yf * f64((n - 1) / (out_w - 1));
  if (mode == "asymmetric") return yf / f64(ax.scale);
  if (mode == "tf_crop_and_resize") {
    Expr x = out_w == 1 ? f64((ax.roi1 - ax.roi0) * (n - 1) / 2)
                        : yf * f64((ax.roi1 - ax.roi0) * (n - 1) / (out_w - 1));
    return x + f64(ax.roi0 * (n - 1));
  }
  if (mode == "pytorch_half_pixel")
    return out_w == 1 ? f64(-0.5) : (yf + f64(0.5)) / f64(ax.scale) - f64(0.5);
  if (mode == "half_pixel") return (yf + f64(0.5)) / f64(ax.scale) - f64(0.5);
  if (mode == "half_pixel_symmetric") {
    double offset = n / 2 * (1 - static_cast<double>(ax.m) / out_w);
    return f64(offset) + (yf + f64(0.5)) / f64(ax.scale) - f64(0.5);
  }
  c.fail(fmt::format("unknown coordinate_transformation_mode '{}'", mode));
}

// `x` resized along `axis`, in float64.
Tensor resize_axis(ConvertContext& c, const ResizeAttrs& a, const Tensor& x, size_t axis,
                   const AxisResize& ax) {
  std::vector<int64_t> shape = x.shape();
  shape[axis] = ax.m;
  int taps = tap_count(a, ax.scale);
  int pad = (taps + 1) / 2;
  return te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr xo = source_coordinate(c, a, ax, v[axis]);
        Expr fl = ir::call(ir::CallOp::kFloor, {xo});
        Expr ratio = ir::select(xo == fl, f64(1), xo - fl);
        // The taps are the `taps` inputs nearest xo (ties to the smaller), on the input padded
        // with its edges: clamped indices.
        Expr xp = xo + f64(pad), p = ir::call(ir::CallOp::kFloor, {xp}), frac = xp - p;
        Expr pi = ir::cast(kInt32, p);
        Expr off = taps % 2 == 0 ? ir::select(frac == f64(0), const_i32(-(taps / 2)),
                                              const_i32(-(taps / 2) + 1))
                                 : ir::select(frac <= f64(0.5), const_i32(-((taps - 1) / 2)),
                                              const_i32(-((taps - 1) / 2) + 1));
        Expr start = pi + off - const_i32(pad);
        std::vector<Expr> w = tap_weights(a, ratio, ax.scale, taps);
        if (a.exclude_outside) {
          Expr sum = f64(0);
          for (int k = 0; k < taps; ++k) {
            Expr i = start + const_i32(k);
            w[k] = ir::select(i >= Expr(0) && i < const_i32(ax.n), w[k], f64(0));
            sum = sum + w[k];
          }
          sum = ir::select(sum == f64(0), f64(1), sum);
          for (Expr& e : w) e = e / sum;
        }
        Expr acc;
        for (int k = 0; k < taps; ++k) {
          std::vector<Expr> idx = exprs(v);
          idx[axis] = ir::max(ir::min(start + const_i32(k), const_i32(ax.n - 1)), Expr(0));
          Expr tap = x(idx);
          if (tap.dtype() != kFloat64) tap = ir::cast(kFloat64, tap);
          Expr term = w[static_cast<size_t>(k)] * tap;
          acc = k == 0 ? term : acc + term;
        }
        if (a.coordinates == "tf_crop_and_resize")
          acc = ir::select(xo < f64(0) || xo > f64(static_cast<double>(ax.n - 1)),
                           f64(a.extrapolation), acc);
        return acc;
      },
      c.name("resize"));
}

}  // namespace

std::vector<Tensor> resize(ConvertContext& c) {
  const Node& n = c.node();
  ResizeAttrs a{n.get_string("mode", "nearest"),
                n.get_string("coordinate_transformation_mode", "half_pixel"),
                n.get_string("nearest_mode", "round_prefer_floor"),
                n.get_float("cubic_coeff_a", -0.75),
                n.get_float("extrapolation_value", 0),
                n.get_int("exclude_outside", 0) != 0,
                n.get_int("antialias", 0) != 0};
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    c.fail(fmt::format("unknown mode '{}' (nearest, linear or cubic)", a.mode));
  if (a.mode == "nearest" && a.antialias) c.fail("antialias is for linear and cubic modes");
  if (a.nearest != "round_prefer_floor" && a.nearest != "round_prefer_ceil" &&
      a.nearest != "floor" && a.nearest != "ceil")
    c.fail(fmt::format("unknown nearest_mode '{}'", a.nearest));
  DataType t = c.dtype(0);
  if (t.is_bool()) c.fail("cannot interpolate booleans");
  int rank = c.rank(0);
  const std::vector<int64_t>& in = c.shape(0);
  std::vector<int64_t> axes;
  if (n.has("axes")) {
    for (int64_t d : n.get_ints("axes")) axes.push_back(c.axis(d, rank, "a resize axis"));
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  auto given = [&](size_t i) { return c.has_input(i) && c.value(i).numel() > 0; };
  std::vector<AxisResize> dims(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) dims[static_cast<size_t>(d)] = {in[d], in[d], 1.0, 0, 1};
  if (given(1)) {
    const runtime::NDArray& roi = c.constant(1, "the roi");
    if (roi.numel() != 2 * static_cast<int64_t>(axes.size()))
      c.fail(fmt::format("the roi has {} values for {} axes (two per axis)", roi.numel(),
                         axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      AxisResize& d = dims[static_cast<size_t>(axes[i])];
      d.roi0 = roi.get_flat(static_cast<int64_t>(i));
      d.roi1 = roi.get_flat(static_cast<int64_t>(axes.size() + i));
    }
  }
  if (given(2) == given(3)) c.fail("exactly one of scales and sizes must be given");
  if (given(2)) {
    const runtime::NDArray& scales = c.constant(2, "the scales");
    if (scales.numel() != static_cast<int64_t>(axes.size()))
      c.fail(fmt::format("{} scales for {} axes", scales.numel(), axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      AxisResize& d = dims[static_cast<size_t>(axes[i])];
      d.scale = scales.get_flat(static_cast<int64_t>(i));
      if (!(d.scale > 0)) c.fail(fmt::format("scale {} is not positive", d.scale));
      d.m = static_cast<int64_t>(d.scale * static_cast<double>(d.n));
    }
  } else {
    std::vector<int64_t> sizes = c.constant_ints(3, "the sizes");
    if (sizes.size() != axes.size())
      c.fail(fmt::format("{} sizes for {} axes", sizes.size(), axes.size()));
    std::string policy = n.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      c.fail(fmt::format("unknown keep_aspect_ratio_policy '{}'", policy));
    double kept = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      AxisResize& d = dims[static_cast<size_t>(axes[i])];
      if (sizes[i] < 0) c.fail(fmt::format("size {} is negative", sizes[i]));
      d.m = sizes[i];
      d.scale = static_cast<double>(d.m) / static_cast<double>(d.n);
      kept = policy == "not_larger" ? std::min(kept, d.scale) : std::max(kept, d.scale);
    }
    if (policy != "stretch")
      for (int64_t ax : axes) {
        AxisResize& d = dims[static_cast<size_t>(ax)];
        d.scale = kept;
        d.m = static_cast<int64_t>(kept * static_cast<double>(d.n) + 0.5);
      }
  }
  for (const AxisResize& d : dims)
    if (d.m > 0 && d.n == 0) c.fail("cannot resize an empty axis to a non-empty one");

  Tensor y = c.input(0);
  bool any = false;
  for (int64_t ax : axes) {
    const AxisResize& d = dims[static_cast<size_t>(ax)];
    bool identity = std::abs(d.scale - 1) <= 1e-9 && d.m == d.n &&
                    (a.coordinates != "tf_crop_and_resize" ||
                     (std::abs(d.roi0) <= 1e-9 && std::abs(d.roi1 - 1) <= 1e-9));
    if (identity) continue;
    y = resize_axis(c, a, y, static_cast<size_t>(ax), d);
    any = true;
  }
  const Tensor& wide = y;
  return {te::compute(
      wide.shape(),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr e = wide(exprs(v));
        if (!any || e.dtype() == t) return e;
        if (t.is_integer()) {
          e = ir::call(ir::CallOp::kRound, {e});
          e = ir::max(ir::min(e, ir::cast(kFloat64, ir::max_value(t))),
                      ir::cast(kFloat64, ir::min_value(t)));
        }
        return ir::cast(t, e);
      },
      c.name("resize_out"))};
}

}  // namespace tyche::graph::ops
