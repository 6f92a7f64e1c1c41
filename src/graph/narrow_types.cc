#include "graph/narrow_types.h"

#include <cmath>
#include <limits>

#include "ir/op.h"

namespace tyche::graph {

using ir::Expr;

namespace {

Expr f64(double v) {
  return ir::make_float(v, kFloat64);
}

Expr pow2(Expr e) {
  return ir::call(ir::CallOp::kPow, {f64(2), std::move(e)});
}

Expr floor64(Expr x) {
  return ir::call(ir::CallOp::kFloor, {std::move(x)});
}

// floor(log2(a)) for a finite a > 0, exact: the logarithm's estimate corrected by one either way.
Expr exponent_of(Expr a) {
  Expr e = floor64(ir::log(a) * f64(1 / std::log(2.0)));
  e = ir::select(pow2(e) > a, e - f64(1), e);
  return ir::select(pow2(e + f64(1)) <= a, e + f64(1), e);
}

NarrowType float_type(int64_t code, int e, int m, int bias, NarrowType::Specials s) {
  NarrowType t;
  t.code = code;
  t.storage = DataType::UInt(8);
  t.is_float = true;
  t.exponent_bits = e;
  t.mantissa_bits = m;
  t.bias = bias;
  t.specials = s;
  return t;
}

NarrowType int_type(int64_t code, int bits, bool is_signed) {
  NarrowType t;
  t.code = code;
  t.storage = is_signed ? DataType::Int(8) : DataType::UInt(8);
  t.bits = bits;
  t.is_signed = is_signed;
  return t;
}

}  // namespace

double NarrowType::max_finite() const {
  int top = (1 << exponent_bits) - 1;  // the largest exponent field
  int man = (1 << mantissa_bits) - 1;
  switch (specials) {
    case Specials::kIEEE:
      --top;  // all ones is infinity and NaN
      break;
    case Specials::kFN:
      --man;  // all ones is NaN
      break;
    default:
      break;
  }
  return std::ldexp(1.0 + man / static_cast<double>(1 << mantissa_bits), top - bias);
}

std::optional<NarrowType> narrow_type(int64_t code) {
  using S = NarrowType::Specials;
  switch (code) {
    case 17:
      return float_type(code, 4, 3, 7, S::kFN);
    case 18:
      return float_type(code, 4, 3, 8, S::kFNUZ);
    case 19:
      return float_type(code, 5, 2, 15, S::kIEEE);
    case 20:
      return float_type(code, 5, 2, 16, S::kFNUZ);
    case 21:
      return int_type(code, 4, false);
    case 22:
      return int_type(code, 4, true);
    case 23:
      return float_type(code, 2, 1, 1, S::kNone);
    case 25:
      return int_type(code, 2, false);
    case 26:
      return int_type(code, 2, true);
    default:
      return std::nullopt;
  }
}

Expr narrow_encode(Expr x, const NarrowType& t, bool saturate) {
  DataType in = x.dtype();
  if (!t.is_float) {
    int64_t lo = t.is_signed ? -(int64_t{1} << (t.bits - 1)) : 0;
    int64_t span = int64_t{1} << t.bits;
    int64_t hi = lo + span - 1;
    if (in.is_float()) {
      Expr v = ir::cast(kFloat64, x);
      Expr trunc = ir::select(v < f64(0), ir::call(ir::CallOp::kCeil, {v}), floor64(v));
      Expr inside = trunc >= f64(static_cast<double>(lo)) && trunc <= f64(static_cast<double>(hi));
      return ir::cast(t.storage, ir::select(inside, trunc, f64(0)));
    }
    // An integer (or bool) wraps to the type's bits.
    Expr v = ir::cast(kInt64, x);
    Expr wrapped = ir::floormod(v - ir::make_const(kInt64, lo), ir::make_const(kInt64, span)) +
                   ir::make_const(kInt64, lo);
    return ir::cast(t.storage, wrapped);
  }
  using S = NarrowType::Specials;
  const int m = t.mantissa_bits, sign_bit = t.exponent_bits + t.mantissa_bits;
  const double max = t.max_finite(), min_normal = std::ldexp(1.0, 1 - t.bias);
  Expr v = ir::cast(kFloat64, x);
  Expr is_nan = v != v;
  // The sign, negative zero's included (1 / -0 is -inf); the FNUZ formats have no negative zero.
  Expr negative = v < f64(0) || (v == f64(0) && f64(1) / v < f64(0));
  Expr a = ir::select(v < f64(0), -v, v);
  // Rounded to the format's precision at a's exponent (subnormals at the smallest), unbounded
  // above: anything past the largest finite value then overflows.
  Expr clamped = ir::min(ir::max(a, f64(min_normal)), f64(std::ldexp(1.0, 64)));
  Expr quantum = pow2(exponent_of(clamped) - f64(m));
  Expr r = ir::call(ir::CallOp::kRound, {a / quantum}) * quantum;
  r = ir::select(a > f64(std::ldexp(1.0, 64)), f64(std::numeric_limits<double>::infinity()), r);
  Expr overflow = r > f64(max);
  // The code of a finite magnitude r <= max.
  Expr er = exponent_of(ir::max(r, f64(min_normal)));
  Expr normal = r >= f64(min_normal);
  Expr field = ir::select(normal, er + f64(t.bias), f64(0));
  Expr mantissa = ir::select(normal, r / pow2(er - f64(m)) - f64(1 << m),
                             r / f64(std::ldexp(1.0, 1 - t.bias - m)));
  Expr magnitude = field * f64(1 << m) + mantissa;
  double max_magnitude = 0;  // the largest finite value's code
  {
    int e = static_cast<int>(std::floor(std::log2(max)));
    max_magnitude = (e + t.bias) * (1 << m) + (max / std::ldexp(1.0, e - m) - (1 << m));
  }
  const double sign_value = 1 << sign_bit;
  const bool nan_is_negative_zero = t.specials == S::kFNUZ || t.specials == S::kNone;
  // (ml_dtypes writes NaN as float4's -0, which has no NaN.)
  const double nan_code = nan_is_negative_zero ? sign_value : sign_value - 1;
  Expr code = magnitude;
  Expr nan = is_nan;
  if (saturate || t.specials == S::kNone)
    code = ir::select(overflow, f64(max_magnitude), code);
  else if (t.specials == S::kIEEE)
    code = ir::select(overflow, f64(((1 << t.exponent_bits) - 1) * (1 << m)), code);  // infinity
  else
    nan = nan || overflow;
  Expr has_sign = t.specials == S::kFNUZ ? negative && r > f64(0) : negative;  // FNUZ: no -0
  code = ir::select(has_sign, code + f64(sign_value), code);
  code = ir::select(nan, f64(nan_code), code);
  return ir::cast(t.storage, ir::cast(kInt32, code));
}

Expr narrow_decode(Expr stored, const NarrowType& t) {
  if (!t.is_float) return stored;
  using S = NarrowType::Specials;
  const int m = t.mantissa_bits, sign_bit = t.exponent_bits + t.mantissa_bits;
  auto i32 = [](int64_t v) { return ir::make_const(kInt32, v); };
  Expr code = ir::cast(kInt32, stored);
  Expr sign = ir::floordiv(code, i32(int64_t{1} << sign_bit));
  Expr field = ir::floormod(ir::floordiv(code, i32(1 << m)), i32(1 << t.exponent_bits));
  Expr man = ir::floormod(code, i32(1 << m));
  Expr fe = ir::cast(kFloat64, field), fm = ir::cast(kFloat64, man);
  Expr magnitude = ir::select(field == i32(0), fm * f64(std::ldexp(1.0, 1 - t.bias - m)),
                              (f64(1 << m) + fm) * pow2(fe - f64(t.bias + m)));
  Expr v = ir::select(sign == i32(1), -magnitude, magnitude);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  int top = (1 << t.exponent_bits) - 1, ones = (1 << m) - 1;
  switch (t.specials) {
    case S::kFN:
      v = ir::select(field == i32(top) && man == i32(ones), f64(nan), v);
      break;
    case S::kFNUZ:
      v = ir::select(code == i32(int64_t{1} << sign_bit), f64(nan), v);
      break;
    case S::kIEEE:
      v = ir::select(
          field == i32(top),
          ir::select(man == i32(0), ir::select(sign == i32(1), f64(-inf), f64(inf)), f64(nan)), v);
      break;
    case S::kNone:
      break;
  }
  return ir::cast(kFloat32, v);
}

}  // namespace tyche::graph
