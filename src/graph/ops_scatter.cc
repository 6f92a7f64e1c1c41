// GatherND, and the scatters (ScatterElements, ScatterND): a scatter is computed as what each
// output element receives, the reduction of the updates whose indices name it combined with the
// data there (none: the update where there is one, so the indices must not repeat, as ONNX
// requires; add, mul, max, min).
#include <functional>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

std::vector<Expr> vars_of(const std::vector<ir::IterVar>& axes) {
  std::vector<Expr> out;
  for (const ir::IterVar& a : axes) out.push_back(a.var);
  return out;
}

// out[p] from data[p] and the updates that `matches` (given the reduce vars) names p, each read by
// `update`.
Tensor scatter(
    ConvertContext& c, const std::vector<int64_t>& reduce_extents,
    const std::function<Expr(const std::vector<Expr>&, const std::vector<Expr>&)>& matches,
    const std::function<Expr(const std::vector<Expr>&, const std::vector<Expr>&)>& update,
    const char* name) {
  std::string reduction = c.node().get_string("reduction", "none");
  te::ReducerKind kind;
  if (reduction == "none" || reduction == "add")
    kind = te::ReducerKind::kSum;
  else if (reduction == "mul")
    kind = te::ReducerKind::kProd;
  else if (reduction == "max")
    kind = te::ReducerKind::kMax;
  else if (reduction == "min")
    kind = te::ReducerKind::kMin;
  else
    c.fail(fmt::format("unknown reduction '{}' (none, add, mul, max or min)", reduction));
  DataType t = c.dtype(0);
  if (t.is_bool() && reduction != "none") c.fail("a reduction of booleans");
  const std::vector<int64_t>& shape = c.shape(0);
  auto axes = [&](const char* prefix) {
    std::vector<ir::IterVar> out;
    for (size_t d = 0; d < reduce_extents.size(); ++d)
      out.push_back(te::reduce_axis(reduce_extents[d], fmt::format("{}{}", prefix, d)));
    return out;
  };
  std::vector<ir::IterVar> ru = axes("ru");
  Expr identity = te::reducer_identity(kind, t);
  Tensor received = te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> p = exprs(v), u = vars_of(ru);
        return te::Reduction{kind, ir::select(matches(p, u), update(p, u), identity), ru};
      },
      c.name(fmt::format("{}_updates", name)));
  Tensor count;
  if (reduction == "none" || reduction == "mul") {
    std::vector<ir::IterVar> rc = axes("rc");
    count = te::compute(
        shape,
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          std::vector<Expr> p = exprs(v), u = vars_of(rc);
          return te::sum(ir::select(matches(p, u), Expr(1), Expr(0)), rc);
        },
        c.name(fmt::format("{}_count", name)));
  }
  const Tensor& data = c.input(0);
  return te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> p = exprs(v);
        Expr d = data(p), r = received(p);
        if (reduction == "none") return ir::select(count(p) > Expr(0), r, d);
        if (reduction == "add") return d + r;
        if (reduction == "mul") return d * r;
        if (reduction == "max") return ir::max(d, r);
        return ir::min(d, r);
      },
      c.name(name));
}

}  // namespace

std::vector<Tensor> gather_nd(ConvertContext& c) {
  if (!c.dtype(1).is_integer()) c.fail("the indices must be integers");
  const std::vector<int64_t>& data = c.shape(0);
  const std::vector<int64_t>& ind = c.shape(1);
  auto b = static_cast<size_t>(c.node().get_int("batch_dims", 0));
  if (ind.empty()) c.fail("the indices must have rank 1 or more");
  auto k = static_cast<size_t>(ind.back());
  if (b >= ind.size() || b >= data.size() || b + k > data.size())
    c.fail(fmt::format("batch_dims {} and index length {} for data of rank {}", b, k, data.size()));
  for (size_t d = 0; d < b; ++d)
    if (data[d] != ind[d]) c.fail("the batch dimensions of data and indices differ");
  std::vector<int64_t> out(ind.begin(), ind.end() - 1);
  out.insert(out.end(), data.begin() + static_cast<long>(b + k), data.end());
  const Tensor& x = c.input(0);
  size_t q = ind.size() - 1;
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> at(v.begin(), v.begin() + static_cast<long>(b));
        for (size_t j = 0; j < k; ++j) {
          std::vector<Expr> ii(v.begin(), v.begin() + static_cast<long>(q));
          ii.push_back(const_i32(static_cast<int64_t>(j)));
          at.push_back(clamped_index(index_from_end(c.load(1, ii), data[b + j]), data[b + j]));
        }
        at.insert(at.end(), v.begin() + static_cast<long>(q), v.end());
        return x(at);
      },
      c.name("gather_nd"))};
}

std::vector<Tensor> scatter_elements(ConvertContext& c) {
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", 0), rank);
  if (!c.dtype(1).is_integer()) c.fail("the indices must be integers");
  const std::vector<int64_t>& ind = c.shape(1);
  if (static_cast<int>(ind.size()) != rank || c.shape(2) != ind)
    c.fail("the indices and updates must have one shape, of the data's rank");
  const std::vector<int64_t>& data = c.shape(0);
  for (int d = 0; d < rank; ++d)
    if (d != axis && ind[d] > data[d]) c.fail("the indices are larger than the data");
  auto a = static_cast<size_t>(axis);
  // The update at u (along the axis) of output p: the indices' element at p with the axis at u.
  auto source = [&](const std::vector<Expr>& p, const std::vector<Expr>& u) {
    std::vector<Expr> at = p;
    for (size_t d = 0; d < at.size(); ++d) at[d] = d == a ? u[0] : clamped_index(at[d], ind[d]);
    return at;
  };
  return {scatter(
      c, {ind[a]},
      [&](const std::vector<Expr>& p, const std::vector<Expr>& u) {
        Expr ok = index_from_end(c.load(1, source(p, u)), data[a]) == p[a];
        for (size_t d = 0; d < p.size(); ++d)
          if (d != a && ind[d] < data[d]) ok = ok && p[d] < const_i32(ind[d]);
        return ok;
      },
      [&](const std::vector<Expr>& p, const std::vector<Expr>& u) {
        return c.load(2, source(p, u));
      },
      "scatter_elements")};
}

std::vector<Tensor> scatter_nd(ConvertContext& c) {
  if (!c.dtype(1).is_integer()) c.fail("the indices must be integers");
  const std::vector<int64_t>& data = c.shape(0);
  const std::vector<int64_t>& ind = c.shape(1);
  if (ind.empty()) c.fail("the indices must have rank 1 or more");
  auto k = static_cast<size_t>(ind.back());
  if (k > data.size()) c.fail("the index length is larger than the data's rank");
  std::vector<int64_t> want(ind.begin(), ind.end() - 1);
  want.insert(want.end(), data.begin() + static_cast<long>(k), data.end());
  if (c.shape(2) != want)
    c.fail(
        fmt::format("the updates have shape {}, not {}", shape_text(c.shape(2)), shape_text(want)));
  std::vector<int64_t> extents(ind.begin(), ind.end() - 1);
  bool single = extents.empty();  // one index tuple: a reduction over one step
  if (single) extents = {1};
  auto update_index = [&](const std::vector<Expr>& u) { return single ? std::vector<Expr>{} : u; };
  return {scatter(
      c, extents,
      [&](const std::vector<Expr>& p, const std::vector<Expr>& u) {
        Expr ok = ir::make_bool(true);
        for (size_t j = 0; j < k; ++j) {
          std::vector<Expr> ii = update_index(u);
          ii.push_back(const_i32(static_cast<int64_t>(j)));
          ok = ok && index_from_end(c.load(1, ii), data[j]) == p[j];
        }
        return ok;
      },
      [&](const std::vector<Expr>& p, const std::vector<Expr>& u) {
        std::vector<Expr> at = update_index(u);
        at.insert(at.end(), p.begin() + static_cast<long>(k), p.end());
        return c.load(2, at);
      },
      "scatter_nd")};
}

// TensorScatter (a KV cache's update): for each batch b, update's positions 0.. along `axis`
// written at write_indices[b] onward (mode linear), or around the axis (circular); the rest of
// the cache as it was.
std::vector<Tensor> tensor_scatter(ConvertContext& c) {
  int rank = c.rank(0);
  if (rank < 2) c.fail("needs a cache of rank 2 or more (batch first)");
  if (c.rank(1) != rank)
    c.fail(fmt::format("the update has rank {}, the cache {}", c.rank(1), rank));
  int axis = c.axis(c.node().get_int("axis", -2), rank);
  if (axis == 0) c.fail("axis 0 is the batch, not the sequence");
  std::string mode = c.node().get_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    c.fail(fmt::format("unknown mode '{}' (linear or circular)", mode));
  if (c.dtype(1) != c.dtype(0)) c.fail("the update and the cache have different types");
  const std::vector<int64_t>& cache = c.shape(0);
  const std::vector<int64_t>& update = c.shape(1);
  for (int d = 0; d < rank; ++d)
    if (d == axis ? update[d] > cache[d] : update[d] != cache[d])
      c.fail(fmt::format("an update of shape {} does not fit a cache of shape {} on axis {}",
                         shape_text(update), shape_text(cache), axis));
  bool indexed = c.has_input(2);
  if (indexed && (c.rank(2) != 1 || c.shape(2)[0] != cache[0] || !c.dtype(2).is_integer()))
    c.fail(fmt::format("write_indices must be integers of shape ({}), not {} {}", cache[0],
                       c.dtype(2).str(), shape_text(c.shape(2))));
  auto a = static_cast<size_t>(axis);
  return {te::compute(
      cache,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        Expr start = indexed ? ir::cast(kInt32, c.load(2, {v[0]})) : Expr(0);
        Expr d = Expr(v[a]) - start;
        if (mode == "circular") d = ir::floormod(d, const_i32(cache[a]));
        Expr inside = d >= Expr(0) && d < const_i32(update[a]);
        std::vector<Expr> from = idx;
        from[a] = ir::max(ir::min(d, const_i32(update[a] - 1)), Expr(0));  // the checker's bound
        return te::if_then_else(inside, c.load(1, from), c.load(0, idx));
      },
      c.name("tensor_scatter"))};
}

}  // namespace tyche::graph::ops
