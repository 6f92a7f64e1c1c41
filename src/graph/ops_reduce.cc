// Reductions over axes: ReduceMean/Sum/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp,
// Softmax and LogSoftmax, LayerNormalization.
#include <algorithm>
#include <functional>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

// Which dimensions of a rank-`rank` tensor are reduced.
std::vector<bool> reduced_mask(ConvertContext& c, const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    int d = c.axis(a, rank);
    if (!axes.empty() && mask[static_cast<size_t>(d)] &&
        std::count(axes.begin(), axes.end(), a) > 1)
      c.fail("repeated axis");
    mask[static_cast<size_t>(d)] = true;
  }
  return mask;
}

struct Reduced {
  std::vector<int64_t> shape;  // with the reduced dimensions kept as 1
  std::vector<ir::IterVar> axes;
  int64_t count = 1;  // elements combined into each output
};

Reduced plan(const std::vector<int64_t>& in, const std::vector<bool>& mask) {
  Reduced r;
  for (size_t d = 0; d < in.size(); ++d) {
    r.shape.push_back(mask[d] ? 1 : in[d]);
    if (!mask[d]) continue;
    r.axes.push_back(te::reduce_axis(in[d], fmt::format("r{}", d)));
    r.count *= in[d];
  }
  return r;
}

// The input index of an output element `v` (kept dims) at the reduce iterators.
std::vector<Expr> source_index(const std::vector<bool>& mask, const Reduced& r,
                               const std::vector<ir::Var>& v) {
  std::vector<Expr> idx;
  size_t next = 0;
  for (size_t d = 0; d < mask.size(); ++d)
    idx.push_back(mask[d] ? Expr(r.axes[next++].var) : Expr(v[d]));
  return idx;
}

// Broadcast index into a keep-dims reduction result.
std::vector<Expr> kept_index(const std::vector<bool>& mask, const std::vector<ir::Var>& v) {
  std::vector<Expr> idx;
  for (size_t d = 0; d < mask.size(); ++d) idx.push_back(mask[d] ? Expr(0) : Expr(v[d]));
  return idx;
}

// The reduce op's axes (an attribute, or an input from `axes_input_opset` on).
std::vector<int64_t> reduce_axes(ConvertContext& c, int axes_input_opset, bool& noop) {
  noop = false;
  std::vector<int64_t> axes;
  if (c.opset() >= axes_input_opset) {
    if (c.has_input(1)) axes = c.constant_ints(1, "the axes");
  } else {
    axes = c.node().get_ints("axes");
  }
  if (axes.empty() && c.node().get_int("noop_with_empty_axes", 0) != 0) noop = true;
  return axes;
}

// A reduction's element map before combining and its result's map after (`count`: elements
// combined into each output).
struct ReduceMaps {
  std::function<Expr(Expr)> pre;
  std::function<Expr(Expr, int64_t count)> post;
  const char* reduce_name = nullptr;  // the combining compute's, where `post` adds one after it
};

std::vector<Tensor> reduce(ConvertContext& c, int axes_input_opset, te::ReducerKind kind,
                           const char* name, const ReduceMaps& maps = {}) {
  bool noop = false;
  std::vector<int64_t> axes = reduce_axes(c, axes_input_opset, noop);
  const Tensor& x = c.input(0);
  if (noop || c.rank(0) == 0)
    return {te::compute(
        c.shape(0),
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          Expr e = x(exprs(v));
          if (maps.pre) e = maps.pre(e);
          return maps.post ? maps.post(e, 1) : e;
        },
        c.name(name))};
  std::vector<bool> mask = reduced_mask(c, axes, c.rank(0));
  Reduced r = plan(c.shape(0), mask);
  bool keep = c.node().get_int("keepdims", 1) != 0;
  Tensor red = te::compute(
      r.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr src = x(source_index(mask, r, v));
        if (maps.pre) src = maps.pre(src);
        switch (kind) {
          case te::ReducerKind::kMax:
            return te::max(src, r.axes);
          case te::ReducerKind::kMin:
            return te::min(src, r.axes);
          case te::ReducerKind::kProd:
            return te::prod(src, r.axes);
          default:
            return te::sum(src, r.axes);
        }
      },
      c.name(!maps.post         ? std::string(name)
             : maps.reduce_name ? std::string(maps.reduce_name)
                                : std::string(name) + "_reduce"));
  std::vector<int64_t> out;
  for (size_t d = 0; d < mask.size(); ++d)
    if (!mask[d] || keep) out.push_back(r.shape[d]);
  if (!maps.post && keep) return {red};
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx;
        size_t next = 0;
        for (size_t d = 0; d < mask.size(); ++d) {
          if (!mask[d]) {
            idx.push_back(v[next++]);
            continue;
          }
          idx.push_back(Expr(0));
          if (keep) ++next;
        }
        Expr e = red(idx);
        return maps.post ? maps.post(e, r.count) : e;
      },
      c.name(name))};
}

}  // namespace

std::vector<Tensor> reduce_mean(ConvertContext& c) {
  return reduce(c, 18, te::ReducerKind::kSum, "reduce_mean",
                {nullptr,
                 [](Expr e, int64_t count) {
                   if (count == 1) return e;
                   if (!e.dtype().is_float()) return e / ir::make_const(e.dtype(), count);
                   return e * ir::make_const(e.dtype(), 1.0 / static_cast<double>(count));
                 },
                 "sum"});
}
std::vector<Tensor> reduce_sum(ConvertContext& c) {
  return reduce(c, 13, te::ReducerKind::kSum, "reduce_sum");
}
std::vector<Tensor> reduce_max(ConvertContext& c) {
  return reduce(c, 18, te::ReducerKind::kMax, "reduce_max");
}
std::vector<Tensor> reduce_min(ConvertContext& c) {
  return reduce(c, 18, te::ReducerKind::kMin, "reduce_min");
}
std::vector<Tensor> reduce_prod(ConvertContext& c) {
  return reduce(c, 18, te::ReducerKind::kProd, "reduce_prod");
}
std::vector<Tensor> reduce_sum_square(ConvertContext& c) {
  return reduce(c, 18, te::ReducerKind::kSum, "reduce_sum_square",
                {[](Expr x) { return x * x; }, nullptr});
}
std::vector<Tensor> reduce_l1(ConvertContext& c) {
  DataType t = c.dtype(0);
  return reduce(c, 18, te::ReducerKind::kSum, "reduce_l1",
                {[t](Expr x) {
                   return t.is_float() ? ir::abs(x) : ir::select(x < ir::make_const(t, 0), -x, x);
                 },
                 nullptr});
}
std::vector<Tensor> reduce_l2(ConvertContext& c) {
  require_float(c);
  return reduce(c, 18, te::ReducerKind::kSum, "reduce_l2",
                {[](Expr x) { return x * x; }, [](Expr e, int64_t) { return ir::sqrt(e); }});
}
std::vector<Tensor> reduce_log_sum(ConvertContext& c) {
  require_float(c);
  return reduce(c, 18, te::ReducerKind::kSum, "reduce_log_sum",
                {nullptr, [](Expr e, int64_t) { return ir::log(e); }});
}
std::vector<Tensor> reduce_log_sum_exp(ConvertContext& c) {
  require_float(c);
  return reduce(c, 18, te::ReducerKind::kSum, "reduce_log_sum_exp",
                {[](Expr x) { return ir::exp(x); }, [](Expr e, int64_t) { return ir::log(e); }});
}

namespace {

// Softmax (or its log) along one axis, the maximum subtracted first.
std::vector<Tensor> softmax_along(ConvertContext& c, bool log, const char* name) {
  if (!c.dtype(0).is_float()) c.fail("needs a float input");
  int rank = c.rank(0);
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[static_cast<size_t>(c.axis(c.node().get_int("axis", -1), rank))] = true;
  const Tensor& x = c.input(0);
  Reduced rm = plan(c.shape(0), mask);
  Tensor m = te::compute(
      rm.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::max(x(source_index(mask, rm, v)), rm.axes);
      },
      c.name("softmax_max"));
  Tensor e = te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return ir::exp(x(exprs(v)) - m(kept_index(mask, v)));
      },
      c.name("softmax_exp"));
  Reduced rs = plan(c.shape(0), mask);
  Tensor s = te::compute(
      rs.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::sum(e(source_index(mask, rs, v)), rs.axes);
      },
      c.name("softmax_sum"));
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> k = kept_index(mask, v);
        if (log) return x(exprs(v)) - m(k) - ir::log(s(k));
        return e(exprs(v)) / s(k);
      },
      c.name(name))};
}

}  // namespace

std::vector<Tensor> softmax(ConvertContext& c) {
  return softmax_along(c, false, "softmax");
}
std::vector<Tensor> log_softmax(ConvertContext& c) {
  return softmax_along(c, true, "log_softmax");
}

std::vector<Tensor> layer_norm(ConvertContext& c) {
  if (!c.dtype(0).is_float()) c.fail("needs a float input");
  for (size_t o = 1; o < c.node().outputs.size(); ++o)
    if (c.node().outputs[o] >= 0) c.fail("only the first output (Y) is supported");
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", -1), rank);
  double eps = c.node().get_float("epsilon", 1e-5);
  std::vector<int64_t> norm_shape(c.shape(0).begin() + axis, c.shape(0).end());
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!c.has_input(i)) continue;
    const std::vector<int64_t>& s = c.shape(i);
    if (s.size() > norm_shape.size())
      c.fail("the scale and bias must broadcast to the normalized dimensions");
    broadcast_shapes(c.node(), norm_shape, s);
  }
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int d = axis; d < rank; ++d) mask[static_cast<size_t>(d)] = true;
  const Tensor& x = c.input(0);
  Reduced r1 = plan(c.shape(0), mask);
  double inv_n = 1.0 / static_cast<double>(r1.count);
  Tensor sum = te::compute(
      r1.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::sum(x(source_index(mask, r1, v)), r1.axes);
      },
      c.name("layer_norm_sum"));
  Reduced r2 = plan(c.shape(0), mask);
  Tensor sq = te::compute(
      r2.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr d = x(source_index(mask, r2, v)) - sum(exprs(v)) * ir::make_float(inv_n);
        return te::sum(d * d, r2.axes);
      },
      c.name("layer_norm_sqsum"));
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> k = kept_index(mask, v);
        Expr y = (x(exprs(v)) - sum(k) * ir::make_float(inv_n)) /
                 ir::sqrt(sq(k) * ir::make_float(inv_n) + ir::make_float(eps));
        std::vector<Expr> tail(v.begin() + axis, v.end());
        std::vector<int64_t> tail_shape(c.shape(0).begin() + axis, c.shape(0).end());
        if (c.has_input(1)) y = y * c.load_broadcast(1, tail, tail_shape);
        if (c.has_input(2)) y = y + c.load_broadcast(2, tail, tail_shape);
        return y;
      },
      c.name("layer_norm"))};
}

}  // namespace tyche::graph::ops
