// oneDNN's implementation of each family it has a primitive for, on Tyche's layouts: activations
// are described by strides (channels-last, as Tyche's presets are), so oneDNN reads the caller's
// buffers as they are; constant weights are reordered once, outside the timing, into the layout
// oneDNN prefers (what an inference does), as are the per-channel operands of CBR's post-ops.
#include <dnnl.hpp>

#include <unordered_map>

#include "bench/baselines/driver.h"

namespace tyche::bench {
namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

dnnl::memory::desc strided(const dims& shape, const dims& strides) {
  return dnnl::memory::desc(shape, dnnl::memory::data_type::f32, strides);
}
dnnl::memory::desc any_layout(const dims& shape) {
  return dnnl::memory::desc(shape, dnnl::memory::data_type::f32, tag::any);
}

// Row-major strides of `shape`.
dims dense_strides(const dims& shape) {
  dims s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// A logical (N, C, spatial...) tensor stored channels-last: (N, spatial..., C).
dnnl::memory::desc channels_last(int64_t n, int64_t c, const dims& spatial) {
  dims shape = {n, c};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  dims stored = {n};
  stored.insert(stored.end(), spatial.begin(), spatial.end());
  stored.push_back(c);
  dims s = dense_strides(stored);
  dims strides = {s[0], 1};
  for (size_t i = 0; i < spatial.size(); ++i) strides.push_back(s[i + 1]);
  return strided(shape, strides);
}

int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

class Primitive : public Driver {
 public:
  Primitive() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}
  void run() override {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  std::string describe() const override {
    const char* info = nullptr;
    if (dnnl_primitive_desc_query(primitive_.get_primitive_desc(), dnnl_query_impl_info_str, 0,
                                  &info) != dnnl_success ||
        !info)
      return "unknown";
    return info;
  }

 protected:
  dnnl::memory wrap(const dnnl::memory::desc& md, float* data) {
    return dnnl::memory(md, engine_, data);
  }
  // The caller's constant operand (weights), reordered once into the layout the primitive wants.
  dnnl::memory prepacked(const dnnl::memory::desc& user, float* data,
                         const dnnl::memory::desc& wanted) {
    dnnl::memory from = wrap(user, data);
    if (user == wanted) return from;
    dnnl::memory to(wanted, engine_);
    dnnl::reorder(from, to).execute(stream_, from, to);
    stream_.wait();
    return to;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

// Convolutions of every flavour: 1-3 spatial dims, groups, dilation; CBR adds bias, the
// batch-norm scale and offset as binary post-ops, and ReLU.
struct ConvShape {
  int64_t n, ci, co, groups = 1, dilation = 1, stride, pad;
  dims in, kernel;             // spatial
  dnnl::memory::desc weights;  // the caller's weight layout
};

class Convolution : public Primitive {
 public:
  Convolution(const ConvShape& c, const std::vector<float*>& b, bool cbr) {
    dims out, strides, dilates, pad_l, pad_r;
    for (size_t d = 0; d < c.in.size(); ++d) {
      int64_t o = out_size(c.in[d], c.kernel[d], c.stride, c.pad, c.dilation);
      if (o <= 0) throw DriverError("convolution output is empty");
      out.push_back(o);
      strides.push_back(c.stride);
      dilates.push_back(c.dilation - 1);
      pad_l.push_back(c.pad);
      pad_r.push_back((o - 1) * c.stride + (c.kernel[d] - 1) * c.dilation + 1 - c.in[d] - c.pad);
    }
    dnnl::memory::desc src = channels_last(c.n, c.ci, c.in), dst = channels_last(c.n, c.co, out);
    dims wdims = c.groups > 1 ? dims{c.groups, c.co / c.groups, c.ci / c.groups} : dims{c.co, c.ci};
    wdims.insert(wdims.end(), c.kernel.begin(), c.kernel.end());
    dnnl::primitive_attr attr;
    dnnl::memory::desc channel = strided({1, c.co, 1, 1}, {c.co, 1, 1, 1});
    if (cbr) {
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_mul, channel);
      ops.append_binary(dnnl::algorithm::binary_add, channel);
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    auto desc = cbr ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::convolution_direct, src,
                                                      any_layout(wdims), strided({c.co}, {1}), dst,
                                                      strides, dilates, pad_l, pad_r)
                    : dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          src, any_layout(wdims), dst, strides, dilates, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);
    primitive_ = dnnl::convolution_forward(pd);
    args_[DNNL_ARG_SRC] = wrap(src, b[0]);
    args_[DNNL_ARG_WEIGHTS] = prepacked(c.weights, b[1], pd.weights_desc());
    if (cbr) {
      args_[DNNL_ARG_BIAS] = wrap(strided({c.co}, {1}), b[2]);
      args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = wrap(channel, b[3]);
      args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] = wrap(channel, b[4]);
    }
    args_[DNNL_ARG_DST] = wrap(dst, b.back());
  }
};

// Tyche's T2D: out[n, i*s - pad + kh, j*s - pad + kw, co] += in[n, i, j, ci] * W[kh, kw, ci, co],
// which is oneDNN's deconvolution with weights (CO, CI, KH, KW).
class Deconvolution : public Primitive {
 public:
  Deconvolution(const std::vector<int64_t>& p, const std::vector<float*>& b) {
    int64_t n = p[0], h = p[1], w = p[2], ci = p[3], co = p[4], k = p[5], s = p[6], pad = p[7];
    int64_t oh = (h - 1) * s - 2 * pad + k, ow = (w - 1) * s - 2 * pad + k;
    dnnl::memory::desc src = channels_last(n, ci, {h, w}), dst = channels_last(n, co, {oh, ow});
    dnnl::memory::desc user = strided({co, ci, k, k}, {1, co, k * ci * co, ci * co});
    dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src,
        any_layout({co, ci, k, k}), dst, {s, s}, {pad, pad}, {pad, pad});
    dnnl::deconvolution_forward::primitive_desc pd(desc, engine_);
    primitive_ = dnnl::deconvolution_forward(pd);
    args_ = {{DNNL_ARG_SRC, wrap(src, b[0])},
             {DNNL_ARG_WEIGHTS, prepacked(user, b[1], pd.weights_desc())},
             {DNNL_ARG_DST, wrap(dst, b[2])}};
  }
};

// C = A x B (+ ReLU as a post-op); `b_is_weights` reorders B once (dense), else B is read as it is
// (GMM, TBG: both operands are activations).
class Matmul : public Primitive {
 public:
  Matmul(const dnnl::memory::desc& a, const dnnl::memory::desc& bmat, const dnnl::memory::desc& c,
         const std::vector<float*>& b, bool relu, bool b_is_weights) {
    dnnl::primitive_attr attr;
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::desc desc(a, b_is_weights ? any_layout(bmat.dims()) : bmat, c);
    dnnl::matmul::primitive_desc pd(desc, attr, engine_);
    primitive_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, wrap(a, b[0])},
             {DNNL_ARG_WEIGHTS,
              b_is_weights ? prepacked(bmat, b[1], pd.weights_desc()) : wrap(bmat, b[1])},
             {DNNL_ARG_DST, wrap(c, b[2])}};
  }
};

class Softmax : public Primitive {
 public:
  Softmax(int64_t m, int64_t n, const std::vector<float*>& b) {
    dnnl::memory::desc md = strided({m, n}, {n, 1});
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md, 1);
    primitive_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(desc, engine_));
    args_ = {{DNNL_ARG_SRC, wrap(md, b[0])}, {DNNL_ARG_DST, wrap(md, b[1])}};
  }
};

// NRM: the L2 norm of each batch's matrix. oneDNN 2.6 has norm_lp_sum only as its reference
// kernel (ref:any, 0.1 GFLOP/s, a baseline in name only); its jit reduction sums. So the norm is
// what a oneDNN user composes: an eltwise square into a scratch buffer, then the sum reduction
// with a sqrt post-op, both jit kernels (two passes over the data: the price of the composition).
class Norm : public Primitive {
 public:
  Norm(int64_t batch, int64_t m, int64_t n, const std::vector<float*>& b) {
    dnnl::memory::desc src = strided({batch, m * n}, {m * n, 1}), dst = strided({batch, 1}, {1, 1});
    dnnl::eltwise_forward::desc square(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::eltwise_square, src);
    square_ = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(square, engine_));
    squares_ = dnnl::memory(src, engine_);
    square_args_ = {{DNNL_ARG_SRC, wrap(src, b[0])}, {DNNL_ARG_DST, squares_}};
    dnnl::post_ops sqrt;
    sqrt.append_eltwise(1.0f, dnnl::algorithm::eltwise_sqrt, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(sqrt);
    dnnl::reduction::desc sum(dnnl::algorithm::reduction_sum, src, dst, 0.0f, 0.0f);
    primitive_ = dnnl::reduction(dnnl::reduction::primitive_desc(sum, attr, engine_));
    args_ = {{DNNL_ARG_SRC, squares_}, {DNNL_ARG_DST, wrap(dst, b[1])}};
  }
  void run() override {
    square_.execute(stream_, square_args_);
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  std::string describe() const override {
    const char* info = nullptr;
    dnnl_primitive_desc_query(square_.get_primitive_desc(), dnnl_query_impl_info_str, 0, &info);
    return std::string("square ") + (info ? info : "unknown") + " + sum " + Primitive::describe();
  }

 private:
  dnnl::primitive square_;
  dnnl::memory squares_;
  std::unordered_map<int, dnnl::memory> square_args_;
};

ConvShape conv2d_shape(const std::vector<int64_t>& p, int64_t groups, int64_t dilation) {
  int64_t n = p[0], h = p[1], w = p[2], ci = p[3], co = p[4], k = p[5];
  if (ci % groups || co % groups)
    throw DriverError("channels are not divisible by the group count");
  int64_t cig = ci / groups, cog = co / groups;
  // Tyche's W[kh, kw, ci/g, co] with co = g*(CO/g) + oc.
  dnnl::memory::desc weights =
      groups > 1 ? strided({groups, cog, cig, k, k}, {cog, 1, co, k * cig * co, cig * co})
                 : strided({co, ci, k, k}, {1, co, k * ci * co, ci * co});
  return {.n = n,
          .ci = ci,
          .co = co,
          .groups = groups,
          .dilation = dilation,
          .stride = p[6],
          .pad = p[7],
          .in = {h, w},
          .kernel = {k, k},
          .weights = weights};
}

std::unique_ptr<Driver> make(const std::string& f, const std::vector<int64_t>& p,
                             const std::vector<float*>& b) {
  if (f == "GMM") {
    expect_shape(f, p, 4, b, 3);
    int64_t bt = p[0], n = p[1], m = p[2], k = p[3];
    return std::make_unique<Matmul>(strided({bt, n, k}, {n * k, k, 1}),
                                    strided({bt, k, m}, {k * m, m, 1}),
                                    strided({bt, n, m}, {n * m, m, 1}), b, false, false);
  }
  if (f == "DENSE_RELU") {
    expect_shape(f, p, 3, b, 3);
    int64_t n = p[0], m = p[1], k = p[2];
    return std::make_unique<Matmul>(strided({n, k}, {k, 1}), strided({k, m}, {m, 1}),
                                    strided({n, m}, {m, 1}), b, true, true);
  }
  if (f == "TBG") {  // C[b,h,i,j] = sum_d Q[b,i,h,d] K[b,j,h,d]: a batch matmul on strided views
    expect_shape(f, p, 4, b, 3);
    int64_t bt = p[0], l = p[1], h = p[2], d = p[3];
    return std::make_unique<Matmul>(strided({bt, h, l, d}, {l * h * d, d, h * d, 1}),
                                    strided({bt, h, d, l}, {l * h * d, d, 1, h * d}),
                                    strided({bt, h, l, l}, {h * l * l, l * l, l, 1}), b, false,
                                    false);
  }
  if (f == "C1D") {
    expect_shape(f, p, 7, b, 3);
    int64_t ci = p[2], co = p[3], k = p[4];
    ConvShape c{.n = p[0],
                .ci = ci,
                .co = co,
                .stride = p[5],
                .pad = p[6],
                .in = {p[1]},
                .kernel = {k},
                .weights = strided({co, ci, k}, {1, co, ci * co})};
    return std::make_unique<Convolution>(c, b, false);
  }
  if (f == "C2D")
    return expect_shape(f, p, 8, b, 3),
           std::make_unique<Convolution>(conv2d_shape(p, 1, 1), b, false);
  if (f == "GRP")
    return expect_shape(f, p, 8, b, 3),
           std::make_unique<Convolution>(conv2d_shape(p, 4, 1), b, false);
  if (f == "DIL")
    return expect_shape(f, p, 8, b, 3),
           std::make_unique<Convolution>(conv2d_shape(p, 1, 2), b, false);
  if (f == "CBR")
    return expect_shape(f, p, 8, b, 6),
           std::make_unique<Convolution>(conv2d_shape(p, 1, 1), b, true);
  if (f == "C3D") {
    expect_shape(f, p, 9, b, 3);
    int64_t ci = p[4], co = p[5], k = p[6];
    ConvShape c{
        .n = p[0],
        .ci = ci,
        .co = co,
        .stride = p[7],
        .pad = p[8],
        .in = {p[1], p[2], p[3]},
        .kernel = {k, k, k},
        .weights = strided({co, ci, k, k, k}, {1, co, k * k * ci * co, k * ci * co, ci * co})};
    return std::make_unique<Convolution>(c, b, false);
  }
  if (f == "DEP") {  // groups = channels; Tyche's W[0, kh, kw, c]
    expect_shape(f, p, 7, b, 3);
    int64_t c = p[3], k = p[4];
    ConvShape s{.n = p[0],
                .ci = c,
                .co = c,
                .groups = c,
                .stride = p[5],
                .pad = p[6],
                .in = {p[1], p[2]},
                .kernel = {k, k},
                .weights = strided({c, 1, 1, k, k}, {1, 1, 1, k * c, c})};
    return std::make_unique<Convolution>(s, b, false);
  }
  if (f == "T2D") return expect_shape(f, p, 8, b, 3), std::make_unique<Deconvolution>(p, b);
  if (f == "SFM") return expect_shape(f, p, 2, b, 2), std::make_unique<Softmax>(p[0], p[1], b);
  if (f == "NRM") return expect_shape(f, p, 3, b, 2), std::make_unique<Norm>(p[0], p[1], p[2], b);
  return nullptr;
}

}  // namespace

std::unique_ptr<Driver> make_onednn_driver(const std::string& family,
                                           const std::vector<int64_t>& params,
                                           const std::vector<float*>& buffers) {
  try {
    return make(family, params, buffers);
  } catch (const dnnl::error& e) {
    throw DriverError(std::string("oneDNN: ") + e.what());
  }
}

}  // namespace tyche::bench
