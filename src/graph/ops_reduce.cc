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
  Tensor y = te::compute(
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
      c.name("layer_norm"));
  // The optional Mean and InvStdDev outputs (the normalized dimensions kept as 1), made only when
  // the model reads them.
  auto wanted = [&](size_t o) { return o < c.node().outputs.size() && c.node().outputs[o] >= 0; };
  if (!wanted(1) && !wanted(2)) return {y};
  Tensor mean, inv_std;
  if (wanted(1))
    mean = te::compute(
        r1.shape,
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          return sum(exprs(v)) * ir::make_float(inv_n);
        },
        c.name("layer_norm_mean"));
  if (wanted(2))
    inv_std = te::compute(
        r1.shape,
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          return ir::make_float(1) /
                 ir::sqrt(sq(exprs(v)) * ir::make_float(inv_n) + ir::make_float(eps));
        },
        c.name("layer_norm_inv_std"));
  return {y, mean, inv_std};
}

namespace {

// The first (or, with `last`, the last) index along `axis` where x equals its maximum (or, with
// `min`, its minimum), the axis kept as 1: as int32.
Tensor arg_extreme(ConvertContext& c, int axis, bool min, bool last) {
  int rank = c.rank(0);
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[static_cast<size_t>(axis)] = true;
  const Tensor& x = c.input(0);
  int64_t n = c.shape(0)[static_cast<size_t>(axis)];
  Reduced re = plan(c.shape(0), mask);
  Tensor extreme = te::compute(
      re.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr e = x(source_index(mask, re, v));
        return min ? te::min(e, re.axes) : te::max(e, re.axes);
      },
      c.name(min ? "arg_min_value" : "arg_max_value"));
  Reduced ri = plan(c.shape(0), mask);
  return te::compute(
      ri.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr k = ri.axes[0].var;
        Expr hit = x(source_index(mask, ri, v)) == extreme(exprs(v));
        if (last) return te::max(ir::select(hit, k, Expr(-1)), ri.axes);
        return te::min(ir::select(hit, k, const_i32(n)), ri.axes);
      },
      c.name(min ? "arg_min" : "arg_max"));
}

std::vector<Tensor> arg(ConvertContext& c, bool min) {
  if (c.dtype(0).is_bool()) c.fail("needs a numeric input, not bool");
  int rank = c.rank(0);
  if (rank == 0) c.fail("needs an input of rank 1 or more");
  int axis = c.axis(c.node().get_int("axis", 0), rank);
  bool keep = c.node().get_int("keepdims", 1) != 0;
  Tensor index = arg_extreme(c, axis, min, c.node().get_int("select_last_index", 0) != 0);
  std::vector<int64_t> out = index.shape();
  if (!keep) out.erase(out.begin() + axis);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        if (!keep) idx.insert(idx.begin() + axis, Expr(0));
        return ir::cast(kInt64, index(idx));
      },
      c.name(min ? "arg_min_index" : "arg_max_index"))};
}

// Sum over the dimensions of `mask` of f(x), the reduced dimensions kept as 1.
Tensor masked_sum(ConvertContext& c, const std::vector<bool>& mask,
                  const std::function<Expr(Expr)>& f, const char* name) {
  const Tensor& x = c.input(0);
  Reduced r = plan(c.shape(0), mask);
  return te::compute(
      r.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::sum(f(x(source_index(mask, r, v))), r.axes);
      },
      c.name(name));
}

// (x - mean) / sqrt(variance + eps) over the dimensions of `mask`, then `affine` (given the
// output's indices and the normalized value).
std::vector<Tensor> normalize_over(
    ConvertContext& c, const std::vector<bool>& mask, double eps, const char* name,
    const std::function<Expr(const std::vector<ir::Var>&, Expr)>& affine) {
  const Tensor& x = c.input(0);
  Reduced r = plan(c.shape(0), mask);
  double inv_n = 1.0 / static_cast<double>(r.count);
  Tensor sum = masked_sum(
      c, mask, [](Expr e) { return e; }, "norm_sum");
  Tensor sq = te::compute(
      r.shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr d = x(source_index(mask, r, v)) - sum(exprs(v)) * ir::make_float(inv_n);
        return te::sum(d * d, r.axes);
      },
      c.name("norm_sqsum"));
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> k = kept_index(mask, v);
        Expr y = (x(exprs(v)) - sum(k) * ir::make_float(inv_n)) /
                 ir::sqrt(sq(k) * ir::make_float(inv_n) + ir::make_float(eps));
        return affine ? affine(v, y) : y;
      },
      c.name(name))};
}

}  // namespace

std::vector<Tensor> arg_max(ConvertContext& c) {
  return arg(c, false);
}
std::vector<Tensor> arg_min(ConvertContext& c) {
  return arg(c, true);
}

std::vector<Tensor> hardmax(ConvertContext& c) {
  require_float(c);
  int axis = c.axis(c.node().get_int("axis", -1), c.rank(0));
  Tensor index = arg_extreme(c, axis, false, false);
  DataType t = c.dtype(0);
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> k = exprs(v);
        k[static_cast<size_t>(axis)] = Expr(0);
        return ir::select(index(k) == Expr(v[static_cast<size_t>(axis)]), ir::make_const(t, 1),
                          ir::make_const(t, 0));
      },
      c.name("hardmax"))};
}

std::vector<Tensor> rms_norm(ConvertContext& c) {
  require_float(c);
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", -1), rank);
  double eps = c.node().get_float("epsilon", 1e-5);
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int d = axis; d < rank; ++d) mask[static_cast<size_t>(d)] = true;
  std::vector<int64_t> tail_shape(c.shape(0).begin() + axis, c.shape(0).end());
  if (c.shape(1).size() > tail_shape.size())
    c.fail("the scale must broadcast to the normalized dimensions");
  broadcast_shapes(c.node(), tail_shape, c.shape(1));
  Tensor sq = masked_sum(
      c, mask, [](Expr e) { return e * e; }, "rms_norm_sqsum");
  int64_t count = 1;
  for (int64_t d : tail_shape) count *= d;
  const Tensor& x = c.input(0);
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr ms = sq(kept_index(mask, v)) * ir::make_float(1.0 / static_cast<double>(count));
        std::vector<Expr> tail(v.begin() + axis, v.end());
        return x(exprs(v)) / ir::sqrt(ms + ir::make_float(eps)) *
               c.load_broadcast(1, tail, tail_shape);
      },
      c.name("rms_norm"))};
}

std::vector<Tensor> lp_norm(ConvertContext& c) {
  require_float(c);
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", -1), rank);
  int64_t p = c.node().get_int("p", 2);
  if (p != 1 && p != 2) c.fail(fmt::format("p {} (1 or 2)", p));
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[static_cast<size_t>(axis)] = true;
  Tensor norm = masked_sum(
      c, mask, [p](Expr e) { return p == 1 ? ir::abs(e) : e * e; }, "lp_norm_sum");
  const Tensor& x = c.input(0);
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr n = norm(kept_index(mask, v));
        if (p == 2) n = ir::sqrt(n);
        // A zero norm gives 0, not 0 / 0.
        Expr zero = ir::make_const(n.dtype(), 0);
        return ir::select(n == zero, zero, x(exprs(v)) / n);
      },
      c.name("lp_norm"))};
}

std::vector<Tensor> instance_norm(ConvertContext& c) {
  require_float(c);
  int rank = c.rank(0);
  if (rank < 3) c.fail("needs an (N, C, spatial...) input");
  int64_t channels = c.shape(0)[1];
  for (size_t i : {size_t{1}, size_t{2}})
    if (c.shape(i) != std::vector<int64_t>{channels})
      c.fail(fmt::format("input {} must have C elements", i + 1));
  std::vector<bool> mask(static_cast<size_t>(rank), true);
  mask[0] = mask[1] = false;
  return normalize_over(c, mask, c.node().get_float("epsilon", 1e-5), "instance_norm",
                        [&](const std::vector<ir::Var>& v, Expr y) {
                          return y * c.load(1, {v[1]}) + c.load(2, {v[1]});
                        });
}

std::vector<Tensor> group_norm(ConvertContext& c) {
  require_float(c);
  const std::vector<int64_t>& s = c.shape(0);
  if (s.size() < 2) c.fail("needs an (N, C, ...) input");
  int64_t groups = c.node().get_int("num_groups", 0), channels = s[1];
  if (groups < 1 || channels % groups)
    c.fail(fmt::format("{} groups of {} channels", groups, channels));
  int64_t per = channels / groups;
  // Opset 18 scales and shifts each group, opset 21 each channel.
  int64_t params = c.shape(1).size() == 1 ? c.shape(1)[0] : -1;
  if ((params != channels && params != groups) || c.shape(2) != c.shape(1))
    c.fail(fmt::format("the scale and bias must have C ({}) or num_groups ({}) elements", channels,
                       groups));
  const Tensor& x = c.input(0);
  DataType t = c.dtype(0);
  int64_t count = per;
  for (size_t d = 2; d < s.size(); ++d) count *= s[d];
  auto stats = [&](const char* name, const Tensor* mean) {
    std::vector<ir::IterVar> axes = {te::reduce_axis(per, "rc")};
    for (size_t d = 2; d < s.size(); ++d)
      axes.push_back(te::reduce_axis(s[d], fmt::format("r{}", d)));
    return te::compute(
        {s[0], groups},
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          std::vector<Expr> at = {v[0], Expr(v[1]) * const_i32(per) + axes[0].var};
          for (size_t d = 1; d < axes.size(); ++d) at.push_back(axes[d].var);
          Expr e = x(at);
          if (mean) {
            e = e - (*mean)({v[0], v[1]}) / ir::make_const(t, static_cast<double>(count));
            e = e * e;
          }
          return te::sum(e, axes);
        },
        c.name(name));
  };
  Tensor sum = stats("group_norm_sum", nullptr);
  Tensor sq = stats("group_norm_sqsum", &sum);
  double eps = c.node().get_float("epsilon", 1e-5);
  return {te::compute(
      s,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr g = ir::floordiv(v[1], const_i32(per));
        Expr n = ir::make_const(t, static_cast<double>(count));
        Expr y = (x(exprs(v)) - sum({v[0], g}) / n) /
                 ir::sqrt(sq({v[0], g}) / n + ir::make_const(t, eps));
        Expr p = params == channels ? Expr(v[1]) : g;
        return y * c.load(1, {p}) + c.load(2, {p});
      },
      c.name("group_norm"))};
}

std::vector<Tensor> mean_variance_norm(ConvertContext& c) {
  require_float(c);
  int rank = c.rank(0);
  std::vector<int64_t> axes = c.node().get_ints("axes", {0, 2, 3});
  std::vector<bool> mask = reduced_mask(c, axes, rank);
  return normalize_over(c, mask, 1e-9, "mean_variance_norm", nullptr);
}

}  // namespace tyche::graph::ops
