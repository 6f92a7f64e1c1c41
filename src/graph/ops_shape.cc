// Ops that move elements without arithmetic: views (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity) and gathers (Transpose, Concat, Split, Slice, Gather, Expand), and Shape.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

// The product of s[from..to) (to clipped to the rank).
int64_t product(const std::vector<int64_t>& s, size_t from = 0, size_t to = SIZE_MAX) {
  auto first = s.begin() + static_cast<long>(std::min(from, s.size()));
  auto last = s.begin() + static_cast<long>(std::min(to, s.size()));
  return std::accumulate(first, last, int64_t{1}, std::multiplies<>());
}

// Input 0's elements in row-major order under `shape` (same count).
std::vector<Tensor> view(ConvertContext& c, const std::vector<int64_t>& shape, const char* name) {
  const std::vector<int64_t>& in = c.shape(0);
  if (product(shape) != product(in))
    c.fail(fmt::format("cannot view {} as {}", shape_text(in), shape_text(shape)));
  const Tensor& x = c.input(0);
  return {te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        if (shape == in) return x(exprs(v));
        Expr flat = Expr(0);
        for (size_t d = 0; d < shape.size(); ++d) flat = flat * const_i32(shape[d]) + v[d];
        std::vector<Expr> idx(in.size());
        for (size_t d = in.size(); d-- > 0;) {
          idx[d] = d == 0 ? flat : ir::floormod(flat, const_i32(in[d]));
          flat = ir::floordiv(flat, const_i32(in[d]));
        }
        return x(idx);
      },
      c.name(name))};
}

// The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from it.
std::vector<int64_t> axes_of(ConvertContext& c) {
  if (c.opset() >= 13)
    return c.has_input(1) ? c.constant_ints(1, "the axes") : std::vector<int64_t>{};
  return c.node().get_ints("axes");
}

// `x` sliced along `axis` from `start` with `step`, `count` elements.
Tensor slice_axis(ConvertContext& c, const Tensor& x, int axis, int64_t start, int64_t step,
                  int64_t count, const char* name) {
  std::vector<int64_t> shape = x.shape();
  shape[static_cast<size_t>(axis)] = count;
  return te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        idx[static_cast<size_t>(axis)] =
            const_i32(start) + v[static_cast<size_t>(axis)] * const_i32(step);
        return x(idx);
      },
      c.name(name));
}

}  // namespace

std::vector<Tensor> identity(ConvertContext& c) {
  bool mask = false;
  if (c.node().op == "Dropout") {
    mask = c.node().outputs.size() > 1 && c.node().outputs[1] >= 0;
    if (c.has_input(2)) {
      std::optional<double> training = c.scalar(2);
      if (!training)
        c.fail(fmt::format("training_mode ('{}') must be a constant (inference only)",
                           c.value(2).name));
      if (*training != 0) c.fail("training_mode is not supported (inference only)");
    }
  }
  std::vector<Tensor> out = view(c, c.shape(0), "identity");
  if (mask)  // inference keeps every element
    out.push_back(te::compute(
        c.shape(0),
        [](const std::vector<ir::Var>&) -> te::ComputeBody { return ir::make_const(kBool, 1); },
        c.name("dropout_mask")));
  return out;
}

std::vector<Tensor> reshape(ConvertContext& c) {
  std::vector<int64_t> target = c.constant_ints(1, "the shape");
  const std::vector<int64_t>& in = c.shape(0);
  bool allow_zero = c.node().get_int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allow_zero) {
      if (d >= in.size()) c.fail("a 0 in the shape has no input dimension to copy");
      target[d] = in[d];
    }
    if (target[d] == -1) {
      if (infer >= 0) c.fail("more than one -1 in the shape");
      infer = static_cast<int>(d);
      continue;
    }
    if (target[d] < 0) c.fail(fmt::format("invalid dimension {} in the shape", target[d]));
    // The shape is the model's data: its product must not wrap past 64 bits (and then "match").
    if (__builtin_mul_overflow(known, target[d], &known))
      c.fail(fmt::format("the shape [{}] has more elements than 64 bits count",
                         fmt::join(target, ", ")));
  }
  if (infer >= 0) {
    if (known == 0 || product(in) % known)
      c.fail(fmt::format("cannot reshape {} to {}", shape_text(in), fmt::join(target, ",")));
    target[static_cast<size_t>(infer)] = product(in) / known;
  }
  return view(c, target, "reshape");
}

std::vector<Tensor> flatten(ConvertContext& c) {
  int rank = c.rank(0);
  int64_t a = c.node().get_int("axis", 1);
  if (a < -rank || a > rank) c.fail(fmt::format("axis {} is out of range for rank {}", a, rank));
  size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
  return view(c, {product(c.shape(0), 0, axis), product(c.shape(0), axis)}, "flatten");
}

std::vector<Tensor> squeeze(ConvertContext& c) {
  std::vector<int64_t> axes = axes_of(c);
  const std::vector<int64_t>& in = c.shape(0);
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : axes) {
    int d = c.axis(a, c.rank(0));
    if (in[static_cast<size_t>(d)] != 1)
      c.fail(fmt::format("cannot squeeze dimension {} of size {}", d, in[static_cast<size_t>(d)]));
    drop[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!(axes.empty() ? in[d] == 1 : drop[d])) out.push_back(in[d]);
  return view(c, out, "squeeze");
}

std::vector<Tensor> unsqueeze(ConvertContext& c) {
  std::vector<int64_t> axes = axes_of(c);
  const std::vector<int64_t>& in = c.shape(0);
  int rank = static_cast<int>(in.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int d = c.axis(a, rank);
    if (inserted[static_cast<size_t>(d)]) c.fail("repeated axis");
    inserted[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> out;
  size_t next = 0;
  for (int d = 0; d < rank; ++d)
    out.push_back(inserted[static_cast<size_t>(d)] ? 1 : in.at(next++));
  return view(c, out, "unsqueeze");
}

std::vector<Tensor> transpose(ConvertContext& c) {
  int rank = c.rank(0);
  std::vector<int64_t> perm = c.node().get_ints("perm");
  if (perm.empty())
    for (int d = rank; d-- > 0;) perm.push_back(d);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(static_cast<size_t>(rank));
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    c.fail(fmt::format("perm {} is not a permutation of {} axes", fmt::join(perm, ","), rank));
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(c.shape(0)[static_cast<size_t>(p)]);
  const Tensor& x = c.input(0);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx(static_cast<size_t>(rank));
        for (size_t d = 0; d < perm.size(); ++d) idx[static_cast<size_t>(perm[d])] = v[d];
        return x(idx);
      },
      c.name("transpose"))};
}

std::vector<Tensor> concat(ConvertContext& c) {
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", 0), rank);
  std::vector<int64_t> out = c.shape(0);
  std::vector<int64_t> offsets = {0};
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const std::vector<int64_t>& s = c.shape(i);
    for (int d = 0; d < rank; ++d)
      if (static_cast<int>(s.size()) != rank ||
          (d != axis && s[static_cast<size_t>(d)] != out[static_cast<size_t>(d)]))
        c.fail(fmt::format("input shapes {} and {} differ off the axis", shape_text(c.shape(0)),
                           shape_text(s)));
    if (c.dtype(i) != c.dtype(0)) c.fail("inputs of different types");
    offsets.push_back(offsets.back() + s[static_cast<size_t>(axis)]);
  }
  out[static_cast<size_t>(axis)] = offsets.back();
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr at = v[static_cast<size_t>(axis)];
        Expr result;
        for (size_t i = c.num_inputs(); i-- > 0;) {
          if (c.shape(i)[static_cast<size_t>(axis)] == 0) continue;
          std::vector<Expr> idx = exprs(v);
          idx[static_cast<size_t>(axis)] = at - const_i32(offsets[i]);
          Expr e = c.load(i, idx);
          result =
              result.defined() ? te::if_then_else(at < const_i32(offsets[i + 1]), e, result) : e;
        }
        return result;
      },
      c.name("concat"))};
}

std::vector<Tensor> split(ConvertContext& c) {
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", 0), rank);
  int64_t dim = c.shape(0)[static_cast<size_t>(axis)];
  size_t n = c.node().outputs.size();
  std::vector<int64_t> sizes;
  if (c.opset() >= 13 && c.has_input(1))
    sizes = c.constant_ints(1, "the split");
  else if (c.opset() < 13)
    sizes = c.node().get_ints("split");
  if (sizes.empty()) {
    int64_t parts = c.opset() >= 18 && c.node().has("num_outputs")
                        ? c.node().get_int("num_outputs", 1)
                        : static_cast<int64_t>(n);
    if (parts < 1 || static_cast<size_t>(parts) != n)
      c.fail("num_outputs differs from the number of outputs");
    int64_t each = (dim + parts - 1) / parts;
    if (c.opset() < 18 && dim % parts)
      c.fail(fmt::format("cannot split {} evenly into {}", dim, parts));
    for (int64_t p = 0; p < parts; ++p) sizes.push_back(std::min(each, dim - p * each));
  }
  if (sizes.size() != n || std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim)
    c.fail(fmt::format("split sizes {} do not cover dimension {} ({}) in {} outputs",
                       fmt::join(sizes, ","), axis, dim, n));
  std::vector<Tensor> outs;
  int64_t start = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("negative split size");
    outs.push_back(slice_axis(c, c.input(0), axis, start, 1, s, "split"));
    start += s;
  }
  return outs;
}

std::vector<Tensor> slice(ConvertContext& c) {
  std::vector<int64_t> starts = c.constant_ints(1, "the starts"),
                       ends = c.constant_ints(2, "the ends");
  int rank = c.rank(0);
  std::vector<int64_t> axes, steps;
  if (c.has_input(3))
    axes = c.constant_ints(3, "the axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has_input(4))
    steps = c.constant_ints(4, "the steps");
  else
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  Tensor x = c.input(0);
  for (size_t i = 0; i < starts.size(); ++i) {
    int axis = c.axis(axes[i], rank);
    int64_t dim = x.shape()[static_cast<size_t>(axis)], step = steps[i];
    if (step == 0) c.fail("a step of 0");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i],
            e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t count = step > 0 ? std::max<int64_t>(0, (e - s + step - 1) / step)
                             : std::max<int64_t>(0, (s - e - step - 1) / -step);
    x = slice_axis(c, x, axis, s, step, count, "slice");
  }
  if (starts.empty()) return view(c, c.shape(0), "slice");
  return {x};
}

std::vector<Tensor> gather(ConvertContext& c) {
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", 0), rank);
  if (!c.dtype(1).is_int()) c.fail("the indices must be integers");
  const std::vector<int64_t>& data = c.shape(0);
  const std::vector<int64_t>& ind = c.shape(1);
  int64_t n = data[static_cast<size_t>(axis)];
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), ind.begin(), ind.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  const Tensor& x = c.input(0);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> ii(v.begin() + axis, v.begin() + axis + static_cast<long>(ind.size()));
        Expr k = c.load(1, ii);
        if (k.dtype() != kInt32) k = ir::cast(kInt32, k);
        // Negative indices count from the end; out-of-range ones are clamped (never read
        // outside the table).
        k = ir::select(k < Expr(0), k + const_i32(n), k);
        k = ir::max(ir::min(k, const_i32(n - 1)), Expr(0));
        std::vector<Expr> idx(v.begin(), v.begin() + axis);
        idx.push_back(k);
        idx.insert(idx.end(), v.begin() + axis + static_cast<long>(ind.size()), v.end());
        return x(idx);
      },
      c.name("gather"))};
}

std::vector<Tensor> expand(ConvertContext& c) {
  std::vector<int64_t> shape =
      broadcast_shapes(c.node(), c.shape(0), c.constant_ints(1, "the shape"));
  return {te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return c.load_broadcast(0, exprs(v), shape);
      },
      c.name("expand"))};
}

std::vector<Tensor> shape(ConvertContext& c) {
  const std::vector<int64_t>& in = c.shape(0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = c.node().get_int("start", 0), end = c.node().get_int("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  std::vector<int64_t> dims(in.begin() + start, in.begin() + std::max(start, end));
  return {te::compute(
      {static_cast<int64_t>(dims.size())},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr e = ir::make_int(dims.empty() ? 0 : dims.back(), kInt64);
        for (size_t d = dims.size(); d-- > 1;)
          e = ir::select(v[0] == const_i32(static_cast<int64_t>(d) - 1),
                         ir::make_int(dims[d - 1], kInt64), e);
        return e;
      },
      c.name("shape"))};
}

std::vector<Tensor> constant_of_shape(ConvertContext& c) {
  std::vector<int64_t> dims = c.constant_ints(0, "the shape");
  runtime::NDArray value({1}, kFloat32);
  value.set_flat(0, 0);
  if (c.node().has("value")) {
    const auto* v = std::get_if<runtime::NDArray>(&c.node().attributes.at("value"));
    if (!v || v->numel() != 1) c.fail("the value must be a one-element tensor");
    value = *v;
  }
  for (int64_t d : dims)
    if (d < 0) c.fail(fmt::format("negative dimension {} in the shape", d));
  DataType t = value.dtype();
  double x = t.is_float() ? value.get_flat(0) : static_cast<double>(value.get_flat_int(0));
  return {te::compute(
      dims, [&](const std::vector<ir::Var>&) -> te::ComputeBody { return ir::make_const(t, x); },
      c.name("constant_of_shape"))};
}

std::vector<Tensor> size(ConvertContext& c) {
  int64_t n = 1;
  for (int64_t d : c.shape(0)) n *= d;
  return {te::compute(
      {}, [&](const std::vector<ir::Var>&) -> te::ComputeBody { return ir::make_int(n, kInt64); },
      c.name("size"))};
}

std::vector<Tensor> range(ConvertContext& c) {
  std::optional<double> start = c.scalar(0), limit = c.scalar(1), delta = c.scalar(2);
  for (size_t i = 0; i < 3; ++i)
    if (!c.scalar(i))
      c.fail(
          fmt::format("the {} ('{}') must be a one-element constant: Tyche compiles static shapes",
                      i == 0   ? "start"
                      : i == 1 ? "limit"
                               : "delta",
                      c.value(i).name));
  if (*delta == 0) c.fail("delta must not be 0");
  DataType t = c.dtype(0);
  double count = std::ceil((*limit - *start) / *delta);
  auto n = static_cast<int64_t>(std::max(count, 0.0));
  return {te::compute(
      {n},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr i = ir::cast(t, v[0]);
        return ir::make_const(t, *start) + i * ir::make_const(t, *delta);
      },
      c.name("range"))};
}

namespace {

// A window of `size` (a constant) points: w[n] = sum_k coef[k] cos(2 pi k n / N), N = size when
// periodic, size - 1 when symmetric; computed in float64, written as output_datatype.
std::vector<Tensor> cosine_window(ConvertContext& c, std::vector<double> coef, const char* name) {
  std::optional<double> size = c.scalar(0);
  if (!size)
    c.fail(
        fmt::format("the size ('{}') must be a one-element constant: Tyche compiles static shapes",
                    c.value(0).name));
  if (*size < 0 || *size != std::floor(*size) || *size > 1e12)
    c.fail(fmt::format("the size must be a whole number from 0, not {}", *size));
  auto n = static_cast<int64_t>(*size);
  std::optional<DataType> t = dtype_of_onnx(c.node().get_int("output_datatype", 1));
  if (!t || t->is_bool())
    c.fail(fmt::format("cannot write a window as {}",
                       onnx_dtype_name(c.node().get_int("output_datatype", 1))));
  double period =
      c.node().get_int("periodic", 1) != 0 ? static_cast<double>(n) : static_cast<double>(n - 1);
  DataType out = *t;
  return {te::compute(
      {n},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr x = ir::cast(kFloat64, v[0]) * ir::make_const(kFloat64, 2 * std::numbers::pi / period);
        Expr w = ir::make_const(kFloat64, coef[0]);
        for (size_t k = 1; k < coef.size(); ++k)
          w = w + ir::make_const(kFloat64, coef[k]) *
                      ir::call(ir::CallOp::kCos,
                               {x * ir::make_const(kFloat64, static_cast<double>(k))});
        return ir::cast(out, w);
      },
      c.name(name))};
}

}  // namespace

std::vector<Tensor> hann_window(ConvertContext& c) {
  return cosine_window(c, {0.5, -0.5}, "hann_window");
}
std::vector<Tensor> hamming_window(ConvertContext& c) {
  return cosine_window(c, {25.0 / 46.0, -(1.0 - 25.0 / 46.0)}, "hamming_window");
}
std::vector<Tensor> blackman_window(ConvertContext& c) {
  return cosine_window(c, {0.42, -0.5, 0.08}, "blackman_window");
}

}  // namespace tyche::graph::ops
