// Convolutions, matrix products and pooling, in ONNX's NCHW layout.
#include <functional>
#include <numeric>

#include "graph/ops_window.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

// A product of two elements: bfloat16 operands (--dtype bfloat16) multiply and accumulate in
// float32, as AVX512-BF16's dot does.
Expr product(Expr a, Expr b) {
  if (a.dtype().is_bfloat16() && b.dtype().is_bfloat16())
    return ir::cast(kFloat32, a) * ir::cast(kFloat32, b);
  return a * b;
}

}  // namespace

Window resolve_window(ConvertContext& c, const std::vector<int64_t>& in,
                      std::vector<int64_t> kernel, bool ceil_mode) {
  size_t s = in.size();
  const Node& n = c.node();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = n.get_ints("strides", std::vector<int64_t>(s, 1));
  w.dilations = n.get_ints("dilations", std::vector<int64_t>(s, 1));
  std::vector<int64_t> pads = n.get_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (w.kernel.size() != s || w.strides.size() != s || w.dilations.size() != s ||
      pads.size() != 2 * s)
    c.fail(fmt::format(
        "kernel_shape, strides, dilations and pads must match the {} spatial dimensions", s));
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  for (size_t d = 0; d < s; ++d) {
    if (w.strides[d] < 1 || w.dilations[d] < 1 || w.kernel[d] < 1)
      c.fail("strides, dilations and kernel sizes must be positive");
    int64_t span = w.dilations[d] * (w.kernel[d] - 1) + 1;
    int64_t pb = pads[d], pe = pads[s + d];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (in[d] + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + span - in[d]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (auto_pad == "VALID") {
      pb = pe = 0;
    } else if (auto_pad != "NOTSET") {
      c.fail(fmt::format("unknown auto_pad '{}'", auto_pad));
    }
    if (pb < 0 || pe < 0) c.fail("negative pads");
    int64_t room = in[d] + pb + pe - span;
    if (room < 0)
      c.fail(fmt::format("the window ({}) is larger than the padded input ({})", span,
                         in[d] + pb + pe));
    int64_t out = (ceil_mode ? (room + w.strides[d] - 1) / w.strides[d] : room / w.strides[d]) + 1;
    // A window must start inside the input or its leading padding.
    if (ceil_mode && (out - 1) * w.strides[d] >= in[d] + pb) --out;
    w.pad_begin.push_back(pb);
    w.pad_end.push_back(pe);
    w.out.push_back(out);
  }
  return w;
}

Tensor pad_input(ConvertContext& c, const Tensor& x, const Axes& ax, const Window& w,
                 const FillFn& fill) {
  std::vector<int64_t> shape = x.shape();
  bool any = false;
  for (size_t d = 0; d < w.out.size(); ++d) {
    size_t a = ax.spatial(d);
    int64_t need = (w.out[d] - 1) * w.strides[d] + w.dilations[d] * (w.kernel[d] - 1) + 1;
    int64_t len = std::max(need, shape[a] + w.pad_begin[d]);
    any = any || w.pad_begin[d] > 0 || len > shape[a];
    shape[a] = len;
  }
  if (!any) return x;
  std::vector<int64_t> in = x.shape();
  return te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr cond = ir::make_bool(true);
        std::vector<Expr> idx(v.begin(), v.end());
        for (size_t d = 0; d < w.out.size(); ++d) {
          size_t a = ax.spatial(d);
          Expr i = v[a] - const_i32(w.pad_begin[d]);
          cond = cond && i >= Expr(0) && i < const_i32(in[a]);
          idx[a] = i;
        }
        return te::if_then_else(cond, x(idx), fill());
      },
      c.name("pad"));
}

std::vector<ir::IterVar> window_axes(const Window& w) {
  static const std::vector<std::vector<const char*>> kNames = {
      {"rl"}, {"rh", "rw"}, {"rd", "rh", "rw"}};
  std::vector<ir::IterVar> axes;
  for (size_t d = 0; d < w.kernel.size(); ++d)
    axes.push_back(te::reduce_axis(w.kernel[d], kNames.at(w.kernel.size() - 1)[d]));
  return axes;
}

Tensor add_channel_bias(ConvertContext& c, const Tensor& y, const Axes& ax, size_t i) {
  int64_t channels = y.shape()[ax.channel()];
  if (c.shape(i) != std::vector<int64_t>{channels})
    c.fail(fmt::format("the bias must have {} elements", channels));
  return te::compute(
      y.shape(),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return y(std::vector<Expr>(v.begin(), v.end())) + c.load(i, {v[ax.channel()]});
      },
      c.name("bias_add"));
}

Axes activation_axes(ConvertContext& c, size_t i, bool any_type) {
  if (c.rank(i) < 3 || c.rank(i) > 5)
    c.fail("needs an (N, C, spatial...) input with 1 to 3 spatial dimensions");
  if (!any_type && !c.dtype(i).is_float())
    c.fail(fmt::format("needs float inputs, not {}", c.dtype(i).str()));
  return Axes{c.node().get_string(kLayoutAttribute, "") == "NHWC", static_cast<size_t>(c.rank(i))};
}

Tensor conv_sum(ConvertContext& c, size_t w_index, const Tensor& x, const FillFn& fill,
                const TapProduct& product) {
  Axes ax = activation_axes(c, 0, /*any_type=*/true);
  const std::vector<int64_t>& xs = c.shape(0);
  const std::vector<int64_t>& ws =
      c.shape(w_index);  // (CO, CI/group, k...), or (k..., CI/group, CO) channels last
  size_t s = ax.num_spatial();
  int64_t groups = c.node().get_int("group", 1);
  if (ws.size() != xs.size()) c.fail("the weight's rank differs from the input's");
  int64_t ci = xs[ax.channel()], co = ax.channels_last ? ws.back() : ws[0];
  int64_t ci_group = ax.channels_last ? ws[s] : ws[1];
  std::vector<int64_t> kernel =
      ax.channels_last ? std::vector<int64_t>(ws.begin(), ws.begin() + static_cast<long>(s))
                       : std::vector<int64_t>(ws.begin() + 2, ws.end());
  if (groups < 1 || ci % groups || co % groups || ci_group * groups != ci)
    c.fail(fmt::format("{} input channels, weight {} and group {} do not agree", ci, shape_text(ws),
                       groups));
  if (c.node().has("kernel_shape") && c.node().get_ints("kernel_shape") != kernel)
    c.fail("kernel_shape differs from the weight's");
  Window w = resolve_window(c, ax.spatial_of(xs), kernel);
  Tensor padded = pad_input(c, x, ax, w, fill);
  const Tensor& weight = c.input(w_index);
  int64_t co_group = co / groups;
  std::vector<ir::IterVar> axes;
  std::optional<ir::IterVar> rc;
  if (ci_group > 1) rc = te::reduce_axis(ci_group, "rc");
  std::vector<ir::IterVar> win = window_axes(w);
  if (rc) axes.push_back(*rc);
  for (const auto& a : win) axes.push_back(a);
  if (axes.empty()) axes.push_back(te::reduce_axis(1, "rc"));  // a 1x1 depthwise convolution
  Tensor y = te::compute(
      ax.shape(xs[0], co, w.out),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr oc = v[ax.channel()];
        Expr wc = rc ? Expr(rc->var) : Expr(0);
        Expr in_c =
            groups > 1 ? ir::floordiv(oc, const_i32(co_group)) * const_i32(ci_group) + wc : wc;
        std::vector<Expr> xi(xs.size()), wi;
        xi[0] = v[0];
        xi[ax.channel()] = in_c;
        for (size_t d = 0; d < s; ++d) {
          xi[ax.spatial(d)] =
              v[ax.spatial(d)] * const_i32(w.strides[d]) + win[d].var * const_i32(w.dilations[d]);
          wi.push_back(win[d].var);
        }
        if (ax.channels_last) {
          wi.push_back(wc);
          wi.push_back(oc);
        } else {
          wi.insert(wi.begin(), {oc, wc});
        }
        return te::sum(product(padded(xi), weight(wi), xi, wi), axes);
      },
      c.name("conv"));
  return y;
}

std::vector<Tensor> conv(ConvertContext& c) {
  Axes ax = activation_axes(c, 0);
  DataType t = c.dtype(0);
  Tensor y = conv_sum(
      c, 1, c.input(0), [t] { return ir::make_const(t, 0); },
      [](Expr a, Expr b, const auto&, const auto&) { return product(a, b); });
  if (c.has_input(2)) y = add_channel_bias(c, y, ax, 2);
  return {y};
}

std::vector<Tensor> conv_transpose(ConvertContext& c) {
  if (activation_axes(c, 0).channels_last) c.fail("channels-last layout is not supported");
  const std::vector<int64_t>& xs = c.shape(0);
  const std::vector<int64_t>& ws = c.shape(1);  // (C, M/group, k...)
  size_t s = xs.size() - 2;
  const Node& n = c.node();
  int64_t groups = n.get_int("group", 1);
  if (ws.size() != xs.size() || ws[0] != xs[1] || groups < 1 || xs[1] % groups)
    c.fail(fmt::format("input {} and weight {} with group {} do not agree", shape_text(xs),
                       shape_text(ws), groups));
  int64_t ci_group = xs[1] / groups, co_group = ws[1], co = co_group * groups;
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  std::vector<int64_t> strides = n.get_ints("strides", std::vector<int64_t>(s, 1));
  std::vector<int64_t> dil = n.get_ints("dilations", std::vector<int64_t>(s, 1));
  std::vector<int64_t> pads = n.get_ints("pads", std::vector<int64_t>(2 * s, 0));
  std::vector<int64_t> out_pad = n.get_ints("output_padding", std::vector<int64_t>(s, 0));
  std::vector<int64_t> out_shape = n.get_ints("output_shape");
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (strides.size() != s || dil.size() != s || pads.size() != 2 * s || out_pad.size() != s)
    c.fail("strides, dilations, pads and output_padding must match the spatial dimensions");
  std::vector<int64_t> out = {xs[0], co};
  std::vector<int64_t> pad_begin(s);
  for (size_t d = 0; d < s; ++d) {
    int64_t span = dil[d] * (kernel[d] - 1) + 1;
    int64_t full = strides[d] * (xs[d + 2] - 1) + out_pad[d] + span;
    int64_t o = full - pads[d] - pads[s + d];
    pad_begin[d] = pads[d];
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = out_shape.empty() ? xs[d + 2] * strides[d] : out_shape.at(out_shape.size() - s + d);
      int64_t total = full - o;
      pad_begin[d] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
    } else if (auto_pad == "VALID") {
      o = full;
      pad_begin[d] = 0;
    }
    if (o < 1) c.fail("the output would be empty");
    out.push_back(o);
  }
  // Gather form: the input spread out by the strides, padded by span-1-pad_begin on the left,
  // then a stride-1 convolution with the flipped kernel.
  std::vector<int64_t> spread_shape = {xs[0], xs[1]};
  std::vector<int64_t> left(s);
  for (size_t d = 0; d < s; ++d) {
    left[d] = dil[d] * (kernel[d] - 1) - pad_begin[d];
    spread_shape.push_back(out[d + 2] + dil[d] * (kernel[d] - 1));
  }
  const Tensor& x = c.input(0);
  Tensor spread = te::compute(
      spread_shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr cond = ir::make_bool(true);
        std::vector<Expr> idx = {v[0], v[1]};
        for (size_t d = 0; d < s; ++d) {
          Expr t = v[d + 2] - const_i32(left[d]);
          cond = cond && t >= Expr(0) && ir::floormod(t, const_i32(strides[d])) == Expr(0) &&
                 t < const_i32((xs[d + 2] - 1) * strides[d] + 1);
          idx.push_back(ir::floordiv(t, const_i32(strides[d])));
        }
        return te::if_then_else(cond, x(idx), ir::make_float(0));
      },
      c.name("spread"));
  const Tensor& weight = c.input(1);
  std::vector<ir::IterVar> axes;
  auto rc = te::reduce_axis(ci_group, "rc");
  axes.push_back(rc);
  Window w{kernel, std::vector<int64_t>(s, 1), dil, {}, {}, {}};
  std::vector<ir::IterVar> win = window_axes(w);
  axes.insert(axes.end(), win.begin(), win.end());
  Tensor y = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr in_c = groups > 1
                        ? ir::floordiv(v[1], const_i32(co_group)) * const_i32(ci_group) + rc.var
                        : Expr(rc.var);
        std::vector<Expr> xi = {v[0], in_c};
        std::vector<Expr> wi = {in_c,
                                groups > 1 ? ir::floormod(v[1], const_i32(co_group)) : Expr(v[1])};
        for (size_t d = 0; d < s; ++d) {
          xi.push_back(v[d + 2] + win[d].var * const_i32(dil[d]));
          wi.push_back(const_i32(kernel[d] - 1) - win[d].var);
        }
        return te::sum(spread(xi) * weight(wi), axes);
      },
      c.name("conv_transpose"));
  if (c.has_input(2)) y = add_channel_bias(c, y, Axes{false, xs.size()}, 2);
  return {y};
}

Tensor matmul_sum(ConvertContext& c, size_t a_index, size_t b_index, const Tensor& a_tensor,
                  const TapProduct& product) {
  std::vector<int64_t> a = c.shape(a_index), b = c.shape(b_index);
  if (a.empty() || b.empty()) c.fail("needs inputs of rank 1 or more");
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  int64_t k = a.back();
  if (b[b.size() - 2] != k)
    c.fail(fmt::format("shapes {} and {} cannot be multiplied", shape_text(c.shape(a_index)),
                       shape_text(c.shape(b_index))));
  std::vector<int64_t> batch =
      broadcast_shapes(c.node(), {a.begin(), a.end() - 2}, {b.begin(), b.end() - 2});
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  auto rk = te::reduce_axis(k, "k");
  size_t nb = batch.size();
  return te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr i = a_vec ? Expr(0) : Expr(v[nb]);
        Expr j = b_vec ? Expr(0) : Expr(v[out.size() - 1]);
        std::vector<Expr> out_batch(v.begin(), v.begin() + static_cast<long>(nb));
        auto batch_index = [&](const std::vector<int64_t>& shape) {
          return broadcast_index({shape.begin(), shape.end() - 2}, out_batch, batch);
        };
        std::vector<Expr> ai = a_vec ? std::vector<Expr>{} : batch_index(a),
                          bi = b_vec ? std::vector<Expr>{} : batch_index(b);
        if (!a_vec) ai.push_back(i);
        ai.push_back(rk.var);
        bi.push_back(rk.var);
        if (!b_vec) bi.push_back(j);
        return te::sum(product(a_tensor(ai), c.input(b_index)(bi), ai, bi), {rk});
      },
      c.name("matmul"));
}

std::vector<Tensor> matmul(ConvertContext& c) {
  if (c.dtype(0) != c.dtype(1)) c.fail("inputs of different types");
  return {matmul_sum(c, 0, 1, c.input(0),
                     [](Expr x, Expr y, const auto&, const auto&) { return product(x, y); })};
}

std::vector<Tensor> gemm(ConvertContext& c) {
  const Node& n = c.node();
  bool ta = n.get_int("transA", 0) != 0, tb = n.get_int("transB", 0) != 0;
  double alpha = n.get_float("alpha", 1), beta = n.get_float("beta", 1);
  const std::vector<int64_t>& a = c.shape(0);
  const std::vector<int64_t>& b = c.shape(1);
  if (a.size() != 2 || b.size() != 2) c.fail("needs 2-D A and B");
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1], kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  if (k != kb) c.fail(fmt::format("A {} and B {} do not agree", shape_text(a), shape_text(b)));
  auto rk = te::reduce_axis(k, "k");
  const Tensor& A = c.input(0);
  const Tensor& B = c.input(1);
  Tensor y = te::compute(
      {m, nn},
      [&](ir::Var i, ir::Var j) -> te::ComputeBody {
        Expr av = ta ? A(rk.var, i) : A(i, rk.var);
        Expr bv = tb ? B(j, rk.var) : B(rk.var, j);
        return te::sum(product(av, bv), {rk});
      },
      c.name("matmul"));
  bool has_c = c.has_input(2) && beta != 0;
  if (!has_c && alpha == 1) return {y};
  if (has_c) broadcast_shapes(n, {m, nn}, c.shape(2));
  return {te::compute(
      {m, nn},
      [&](ir::Var i, ir::Var j) -> te::ComputeBody {
        Expr r = y(i, j);
        if (alpha != 1) r = r * ir::make_float(alpha);
        if (has_c) {
          Expr cv = c.load_broadcast(2, {i, j}, {m, nn});
          r = r + (beta == 1 ? cv : cv * ir::make_float(beta));
        }
        return r;
      },
      c.name("bias_add"))};
}

std::vector<Tensor> max_pool(ConvertContext& c) {
  Axes ax = activation_axes(c, 0, /*any_type=*/true);  // a quantized model pools its integers
  const std::vector<int64_t>& xs = c.shape(0);
  bool indices = c.node().outputs.size() > 1 && c.node().outputs[1] >= 0;
  int64_t storage_order = c.node().get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    c.fail(fmt::format("storage_order must be 0 (rows) or 1 (columns), not {}", storage_order));
  Window w = resolve_window(c, ax.spatial_of(xs), c.node().get_ints("kernel_shape"),
                            c.node().get_int("ceil_mode", 0) != 0);
  DataType t = c.dtype(0);
  Tensor padded = pad_input(c, c.input(0), ax, w, [t] { return ir::min_value(t); });
  std::vector<int64_t> out = ax.shape(xs[0], xs[ax.channel()], w.out);
  // The input index of window tap `win` of output `v` (in the padded input).
  auto tap = [&](const std::vector<ir::Var>& v, const std::vector<ir::IterVar>& win) {
    std::vector<Expr> xi(v.begin(), v.end());
    for (size_t d = 0; d < win.size(); ++d)
      xi[ax.spatial(d)] =
          v[ax.spatial(d)] * const_i32(w.strides[d]) + win[d].var * const_i32(w.dilations[d]);
    return xi;
  };
  std::vector<ir::IterVar> win = window_axes(w);
  Tensor max = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::max(padded(tap(v, win)), win);
      },
      c.name("max_pool"));
  if (!indices) return {max};
  // Indices: the first tap (in row-major order) that holds the maximum, as its flat index in the
  // NC... input, its spatial dimensions in row-major or (storage_order 1) column-major order.
  std::vector<ir::IterVar> win2 = window_axes(w);
  Tensor argmax = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> xi = tap(v, win2);
        Expr inside = ir::make_bool(true);
        std::vector<Expr> at;  // spatial positions in the unpadded input
        for (size_t d = 0; d < win2.size(); ++d) {
          Expr i = ir::cast(kInt64, xi[ax.spatial(d)] - const_i32(w.pad_begin[d]));
          inside = inside && i >= ir::make_const(kInt64, 0) &&
                   i < ir::make_const(kInt64, xs[ax.spatial(d)]);
          at.push_back(i);
        }
        Expr flat = ir::cast(kInt64, v[0]) * ir::make_const(kInt64, xs[ax.channel()]) +
                    ir::cast(kInt64, v[ax.channel()]);
        size_t n = at.size();
        for (size_t k = 0; k < n; ++k) {
          size_t d = storage_order == 0 ? k : n - 1 - k;
          flat = flat * ir::make_const(kInt64, xs[ax.spatial(d)]) + at[d];
        }
        Expr hit = inside && padded(xi) == max(exprs(v));
        return te::min(ir::select(hit, flat, ir::max_value(kInt64)), win2);
      },
      c.name("max_pool_indices"));
  return {max, argmax};
}

namespace {

// The sum of f(x) over each pooling window (pads are 0), dilations included.
Tensor window_sum(ConvertContext& c, const Axes& ax, const Window& w,
                  const std::function<Expr(Expr)>& f, const char* name) {
  const std::vector<int64_t>& xs = c.shape(0);
  Tensor padded = pad_input(c, c.input(0), ax, w, [] { return ir::make_float(0); });
  std::vector<ir::IterVar> win = window_axes(w);
  std::vector<int64_t> out = ax.shape(xs[0], xs[ax.channel()], w.out);
  return te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> xi(v.begin(), v.end());
        for (size_t d = 0; d < win.size(); ++d)
          xi[ax.spatial(d)] = v[ax.spatial(d)] * const_i32(w.strides[d]) +
                              Expr(win[d].var) * const_i32(w.dilations[d]);
        return te::sum(f(padded(xi)), win);
      },
      c.name(name));
}

}  // namespace

std::vector<Tensor> average_pool(ConvertContext& c) {
  Axes ax = activation_axes(c, 0);
  const std::vector<int64_t>& xs = c.shape(0);
  Window w = resolve_window(c, ax.spatial_of(xs), c.node().get_ints("kernel_shape"),
                            c.node().get_int("ceil_mode", 0) != 0);
  bool include_pad = c.node().get_int("count_include_pad", 0) != 0;
  Tensor sum = window_sum(
      c, ax, w, [](Expr x) { return x; }, "pool_sum");
  std::vector<int64_t> out = sum.shape();
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        // Taps inside [lo, hi) along each dimension: the input, or the input and its pads. Tap
        // k sits at start + k * dilation: those from ceil((lo - start) / dilation) to
        // ceil((hi - start) / dilation), within [0, kernel), count.
        Expr count = Expr(1);
        for (size_t d = 0; d < w.kernel.size(); ++d) {
          int64_t lo = include_pad ? -w.pad_begin[d] : 0,
                  hi = xs[ax.spatial(d)] + (include_pad ? w.pad_end[d] : 0);
          Expr start = v[ax.spatial(d)] * const_i32(w.strides[d]) - const_i32(w.pad_begin[d]);
          Expr dil = const_i32(w.dilations[d]), kernel = const_i32(w.kernel[d]);
          auto taps_below = [&](Expr bound) {  // taps k with start + k * dil < bound
            Expr k = ir::floordiv(bound - start + dil - Expr(1), dil);
            return ir::max(ir::min(k, kernel), Expr(0));
          };
          count = count * (taps_below(const_i32(hi)) - taps_below(const_i32(lo)));
        }
        return sum(std::vector<Expr>(v.begin(), v.end())) / ir::cast(kFloat32, count);
      },
      c.name("average_pool"))};
}

std::vector<Tensor> lp_pool(ConvertContext& c) {
  require_float(c);
  Axes ax = activation_axes(c, 0);
  const std::vector<int64_t>& xs = c.shape(0);
  Window w = resolve_window(c, ax.spatial_of(xs), c.node().get_ints("kernel_shape"),
                            c.node().get_int("ceil_mode", 0) != 0);
  double p = static_cast<double>(c.node().get_int("p", 2));
  if (p < 1) c.fail(fmt::format("p {} is below 1", p));
  DataType t = c.dtype(0);
  Tensor sum = window_sum(
      c, ax, w,
      [&](Expr x) {
        Expr a = ir::abs(x);
        return p == 1 ? a : p == 2 ? a * a : ir::call(ir::CallOp::kPow, {a, ir::make_const(t, p)});
      },
      "lp_pool_sum");
  return {te::compute(
      sum.shape(),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr s = sum(exprs(v));
        if (p == 1) return s;
        if (p == 2) return ir::sqrt(s);
        return ir::call(ir::CallOp::kPow, {s, ir::make_const(t, 1 / p)});
      },
      c.name("lp_pool"))};
}

namespace {

// GlobalAveragePool and GlobalMaxPool: the spatial dimensions reduced to 1.
std::vector<Tensor> global_pool(ConvertContext& c, bool max) {
  Axes ax = activation_axes(c, 0);
  const std::vector<int64_t>& xs = c.shape(0);
  std::vector<ir::IterVar> axes;
  int64_t count = 1;
  for (size_t d = 0; d < ax.num_spatial(); ++d) {
    axes.push_back(te::reduce_axis(xs[ax.spatial(d)], fmt::format("r{}", d)));
    count *= xs[ax.spatial(d)];
  }
  std::vector<int64_t> out =
      ax.shape(xs[0], xs[ax.channel()], std::vector<int64_t>(ax.num_spatial(), 1));
  const Tensor& x = c.input(0);
  Tensor pooled = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> xi(v.begin(), v.end());
        for (size_t d = 0; d < axes.size(); ++d) xi[ax.spatial(d)] = axes[d].var;
        return max ? te::max(x(xi), axes) : te::sum(x(xi), axes);
      },
      c.name(max ? "global_max_pool" : "pool_sum"));
  if (max) return {pooled};
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return pooled(std::vector<Expr>(v.begin(), v.end())) *
               ir::make_float(1.0 / static_cast<double>(count));
      },
      c.name("global_average_pool"))};
}

}  // namespace

std::vector<Tensor> global_average_pool(ConvertContext& c) {
  return global_pool(c, false);
}
std::vector<Tensor> global_max_pool(ConvertContext& c) {
  return global_pool(c, true);
}

// Local response normalization across channels: x / (bias + alpha / size * (sum of x^2 over the
// `size` channels around c))^beta, the window cut at the first and last channel.
std::vector<Tensor> lrn(ConvertContext& c) {
  Axes ax = activation_axes(c, 0);
  int64_t size = c.node().get_int("size", 0);
  if (size < 1) c.fail("size must be a positive odd-or-even count of channels");
  double alpha = c.node().get_float("alpha", 1e-4), beta = c.node().get_float("beta", 0.75);
  double bias = c.node().get_float("bias", 1.0);
  const std::vector<int64_t>& xs = c.shape(0);
  const size_t ch = ax.channel();
  int64_t channels = xs[ch];
  int64_t before = (size - 1) / 2;
  const Tensor& x = c.input(0);
  ir::IterVar r = te::reduce_axis(size, "rc");
  Tensor square_sum = te::compute(
      xs,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx(v.begin(), v.end());
        Expr i = Expr(v[ch]) + Expr(r.var) - const_i32(before);
        idx[ch] = i;
        Expr in = i >= const_i32(0) && i < const_i32(channels);
        Expr e = te::if_then_else(in, x(idx), ir::make_float(0));
        return te::sum(e * e, {r});
      },
      c.name("lrn_square_sum"));
  return {te::compute(
      xs,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx(v.begin(), v.end());
        Expr scale = ir::make_float(bias) +
                     ir::make_float(alpha / static_cast<double>(size)) * square_sum(idx);
        return x(idx) / ir::call(ir::CallOp::kPow, {scale, ir::make_float(beta)});
      },
      c.name("lrn"))};
}

}  // namespace tyche::graph::ops
