// A dense, 64-byte aligned host tensor. Its fields follow DLPack's DLTensor (data, dtype, shape,
// compact row-major strides) so later code can hand it to other libraries without copying.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "support/dtype.h"

namespace tyche::runtime {

class NDArray {
 public:
  NDArray() = default;
  // Zero-filled tensor.
  NDArray(std::vector<int64_t> shape, DataType dtype);

  static NDArray empty(std::vector<int64_t> shape, DataType dtype) {
    return {std::move(shape), dtype};
  }

  bool defined() const { return data_ != nullptr; }
  const std::vector<int64_t>& shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_.bytes() * dtype_.lanes(); }

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <typename T>
  T* data_as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* data_as() const {
    return static_cast<const T*>(data());
  }

  // Element access by flat index, converting to/from double (any dtype).
  double get_flat(int64_t i) const;
  void set_flat(int64_t i, double v);
  // Exact access for integer dtypes.
  int64_t get_flat_int(int64_t i) const;
  void set_flat_int(int64_t i, int64_t v);

  // Fills with values uniform in [lo, hi) from a seeded generator (integers: truncated).
  void fill_uniform(uint64_t seed, double lo = -1.0, double hi = 1.0);
  // Test data for the dtype, from a seeded generator: floats uniform in [-1, 1) (rounded to
  // 16-bit floats), int8 and uint8 over their whole range, wider integers in [-1000, 1000),
  // bool 0 or 1. How every program's inputs are made (tests, the runner, tyche run).
  void fill_random(uint64_t seed);
  NDArray copy() const;

 private:
  struct AlignedFree {
    void operator()(void* p) const;
  };
  std::vector<int64_t> shape_;
  DataType dtype_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t> data_;
};

}  // namespace tyche::runtime
