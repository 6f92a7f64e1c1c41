// ONNX's element types narrower than a byte's worth of numbers: float8 (E4M3FN, E4M3FNUZ, E5M2,
// E5M2FNUZ), float4 (E2M1), int4/uint4 and int2/uint2. No CPU computes in them, so Tyche stores
// them in a byte per element (the float ones as their bit pattern in uint8, the integer ones as
// their value in int8/uint8) and converts at the ops that read or write them: Cast, CastLike,
// QuantizeLinear and DequantizeLinear (and Identity, which moves them unchanged).
#pragma once

#include <cstdint>
#include <optional>

#include "ir/expr.h"
#include "support/dtype.h"

namespace tyche::graph {

// A narrow ONNX element type's layout.
struct NarrowType {
  int64_t code = 0;  // ONNX's TensorProto.DataType
  DataType storage;  // uint8 or int8
  bool is_float = false;
  // Floats: exponent and mantissa bits, the exponent bias, and how the format spells its
  // specials: FN (NaN is all ones, no infinity), FNUZ (NaN is the negative zero's code, no -0),
  // IEEE (infinity and NaN as IEEE's), NONE (no specials: float4).
  int exponent_bits = 0, mantissa_bits = 0, bias = 0;
  enum class Specials { kFN, kFNUZ, kIEEE, kNone } specials = Specials::kNone;
  // Integers: the value bits and signedness.
  int bits = 0;
  bool is_signed = false;
  double max_finite() const;
};

// The narrow type of ONNX element type `code`, or nothing for a type that is not one.
std::optional<NarrowType> narrow_type(int64_t code);

// `x` (any numeric or bool type) converted to narrow type `t`, as ONNX's Cast converts it: the
// floats rounded to nearest even, out of range to the largest finite value when `saturate`, else
// to infinity or NaN as the format has them; the integers from a float truncated toward zero
// (0 when out of range, as ml_dtypes converts), from an integer wrapped to their bits.
ir::Expr narrow_encode(ir::Expr x, const NarrowType& t, bool saturate);
// A stored narrow value as float32 (the float types) or as its integer value (the integer types,
// in their storage type).
ir::Expr narrow_decode(ir::Expr stored, const NarrowType& t);

}  // namespace tyche::graph
