#include "runtime/ndarray.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::runtime {

namespace {

// float <-> bfloat16 / float16 conversions for storage only (round to nearest even).
uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16, written out because _Float16 is not available on every compiler we support.
uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into the exponent
  return static_cast<uint16_t>(sign | half);
}
float half_to_float(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// A buffer of 2 MiB or more is aligned to 2 MiB and asks for transparent huge pages (where the
// kernel grants them on request: "madvise" mode). A model's weights and its arena are streamed
// on every run; on 4 KiB pages each page costs a TLB walk and stops the L2 stream prefetcher at
// its boundary. The advice goes before the first touch (the memset) and may be refused.
// A buffer of a page or more starts a page: streamed reads are alignment-sensitive beyond the
// 64 bytes the code needs (on Zen 4 NRM-3's and TVM's reductions ran 1.15x slower from 64 bytes
// into a page than from its start), so every buffer of a kernel starts at the same offset.
void* allocate(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  if (bytes >= kHugePage) {
    size_t huge = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    if (void* p = std::aligned_alloc(kHugePage, huge)) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
      madvise(p, huge, MADV_HUGEPAGE);
#endif
      return p;
    }
  }
  constexpr size_t kPage = 4096;
  if (bytes >= kPage) return std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage);
  return std::aligned_alloc(64, bytes);
}

}  // namespace

void NDArray::AlignedFree::operator()(void* p) const {
  std::free(p);
}

NDArray::NDArray(std::vector<int64_t> shape, DataType dtype)
    : shape_(std::move(shape)), dtype_(dtype) {
  // Checked before allocating: a shape whose bytes wrap modulo 2^64 would otherwise get a tiny
  // buffer that every later write overruns.
  numel_ = tensor_size("a tensor", shape_, dtype_).elements;
  size_t bytes = std::max<size_t>(nbytes(), 1);
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = allocate(rounded);
  if (!p) throw_error("out of memory allocating {} bytes", rounded);
  std::memset(p, 0, rounded);
  data_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), AlignedFree{});
}

double NDArray::get_flat(int64_t i) const {
  const uint8_t* p = data_.get();
  switch (dtype_.code()) {
    case DataType::Code::kFloat:
      if (dtype_.bits() == 32) return reinterpret_cast<const float*>(p)[i];
      if (dtype_.bits() == 64) return reinterpret_cast<const double*>(p)[i];
      if (dtype_.bits() == 16) return half_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
      break;
    case DataType::Code::kBFloat:
      return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<double>(get_flat_int(i));
  }
  throw InternalError("unsupported dtype " + dtype_.str());
}

void NDArray::set_flat(int64_t i, double v) {
  uint8_t* p = data_.get();
  switch (dtype_.code()) {
    case DataType::Code::kFloat:
      if (dtype_.bits() == 32) {
        reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
        return;
      }
      if (dtype_.bits() == 64) {
        reinterpret_cast<double*>(p)[i] = v;
        return;
      }
      if (dtype_.bits() == 16) {
        reinterpret_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v));
        return;
      }
      break;
    case DataType::Code::kBFloat:
      reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v));
      return;
    default:
      set_flat_int(i, static_cast<int64_t>(v));
      return;
  }
  throw InternalError("unsupported dtype " + dtype_.str());
}

int64_t NDArray::get_flat_int(int64_t i) const {
  const uint8_t* p = data_.get();
  if (dtype_.is_bool()) return p[i] != 0;
  bool s = dtype_.is_int();
  // Each branch widens on its own: a conditional of int32 and uint32 would be uint32.
  switch (dtype_.bits()) {
    case 8:
      return s ? int64_t{reinterpret_cast<const int8_t*>(p)[i]}
               : int64_t{reinterpret_cast<const uint8_t*>(p)[i]};
    case 16:
      return s ? int64_t{reinterpret_cast<const int16_t*>(p)[i]}
               : int64_t{reinterpret_cast<const uint16_t*>(p)[i]};
    case 32:
      return s ? int64_t{reinterpret_cast<const int32_t*>(p)[i]}
               : int64_t{reinterpret_cast<const uint32_t*>(p)[i]};
    case 64:
      return reinterpret_cast<const int64_t*>(p)[i];
  }
  throw InternalError("unsupported dtype " + dtype_.str());
}

void NDArray::set_flat_int(int64_t i, int64_t v) {
  uint8_t* p = data_.get();
  if (dtype_.is_float()) {
    set_flat(i, static_cast<double>(v));
    return;
  }
  if (dtype_.is_bool()) {
    p[i] = v != 0;
    return;
  }
  switch (dtype_.bits()) {
    case 8:
      reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      return;
    case 16:
      reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
      return;
    case 32:
      reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      return;
    case 64:
      reinterpret_cast<int64_t*>(p)[i] = v;
      return;
  }
  throw InternalError("unsupported dtype " + dtype_.str());
}

namespace {

// Calls f(i, u) for i in [0, n) with u uniform in [0, 1), from splitmix64: the same sequence on
// every platform and standard library.
template <typename F>
void uniform_sequence(uint64_t seed, int64_t n, F&& f) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    f(i, static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53);
  }
}

}  // namespace

void NDArray::fill_uniform(uint64_t seed, double lo, double hi) {
  uniform_sequence(seed, numel_, [&](int64_t i, double u) {
    double v = lo + (hi - lo) * u;
    if (dtype_.is_int_like())
      set_flat_int(i, static_cast<int64_t>(v));
    else
      set_flat(i, v);
  });
}

void NDArray::fill_random(uint64_t seed) {
  if (!dtype_.is_int_like()) return fill_uniform(seed);
  double lo = -1000, hi = 1000;
  if (dtype_.is_bool())
    lo = 0, hi = 2;
  else if (dtype_.bits() == 8)
    lo = dtype_.is_int() ? -128 : 0, hi = lo + 256;
  // floor, not truncation, which would give 0 twice the weight of any other value.
  uniform_sequence(seed, numel_, [&](int64_t i, double u) {
    set_flat_int(i, static_cast<int64_t>(std::floor(lo + (hi - lo) * u)));
  });
}

NDArray NDArray::copy() const {
  NDArray out(shape_, dtype_);
  if (numel_) std::memcpy(out.data(), data(), nbytes());
  return out;
}

}  // namespace tyche::runtime
