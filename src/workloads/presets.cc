// The operator families (families.h) and their TE definitions. Layouts and input names match
// reference.h, which computes the same operators with plain loops.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ir/layout_free.h"
#include "te/tensor.h"
#include "workloads/families.h"
#include "workloads/reference.h"
#include "workloads/workloads.h"

namespace tyche::workloads {

namespace {

using ir::Expr;
using te::Tensor;
using te::Var;

// `e` converted to `t` (products are widened to the output's type before they are summed).
Expr widen(const Expr& e, DataType t) {
  return e.dtype() == t ? e : ir::cast(t, e);
}

int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation = 1) {
  int64_t o = (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  if (o <= 0)
    throw_error("kernel {} (dilation {}) does not fit input {} with padding {}", k, dilation, in,
                pad);
  return o;
}

// Zero padding of the `spatial` dims (1..spatial) of a channels-last tensor, as its own block
// named "pad"; no block when pad == 0.
Tensor pad_spatial(const Tensor& in, int spatial, int64_t pad) {
  if (pad == 0) return in;
  std::vector<int64_t> shape = in.shape();
  for (int d = 1; d <= spatial; ++d) shape[d] += 2 * pad;
  std::vector<int64_t> in_shape = in.shape();
  std::vector<std::string> axis_names;
  for (size_t d = 0; d < shape.size(); ++d) axis_names.push_back(fmt::format("i{}", d));
  return te::compute(
      shape,
      [&](const std::vector<Var>& v) -> te::ComputeBody {
        Expr cond = ir::make_bool(true);
        std::vector<Expr> idx(v.begin(), v.end());
        for (int d = 1; d <= spatial; ++d) {
          cond = cond && v[d] >= Expr(static_cast<int>(pad)) &&
                 v[d] < Expr(static_cast<int>(in_shape[d] + pad));
          idx[d] = v[d] - Expr(static_cast<int>(pad));
        }
        return te::if_then_else(cond, in(idx), ir::make_const(in.dtype(), 0));
      },
      "pad", axis_names);
}

// NHWC conv2d with stride, dilation and groups over an already padded input, accumulated in `out`.
Tensor conv2d_nhwc(const Tensor& padded, const Tensor& weight, int64_t oh, int64_t ow,
                   int64_t stride, int64_t dilation, int64_t groups, const std::string& name,
                   DataType out) {
  auto ws = weight.shape();  // (KH, KW, CI/groups, CO)
  int64_t k = ws[0], ci_per_group = ws[2], co = ws[3], co_per_group = co / groups;
  int64_t n = padded.shape()[0];
  auto rh = te::reduce_axis(k, "rh"), rw = te::reduce_axis(k, "rw"),
       rc = te::reduce_axis(ci_per_group, "rc");
  int s = static_cast<int>(stride), d = static_cast<int>(dilation);
  return te::compute(
      {n, oh, ow, co},
      [&](Var nn, Var h, Var w, Var c) {
        Expr channel = rc.var;
        if (groups > 1)
          channel =
              ir::floordiv(c, static_cast<int>(co_per_group)) * static_cast<int>(ci_per_group) +
              rc.var;
        return te::sum(widen(padded(nn, h * s + rh.var * d, w * s + rw.var * d, channel), out) *
                           widen(weight(rh.var, rw.var, rc.var, c), out),
                       {rh, rw, rc});
      },
      name, {"n", "h", "w", "co"});
}

std::vector<Tensor> build_gmm(const std::vector<int64_t>& p, const Precision& t) {
  const int64_t b = p[0], n = p[1], m = p[2], k = p[3];
  Tensor x = te::placeholder({b, n, k}, t.data, "X");
  Tensor y = te::placeholder({b, k, m}, t.weight, "Y");
  auto rk = te::reduce_axis(k, "k");
  Tensor z = te::compute(
      {b, n, m},
      [&](Var bb, Var i, Var j) {
        return te::sum(widen(x(bb, i, rk.var), t.out) * widen(y(bb, rk.var, j), t.out), {rk});
      },
      "Z", {"b", "i", "j"});
  return {x, y, z};
}

std::vector<Tensor> build_c1d(const std::vector<int64_t>& p) {
  const int64_t n = p[0], l = p[1], ci = p[2], co = p[3], k = p[4], s = p[5], pad = p[6];
  Tensor in = te::placeholder({n, l, ci}, kFloat32, "I");
  Tensor w = te::placeholder({k, ci, co}, kFloat32, "W");
  Tensor padded = pad_spatial(in, 1, pad);
  int64_t ol = out_size(l, k, s, pad);
  auto rl = te::reduce_axis(k, "rl"), rc = te::reduce_axis(ci, "rc");
  Tensor out = te::compute(
      {n, ol, co},
      [&](Var nn, Var x, Var c) {
        return te::sum(padded(nn, x * static_cast<int>(s) + rl.var, rc.var) * w(rl.var, rc.var, c),
                       {rl, rc});
      },
      "conv1d", {"n", "l", "co"});
  return {in, w, out};
}

std::vector<Tensor> build_c2d_like(const std::vector<int64_t>& p, int64_t dilation, int64_t groups,
                                   const std::string& name, const Precision& t) {
  const int64_t n = p[0], h = p[1], w = p[2], ci = p[3], co = p[4], k = p[5], s = p[6], pad = p[7];
  if (ci % groups || co % groups)
    throw_error("channels {} and {} are not divisible by {} groups", ci, co, groups);
  Tensor in = te::placeholder({n, h, w, ci}, t.data, "I");
  Tensor wt = te::placeholder({k, k, ci / groups, co}, t.weight, "W");
  Tensor padded = pad_spatial(in, 2, pad);
  Tensor out = conv2d_nhwc(padded, wt, out_size(h, k, s, pad, dilation),
                           out_size(w, k, s, pad, dilation), s, dilation, groups, name, t.out);
  return {in, wt, out};
}

std::vector<Tensor> build_c3d(const std::vector<int64_t>& p) {
  const int64_t n = p[0], d = p[1], h = p[2], w = p[3], ci = p[4], co = p[5], k = p[6], s = p[7],
                pad = p[8];
  Tensor in = te::placeholder({n, d, h, w, ci}, kFloat32, "I");
  Tensor wt = te::placeholder({k, k, k, ci, co}, kFloat32, "W");
  Tensor padded = pad_spatial(in, 3, pad);
  auto rd = te::reduce_axis(k, "rd"), rh = te::reduce_axis(k, "rh"), rw = te::reduce_axis(k, "rw"),
       rc = te::reduce_axis(ci, "rc");
  int st = static_cast<int>(s);
  Tensor out = te::compute(
      {n, out_size(d, k, s, pad), out_size(h, k, s, pad), out_size(w, k, s, pad), co},
      [&](Var nn, Var z, Var y, Var x, Var c) {
        return te::sum(padded(nn, z * st + rd.var, y * st + rh.var, x * st + rw.var, rc.var) *
                           wt(rd.var, rh.var, rw.var, rc.var, c),
                       {rd, rh, rw, rc});
      },
      "conv3d", {"n", "d", "h", "w", "co"});
  return {in, wt, out};
}

std::vector<Tensor> build_dep(const std::vector<int64_t>& p) {
  const int64_t n = p[0], h = p[1], w = p[2], c = p[3], k = p[4], s = p[5], pad = p[6];
  Tensor in = te::placeholder({n, h, w, c}, kFloat32, "I");
  Tensor wt = te::placeholder({1, k, k, c}, kFloat32, "W");
  Tensor padded = pad_spatial(in, 2, pad);
  auto rh = te::reduce_axis(k, "rh"), rw = te::reduce_axis(k, "rw");
  int st = static_cast<int>(s);
  Tensor out = te::compute(
      {n, out_size(h, k, s, pad), out_size(w, k, s, pad), c},
      [&](Var nn, Var y, Var x, Var ch) {
        return te::sum(padded(nn, y * st + rh.var, x * st + rw.var, ch) * wt(0, rh.var, rw.var, ch),
                       {rh, rw});
      },
      "depthwise_conv2d", {"n", "h", "w", "c"});
  return {in, wt, out};
}

// Transposed conv2d in gather form: a stride-1 convolution with the spatially flipped kernel over
// the input dilated by the stride and padded by K-1-pad. The dilation is not materialized: the
// input is padded by whole pixels (one "pad" block), and the convolution reads pixel
// (y + rh - off) / s only where s divides it. Elsewhere the term is -0.0, which LLVM drops from
// a sum (x + -0.0 = x exactly): once the output rows are tiled by a multiple of s and the
// tile and kernel loops are unrolled, the phase is a constant and the products with the
// dilation's zeros vanish, as in TVM's definition of the same op.
std::vector<Tensor> build_t2d(const std::vector<int64_t>& p) {
  const int64_t n = p[0], h = p[1], w = p[2], ci = p[3], co = p[4], k = p[5], s = p[6], pad = p[7];
  if (pad > k - 1)
    throw_error("transposed conv padding {} exceeds kernel size - 1 = {}", pad, k - 1);
  Tensor in = te::placeholder({n, h, w, ci}, kFloat32, "I");
  Tensor wt = te::placeholder({k, k, ci, co}, kFloat32, "W");
  const int64_t off = k - 1 - pad, whole = (off + s - 1) / s;  // dilated padding, padding in pixels
  const int64_t oh = (h - 1) * s + 2 * off - k + 2, ow = (w - 1) * s + 2 * off - k + 2;
  Tensor padded = pad_spatial(in, 2, whole);
  auto rh = te::reduce_axis(k, "rh"), rw = te::reduce_axis(k, "rw"), rc = te::reduce_axis(ci, "rc");
  const int kk = static_cast<int>(k - 1), st = static_cast<int>(s),
            shift = static_cast<int>(whole * s - off);
  Tensor out = te::compute(
      {n, oh, ow, co},
      [&](Var nn, Var y, Var x, Var c) {
        Expr py = y + rh.var + shift, px = x + rw.var + shift;  // in the dilated padded input
        Expr term = padded(nn, ir::floordiv(py, st), ir::floordiv(px, st), rc.var) *
                    wt(kk - rh.var, kk - rw.var, rc.var, c);
        if (s == 1) return te::sum(term, {rh, rw, rc});
        Expr on_pixel = ir::floormod(py, st) == 0 && ir::floormod(px, st) == 0;
        return te::sum(te::if_then_else(on_pixel, term, ir::make_float(-0.0)), {rh, rw, rc});
      },
      "conv2d_transpose", {"n", "h", "w", "co"});
  return {in, wt, out};
}

std::vector<Tensor> build_cap(const std::vector<int64_t>& p, int64_t capsule) {
  const int64_t n = p[0], h = p[1], w = p[2], ci = p[3], co = p[4], k = p[5], s = p[6], pad = p[7];
  const int64_t kCap = capsule;
  Tensor in = te::placeholder({n, h, w, kCap, kCap, ci}, kFloat32, "I");
  Tensor wt = te::placeholder({k, k, kCap, kCap, ci, co}, kFloat32, "W");
  Tensor padded = pad_spatial(in, 2, pad);
  auto rh = te::reduce_axis(k, "rh"), rw = te::reduce_axis(k, "rw"),
       rk = te::reduce_axis(kCap, "rk"), rc = te::reduce_axis(ci, "rc");
  int st = static_cast<int>(s);
  Tensor out = te::compute({n, out_size(h, k, s, pad), out_size(w, k, s, pad), kCap, kCap, co},
                           [&](Var nn, Var y, Var x, Var ci_, Var cj, Var c) {
                             return te::sum(
                                 padded(nn, y * st + rh.var, x * st + rw.var, ci_, rk.var, rc.var) *
                                     wt(rh.var, rw.var, rk.var, cj, rc.var, c),
                                 {rh, rw, rk, rc});
                           },
                           "capsule_conv2d", {"n", "h", "w", "cap_i", "cap_j", "co"});
  return {in, wt, out};
}

std::vector<Tensor> build_nrm(const std::vector<int64_t>& p) {
  const int64_t b = p[0], m = p[1], n = p[2];
  Tensor a = te::placeholder({b, m, n}, kFloat32, "A");
  auto ri = te::reduce_axis(m, "ri"), rj = te::reduce_axis(n, "rj");
  Tensor sq = te::compute({b},
                          [&](Var bb) {
                            return te::sum(a(bb, ri.var, rj.var) * a(bb, ri.var, rj.var), {ri, rj});
                          },
                          "sum_sq", {"b"});
  Tensor d = te::compute({b}, [&](Var bb) { return te::sqrt(sq(bb)); }, "D", {"b"});
  return {a, d};
}

std::vector<Tensor> build_sfm(const std::vector<int64_t>& p) {
  const int64_t m = p[0], n = p[1];
  Tensor a = te::placeholder({m, n}, kFloat32, "A");
  auto rk = te::reduce_axis(n, "k"), rk2 = te::reduce_axis(n, "k");
  Tensor mx =
      te::compute({m}, [&](Var i) { return te::max(a(i, rk.var), {rk}); }, "row_max", {"i"});
  Tensor ex = te::compute({m, n}, [&](Var i, Var j) { return te::exp(a(i, j) - mx(i)); }, "row_exp",
                          {"i", "j"});
  Tensor sm =
      te::compute({m}, [&](Var i) { return te::sum(ex(i, rk2.var), {rk2}); }, "row_sum", {"i"});
  Tensor out =
      te::compute({m, n}, [&](Var i, Var j) { return ex(i, j) / sm(i); }, "softmax", {"i", "j"});
  return {a, out};
}

std::vector<Tensor> build_cbr(const std::vector<int64_t>& p) {
  std::vector<Tensor> conv = build_c2d_like(p, 1, 1, "conv2d", precisions()[0]);
  Tensor c = conv[2];
  auto shape = c.shape();
  int64_t co = shape[3];
  Tensor bias = te::placeholder({co}, kFloat32, "bias");
  Tensor scale = te::placeholder({co}, kFloat32, "scale");
  Tensor offset = te::placeholder({co}, kFloat32, "offset");
  std::vector<std::string> names = {"n", "h", "w", "co"};
  Tensor biased = te::compute(
      shape, [&](Var n, Var h, Var w, Var k) { return c(n, h, w, k) + bias(k); }, "bias_add",
      names);
  Tensor scaled = te::compute(
      shape, [&](Var n, Var h, Var w, Var k) { return biased(n, h, w, k) * scale(k); }, "bn_mul",
      names);
  Tensor shifted = te::compute(
      shape, [&](Var n, Var h, Var w, Var k) { return scaled(n, h, w, k) + offset(k); }, "bn_add",
      names);
  Tensor relu = te::compute(
      shape,
      [&](Var n, Var h, Var w, Var k) { return te::max(shifted(n, h, w, k), ir::make_float(0.0)); },
      "relu", names);
  return {conv[0], conv[1], bias, scale, offset, relu};
}

std::vector<Tensor> build_tbg(const std::vector<int64_t>& p) {
  const int64_t b = p[0], l = p[1], h = p[2], d = p[3];
  Tensor q = te::placeholder({b, l, h, d}, kFloat32, "Q");
  Tensor k = te::placeholder({b, l, h, d}, kFloat32, "K");
  Tensor qt =
      te::compute({b, h, l, d}, [&](Var bb, Var hh, Var i, Var dd) { return q(bb, i, hh, dd); },
                  "Q_t", {"b", "h", "i", "d"});
  // K transposed to (b, h, d, j), a matmul's right operand (as TVM's definition): j, the output's
  // contiguous axis, is contiguous in both, so the inner loop vectorizes with Q broadcast.
  Tensor kt =
      te::compute({b, h, d, l}, [&](Var bb, Var hh, Var dd, Var j) { return k(bb, j, hh, dd); },
                  "K_t", {"b", "h", "d", "j"});
  auto rd = te::reduce_axis(d, "rd");
  Tensor c = te::compute({b, h, l, l},
                         [&](Var bb, Var hh, Var i, Var j) {
                           return te::sum(qt(bb, hh, i, rd.var) * kt(bb, hh, rd.var, j), {rd});
                         },
                         "C", {"b", "h", "i", "j"});
  return {q, k, c};
}

std::vector<Tensor> build_dense_relu(const std::vector<int64_t>& p, const Precision& t) {
  const int64_t n = p[0], m = p[1], k = p[2];
  Tensor a = te::placeholder({n, k}, t.data, "A");
  Tensor bm = te::placeholder({k, m}, t.weight, "B");
  auto rk = te::reduce_axis(k, "k");
  Tensor dense =
      te::compute({n, m},
                  [&](Var i, Var j) {
                    return te::sum(widen(a(i, rk.var), t.out) * widen(bm(rk.var, j), t.out), {rk});
                  },
                  "dense", {"i", "j"});
  Tensor relu = te::compute(
      {n, m}, [&](Var i, Var j) { return te::max(dense(i, j), ir::make_const(t.out, 0)); }, "C",
      {"i", "j"});
  return {a, bm, relu};
}

int64_t cap(int64_t v, int64_t limit) {
  return std::min(v, limit);
}

// Channels of grouped convolutions must stay divisible by the group count.
int64_t cap_multiple(int64_t v, int64_t limit, int64_t multiple) {
  int64_t c = std::min(v, limit);
  return std::max(multiple, c / multiple * multiple);
}

// A spatial extent small enough to be cheap but large enough that the (dilated) kernel still
// fits the padded input with at least two output positions.
int64_t cap_spatial(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                    int64_t limit) {
  int64_t needed = dilation * (k - 1) + 1 - 2 * pad + stride;
  return std::min(in, std::max(limit, needed));
}

// A convolution's tuple N, <spatial extents>, <channels>, K, stride, pad: spatial extents to
// `limit`, channels to `channels` (a multiple of the groups). A transposed convolution enlarges
// its input, so its `limit` caps the input itself.
auto scale_conv(int spatial, int64_t limit, int64_t channels, bool transposed = false) {
  return [=](const Family& f, std::vector<int64_t> p) {
    const size_t n = p.size();
    for (int d = 1; d <= spatial; ++d)
      p[d] = transposed ? cap(p[d], limit)
                        : cap_spatial(p[d], p[n - 3], p[n - 2], p[n - 1], f.dilation, limit);
    for (size_t c = spatial + 1; c + 3 < n; ++c) p[c] = cap_multiple(p[c], channels, f.groups);
    return p;
  };
}

// A conv2d-like family's TE definition; `name` is its block's.
auto conv2d_family(const char* name) {
  return [name](const Family& f, const std::vector<int64_t>& p, const Precision& t) {
    return build_c2d_like(p, f.dilation, f.groups, name, t);
  };
}
template <std::vector<Tensor> (*Build)(const std::vector<int64_t>&)>
std::vector<Tensor> plain(const Family&, const std::vector<int64_t>& p, const Precision&) {
  return Build(p);
}
template <std::vector<Tensor> (*Build)(const std::vector<int64_t>&, const Precision&)>
std::vector<Tensor> typed(const Family&, const std::vector<int64_t>& p, const Precision& t) {
  return Build(p, t);
}

// Caps each parameter at its limit (0: kept as it is).
auto caps(std::vector<int64_t> limits) {
  return [limits = std::move(limits)](const Family&, std::vector<int64_t> p) {
    for (size_t i = 0; i < p.size() && i < limits.size(); ++i)
      if (limits[i] > 0) p[i] = cap(p[i], limits[i]);
    return p;
  };
}

using Presets = std::vector<std::vector<int64_t>>;
using Params = std::vector<std::string>;

Family family(FamilyId id, std::string name, Params params, Presets presets,
              decltype(Family::scale_down) scale_down, decltype(Family::build) build) {
  return {.id = id,
          .name = std::move(name),
          .params = std::move(params),
          .presets = std::move(presets),
          .scale_down = std::move(scale_down),
          .build = std::move(build)};
}

// A convolution: its tuple ends with K, stride, pad.
Family conv(FamilyId id, std::string name, Params params, Presets presets,
            decltype(Family::scale_down) scale_down, decltype(Family::build) build) {
  Family f = family(id, std::move(name), std::move(params), std::move(presets),
                    std::move(scale_down), std::move(build));
  f.last_is_pad = true;
  return f;
}

Family with(Family f, void (*set)(Family&)) {
  set(f);
  return f;
}

// The table, one family a statement, four presets over two lines: a table reads best as one.
// clang-format off
std::vector<Family> make_families() {
  const Params conv2d = {"N", "H", "W", "CI", "CO", "K", "stride", "pad"};
  const Presets conv2d_shapes = {{1, 224, 224, 3, 64, 7, 2, 3}, {1, 56, 56, 64, 64, 1, 1, 0},
                                 {1, 14, 14, 256, 256, 3, 1, 1}, {1, 7, 7, 512, 512, 3, 1, 1}};
  auto typed_family = [](Family& f) { f.typed = true; };
  return {
      with(family(FamilyId::kGmm, "GMM", {"B", "N", "M", "K"},
                  {{1, 128, 128, 128}, {1, 512, 32, 512}, {1, 512, 512, 512},
                   {1, 1024, 1024, 1024}}, caps({0, 32, 32, 32}), typed<build_gmm>), typed_family),
      conv(FamilyId::kC1d, "C1D", {"N", "L", "CI", "CO", "K", "stride", "pad"},
           {{1, 256, 64, 128, 3, 2, 1}, {1, 128, 128, 256, 1, 2, 0},
            {1, 64, 256, 256, 5, 1, 2}, {1, 32, 512, 512, 3, 1, 1}},
           scale_conv(1, 24, 16), plain<build_c1d>),
      with(conv(FamilyId::kC2d, "C2D", conv2d, conv2d_shapes, scale_conv(2, 12, 8),
                conv2d_family("conv2d")), typed_family),
      conv(FamilyId::kC3d, "C3D", {"N", "D", "H", "W", "CI", "CO", "K", "stride", "pad"},
           {{1, 16, 224, 224, 3, 64, 7, 2, 3}, {1, 16, 56, 56, 64, 64, 1, 1, 0},
            {1, 16, 14, 14, 256, 256, 3, 1, 1}, {1, 16, 7, 7, 512, 512, 3, 1, 1}},
           scale_conv(3, 6, 4), plain<build_c3d>),
      with(conv(FamilyId::kGrp, "GRP", conv2d,
                {{1, 56, 56, 64, 128, 3, 2, 1}, {1, 56, 56, 64, 64, 1, 1, 0},
                 {1, 14, 14, 256, 256, 3, 1, 1}, {1, 7, 7, 512, 512, 3, 1, 1}},
                scale_conv(2, 12, 8), conv2d_family("group_conv2d")),
           [](Family& f) { f.groups = 4; }),
      with(conv(FamilyId::kDil, "DIL", conv2d, conv2d_shapes, scale_conv(2, 12, 8),
                conv2d_family("dilated_conv2d")), [](Family& f) { f.dilation = 2; }),
      conv(FamilyId::kDep, "DEP", {"N", "H", "W", "C", "K", "stride", "pad"},
           {{1, 112, 112, 32, 3, 1, 1}, {1, 112, 112, 64, 3, 2, 1},
            {1, 14, 14, 512, 3, 2, 1}, {1, 7, 7, 1024, 3, 1, 1}},
           scale_conv(2, 12, 16), plain<build_dep>),
      conv(FamilyId::kT2d, "T2D", conv2d,
           {{1, 4, 4, 512, 256, 4, 2, 1}, {1, 8, 8, 256, 128, 4, 2, 1},
            {1, 16, 16, 128, 64, 4, 2, 1}, {1, 32, 32, 64, 3, 4, 2, 1}},
           scale_conv(2, 4, 8, /*transposed=*/true), plain<build_t2d>),
      with(conv(FamilyId::kCap, "CAP", conv2d,
                {{1, 16, 16, 32, 32, 3, 2, 1}, {1, 8, 8, 32, 32, 3, 1, 1},
                 {1, 16, 16, 8, 16, 3, 2, 1}, {1, 8, 8, 16, 16, 3, 1, 1}}, scale_conv(2, 6, 4),
                [](const Family& f, const std::vector<int64_t>& p, const Precision&) {
                  return build_cap(p, f.capsule);
                }), [](Family& f) { f.capsule = 4; }),
      family(FamilyId::kNrm, "NRM", {"B", "M", "N"},
             {{1, 256, 256}, {1, 512, 512}, {1, 1024, 1024}, {1, 4096, 1024}}, caps({0, 64, 64}),
             plain<build_nrm>),
      family(FamilyId::kSfm, "SFM", {"M", "N"},
             {{256, 256}, {512, 512}, {1024, 1024}, {2048, 2048}},
             caps({32, 64}), plain<build_sfm>),
      conv(FamilyId::kCbr, "CBR", conv2d,
           {{1, 224, 224, 3, 64, 7, 2, 3}, {1, 56, 56, 64, 128, 3, 2, 1},
            {1, 28, 28, 128, 256, 1, 2, 0}, {1, 7, 7, 512, 512, 3, 1, 1}},
           scale_conv(2, 12, 8), plain<build_cbr>),
      family(FamilyId::kTbg, "TBG", {"B", "L", "H", "D"},
             {{1, 128, 12, 64}, {1, 128, 16, 64}, {1, 64, 12, 128}, {1, 128, 12, 128}},
             caps({0, 16, 2, 16}), plain<build_tbg>),
      with(family(FamilyId::kDenseRelu, "DENSE_RELU", {"N", "M", "K"},
                  {{128, 128, 128}, {512, 512, 512}, {1024, 1024, 1024}, {1, 4096, 1024}},
                  caps({32, 32, 32}), typed<build_dense_relu>), typed_family),
  };
}
// clang-format on

// Presets known by a name rather than an index: real layers' shapes.
struct NamedPreset {
  const char* name;
  const char* op;
  std::vector<int64_t> params;
};
const std::vector<NamedPreset>& named_presets() {
  // BERT-base's first feed-forward layer over a 128-token sequence: 128x768 . 768x3072.
  static const std::vector<NamedPreset> table = {{"DENSE-BERT", "DENSE_RELU", {128, 3072, 768}}};
  return table;
}

const Family& family_of(const std::string& op) {
  const Family* f = find_family(op);
  if (!f) throw InputError(fmt::format("unknown operator '{}'", op));
  return *f;
}

}  // namespace

const std::vector<Precision>& precisions() {
  static const std::vector<Precision> table = {
      {"", kFloat32, kFloat32, kFloat32},
      {"U8S8", DataType::UInt(8), DataType::Int(8), DataType::Int(32)},
      {"BF16", DataType::BFloat16(), DataType::BFloat16(), kFloat32},
      {"F16", DataType::Float(16), DataType::Float(16), kFloat32},
  };
  return table;
}

const Precision& find_precision(std::string_view suffix) {
  std::string upper(suffix);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  for (const Precision& p : precisions())
    if (p.suffix == upper) return p;
  throw InputError(fmt::format(
      "unknown precision '{}' (presets take U8S8, BF16 or F16, e.g. GMM-4-U8S8)", suffix));
}

const std::vector<Family>& families() {
  static const std::vector<Family> table = make_families();
  return table;
}

const Family* find_family(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  for (const Family& f : families())
    if (f.name == upper) return &f;
  return nullptr;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Family& f : families()) out.push_back(f.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& param_names(const std::string& op) {
  return family_of(op).params;
}
const std::vector<std::vector<int64_t>>& preset_params(const std::string& op) {
  return family_of(op).presets;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const std::string& op : op_names())
    for (int i = 1; i <= 4; ++i) out.push_back(fmt::format("{}-{}", op, i));
  return out;
}

// The inputs that hold a layer's constants (weights; CBR's per-channel bias, scale and offset):
// layout-free, so a schedule may read them in a layout of its own, made once when they are loaded
// (RewriteLayout), as oneDNN's baseline reorders its weights once. GMM's and TBG's operands are
// activations.
std::vector<size_t> constant_inputs(FamilyId id) {
  switch (id) {
    case FamilyId::kGmm:
    case FamilyId::kTbg:
    case FamilyId::kNrm:
    case FamilyId::kSfm:
      return {};
    case FamilyId::kCbr:
      return {1, 2, 3, 4};
    default:
      return {1};  // the convolutions' W, DENSE_RELU's B
  }
}

Workload make_workload(const std::string& op, const std::vector<int64_t>& params,
                       const std::string& precision) {
  const Family& info = family_of(op);
  const Precision& types = find_precision(precision);
  if (!types.is_float32() && !info.typed)
    throw InputError(fmt::format("{} has no {} variant (typed presets: GMM, C2D, DENSE_RELU)",
                                 info.name, types.suffix));
  if (params.size() != info.params.size())
    throw InputError(fmt::format("{} takes {} parameters ({}), got {}", op, info.params.size(),
                                 fmt::join(info.params, ","), params.size()));
  reference_shapes(op, params);  // validates the tuple with one-line errors before building IR
  std::vector<Tensor> args = info.build(info, params, types);
  Workload w;
  w.op = info.name;
  w.params = params;
  w.precision = types.suffix;
  w.name = types.is_float32() ? info.name : info.name + "-" + types.suffix;
  std::vector<std::string> parts;
  for (size_t i = 0; i < params.size(); ++i)
    parts.push_back(fmt::format("{}={}", info.params[i], params[i]));
  w.shape = fmt::format("{}", fmt::join(parts, ","));
  w.func = ir::with_layout_free_params(te::create_prim_func(args, op), constant_inputs(info.id));
  w.flop = reference_flop(op, params);
  w.reference = [op, params, types](const std::vector<runtime::NDArray>& inputs) {
    return run_reference(op, params, inputs, types);
  };
  return w;
}

Workload get_preset(const std::string& name) {
  auto unknown = [&] {
    return InputError(fmt::format(
        "unknown workload '{}' (presets are <OP>-1..4, e.g. GMM-4, or DENSE-BERT, each optionally "
        "-U8S8, -BF16 or -F16; see `tyche workloads`)",
        name));
  };
  std::string base = name, suffix;
  if (auto dash = name.rfind('-'); dash != std::string::npos) {
    std::string last = name.substr(dash + 1);
    std::transform(last.begin(), last.end(), last.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    for (const Precision& p : precisions())
      if (!p.is_float32() && p.suffix == last) base = name.substr(0, dash), suffix = last;
  }
  std::string upper = base;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  for (const NamedPreset& n : named_presets()) {
    if (upper != n.name) continue;
    Workload w = make_workload(n.op, n.params, suffix);
    w.name = suffix.empty() ? n.name : fmt::format("{}-{}", n.name, suffix);
    return w;
  }
  auto dash = upper.rfind('-');
  if (dash == std::string::npos) throw unknown();
  std::string op = upper.substr(0, dash), idx = upper.substr(dash + 1);
  const Family* f = find_family(op);
  if (!f || f->name != op || idx.size() != 1 || idx[0] < '1' || idx[0] > '4') throw unknown();
  Workload w = make_workload(op, f->presets[static_cast<size_t>(idx[0] - '1')], suffix);
  w.name = suffix.empty() ? upper : fmt::format("{}-{}", upper, suffix);
  return w;
}

std::vector<std::string> typed_preset_names() {
  std::vector<std::string> out;
  for (const Precision& p : precisions()) {
    if (p.is_float32()) continue;
    for (const Family& f : families())
      if (f.typed) out.push_back(fmt::format("{}-{{1..4}}-{}", f.name, p.suffix));
    for (const NamedPreset& n : named_presets())
      out.push_back(fmt::format("{}-{}", n.name, p.suffix));
  }
  return out;
}

}  // namespace tyche::workloads
