// Internal to the LLVM backend: conversions between float and the 16-bit float formats, written
// as integer IR. LLVM lowers `fptrunc`/`fpext` of half and bfloat to calls into compiler-rt
// (__truncsfbf2, __extendhfsf2, …) on CPUs without conversion instructions; a JIT or an exported
// object would have to find those. These sequences need nothing, vectorize, and give the same
// bits as the hardware: round to nearest even, subnormals kept, NaNs quieted.
//
// bfloat16 always takes this path: AVX512-BF16's vcvtneps2bf16 flushes subnormals to zero, so
// the native instruction would make results depend on the machine.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace tyche::codegen::detail {

// float (or <N x float>) -> the i16 (<N x i16>) bits of the nearest binary16 / bfloat16.
llvm::Value* f32_to_f16_bits(llvm::IRBuilderBase& b, llvm::Value* f);
llvm::Value* f32_to_bf16_bits(llvm::IRBuilderBase& b, llvm::Value* f);
// The bits of a binary16 / bfloat16 (i16 or <N x i16>) -> float (exact).
llvm::Value* f16_bits_to_f32(llvm::IRBuilderBase& b, llvm::Value* h);
llvm::Value* bf16_bits_to_f32(llvm::IRBuilderBase& b, llvm::Value* h);
// double -> float rounded to odd: then rounding that float to any format of at most 22
// significant bits (binary16, bfloat16) gives what one rounding from the double would.
llvm::Value* f64_to_f32_round_to_odd(llvm::IRBuilderBase& b, llvm::Value* d);

}  // namespace tyche::codegen::detail
