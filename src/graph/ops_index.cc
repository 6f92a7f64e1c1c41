// Ops that move elements by index: GatherElements, Trilu, Tile, SpaceToDepth, DepthToSpace,
// OneHot, CumSum, CumProd, Pad, EyeLike, TopK.
#include <algorithm>
#include <functional>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

std::vector<Tensor> gather_elements(ConvertContext& c) {
  int rank = c.rank(0);
  int axis = c.axis(c.node().get_int("axis", 0), rank);
  if (!c.dtype(1).is_integer()) c.fail("the indices must be integers");
  if (c.rank(1) != rank) c.fail("the indices must have the data's rank");
  int64_t n = c.shape(0)[static_cast<size_t>(axis)];
  const Tensor& x = c.input(0);
  return {te::compute(
      c.shape(1),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        idx[static_cast<size_t>(axis)] = clamped_index(index_from_end(c.load(1, exprs(v)), n), n);
        return x(idx);
      },
      c.name("gather_elements"))};
}

std::vector<Tensor> trilu(ConvertContext& c) {
  if (c.rank(0) < 2) c.fail("needs an input of rank 2 or more");
  int64_t k = 0;
  if (c.has_input(1)) {
    std::optional<double> given = c.scalar(1);
    if (!given) c.fail(fmt::format("k ('{}') must be a one-element constant", c.value(1).name));
    k = static_cast<int64_t>(*given);
  }
  bool upper = c.node().get_int("upper", 1) != 0;
  DataType t = c.dtype(0);
  const Tensor& x = c.input(0);
  size_t r = static_cast<size_t>(c.rank(0));
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        // Kept: j - i >= k (upper), j - i <= k (lower).
        Expr diff = Expr(v[r - 1]) - Expr(v[r - 2]);
        Expr keep = upper ? diff >= const_i32(k) : diff <= const_i32(k);
        return ir::select(keep, x(exprs(v)), ir::make_const(t, 0));
      },
      c.name("trilu"))};
}

std::vector<Tensor> tile(ConvertContext& c) {
  std::vector<int64_t> repeats = c.constant_ints(1, "the repeats");
  if (static_cast<int>(repeats.size()) != c.rank(0))
    c.fail(fmt::format("{} repeats for an input of rank {}", repeats.size(), c.rank(0)));
  const std::vector<int64_t>& in = c.shape(0);
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] < 1) c.fail(fmt::format("repeat {} is not positive", repeats[d]));
    out.push_back(in[d] * repeats[d]);
  }
  const Tensor& x = c.input(0);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx;
        for (size_t d = 0; d < in.size(); ++d) idx.push_back(ir::floormod(v[d], const_i32(in[d])));
        return x(idx);
      },
      c.name("tile"))};
}

namespace {

// SpaceToDepth and DepthToSpace on NCHW: `to_depth` moves blocks of `b` x `b` pixels into
// channels; mode DCR takes the block index before the channel, CRD after (SpaceToDepth from
// opset 28).
std::vector<Tensor> rearrange_blocks(ConvertContext& c, bool to_depth) {
  if (c.rank(0) != 4) c.fail("needs an NCHW input");
  int64_t b = c.node().get_int("blocksize", 0);
  if (b < 1) c.fail("blocksize must be positive");
  const std::vector<int64_t>& s = c.shape(0);
  int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  std::string mode = c.node().get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") c.fail(fmt::format("unknown mode '{}' (DCR or CRD)", mode));
  std::vector<int64_t> out;
  if (to_depth) {
    if (h % b || w % b) c.fail("the height and width must be multiples of blocksize");
    out = {n, ch * b * b, h / b, w / b};
  } else {
    if (ch % (b * b)) c.fail("the channels must be a multiple of blocksize squared");
    out = {n, ch / (b * b), h * b, w * b};
  }
  const Tensor& x = c.input(0);
  Expr B = const_i32(b);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr oc = v[1], oh = v[2], ow = v[3];
        if (to_depth) {
          // out channel = (bh * b + bw) * C + c (DCR), c * b * b + bh * b + bw (CRD)
          bool dcr = mode == "DCR";
          Expr block = dcr ? ir::floordiv(oc, const_i32(ch)) : ir::floormod(oc, B * B);
          Expr cin = dcr ? ir::floormod(oc, const_i32(ch)) : ir::floordiv(oc, B * B);
          Expr bh = ir::floordiv(block, B), bw = ir::floormod(block, B);
          return x({v[0], cin, oh * B + bh, ow * B + bw});
        }
        Expr bh = ir::floormod(oh, B), bw = ir::floormod(ow, B);
        int64_t co = ch / (b * b);
        Expr cin = mode == "DCR" ? (bh * B + bw) * const_i32(co) + oc : oc * B * B + bh * B + bw;
        return x({v[0], cin, ir::floordiv(oh, B), ir::floordiv(ow, B)});
      },
      c.name(to_depth ? "space_to_depth" : "depth_to_space"))};
}

}  // namespace

std::vector<Tensor> space_to_depth(ConvertContext& c) {
  return rearrange_blocks(c, true);
}
std::vector<Tensor> depth_to_space(ConvertContext& c) {
  return rearrange_blocks(c, false);
}

std::vector<Tensor> one_hot(ConvertContext& c) {
  std::optional<double> depth = c.scalar(1);
  if (!depth)
    c.fail(fmt::format("the depth ('{}') must be a one-element constant", c.value(1).name));
  if (!c.dtype(0).is_integer() && !c.dtype(0).is_float()) c.fail("the indices must be numbers");
  const runtime::NDArray& values = c.constant(2, "the values");
  if (values.numel() != 2) c.fail("the values must hold two elements (off, on)");
  auto d = static_cast<int64_t>(*depth);
  if (d < 1) c.fail(fmt::format("depth {} is not positive", d));
  int rank = c.rank(0) + 1;
  int axis = c.axis(c.node().get_int("axis", -1), rank);
  std::vector<int64_t> out = c.shape(0);
  out.insert(out.begin() + axis, d);
  DataType t = c.dtype(2);
  auto value = [&](int64_t i) {
    return t.is_float() ? ir::make_const(t, values.get_flat(i))
                        : ir::make_const(t, static_cast<double>(values.get_flat_int(i)));
  };
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx(v.begin(), v.end());
        Expr at = idx[static_cast<size_t>(axis)];
        idx.erase(idx.begin() + axis);
        Expr k = c.load(0, idx);
        if (k.dtype() != kInt32) k = ir::cast(kInt32, k);  // float indices truncate
        k = ir::select(k < Expr(0), k + const_i32(d), k);
        return ir::select(k == at, value(1), value(0));
      },
      c.name("one_hot"))};
}

namespace {

// CumSum and CumProd: the running combination along the axis given as input 1.
std::vector<Tensor> cumulative(ConvertContext& c, te::ReducerKind reducer, const char* name) {
  std::optional<double> given = c.scalar(1);
  if (!given)
    c.fail(fmt::format("the axis ('{}') must be a one-element constant", c.value(1).name));
  int rank = c.rank(0);
  int axis = c.axis(static_cast<int64_t>(*given), rank);
  bool exclusive = c.node().get_int("exclusive", 0) != 0;
  bool reverse = c.node().get_int("reverse", 0) != 0;
  int64_t n = c.shape(0)[static_cast<size_t>(axis)];
  DataType t = c.dtype(0);
  const Tensor& x = c.input(0);
  ir::IterVar r = te::reduce_axis(n, "rk");
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(v);
        Expr i = v[static_cast<size_t>(axis)];
        Expr k = r.var;
        idx[static_cast<size_t>(axis)] = k;
        // Summed: k <= i (forward) or k >= i (reverse); strictly for exclusive sums.
        Expr in = reverse ? (exclusive ? k > i : k >= i) : (exclusive ? k < i : k <= i);
        Expr identity = te::reducer_identity(reducer, t);
        return te::Reduction{reducer, ir::select(in, x(idx), identity), {r}};
      },
      c.name(name))};
}

}  // namespace

std::vector<Tensor> cum_sum(ConvertContext& c) {
  return cumulative(c, te::ReducerKind::kSum, "cum_sum");
}
std::vector<Tensor> cum_prod(ConvertContext& c) {
  return cumulative(c, te::ReducerKind::kProd, "cum_prod");
}

namespace {

// Input 0 placed at `begin` (negative: cropped) in a tensor of shape `out`, `fill` around it.
Tensor place(ConvertContext& c, const std::vector<int64_t>& begin, const std::vector<int64_t>& out,
             const std::function<Expr()>& fill, const char* name) {
  const std::vector<int64_t>& in = c.shape(0);
  const Tensor& x = c.input(0);
  return te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr inside = ir::make_bool(true);
        std::vector<Expr> idx;
        for (size_t a = 0; a < in.size(); ++a) {
          Expr i = Expr(v[a]) - const_i32(begin[a]);
          if (begin[a] > 0) inside = inside && i >= Expr(0);
          if (out[a] > in[a] + begin[a]) inside = inside && i < const_i32(in[a]);
          idx.push_back(i);
        }
        return te::if_then_else(inside, x(idx), fill());
      },
      c.name(name));
}

}  // namespace

std::vector<Tensor> pad(ConvertContext& c) {
  int rank = c.rank(0);
  std::vector<int64_t> pads = c.has_input(1) ? c.constant_ints(1, "the pads")
                                             : c.node().get_ints("pads");  // opsets before 11
  std::vector<int64_t> axes;
  if (c.has_input(3)) {
    axes = c.constant_ints(3, "the axes");
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size())
    c.fail(fmt::format("{} pads for {} axes (two per axis)", pads.size(), axes.size()));
  const std::vector<int64_t>& in = c.shape(0);
  std::vector<int64_t> begin(in.size(), 0), out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<size_t>(c.axis(axes[i], rank, "a pad axis"));
    begin[a] = pads[i];
    out[a] = in[a] + pads[i] + pads[axes.size() + i];
    if (out[a] < 0) c.fail(fmt::format("the pads crop axis {} below nothing", a));
  }
  std::string mode = c.node().get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    c.fail(fmt::format("unknown mode '{}' (constant, reflect, edge or wrap)", mode));
  for (size_t a = 0; a < in.size(); ++a) {
    bool grows = begin[a] > 0 || out[a] > in[a] + begin[a];
    if (mode != "constant" && grows && in[a] == 0)
      c.fail(fmt::format("{} padding of axis {}, which is empty", mode, a));
  }
  DataType t = c.dtype(0);
  if (c.has_input(2) && c.value(2).numel() != 1) c.fail("the constant value must be one element");
  auto fill = [&]() {
    if (!c.has_input(2)) return ir::make_const(t, c.node().get_float("value", 0));
    return c.load(2, std::vector<Expr>(static_cast<size_t>(c.rank(2)), Expr(0)));
  };
  if (mode == "constant") return {place(c, begin, out, fill, "pad")};
  const Tensor& x = c.input(0);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> idx;
        for (size_t a = 0; a < in.size(); ++a) {
          Expr i = Expr(v[a]) - const_i32(begin[a]);
          int64_t n = in[a];
          if (mode == "edge") {
            i = ir::max(ir::min(i, const_i32(n - 1)), Expr(0));
          } else if (mode == "wrap") {
            i = ir::floormod(i, const_i32(n));
          } else if (n == 1) {
            i = Expr(0);
          } else {  // reflect: the period is 2 (n - 1), the edges not repeated
            Expr m = ir::floormod(i, const_i32(2 * (n - 1)));
            i = ir::select(m < const_i32(n), m, const_i32(2 * (n - 1)) - m);
            i = ir::max(ir::min(i, const_i32(n - 1)), Expr(0));  // the bound the checker sees
          }
          idx.push_back(i);
        }
        return x(idx);
      },
      c.name("pad"))};
}

// CenterCropPad: each of `axes` cropped or zero-padded to its size in `shape` (a constant),
// centred: a crop starts at (in - size) / 2, a pad begins with (size - in) / 2 zeros.
std::vector<Tensor> center_crop_pad(ConvertContext& c) {
  int rank = c.rank(0);
  std::vector<int64_t> sizes = c.constant_ints(1, "the shape");
  std::vector<int64_t> axes = c.node().get_ints("axes");
  if (axes.empty())
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  if (sizes.size() != axes.size())
    c.fail(fmt::format("{} sizes for {} axes", sizes.size(), axes.size()));
  const std::vector<int64_t>& in = c.shape(0);
  std::vector<int64_t> out = in, offset(in.size(), 0);
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<size_t>(c.axis(axes[i], rank, "an axis"));
    if (seen[a]) c.fail(fmt::format("axis {} is named twice", a));
    seen[a] = true;
    if (sizes[i] < 0) c.fail(fmt::format("a negative size {}", sizes[i]));
    out[a] = sizes[i];
    offset[a] = sizes[i] <= in[a] ? (in[a] - sizes[i]) / 2 : -((sizes[i] - in[a]) / 2);
  }
  std::vector<int64_t> begin(offset.size());
  for (size_t a = 0; a < offset.size(); ++a) begin[a] = -offset[a];
  DataType t = c.dtype(0);
  return {place(
      c, begin, out, [t] { return ir::make_const(t, 0); }, "center_crop_pad")};
}

// Col2Im (opset 18): the inverse of im2col: each image element sums the column entries of the
// blocks that cover it. A reduction over the kernel's offsets; an offset contributes where the
// element lies on the block grid (strides) within it (pads, dilations).
std::vector<Tensor> col2im(ConvertContext& c) {
  std::vector<int64_t> image = c.constant_ints(1, "the image shape");
  std::vector<int64_t> kernel = c.constant_ints(2, "the block shape");
  size_t nd = image.size();
  if (nd == 0 || kernel.size() != nd) c.fail("the image and block shapes must have one rank");
  std::vector<int64_t> dil = c.node().get_ints("dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> strides = c.node().get_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = c.node().get_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (dil.size() != nd || strides.size() != nd || pads.size() != 2 * nd)
    c.fail("dilations, strides and pads must match the image's rank");
  const std::vector<int64_t>& xs = c.shape(0);
  if (xs.size() != 3) c.fail("needs an input (N, C * block size, blocks)");
  int64_t block = 1, blocks = 1;
  std::vector<int64_t> grid(nd);
  for (size_t d = 0; d < nd; ++d) {
    if (kernel[d] < 1 || dil[d] < 1 || strides[d] < 1 || image[d] < 1)
      c.fail("shapes, dilations and strides must be positive");
    block *= kernel[d];
    grid[d] = (image[d] + pads[d] + pads[nd + d] - dil[d] * (kernel[d] - 1) - 1) / strides[d] + 1;
    if (grid[d] < 1) c.fail("the blocks do not fit the padded image");
    blocks *= grid[d];
  }
  if (xs[1] % block != 0 || xs[2] != blocks)
    c.fail(fmt::format("an input of shape {} for blocks of {} on a grid of {}", shape_text(xs),
                       block, blocks));
  std::vector<int64_t> out = {xs[0], xs[1] / block};
  out.insert(out.end(), image.begin(), image.end());
  std::vector<ir::IterVar> taps;
  for (size_t d = 0; d < nd; ++d)
    taps.push_back(te::reduce_axis(kernel[d], fmt::format("rk{}", d)));
  DataType t = c.dtype(0);
  return {te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr ok = ir::make_bool(true), tap = Expr(0), at = Expr(0);
        for (size_t d = 0; d < nd; ++d) {
          Expr q = Expr(v[2 + d]) + const_i32(pads[d]) - Expr(taps[d].var) * const_i32(dil[d]);
          Expr g = ir::floordiv(q, const_i32(strides[d]));
          ok = ok && ir::floormod(q, const_i32(strides[d])) == Expr(0) && g >= Expr(0) &&
               g < const_i32(grid[d]);
          tap = tap * const_i32(kernel[d]) + taps[d].var;
          at = at * const_i32(grid[d]) + ir::max(ir::min(g, const_i32(grid[d] - 1)), Expr(0));
        }
        Expr ch = Expr(v[1]) * const_i32(block) + tap;
        return te::sum(ir::select(ok, c.load(0, {v[0], ch, at}), ir::make_const(t, 0)), taps);
      },
      c.name("col2im"))};
}

std::vector<Tensor> eye_like(ConvertContext& c) {
  if (c.rank(0) != 2) c.fail("needs a 2-D input");
  DataType t = c.dtype(0);
  if (c.node().has("dtype")) {
    int64_t code = c.node().get_int("dtype", 1);
    std::optional<DataType> given = dtype_of_onnx(code);
    if (!given) c.fail(fmt::format("cannot make a {} tensor", onnx_dtype_name(code)));
    t = *given;
  }
  int64_t k = c.node().get_int("k", 0);
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return ir::select(Expr(v[1]) - Expr(v[0]) == const_i32(k), ir::make_const(t, 1),
                          ir::make_const(t, 0));
      },
      c.name("eye_like"))};
}

}  // namespace tyche::graph::ops

namespace tyche::graph::ops {

// TopK with a constant k: each element's rank along the axis (how many come before it: larger,
// or equal and earlier, for largest), then output j the element of rank j. Quadratic in the
// axis's length, which is short where models use it (a classifier's classes, a beam).
std::vector<Tensor> top_k(ConvertContext& c) {
  std::optional<double> given = c.scalar(1);
  if (!given) c.fail(fmt::format("k ('{}') must be a one-element constant", c.value(1).name));
  auto k = static_cast<int64_t>(*given);
  int rank = c.rank(0);
  if (rank == 0) c.fail("needs an input of rank 1 or more");
  auto axis = static_cast<size_t>(c.axis(c.node().get_int("axis", -1), rank));
  int64_t n = c.shape(0)[axis];
  if (k < 0 || k > n) c.fail(fmt::format("k {} for an axis of {}", k, n));
  bool largest = c.node().get_int("largest", 1) != 0;
  const Tensor& x = c.input(0);
  auto at = [&](const std::vector<ir::Var>& v, Expr i) {
    std::vector<Expr> idx = exprs(v);
    idx[axis] = std::move(i);
    return idx;
  };
  ir::IterVar rr = te::reduce_axis(n, "rr");
  Tensor order = te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr mine = x(exprs(v)), other = x(at(v, rr.var));
        Expr before = largest ? other > mine : other < mine;
        before = before || (other == mine && Expr(rr.var) < Expr(v[axis]));
        return te::sum(ir::select(before, Expr(1), Expr(0)), {rr});
      },
      c.name("top_k_rank"));
  std::vector<int64_t> out = c.shape(0);
  out[axis] = k;
  ir::IterVar rv = te::reduce_axis(n, "rv"), ri = te::reduce_axis(n, "ri");
  DataType t = c.dtype(0);
  Tensor values = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr hit = order(at(v, rv.var)) == Expr(v[axis]);
        return te::sum(ir::select(hit, x(at(v, rv.var)), ir::make_const(t, 0)), {rv});
      },
      c.name("top_k"));
  Tensor indices = te::compute(
      out,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr hit = order(at(v, ri.var)) == Expr(v[axis]);
        return te::sum(ir::select(hit, ir::cast(kInt64, ri.var), ir::make_const(kInt64, 0)), {ri});
      },
      c.name("top_k_indices"));
  return {values, indices};
}

}  // namespace tyche::graph::ops
