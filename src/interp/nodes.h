// Internal: the executable form a PrimFunc is compiled into. Every IR node becomes one small
// object with a virtual eval()/exec(); variables and buffers are resolved at compile time to
// pointers into stable slots, so execution does no lookups. Scalars are evaluated by IntExpr
// (int64, for every integer and bool type) or FloatExpr (double, for every float type); vectors
// (after vectorization: Ramp/Broadcast) by VecExpr, which writes its lanes into its own storage.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "ir/buffer.h"
#include "ir/expr.h"
#include "runtime/ndarray.h"
#include "support/error.h"

namespace tyche::interp::detail {

// Storage and runtime shape of one buffer: a parameter or one allocation site.
struct BufferState {
  const ir::BufferNode* node = nullptr;  // for names in messages
  uint8_t* data = nullptr;
  int64_t size = 0;  // elements reachable from `data`
  std::vector<int64_t> shape, strides;
  bool compact = true;                // row-major: the per-dimension checks imply offset < size
  runtime::NDArray* array = nullptr;  // float16/bfloat16 go through its converters
  runtime::NDArray owned;             // the storage of an allocation site
};

struct IntExpr {
  virtual ~IntExpr() = default;
  virtual int64_t eval() = 0;
  // The slot of a plain variable, so hot paths (indices, iter values) can read it directly.
  virtual const int64_t* var_slot() const { return nullptr; }
};
struct FloatExpr {
  virtual ~FloatExpr() = default;
  virtual double eval() = 0;
};
// A vector value: eval() fills `i` (integer lanes) or `f` (float lanes).
struct VecExpr {
  VecExpr(int lanes_, bool is_float_) : lanes(lanes_), is_float(is_float_) {
    if (is_float)
      f.resize(lanes);
    else
      i.resize(lanes);
  }
  virtual ~VecExpr() = default;
  virtual void eval() = 0;
  const int lanes;
  const bool is_float;
  std::vector<int64_t> i;
  std::vector<double> f;
};
struct Exec {
  virtual ~Exec() = default;
  virtual void exec() = 0;
};
using IntPtr = std::unique_ptr<IntExpr>;
using FloatPtr = std::unique_ptr<FloatExpr>;
using VecPtr = std::unique_ptr<VecExpr>;
using ExecPtr = std::unique_ptr<Exec>;

// The value of a vector-typed variable (a Let of a vector).
struct VecSlot {
  std::vector<int64_t> i;
  std::vector<double> f;
};

// Lanes a vector if_then_else did not choose: out-of-bounds loads there are not errors, as a
// masked load in real code would not touch them.
struct LaneMask {
  bool active = false;
  std::vector<uint8_t> on;
};

// ---- numeric helpers --------------------------------------------------------------------------

// Float -> integer truncation; NaN gives INT64_MIN (like x86's "integer indefinite"), out-of-range
// values saturate, so the conversion is never undefined behaviour.
inline int64_t float_to_int(double v) {
  if (std::isnan(v)) return std::numeric_limits<int64_t>::min();
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Wraps an exact integer to an integer/bool type, as a store or cast to that type does.
inline int64_t wrap_int(int64_t v, DataType t) {
  if (t.is_bool()) return v != 0;
  switch (t.bits()) {
    case 8:
      return t.is_int() ? int64_t{static_cast<int8_t>(v)} : int64_t{static_cast<uint8_t>(v)};
    case 16:
      return t.is_int() ? int64_t{static_cast<int16_t>(v)} : int64_t{static_cast<uint16_t>(v)};
    case 32:
      return t.is_int() ? int64_t{static_cast<int32_t>(v)} : int64_t{static_cast<uint32_t>(v)};
    default:
      return v;
  }
}

// An integer bit operation (ir::is_bit_call) on values of type `t` (unsigned ones held as their
// bits): wrapped to `t`; a shift by a negative amount or the width or more gives 0 (-1 for a
// negative value shifted right), as ONNX's BitShift.
inline int64_t bit_call(ir::CallOp op, int64_t a, int64_t b, DataType t) {
  auto u = static_cast<uint64_t>(a);
  switch (op) {
    case ir::CallOp::kBitwiseAnd:
      return wrap_int(a & b, t);
    case ir::CallOp::kBitwiseOr:
      return wrap_int(a | b, t);
    case ir::CallOp::kBitwiseXor:
      return wrap_int(a ^ b, t);
    case ir::CallOp::kBitwiseNot:
      return wrap_int(~a, t);
    case ir::CallOp::kShiftLeft:
      return b < 0 || b >= t.bits() ? 0 : wrap_int(static_cast<int64_t>(u << b), t);
    default:  // kShiftRight
      if (b < 0 || b >= t.bits()) return t.is_int() && a < 0 ? -1 : 0;
      if (t.is_int()) return wrap_int(a >> b, t);
      // Logical: the value's own bits (64-bit ones are held as they are, the narrower
      // zero-extended).
      return wrap_int(static_cast<int64_t>(u >> b), t);
  }
}

// Rounds to `p` significant bits with exponent floor `emin` (subnormals) and overflow to infinity
// past `max_finite`: round-to-nearest-even directly from double, so there is no double rounding.
inline double round_to_precision(double v, int p, int emin, double max_finite) {
  if (!std::isfinite(v) || v == 0) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  int lead = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, lead - (p - 1));
  double r = std::nearbyint(v / quantum) * quantum;
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

// Rounds a double to the nearest value of float type `t`.
inline double round_float(double v, DataType t) {
  if (t.is_bfloat16()) return round_to_precision(v, 8, -126, 3.3895313892515355e38);
  switch (t.bits()) {
    case 16:
      return round_to_precision(v, 11, -14, 65504.0);
    case 32:
      return static_cast<double>(static_cast<float>(v));
    default:
      return v;
  }
}

// ---- element storage --------------------------------------------------------------------------

// Tags for element types that are not plain C++ arithmetic types.
struct Half {};
struct BFloat {};
struct Bool8 {};

// Loads/stores one element of storage type T as an int64 or a double.
template <typename T>
struct Storage {
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  static T* p(const BufferState& b) { return reinterpret_cast<T*>(b.data); }
  static int64_t load_i(const BufferState& b, int64_t k) {
    if constexpr (kFloat)
      return float_to_int(p(b)[k]);
    else
      return static_cast<int64_t>(p(b)[k]);
  }
  static double load_f(const BufferState& b, int64_t k) { return static_cast<double>(p(b)[k]); }
  static void store_i(BufferState& b, int64_t k, int64_t v) { p(b)[k] = static_cast<T>(v); }
  static void store_f(BufferState& b, int64_t k, double v) {
    if constexpr (kFloat)
      p(b)[k] = static_cast<T>(v);
    else
      p(b)[k] = static_cast<T>(float_to_int(v));
  }
};

template <bool kBFloat16>
struct SmallFloatStorage {
  static constexpr bool kFloat = true;
  static DataType dtype() { return kBFloat16 ? DataType::BFloat16() : DataType::Float(16); }
  static double load_f(const BufferState& b, int64_t k) { return b.array->get_flat(k); }
  static int64_t load_i(const BufferState& b, int64_t k) { return float_to_int(load_f(b, k)); }
  // The value is rounded first, so the array's float -> half conversion is exact.
  static void store_f(BufferState& b, int64_t k, double v) {
    b.array->set_flat(k, round_float(v, dtype()));
  }
  static void store_i(BufferState& b, int64_t k, int64_t v) {
    store_f(b, k, static_cast<double>(v));
  }
};
template <>
struct Storage<Half> : SmallFloatStorage<false> {};
template <>
struct Storage<BFloat> : SmallFloatStorage<true> {};

template <>
struct Storage<Bool8> {
  static constexpr bool kFloat = false;
  static int64_t load_i(const BufferState& b, int64_t k) { return b.data[k] != 0; }
  static double load_f(const BufferState& b, int64_t k) {
    return static_cast<double>(load_i(b, k));
  }
  static void store_i(BufferState& b, int64_t k, int64_t v) { b.data[k] = v != 0; }
  static void store_f(BufferState& b, int64_t k, double v) { b.data[k] = v != 0; }
};

// Calls f.template operator()<T>() with the storage type of element type `t`.
template <typename F>
decltype(auto) with_storage(DataType t, F&& f) {
  if (t.lanes() == 1) {
    switch (t.code()) {
      case DataType::Code::kFloat:
        if (t.bits() == 16) return f.template operator()<Half>();
        if (t.bits() == 32) return f.template operator()<float>();
        if (t.bits() == 64) return f.template operator()<double>();
        break;
      case DataType::Code::kBFloat:
        return f.template operator()<BFloat>();
      case DataType::Code::kBool:
        return f.template operator()<Bool8>();
      case DataType::Code::kInt:
        if (t.bits() == 8) return f.template operator()<int8_t>();
        if (t.bits() == 16) return f.template operator()<int16_t>();
        if (t.bits() == 32) return f.template operator()<int32_t>();
        if (t.bits() == 64) return f.template operator()<int64_t>();
        break;
      case DataType::Code::kUInt:
        if (t.bits() == 8) return f.template operator()<uint8_t>();
        if (t.bits() == 16) return f.template operator()<uint16_t>();
        if (t.bits() == 32) return f.template operator()<uint32_t>();
        if (t.bits() == 64) return f.template operator()<uint64_t>();
        break;
      default:
        break;
    }
  }
  throw_error("interp: unsupported buffer element type {}", t.str());
}

// ---- buffer accesses --------------------------------------------------------------------------

// The index expressions of a scalar load or store, checked against the buffer's shape.
struct ScalarAccess {
  BufferState* buf = nullptr;
  std::vector<IntPtr> idx;
  std::vector<const int64_t*> vars;  // per index: its variable's slot if it is a plain variable
  bool is_store = false;

  int64_t offset() {
    const int64_t* shape = buf->shape.data();
    const int64_t* strides = buf->strides.data();
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t v = vars[d] ? *vars[d] : idx[d]->eval();
      if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(shape[d])) fail();
      off += v * strides[d];
    }
    if (!buf->compact && off >= buf->size) fail();
    return off;
  }
  // Re-evaluates the (pure) indices to name them all in the message.
  [[noreturn]] void fail();
};

// The index vectors of a vector load or store; lanes an if_then_else masked off may be out of
// bounds (their offset is -1 and a load reads 0 there).
struct VecAccess {
  BufferState* buf = nullptr;
  std::vector<VecPtr> idx;  // each has `lanes` integer lanes
  int lanes = 1;
  bool is_store = false;
  LaneMask* mask = nullptr;
  std::vector<int64_t> offsets;

  void compute() {
    for (auto& e : idx) e->eval();
    offsets.assign(lanes, 0);
    for (int l = 0; l < lanes; ++l) {
      int64_t off = 0;
      bool ok = true;
      for (size_t d = 0; d < idx.size(); ++d) {
        int64_t v = idx[d]->i[l];
        ok = ok && static_cast<uint64_t>(v) < static_cast<uint64_t>(buf->shape[d]);
        off += v * buf->strides[d];
      }
      ok = ok && (buf->compact || off < buf->size);
      if (!ok) {
        if (!is_store && mask->active && static_cast<int>(mask->on.size()) == lanes && !mask->on[l])
          off = -1;
        else
          fail(l);
      }
      offsets[l] = off;
    }
  }
  [[noreturn]] void fail(int lane);
};

[[noreturn]] void throw_out_of_bounds(const BufferState& buf, bool is_store,
                                      const std::vector<int64_t>& index);
[[noreturn]] void throw_division_by_zero(const ir::Expr& e);

}  // namespace tyche::interp::detail
