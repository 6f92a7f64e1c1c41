// Internal to the LLVM backend: elementary functions written as IR, so that they vectorize.
// LLVM lowers `llvm.exp.f32` to a scalar libm call per lane (no vector math library is linked
// into a JIT or an exported object), which made every softmax or sigmoid run at libm's speed.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace tyche::codegen::detail {

// `elem`, as a vector of as many lanes when `like` is a vector.
llvm::Type* same_shape(llvm::Type* like, llvm::Type* elem);

// e^x for float or <N x float>: Cody-Waite reduction by ln 2, a degree-6 polynomial, and the
// scale by 2^n applied in two halves so that results down to the subnormals (and overflow to
// infinity) round once. Within 2 ulp of the correctly rounded result on normal outputs;
// NaN stays NaN, e^inf = inf, e^-inf = 0. No fast-math flags: the reduction relies on exact
// IEEE rounding.
llvm::Value* f32_exp(llvm::IRBuilderBase& b, llvm::Value* x);

// erf(x) for float or <N x float>, odd by construction: below |x| = 0.75 its Taylor series to
// x^15 (relative error under 2e-8 before rounding), above it Abramowitz and Stegun's 7.1.26,
// 1 - poly(t) e^(-x^2) with t = 1 / (1 + 0.3275911 |x|) (absolute error under 1.4e-7 before
// rounding, 4e-7 after), with f32_exp. NaN stays NaN, erf(+-inf) = +-1.
llvm::Value* f32_erf(llvm::IRBuilderBase& b, llvm::Value* x);

}  // namespace tyche::codegen::detail
