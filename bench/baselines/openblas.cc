// OpenBLAS's sgemm for the families that are matrix products: GMM (one sgemm per batch), dense +
// ReLU (sgemm, then the ReLU as a separate pass over C, as a BLAS user writes it) and TBG (one
// sgemm per batch and head on strided views, K transposed); and NRM as numpy.linalg.norm computes
// a vector's 2-norm: sqrt(sdot(x, x)).
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "bench/baselines/driver.h"

namespace tyche::bench {
namespace {

class Gemm : public Driver {
 public:
  // `count` products C_i = A_i x op(B_i), each of (m x k) x (k x n), at the given offsets between
  // i.
  struct Shape {
    int64_t count, m, n, k, lda, ldb, ldc, step_a, step_b, step_c;
    bool transpose_b = false;
    // A product index i is split as (i / inner, i % inner) with separate steps (TBG's batch x
    // head).
    int64_t inner = 1, inner_step_a = 0, inner_step_b = 0;
  };
  Gemm(const Shape& s, const std::vector<float*>& b, bool relu)
      : s_(s), a_(b[0]), b_(b[1]), c_(b[2]), relu_(relu) {}
  std::string describe() const override {
    return std::string("sgemm, ") + openblas_get_corename() + " kernels";
  }
  void run() override {
    for (int64_t i = 0; i < s_.count; ++i) {
      int64_t outer = i / s_.inner, inner = i % s_.inner;
      const float* a = a_ + outer * s_.step_a + inner * s_.inner_step_a;
      const float* b = b_ + outer * s_.step_b + inner * s_.inner_step_b;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, s_.transpose_b ? CblasTrans : CblasNoTrans,
                  static_cast<int>(s_.m), static_cast<int>(s_.n), static_cast<int>(s_.k), 1.0f, a,
                  static_cast<int>(s_.lda), b, static_cast<int>(s_.ldb), 0.0f, c_ + i * s_.step_c,
                  static_cast<int>(s_.ldc));
    }
    if (relu_) {
      int64_t size = s_.count * s_.m * s_.n;
      for (int64_t i = 0; i < size; ++i) c_[i] = std::max(c_[i], 0.0f);
    }
  }

 private:
  Shape s_;
  const float *a_, *b_;
  float* c_;
  bool relu_;
};

// NRM: per batch, sqrt(sdot(x, x)) over its M·N contiguous elements. Not snrm2: that one scales
// against overflow (a division per element in OpenBLAS's x86 kernel), which the workload does not
// ask for; numpy's norm of a float32 vector takes this path too.
class Norm : public Driver {
 public:
  Norm(int64_t batch, int64_t size, const std::vector<float*>& b)
      : batch_(batch), size_(size), x_(b[0]), out_(b[1]) {}
  std::string describe() const override {
    return std::string("sqrt(sdot), ") + openblas_get_corename() + " kernels";
  }
  void run() override {
    for (int64_t i = 0; i < batch_; ++i) {
      const float* x = x_ + i * size_;
      out_[i] = std::sqrt(cblas_sdot(static_cast<int>(size_), x, 1, x, 1));
    }
  }

 private:
  int64_t batch_, size_;
  const float* x_;
  float* out_;
};

}  // namespace

std::unique_ptr<Driver> make_openblas_driver(const std::string& f, const std::vector<int64_t>& p,
                                             const std::vector<float*>& b) {
  if (f == "GMM") {
    expect_shape(f, p, 4, b, 3);
    int64_t bt = p[0], n = p[1], m = p[2], k = p[3];
    return std::make_unique<Gemm>(Gemm::Shape{bt, n, m, k, k, m, m, n * k, k * m, n * m}, b, false);
  }
  if (f == "DENSE_RELU") {
    expect_shape(f, p, 3, b, 3);
    int64_t n = p[0], m = p[1], k = p[2];
    return std::make_unique<Gemm>(Gemm::Shape{1, n, m, k, k, m, m, 0, 0, 0}, b, true);
  }
  if (f == "TBG") {
    expect_shape(f, p, 4, b, 3);
    int64_t bt = p[0], l = p[1], h = p[2], d = p[3];
    Gemm::Shape s{bt * h, l, l, d, h * d, h * d, l, l * h * d, l * h * d, l * l, true, h, d, d};
    return std::make_unique<Gemm>(s, b, false);
  }
  if (f == "NRM") {
    expect_shape(f, p, 3, b, 2);
    return std::make_unique<Norm>(p[0], p[1] * p[2], b);
  }
  return nullptr;
}

}  // namespace tyche::bench
