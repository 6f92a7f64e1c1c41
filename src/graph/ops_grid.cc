// GridSample (opsets 16-22: nearest, linear and cubic sampling of 2-D and 3-D inputs at the grid's
// normalized coordinates, with zeros, border or reflection padding) and AffineGrid (opset 20: the
// grid of an affine transform). Coordinates and weights are computed in double precision, as
// ONNX's reference computes them; each output element reads a fixed number of taps (2 or 4 per
// spatial axis), so the op is injective: a gather whose positions depend on the grid's values.
#include <cmath>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

Expr floor64(Expr x) {
  return ir::call(ir::CallOp::kFloor, {std::move(x)});
}

// x reflected by the nearer border until it lies in [lo, hi], as ONNX's reference reflects.
Expr reflect(Expr x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return f64(lo);
  Expr below = f64(lo) - x, above = x - f64(hi);
  Expr nb = floor64(below / f64(range)), na = floor64(above / f64(range));
  Expr rb = below - nb * f64(range), ra = above - na * f64(range);
  auto even = [](Expr n) { return n - f64(2) * floor64(n / f64(2)) == f64(0); };
  Expr from_below = ir::select(even(nb), f64(lo) + rb, f64(hi) - rb);
  Expr from_above = ir::select(even(na), f64(hi) - ra, f64(lo) + ra);
  return ir::select(x < f64(lo), from_below, ir::select(x > f64(hi), from_above, x));
}

// Keys' cubic convolution weights (a = -0.75) of the four taps around a point t in [0, 1) past
// the first of the middle two.
std::vector<Expr> cubic_weights(Expr t) {
  const double a = -0.75;
  auto near = [&](Expr x) {  // |x| <= 1
    return ((f64(a + 2) * x - f64(a + 3)) * x * x) + f64(1);
  };
  auto far = [&](Expr x) {  // 1 < |x| < 2
    return ((f64(a) * x - f64(5 * a)) * x + f64(8 * a)) * x - f64(4 * a);
  };
  return {far(t + f64(1)), near(t), near(f64(1) - t), far(f64(2) - t)};
}

}  // namespace

std::vector<Tensor> grid_sample(ConvertContext& c) {
  int rank = c.rank(0);
  if (rank != 4 && rank != 5) c.fail("needs a 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input");
  if (!c.dtype(0).is_float() || !c.dtype(1).is_float()) c.fail("needs float inputs");
  const std::vector<int64_t>& xs = c.shape(0);
  const std::vector<int64_t>& gs = c.shape(1);
  auto nd = static_cast<size_t>(rank - 2);
  if (gs.size() != nd + 2 || gs[0] != xs[0] || gs.back() != static_cast<int64_t>(nd))
    c.fail(fmt::format("a grid of shape {} for an input of shape {} (want (N, ..., {}))",
                       shape_text(gs), shape_text(xs), nd));
  std::string mode = c.node().get_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    c.fail(fmt::format("unknown mode '{}' (linear, nearest or cubic)", mode));
  std::string padding = c.node().get_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.fail(fmt::format("unknown padding_mode '{}' (zeros, border or reflection)", padding));
  bool align = c.node().get_int("align_corners", 0) != 0;
  for (size_t d = 0; d < nd; ++d)
    if (xs[2 + d] == 0) c.fail("an empty spatial axis has nothing to sample");
  std::vector<int64_t> out = {xs[0], xs[1]};
  for (size_t d = 0; d < nd; ++d) out.push_back(gs[1 + d]);
  DataType t = c.dtype(0);
  int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        // Per spatial axis: the taps' indices (clamped for the load), whether each is inside,
        // and their weights.
        std::vector<std::vector<Expr>> index(nd), inside(nd), weight(nd);
        for (size_t d = 0; d < nd; ++d) {
          double size = static_cast<double>(xs[2 + d]);
          double lo = align ? 0 : -0.5, hi = align ? size - 1 : size - 0.5;
          std::vector<Expr> gi = {v[0]};
          for (size_t k = 0; k < nd; ++k) gi.push_back(v[2 + k]);
          gi.push_back(const_i32(static_cast<int64_t>(nd - 1 - d)));  // grid's last axis: x first
          Expr g = ir::cast(kFloat64, c.load(1, gi));
          Expr x = align ? (g + f64(1)) / f64(2) * f64(size - 1)
                         : ((g + f64(1)) * f64(size) - f64(1)) / f64(2);
          if (mode == "nearest") x = ir::call(ir::CallOp::kRound, {x});
          if (padding == "border")
            x = ir::select(x < f64(lo) || x > f64(hi), ir::max(ir::min(x, f64(size - 1)), f64(0)),
                           x);
          else if (padding == "reflection")
            x = reflect(x, lo, hi);
          Expr x0 = mode == "nearest" ? x : floor64(x);
          Expr frac = x - x0;
          std::vector<Expr> w = mode == "nearest"  ? std::vector<Expr>{f64(1)}
                                : mode == "linear" ? std::vector<Expr>{f64(1) - frac, frac}
                                                   : cubic_weights(frac);
          for (int k = 0; k < taps; ++k) {
            int offset = mode == "cubic" ? k - 1 : k;
            Expr i = x0 + f64(offset);
            Expr in = ir::make_bool(true);
            if (padding == "zeros") {
              in = i >= f64(0) && i <= f64(size - 1);
            } else if (padding == "border") {
              i = ir::max(ir::min(i, f64(size - 1)), f64(0));
            } else {
              i = reflect(i, lo, hi);
            }
            // Clamped as a float (no conversion overflows) and again as an integer (the bound
            // the checker sees); a tap outside is masked by `in` where padding is zeros.
            Expr ii = ir::cast(kInt32, ir::max(ir::min(i, f64(size - 1)), f64(0)));
            ii = ir::max(ir::min(ii, const_i32(xs[2 + d] - 1)), Expr(0));
            index[d].push_back(ii);
            inside[d].push_back(in);
            weight[d].push_back(w[static_cast<size_t>(k)]);
          }
        }
        // The sum over every combination of taps, weights multiplied.
        Expr sum = f64(0);
        int64_t combos = 1;
        for (size_t d = 0; d < nd; ++d) combos *= taps;
        for (int64_t k = 0; k < combos; ++k) {
          std::vector<Expr> xi = {v[0], v[1]};
          Expr w = f64(1), ok = ir::make_bool(true);
          int64_t rest = k;
          for (size_t d = 0; d < nd; ++d) {
            auto j = static_cast<size_t>(rest % taps);
            rest /= taps;
            xi.push_back(index[d][j]);
            w = w * weight[d][j];
            ok = ok && inside[d][j];
          }
          Expr value = ir::cast(kFloat64, c.load(0, xi));
          sum = sum + (padding == "zeros" ? ir::select(ok, w * value, f64(0)) : w * value);
        }
        return ir::cast(t, sum);
      },
      c.name("grid_sample"))};
}

std::vector<Tensor> affine_grid(ConvertContext& c) {
  if (!c.dtype(0).is_float()) c.fail("needs a float theta");
  std::vector<int64_t> size = c.constant_ints(1, "the size");
  if (size.size() != 4 && size.size() != 5)
    c.fail(fmt::format("the size must be (N, C, H, W) or (N, C, D, H, W), not {} values",
                       size.size()));
  size_t nd = size.size() - 2;
  const std::vector<int64_t>& th = c.shape(0);
  if (th != std::vector<int64_t>{size[0], static_cast<int64_t>(nd), static_cast<int64_t>(nd + 1)})
    c.fail(fmt::format("theta of shape {} for size {} (want ({}, {}, {}))", shape_text(th),
                       shape_text(size), size[0], nd, nd + 1));
  for (int64_t s : size)
    if (s < 0) c.fail("a negative size");
  bool align = c.node().get_int("align_corners", 0) != 0;
  std::vector<int64_t> out = {size[0]};
  for (size_t d = 0; d < nd; ++d) out.push_back(size[2 + d]);
  out.push_back(static_cast<int64_t>(nd));
  DataType t = c.dtype(0);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        // The base grid: x along the last spatial axis first; theta's row `v.back()` applied.
        Expr row = v.back();
        Expr sum = ir::cast(kFloat64, c.load(0, {v[0], row, const_i32(static_cast<int64_t>(nd))}));
        for (size_t k = 0; k < nd; ++k) {
          size_t axis = nd - 1 - k;  // column k of theta scales the coordinate of axis nd-1-k
          auto n = static_cast<double>(size[2 + axis]);
          Expr i = ir::cast(kFloat64, v[1 + axis]);
          Expr base = align ? (n > 1 ? f64(-1) + f64(2) * i / f64(n - 1) : f64(0))
                            : f64(-1) + (f64(2) * i + f64(1)) / f64(n);
          sum =
              sum +
              ir::cast(kFloat64, c.load(0, {v[0], row, const_i32(static_cast<int64_t>(k))})) * base;
        }
        return ir::cast(t, sum);
      },
      c.name("affine_grid"))};
}

}  // namespace tyche::graph::ops
