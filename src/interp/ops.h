// Internal: the scalar semantics of the IR's operators, shared by the scalar and vector nodes.
// Integers are exact in int64 with wrap-around instead of undefined overflow; floats are double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/expr.h"
#include "support/error.h"
#include "support/int_division.h"

namespace tyche::interp::detail {

using ir::CallOp;
using ir::ExprKind;

constexpr bool is_int_division(ExprKind k) {
  return k == ExprKind::kDiv || k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod;
}

// Comparison or logical operator K, alike for integers and floats.
template <ExprKind K, typename T>
inline bool logical_op(T a, T b) {
  if constexpr (K == ExprKind::kEQ)
    return a == b;
  else if constexpr (K == ExprKind::kNE)
    return a != b;
  else if constexpr (K == ExprKind::kLT)
    return a < b;
  else if constexpr (K == ExprKind::kLE)
    return a <= b;
  else if constexpr (K == ExprKind::kGT)
    return a > b;
  else if constexpr (K == ExprKind::kGE)
    return a >= b;
  else if constexpr (K == ExprKind::kAnd)
    return a != 0 && b != 0;
  else
    return a != 0 || b != 0;  // kOr
}

// Integer operator K; the caller has rejected a zero divisor.
template <ExprKind K>
inline int64_t int_op(int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  if constexpr (K == ExprKind::kAdd)
    return static_cast<int64_t>(ua + ub);
  else if constexpr (K == ExprKind::kSub)
    return static_cast<int64_t>(ua - ub);
  else if constexpr (K == ExprKind::kMul)
    return static_cast<int64_t>(ua * ub);
  else if constexpr (K == ExprKind::kDiv)
    return b == -1 ? static_cast<int64_t>(0 - ua) : a / b;  // INT64_MIN / -1 wraps
  else if constexpr (K == ExprKind::kFloorDiv)
    return floordiv(a, b);
  else if constexpr (K == ExprKind::kFloorMod)
    return floormod(a, b);
  else if constexpr (K == ExprKind::kMin)
    return std::min(a, b);
  else if constexpr (K == ExprKind::kMax)
    return std::max(a, b);
  else
    return logical_op<K>(a, b);
}

// Float operator K. min/max propagate NaN so that poisoned (uninitialized) values cannot vanish
// inside a max-reduction.
template <ExprKind K>
inline double float_op(double a, double b) {
  if constexpr (K == ExprKind::kAdd)
    return a + b;
  else if constexpr (K == ExprKind::kSub)
    return a - b;
  else if constexpr (K == ExprKind::kMul)
    return a * b;
  else if constexpr (K == ExprKind::kDiv)
    return a / b;
  else if constexpr (K == ExprKind::kFloorDiv)
    return std::floor(a / b);
  else if constexpr (K == ExprKind::kFloorMod)
    return a - std::floor(a / b) * b;
  else if constexpr (K == ExprKind::kMin)
    return (std::isnan(a) || std::isnan(b)) ? a + b : std::min(a, b);
  else if constexpr (K == ExprKind::kMax)
    return (std::isnan(a) || std::isnan(b)) ? a + b : std::max(a, b);
  else
    return logical_op<K>(a, b);
}

// Calls f.template operator()<K>() for binary operator kind `k`.
template <typename F>
decltype(auto) with_binary_kind(ExprKind k, F&& f) {
  switch (k) {
    case ExprKind::kAdd:
      return f.template operator()<ExprKind::kAdd>();
    case ExprKind::kSub:
      return f.template operator()<ExprKind::kSub>();
    case ExprKind::kMul:
      return f.template operator()<ExprKind::kMul>();
    case ExprKind::kDiv:
      return f.template operator()<ExprKind::kDiv>();
    case ExprKind::kFloorDiv:
      return f.template operator()<ExprKind::kFloorDiv>();
    case ExprKind::kFloorMod:
      return f.template operator()<ExprKind::kFloorMod>();
    case ExprKind::kMin:
      return f.template operator()<ExprKind::kMin>();
    case ExprKind::kMax:
      return f.template operator()<ExprKind::kMax>();
    case ExprKind::kEQ:
      return f.template operator()<ExprKind::kEQ>();
    case ExprKind::kNE:
      return f.template operator()<ExprKind::kNE>();
    case ExprKind::kLT:
      return f.template operator()<ExprKind::kLT>();
    case ExprKind::kLE:
      return f.template operator()<ExprKind::kLE>();
    case ExprKind::kGT:
      return f.template operator()<ExprKind::kGT>();
    case ExprKind::kGE:
      return f.template operator()<ExprKind::kGE>();
    case ExprKind::kAnd:
      return f.template operator()<ExprKind::kAnd>();
    default:
      return f.template operator()<ExprKind::kOr>();
  }
}

template <CallOp Op>
inline double call_op(double x, double y = 0) {
  if constexpr (Op == CallOp::kExp)
    return std::exp(x);
  else if constexpr (Op == CallOp::kLog)
    return std::log(x);
  else if constexpr (Op == CallOp::kSqrt)
    return std::sqrt(x);
  else if constexpr (Op == CallOp::kRsqrt)
    return 1.0 / std::sqrt(x);
  else if constexpr (Op == CallOp::kTanh)
    return std::tanh(x);
  else if constexpr (Op == CallOp::kSigmoid)
    return 1.0 / (1.0 + std::exp(-x));
  else if constexpr (Op == CallOp::kAbs)
    return std::fabs(x);
  else if constexpr (Op == CallOp::kPow)
    return std::pow(x, y);
  else if constexpr (Op == CallOp::kFloor)
    return std::floor(x);
  else if constexpr (Op == CallOp::kCeil)
    return std::ceil(x);
  else if constexpr (Op == CallOp::kRound)
    return std::nearbyint(x);  // the default mode: halves to even
  else if constexpr (Op == CallOp::kSin)
    return std::sin(x);
  else if constexpr (Op == CallOp::kCos)
    return std::cos(x);
  else if constexpr (Op == CallOp::kTan)
    return std::tan(x);
  else if constexpr (Op == CallOp::kAsin)
    return std::asin(x);
  else if constexpr (Op == CallOp::kAcos)
    return std::acos(x);
  else if constexpr (Op == CallOp::kAtan)
    return std::atan(x);
  else if constexpr (Op == CallOp::kSinh)
    return std::sinh(x);
  else if constexpr (Op == CallOp::kCosh)
    return std::cosh(x);
  else if constexpr (Op == CallOp::kAsinh)
    return std::asinh(x);
  else if constexpr (Op == CallOp::kAcosh)
    return std::acosh(x);
  else if constexpr (Op == CallOp::kAtanh)
    return std::atanh(x);
  else
    return std::erf(x);  // kErf (kIfThenElse never gets here)
}

template <typename F>
decltype(auto) with_call_op(CallOp op, F&& f) {
  switch (op) {
    case CallOp::kExp:
      return f.template operator()<CallOp::kExp>();
    case CallOp::kLog:
      return f.template operator()<CallOp::kLog>();
    case CallOp::kSqrt:
      return f.template operator()<CallOp::kSqrt>();
    case CallOp::kRsqrt:
      return f.template operator()<CallOp::kRsqrt>();
    case CallOp::kTanh:
      return f.template operator()<CallOp::kTanh>();
    case CallOp::kSigmoid:
      return f.template operator()<CallOp::kSigmoid>();
    case CallOp::kAbs:
      return f.template operator()<CallOp::kAbs>();
    case CallOp::kPow:
      return f.template operator()<CallOp::kPow>();
    case CallOp::kFloor:
      return f.template operator()<CallOp::kFloor>();
    case CallOp::kCeil:
      return f.template operator()<CallOp::kCeil>();
    case CallOp::kRound:
      return f.template operator()<CallOp::kRound>();
    case CallOp::kErf:
      return f.template operator()<CallOp::kErf>();
    case CallOp::kSin:
      return f.template operator()<CallOp::kSin>();
    case CallOp::kCos:
      return f.template operator()<CallOp::kCos>();
    case CallOp::kTan:
      return f.template operator()<CallOp::kTan>();
    case CallOp::kAsin:
      return f.template operator()<CallOp::kAsin>();
    case CallOp::kAcos:
      return f.template operator()<CallOp::kAcos>();
    case CallOp::kAtan:
      return f.template operator()<CallOp::kAtan>();
    case CallOp::kSinh:
      return f.template operator()<CallOp::kSinh>();
    case CallOp::kCosh:
      return f.template operator()<CallOp::kCosh>();
    case CallOp::kAsinh:
      return f.template operator()<CallOp::kAsinh>();
    case CallOp::kAcosh:
      return f.template operator()<CallOp::kAcosh>();
    case CallOp::kAtanh:
      return f.template operator()<CallOp::kAtanh>();
    default:
      break;  // kIfThenElse is compiled as a conditional, never dispatched here
  }
  throw InternalError(fmt::format("interp: no math function for call '{}'", ir::call_op_name(op)));
}

inline int64_t int_abs(int64_t v) {
  return v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v;
}

}  // namespace tyche::interp::detail
