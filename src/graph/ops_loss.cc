// The losses of the default domain, computed for inference as any op: NegativeLogLikelihoodLoss
// and SoftmaxCrossEntropyLoss (its log-softmax, then the same loss), with class weights,
// ignore_index and the reductions none, sum and mean.
#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

// The loss of the log-probabilities `log_prob` (N, C, d1, ...) at the classes input
// `target_input` holds (N, d1, ...), weighted by input `weight_input` (C) when given.
Tensor nll(ConvertContext& c, const Tensor& log_prob, size_t target_input, size_t weight_input,
           const char* name) {
  const std::vector<int64_t> x_shape = log_prob.shape();
  if (x_shape.size() < 2) c.fail("the input needs a batch and a class dimension");
  if (!c.dtype(target_input).is_integer()) c.fail("the targets must be integers");
  std::vector<int64_t> t_shape = c.shape(target_input);
  std::vector<int64_t> want = x_shape;
  want.erase(want.begin() + 1);
  if (t_shape != want)
    c.fail(fmt::format("the targets have shape {}, not {}", shape_text(t_shape), shape_text(want)));
  int64_t classes = x_shape[1];
  bool weighted = c.has_input(weight_input);
  if (weighted && c.shape(weight_input) != std::vector<int64_t>{classes})
    c.fail(fmt::format("the weights must be one per class ({})", classes));
  std::optional<int64_t> ignore;
  if (c.node().has("ignore_index")) ignore = c.node().get_int("ignore_index", 0);
  std::string reduction = c.node().get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    c.fail(fmt::format("unknown reduction '{}' (none, sum or mean)", reduction));
  DataType t = log_prob.dtype();

  // Per target element: its class, whether it counts, its weight and its loss.
  auto klass = [&](const std::vector<Expr>& at) {
    Expr k = c.load(target_input, at);
    return k.dtype() == kInt32 ? k : ir::cast(kInt32, k);
  };
  auto clamped = [&](Expr k) { return ir::max(ir::min(k, const_i32(classes - 1)), Expr(0)); };
  auto counted = [&](const std::vector<Expr>& at) -> std::optional<Expr> {
    if (!ignore) return std::nullopt;
    return klass(at) != const_i32(*ignore);
  };
  auto weight = [&](const std::vector<Expr>& at) {
    Expr w = weighted ? c.load(weight_input, {clamped(klass(at))}) : ir::make_const(t, 1);
    if (std::optional<Expr> keep = counted(at)) w = ir::select(*keep, w, ir::make_const(t, 0));
    return w;
  };
  auto loss = [&](const std::vector<Expr>& at) {
    std::vector<Expr> x_at = at;
    x_at.insert(x_at.begin() + 1, clamped(klass(at)));
    Expr l = Expr(ir::make_const(t, 0)) - log_prob(x_at);
    if (weighted || ignore) l = l * weight(at);
    return l;
  };

  if (reduction == "none")
    return te::compute(
        t_shape, [&](const std::vector<ir::Var>& v) -> te::ComputeBody { return loss(exprs(v)); },
        c.name(name));
  auto all_axes = [&](const char* prefix) {
    std::vector<ir::IterVar> axes;
    for (size_t d = 0; d < t_shape.size(); ++d)
      axes.push_back(te::reduce_axis(t_shape[d], fmt::format("{}{}", prefix, d)));
    return axes;
  };
  auto vars = [](const std::vector<ir::IterVar>& axes) {
    std::vector<Expr> out;
    for (const ir::IterVar& a : axes) out.push_back(a.var);
    return out;
  };
  std::vector<ir::IterVar> rl = all_axes("rl");
  Tensor total = te::compute(
      {},
      [&](const std::vector<ir::Var>&) -> te::ComputeBody { return te::sum(loss(vars(rl)), rl); },
      c.name(reduction == "sum" ? name : "loss_sum"));
  if (reduction == "sum") return total;
  if (!weighted && !ignore) {
    double count = 1;
    for (int64_t d : t_shape) count *= static_cast<double>(d);
    return te::compute(
        {},
        [&](const std::vector<ir::Var>&) -> te::ComputeBody {
          return total({}) / ir::make_const(t, count);
        },
        c.name(name));
  }
  // The weighted mean: the sum over the weights of the elements that count (0/0 when none does,
  // as the reference).
  std::vector<ir::IterVar> rw = all_axes("rw");
  Tensor weights = te::compute(
      {},
      [&](const std::vector<ir::Var>&) -> te::ComputeBody { return te::sum(weight(vars(rw)), rw); },
      c.name("loss_weight_sum"));
  return te::compute(
      {}, [&](const std::vector<ir::Var>&) -> te::ComputeBody { return total({}) / weights({}); },
      c.name(name));
}

}  // namespace

std::vector<Tensor> negative_log_likelihood_loss(ConvertContext& c) {
  require_float(c);
  return {nll(c, c.input(0), 1, 2, "nll_loss")};
}

std::vector<Tensor> softmax_cross_entropy_loss(ConvertContext& c) {
  require_float(c);
  const std::vector<int64_t>& s = c.shape(0);
  if (s.size() < 2) c.fail("the scores need a batch and a class dimension");
  const Tensor& x = c.input(0);
  ir::IterVar rm = te::reduce_axis(s[1], "rm"), rs = te::reduce_axis(s[1], "rs");
  auto along = [](const std::vector<ir::Var>& v, Expr k) {
    std::vector<Expr> at = exprs(v);
    at.insert(at.begin() + 1, std::move(k));
    return at;
  };
  auto kept = [](const std::vector<ir::Var>& v) {
    std::vector<Expr> at = exprs(v);
    at.erase(at.begin() + 1);
    return at;
  };
  std::vector<int64_t> rows = s;
  rows.erase(rows.begin() + 1);
  Tensor m = te::compute(
      rows,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::max(x(along(v, rm.var)), {rm});
      },
      c.name("sce_max"));
  Tensor sum = te::compute(
      rows,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return te::sum(ir::exp(x(along(v, rs.var)) - m(exprs(v))), {rs});
      },
      c.name("sce_sum"));
  Tensor log_prob = te::compute(
      s,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> row = kept(v);
        return x(exprs(v)) - m(row) - ir::log(sum(row));
      },
      c.name("log_prob"));
  std::vector<Tensor> outs = {nll(c, log_prob, 1, 2, "sce_loss")};
  if (c.node().outputs.size() > 1) outs.push_back(c.node().outputs[1] >= 0 ? log_prob : Tensor());
  return outs;
}

}  // namespace tyche::graph::ops
