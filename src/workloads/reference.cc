#include "workloads/reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>

#include "support/error.h"
#include "workloads/families.h"

namespace tyche::workloads {

using runtime::NDArray;

namespace {

using Op = FamilyId;

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Looks up the family and validates the parameter tuple's length and signs.
const Family& lookup(const std::string& op, const std::vector<int64_t>& params) {
  const Family* info = find_family(op);
  if (!info) {
    std::string names;
    for (const Family& f : families()) names += (names.empty() ? "" : " ") + f.name;
    throw_error("unknown reference operator '{}' (expected one of {})", op, names);
  }
  std::string names = fmt::format("{}", fmt::join(info->params, ", "));
  if (params.size() != info->params.size())
    throw_error("{} expects {} parameters ({}), got {}", info->name, info->params.size(), names,
                params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    bool is_pad = info->last_is_pad && i + 1 == params.size();
    if (is_pad ? params[i] < 0 : params[i] < 1)
      throw_error("{} parameter {} ({}) must be {}, got {}", info->name, i, names,
                  is_pad ? ">= 0" : ">= 1", params[i]);
  }
  return *info;
}

// One convolution with up to three spatial dims, NDHWC input [N,D,H,W,CI], weight
// [KD,KH,KW,CI/G,CO], output [N,OD,OH,OW,CO]; lower-rank convs use size-1 leading dims.
struct ConvGeom {
  int64_t n = 1, ci = 1, co = 1, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, p{0, 0, 0}, d{1, 1, 1}, out{1, 1, 1};
};

int64_t conv_out_extent(const char* op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t num = in + 2 * p - d * (k - 1) - 1;
  if (num < 0)
    throw_error("{}: empty output (extent {}, kernel {}, stride {}, pad {}, dilation {})", op, in,
                k, s, p, d);
  return num / s + 1;
}

// Geometry of the conv-like ops (C1D C2D C3D GRP DIL DEP T2D CAP CBR); for T2D `in`/`out` are the
// transposed conv's input/output extents.
ConvGeom conv_geom(const Family& info, const std::vector<int64_t>& v) {
  ConvGeom g;
  int first_spatial = 0, rank = 0;
  switch (info.id) {
    case Op::kC1d:  // N, L, CI, CO, K, stride, pad
      g.n = v[0], g.ci = v[2], g.co = v[3], first_spatial = 2, rank = 1;
      g.in[2] = v[1];
      break;
    case Op::kC3d:  // N, D, H, W, CI, CO, K, stride, pad
      g.n = v[0], g.ci = v[4], g.co = v[5], first_spatial = 0, rank = 3;
      g.in = {v[1], v[2], v[3]};
      break;
    case Op::kDep:  // N, H, W, C, K, stride, pad
      g.n = v[0], g.ci = g.co = g.groups = v[3], first_spatial = 1, rank = 2;
      g.in[1] = v[1], g.in[2] = v[2];
      break;
    default:  // N, H, W, CI, CO, K, stride, pad
      g.n = v[0], g.ci = v[3], g.co = v[4], first_spatial = 1, rank = 2;
      g.in[1] = v[1], g.in[2] = v[2];
      break;
  }
  const size_t nk = v.size() - 3;  // K, stride, pad are always the last three
  for (int i = first_spatial; i < first_spatial + rank; ++i) {
    g.k[i] = v[nk], g.s[i] = v[nk + 1], g.p[i] = v[nk + 2];
    g.d[i] = info.dilation;
  }
  if (info.groups > 1) {
    g.groups = info.groups;
    if (g.ci % g.groups != 0 || g.co % g.groups != 0)
      throw_error("{}: CI ({}) and CO ({}) must be divisible by the {} groups", info.name, g.ci,
                  g.co, g.groups);
  }
  for (int i = 0; i < 3; ++i) {
    if (info.id == Op::kT2d) {
      g.out[i] = (g.in[i] - 1) * g.s[i] - 2 * g.p[i] + g.k[i];
      if (g.out[i] < 1)
        throw_error("T2D: empty output (extent {}, kernel {}, stride {}, pad {})", g.in[i], g.k[i],
                    g.s[i], g.p[i]);
    } else {
      g.out[i] = conv_out_extent(info.name.c_str(), g.in[i], g.k[i], g.s[i], g.p[i], g.d[i]);
    }
  }
  return g;
}

TensorShapes shapes_of(const Family& info, const std::vector<int64_t>& v) {
  switch (info.id) {
    case Op::kGmm:  // B, N, M, K
      return {{{v[0], v[1], v[3]}, {v[0], v[3], v[2]}}, {{v[0], v[1], v[2]}}};
    case Op::kNrm:  // B, M, N
      return {{{v[0], v[1], v[2]}}, {{v[0]}}};
    case Op::kSfm:  // M, N
      return {{{v[0], v[1]}}, {{v[0], v[1]}}};
    case Op::kTbg:  // B, L, H, D
      return {{{v[0], v[1], v[2], v[3]}, {v[0], v[1], v[2], v[3]}}, {{v[0], v[2], v[1], v[1]}}};
    case Op::kDenseRelu:  // N, M, K
      return {{{v[0], v[2]}, {v[2], v[1]}}, {{v[0], v[1]}}};
    default:
      break;
  }
  const ConvGeom g = conv_geom(info, v);
  const int64_t k = g.k[1];  // square kernels for every 2-d op
  switch (info.id) {
    case Op::kC1d:
      return {{{g.n, g.in[2], g.ci}, {g.k[2], g.ci, g.co}}, {{g.n, g.out[2], g.co}}};
    case Op::kC3d:
      return {{{g.n, g.in[0], g.in[1], g.in[2], g.ci}, {k, k, k, g.ci, g.co}},
              {{g.n, g.out[0], g.out[1], g.out[2], g.co}}};
    case Op::kDep:
      return {{{g.n, g.in[1], g.in[2], g.ci}, {1, k, k, g.ci}}, {{g.n, g.out[1], g.out[2], g.co}}};
    case Op::kCap:
      return {{{g.n, g.in[1], g.in[2], info.capsule, info.capsule, g.ci},
               {k, k, info.capsule, info.capsule, g.ci, g.co}},
              {{g.n, g.out[1], g.out[2], info.capsule, info.capsule, g.co}}};
    case Op::kCbr:
      return {{{g.n, g.in[1], g.in[2], g.ci}, {k, k, g.ci, g.co}, {g.co}, {g.co}, {g.co}},
              {{g.n, g.out[1], g.out[2], g.co}}};
    default:  // C2D GRP DIL T2D
      return {{{g.n, g.in[1], g.in[2], g.ci}, {k, k, g.ci / g.groups, g.co}},
              {{g.n, g.out[1], g.out[2], g.co}}};
  }
}

void check_inputs(const Family& info, const TensorShapes& shapes,
                  const std::vector<NDArray>& inputs, const Precision& types) {
  if (inputs.size() != shapes.inputs.size())
    throw_error("{} expects {} inputs, got {}", info.name, shapes.inputs.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw_error("{}: input {} is undefined", info.name, i);
    DataType want = i == 0 ? types.data : i == 1 ? types.weight : kFloat32;
    if (inputs[i].dtype() != want)
      throw_error("{}: input {} has dtype {}, expected {}", info.name, i, inputs[i].dtype().str(),
                  want.str());
    if (inputs[i].shape() != shapes.inputs[i])
      throw_error("{}: input {} has shape {}, expected {}", info.name, i,
                  shape_str(inputs[i].shape()), shape_str(shapes.inputs[i]));
  }
}

// Direct (gather) convolution for C1D C2D C3D GRP DIL CBR. For each output pixel a row of CO
// double accumulators is updated by contiguous weight rows; `epilogue(co, acc)` maps the sum to
// the stored value (identity, or CBR's bias/scale/offset/ReLU chain).
template <typename Out, typename Epilogue>
void conv_direct(const ConvGeom& g, const float* in, const float* w, Out* out, Epilogue epilogue) {
  const int64_t cig = g.ci / g.groups, cog = g.co / g.groups;
  std::vector<double> acc(g.co);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            int64_t id = od * g.s[0] + kd * g.d[0] - g.p[0];
            if (id < 0 || id >= g.in[0]) continue;  // zero padding
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              int64_t ih = oh * g.s[1] + kh * g.d[1] - g.p[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                int64_t iw = ow * g.s[2] + kw * g.d[2] - g.p[2];
                if (iw < 0 || iw >= g.in[2]) continue;
                const float* x = in + (((n * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw) * g.ci;
                const float* wk = w + ((kd * g.k[1] + kh) * g.k[2] + kw) * cig * g.co;
                for (int64_t grp = 0; grp < g.groups; ++grp)
                  for (int64_t rc = 0; rc < cig; ++rc) {
                    const double xv = x[grp * cig + rc];
                    const float* wr = wk + rc * g.co + grp * cog;
                    double* a = acc.data() + grp * cog;
                    for (int64_t j = 0; j < cog; ++j) a[j] += xv * wr[j];
                  }
              }
            }
          }
          Out* o = out + (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * g.co;
          for (int64_t co = 0; co < g.co; ++co) o[co] = static_cast<Out>(epilogue(co, acc[co]));
        }
}

// DEP: I[N,H,W,C], W[1,K,K,C]; channel c only sees channel c.
void depthwise(const ConvGeom& g, const float* in, const float* w, float* out) {
  const int64_t c = g.co;
  std::vector<double> acc(c);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
          int64_t ih = oh * g.s[1] + kh - g.p[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            int64_t iw = ow * g.s[2] + kw - g.p[2];
            if (iw < 0 || iw >= g.in[2]) continue;
            const float* x = in + ((n * g.in[1] + ih) * g.in[2] + iw) * c;
            const float* wk = w + (kh * g.k[2] + kw) * c;
            for (int64_t j = 0; j < c; ++j) acc[j] += static_cast<double>(x[j]) * wk[j];
          }
        }
        float* o = out + ((n * g.out[1] + oh) * g.out[2] + ow) * c;
        for (int64_t j = 0; j < c; ++j) o[j] = static_cast<float>(acc[j]);
      }
}

// T2D as a scatter: every input pixel adds I[n,h,w,:]·W[kh,kw,:,:] to output pixel
// (h*s+kh-p, w*s+kw-p). Deliberately not the gather form the IR uses, so the two check each other.
void transposed(const ConvGeom& g, const float* in, const float* w, float* out) {
  const int64_t oh_n = g.out[1], ow_n = g.out[2], ci_n = g.ci, co_n = g.co;
  std::vector<double> acc(static_cast<size_t>(g.n * oh_n * ow_n * co_n), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t h = 0; h < g.in[1]; ++h)
      for (int64_t wi = 0; wi < g.in[2]; ++wi) {
        const float* x = in + ((n * g.in[1] + h) * g.in[2] + wi) * ci_n;
        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
          int64_t oh = h * g.s[1] + kh - g.p[1];
          if (oh < 0 || oh >= oh_n) continue;  // cropped by the padding
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            int64_t ow = wi * g.s[2] + kw - g.p[2];
            if (ow < 0 || ow >= ow_n) continue;
            double* a = acc.data() + ((n * oh_n + oh) * ow_n + ow) * co_n;
            for (int64_t ci = 0; ci < ci_n; ++ci) {
              const double xv = x[ci];
              const float* wr = w + ((kh * g.k[2] + kw) * ci_n + ci) * co_n;
              for (int64_t co = 0; co < co_n; ++co) a[co] += xv * wr[co];
            }
          }
        }
      }
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<float>(acc[i]);
}

// CAP: O[n,h,w,i,j,co] = Σ rh,rw,k,rc I[n,h*s+rh-p,w*s+rw-p,i,k,rc] · W[rh,rw,k,j,rc,co].
void capsule(const ConvGeom& g, int64_t capsule_side, const float* in, const float* w, float* out) {
  const int64_t c4 = capsule_side;
  const int64_t ci_n = g.ci, co_n = g.co;
  std::vector<double> acc(static_cast<size_t>(c4 * co_n));  // [j, co] for one (pixel, i)
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow)
        for (int64_t i = 0; i < c4; ++i) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t rh = 0; rh < g.k[1]; ++rh) {
            int64_t ih = oh * g.s[1] + rh - g.p[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            for (int64_t rw = 0; rw < g.k[2]; ++rw) {
              int64_t iw = ow * g.s[2] + rw - g.p[2];
              if (iw < 0 || iw >= g.in[2]) continue;
              const float* x = in + (((n * g.in[1] + ih) * g.in[2] + iw) * c4 + i) * c4 * ci_n;
              for (int64_t k = 0; k < c4; ++k)
                for (int64_t rc = 0; rc < ci_n; ++rc) {
                  const double xv = x[k * ci_n + rc];
                  for (int64_t j = 0; j < c4; ++j) {
                    const float* wr =
                        w + ((((rh * g.k[2] + rw) * c4 + k) * c4 + j) * ci_n + rc) * co_n;
                    double* a = acc.data() + j * co_n;
                    for (int64_t co = 0; co < co_n; ++co) a[co] += xv * wr[co];
                  }
                }
            }
          }
          float* o = out + (((n * g.out[1] + oh) * g.out[2] + ow) * c4 + i) * c4 * co_n;
          for (int64_t t = 0; t < c4 * co_n; ++t) o[t] = static_cast<float>(acc[t]);
        }
}

// Z[b,i,j] = Σk X[b,i,k]·Y[b,k,j], optionally followed by ReLU (DENSE_RELU).
template <typename Out>
void matmul(int64_t b_n, int64_t n_n, int64_t m_n, int64_t k_n, const float* x, const float* y,
            Out* z, bool relu) {
  std::vector<double> acc(m_n);
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t i = 0; i < n_n; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < k_n; ++k) {
        const double xv = x[(b * n_n + i) * k_n + k];
        const float* yr = y + (b * k_n + k) * m_n;
        for (int64_t j = 0; j < m_n; ++j) acc[j] += xv * yr[j];
      }
      Out* zr = z + (b * n_n + i) * m_n;
      for (int64_t j = 0; j < m_n; ++j)
        zr[j] = static_cast<Out>(relu ? std::max(acc[j], 0.0) : acc[j]);
    }
}

// A typed variant (GMM, C2D, DENSE_RELU): its 8-bit and bfloat16 inputs are exact in float32 and
// their products and sums exact in double, so the float kernels compute it exactly into double
// outputs, which are then stored in the output's type.
std::vector<NDArray> run_typed(const Family& info, const TensorShapes& shapes,
                               const std::vector<int64_t>& v, const std::vector<NDArray>& inputs,
                               const Precision& types) {
  if (!info.typed) throw_error("{} has no {} variant", info.name, types.suffix);
  std::vector<NDArray> wide;
  for (const NDArray& in : inputs) {
    NDArray f(in.shape(), kFloat32);
    for (int64_t i = 0; i < in.numel(); ++i) f.set_flat(i, in.get_flat(i));
    wide.push_back(std::move(f));
  }
  const float* a = wide[0].data_as<float>();
  const float* b = wide[1].data_as<float>();
  NDArray out(shapes.outputs[0], types.out);
  std::vector<double> o(static_cast<size_t>(out.numel()));
  auto identity = [](int64_t, double x) { return x; };
  if (info.id == Op::kGmm)
    matmul(v[0], v[1], v[2], v[3], a, b, o.data(), false);
  else if (info.id == Op::kDenseRelu)
    matmul(1, v[0], v[1], v[2], a, b, o.data(), true);
  else
    conv_direct(conv_geom(info, v), a, b, o.data(), identity);
  for (int64_t i = 0; i < out.numel(); ++i) out.set_flat(i, o[static_cast<size_t>(i)]);
  return {out};
}

}  // namespace

const std::vector<std::string>& reference_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> r;
    for (const Family& f : families()) r.push_back(f.name);
    return r;
  }();
  return ops;
}

TensorShapes reference_shapes(const std::string& op, const std::vector<int64_t>& params) {
  return shapes_of(lookup(op, params), params);
}

std::vector<NDArray> run_reference(const std::string& op, const std::vector<int64_t>& params,
                                   const std::vector<NDArray>& inputs, const Precision& types) {
  const Family& info = lookup(op, params);
  const TensorShapes shapes = shapes_of(info, params);
  check_inputs(info, shapes, inputs, types);
  if (!types.is_float32()) return run_typed(info, shapes, params, inputs, types);
  std::vector<NDArray> outs;
  for (const auto& s : shapes.outputs) outs.emplace_back(s, kFloat32);
  const auto& v = params;
  const float* a = inputs[0].data_as<float>();
  const float* b = inputs.size() > 1 ? inputs[1].data_as<float>() : nullptr;
  float* o = outs[0].data_as<float>();
  auto identity = [](int64_t, double x) { return x; };

  switch (info.id) {
    case Op::kGmm:
      matmul(v[0], v[1], v[2], v[3], a, b, o, false);
      break;
    case Op::kDenseRelu:
      matmul(1, v[0], v[1], v[2], a, b, o, true);
      break;
    case Op::kC1d:
    case Op::kC2d:
    case Op::kC3d:
    case Op::kGrp:
    case Op::kDil:
      conv_direct(conv_geom(info, v), a, b, o, identity);
      break;
    case Op::kCbr: {
      const float* bias = inputs[2].data_as<float>();
      const float* scale = inputs[3].data_as<float>();
      const float* offset = inputs[4].data_as<float>();
      conv_direct(conv_geom(info, v), a, b, o, [&](int64_t co, double x) {
        return std::max((x + bias[co]) * scale[co] + offset[co], 0.0);
      });
      break;
    }
    case Op::kDep:
      depthwise(conv_geom(info, v), a, b, o);
      break;
    case Op::kT2d:
      transposed(conv_geom(info, v), a, b, o);
      break;
    case Op::kCap:
      capsule(conv_geom(info, v), info.capsule, a, b, o);
      break;
    case Op::kNrm: {
      const int64_t mn = v[1] * v[2];
      for (int64_t bi = 0; bi < v[0]; ++bi) {
        double sum = 0;
        for (int64_t t = 0; t < mn; ++t) {
          const double x = a[bi * mn + t];
          sum += x * x;
        }
        o[bi] = static_cast<float>(std::sqrt(sum));
      }
      break;
    }
    case Op::kSfm: {
      const int64_t m_n = v[0], n_n = v[1];
      std::vector<double> e(n_n);
      for (int64_t i = 0; i < m_n; ++i) {
        const float* row = a + i * n_n;
        // Subtracting the row max keeps exp() from overflowing; the result is unchanged.
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n_n; ++j) mx = std::max(mx, static_cast<double>(row[j]));
        double sum = 0;
        for (int64_t j = 0; j < n_n; ++j) sum += e[j] = std::exp(row[j] - mx);
        for (int64_t j = 0; j < n_n; ++j) o[i * n_n + j] = static_cast<float>(e[j] / sum);
      }
      break;
    }
    case Op::kTbg: {  // C[b,h,i,j] = Σd Q[b,i,h,d]·K[b,j,h,d]
      const int64_t b_n = v[0], l_n = v[1], h_n = v[2], d_n = v[3];
      for (int64_t bi = 0; bi < b_n; ++bi)
        for (int64_t h = 0; h < h_n; ++h)
          for (int64_t i = 0; i < l_n; ++i) {
            const float* q = a + ((bi * l_n + i) * h_n + h) * d_n;
            for (int64_t j = 0; j < l_n; ++j) {
              const float* k = b + ((bi * l_n + j) * h_n + h) * d_n;
              double sum = 0;
              for (int64_t d = 0; d < d_n; ++d) sum += static_cast<double>(q[d]) * k[d];
              o[((bi * h_n + h) * l_n + i) * l_n + j] = static_cast<float>(sum);
            }
          }
      break;
    }
  }
  return outs;
}

// The multiply-accumulates of one spatial dimension: (output, tap) pairs that read a real input
// element. A forward conv's padding taps and a transposed conv's stuffed zeros (and the outputs
// its padding crops) multiply zeros: no implementation has to do them, so none is counted.
double real_taps(const ConvGeom& g, int dim, bool transposed) {
  const int64_t in = g.in[dim], out = g.out[dim], k = g.k[dim], s = g.s[dim], p = g.p[dim],
                d = g.d[dim];
  double count = 0;
  if (transposed) {  // input i feeds output i*s + kk - p
    for (int64_t i = 0; i < in; ++i)
      for (int64_t kk = 0; kk < k; ++kk)
        count += (i * s + kk - p >= 0 && i * s + kk - p < out) ? 1 : 0;
  } else {  // output o reads input o*s + kk*d - p
    for (int64_t o = 0; o < out; ++o)
      for (int64_t kk = 0; kk < k; ++kk)
        count += (o * s + kk * d - p >= 0 && o * s + kk * d - p < in) ? 1 : 0;
  }
  return count;
}

// Per op (MAC = one multiply-accumulate = 2 FLOPs; only MACs with a real input element count,
// T = Π over spatial dims of real_taps, ≤ output pixels × kernel taps; index arithmetic counts
// nothing):
//   GMM         2·B·N·M·K
//   C1D C2D C3D 2·N·CO·CI·T
//   DIL         2·N·CO·CI·T                    (T of the dilated kernel)
//   GRP         2·N·CO·(CI/4)·T
//   DEP         2·N·C·T
//   T2D         2·N·CO·CI·T                    T over the real input pixels: the scatter form
//   CAP         2·N·4·4·CO·4·CI·T
//   NRM         2·B·M·N (square + add) + B (sqrt)
//   SFM         5·M·N: max-reduce M·N, subtract + exp 2·M·N, sum M·N, divide M·N
//   CBR         conv 2·N·CO·CI·T + 4·N·OH·OW·CO (bias add, scale mul, offset add, ReLU)
//   TBG         2·B·H·L·L·D
//   DENSE_RELU  2·N·M·K + N·M (ReLU)
double reference_flop(const std::string& op, const std::vector<int64_t>& params) {
  const Family& info = lookup(op, params);
  std::vector<double> v(params.begin(), params.end());
  switch (info.id) {
    case Op::kGmm:
      return 2 * v[0] * v[1] * v[2] * v[3];
    case Op::kNrm:
      return 2 * v[0] * v[1] * v[2] + v[0];
    case Op::kSfm:
      return 5 * v[0] * v[1];
    case Op::kTbg:
      return 2 * v[0] * v[2] * v[1] * v[1] * v[3];
    case Op::kDenseRelu:
      return 2 * v[0] * v[1] * v[2] + v[0] * v[1];
    default:
      break;
  }
  const ConvGeom g = conv_geom(info, params);
  const double pixels = static_cast<double>(g.n) * g.out[0] * g.out[1] * g.out[2];
  const bool transposed = info.id == Op::kT2d;
  const double taps = static_cast<double>(g.n) * real_taps(g, 0, transposed) *
                      real_taps(g, 1, transposed) *
                      real_taps(g, 2, transposed);  // batch × real (pixel, tap) pairs
  const double cig = static_cast<double>(g.ci / g.groups);
  switch (info.id) {
    case Op::kDep:
      return 2 * taps * g.co;
    case Op::kCap:
      return 2 * taps * info.capsule * info.capsule * g.co * info.capsule * g.ci;
    case Op::kCbr:
      return 2 * taps * g.co * cig + 4 * pixels * g.co;
    default:
      return 2 * taps * g.co * cig;  // C1D C2D C3D GRP DIL T2D
  }
}

}  // namespace tyche::workloads
