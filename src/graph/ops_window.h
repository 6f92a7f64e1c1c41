// The window geometry that convolutions and pooling share (ops_nn.cc), for the op families
// that build on it (ops_quant.cc: the integer convolutions). Private to src/graph.
#pragma once

#include <functional>
#include <vector>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

// A tap's product from the two elements and their indices (a zero point per row or channel).
using TapProduct =
    std::function<ir::Expr(ir::Expr x, ir::Expr w, const std::vector<ir::Expr>& x_index,
                           const std::vector<ir::Expr>& w_index)>;

// Where an activation's channel and spatial axes are: ONNX's (N, C, spatial...) or, on a node
// the layout pass moved to channels last (layout.h), (N, spatial..., C).
struct Axes {
  bool channels_last = false;
  size_t rank = 0;
  size_t channel() const { return channels_last ? rank - 1 : 1; }
  size_t spatial(size_t d) const { return channels_last ? 1 + d : 2 + d; }
  size_t num_spatial() const { return rank - 2; }
  std::vector<int64_t> spatial_of(const std::vector<int64_t>& shape) const {
    std::vector<int64_t> out;
    for (size_t d = 0; d < num_spatial(); ++d) out.push_back(shape[spatial(d)]);
    return out;
  }
  // An activation's shape from its batch, channels and spatial extents.
  std::vector<int64_t> shape(int64_t n, int64_t ch, const std::vector<int64_t>& sp) const {
    std::vector<int64_t> out(rank);
    out[0] = n;
    out[channel()] = ch;
    for (size_t d = 0; d < sp.size(); ++d) out[spatial(d)] = sp[d];
    return out;
  }
};

// Window geometry along the spatial dimensions of an NC... input.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end, out;
};

// ONNX's kernel/strides/dilations/pads/auto_pad attributes resolved against `in` (the spatial
// extents). `ceil_mode` rounds the output size up (pooling).
Window resolve_window(ConvertContext& c, const std::vector<int64_t>& in,
                      std::vector<int64_t> kernel, bool ceil_mode = false);
// `x` padded along its spatial axes by `w` with `fill`, long enough for every window; `x` itself
// when nothing is padded.
// `fill` makes the value inside the compute (a parameter's load must be built there).
using FillFn = std::function<ir::Expr()>;
te::Tensor pad_input(ConvertContext& c, const te::Tensor& x, const Axes& ax, const Window& w,
                     const FillFn& fill);
// One reduce axis per spatial dimension of the window: rl; rh, rw; rd, rh, rw.
std::vector<ir::IterVar> window_axes(const Window& w);
// The activation axes of input `i`, with 1 to 3 spatial dimensions; float unless `any_type`.
Axes activation_axes(ConvertContext& c, size_t i, bool any_type = false);
// Conv's taps (ONNX's attributes and groups; input 0 the activation, input `w_index` the weight)
// summed: sum product(x tap, w tap), `x` (input 0 or a converted copy of it) padded with `fill`.
te::Tensor conv_sum(ConvertContext& c, size_t w_index, const te::Tensor& x, const FillFn& fill,
                    const TapProduct& product);
// MatMul's products (numpy's broadcasting of batch dimensions; input `a_index` by `b_index`, `a`
// standing for input a_index: it or a converted copy) summed: sum product(a element, b element).
te::Tensor matmul_sum(ConvertContext& c, size_t a_index, size_t b_index, const te::Tensor& a,
                      const TapProduct& product);
// Adds bias input `i` (one value per channel) to `y`, as its own compute (an epilogue).
te::Tensor add_channel_bias(ConvertContext& c, const te::Tensor& y, const Axes& ax, size_t i);

}  // namespace tyche::graph::ops
