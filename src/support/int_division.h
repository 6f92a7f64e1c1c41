// Integer division that rounds toward negative infinity (floordiv) and its remainder, which has
// the divisor's sign (floormod): TensorIR's semantics, as Python's // and %. Written once, as C
// source, so that every place that computes it agrees: constant folding and the simplifier
// (tyche::floordiv below), the interpreter, and the prelude of generated C code
// (kIntDivisionCSource). A divisor of -1 gives the wrapped negation and 0 instead of overflowing.
// (The LLVM back end emits the same rounding as instructions: codegen/llvm/llvm_emitter.cc.)
// The divisor must not be 0.
#pragma once

#include <cstdint>

#define TYCHE_INT_DIVISION(SPECIFIERS)                       \
  SPECIFIERS int64_t tyche_floordiv(int64_t a, int64_t b) {  \
    if (b == -1) return (int64_t)(0 - (uint64_t)a);          \
    int64_t q = a / b;                                       \
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; \
  }                                                          \
  SPECIFIERS int64_t tyche_floormod(int64_t a, int64_t b) {  \
    if (b == -1) return 0;                                   \
    int64_t r = a % b;                                       \
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;     \
  }

namespace tyche {

namespace detail {
// NOLINTBEGIN(google-readability-casting)
TYCHE_INT_DIVISION(constexpr inline)
// NOLINTEND(google-readability-casting)
}  // namespace detail

constexpr int64_t floordiv(int64_t a, int64_t b) {
  return detail::tyche_floordiv(a, b);
}
constexpr int64_t floormod(int64_t a, int64_t b) {
  return detail::tyche_floormod(a, b);
}

#define TYCHE_STRINGIFY_EXPANDED(...) #__VA_ARGS__
#define TYCHE_STRINGIFY(...) TYCHE_STRINGIFY_EXPANDED(__VA_ARGS__)
// The same two functions as C source, `static inline`, for generated code.
inline constexpr const char* kIntDivisionCSource =
    TYCHE_STRINGIFY(TYCHE_INT_DIVISION(static inline));
// For GPU code: the prelude defines TYCHE_DEVICE for its dialect.
inline constexpr const char* kIntDivisionGpuSource =
    TYCHE_STRINGIFY(TYCHE_INT_DIVISION(TYCHE_DEVICE));
#undef TYCHE_STRINGIFY
#undef TYCHE_STRINGIFY_EXPANDED

static_assert(floordiv(7, 2) == 3 && floordiv(-7, 2) == -4 && floordiv(7, -2) == -4 &&
              floordiv(-7, -2) == 3);
static_assert(floormod(7, 2) == 1 && floormod(-7, 2) == 1 && floormod(7, -2) == -1 &&
              floormod(-7, -2) == -1);
static_assert(floordiv(INT64_MIN, -1) == INT64_MIN && floormod(INT64_MIN, -1) == 0);

}  // namespace tyche
