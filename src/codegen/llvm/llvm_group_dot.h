// Internal to the LLVM backend: group_dot (ir/expr.h) as the CPU's tensor instruction where the
// function's target features have one, else as widening multiplies and adds any CPU runs (exact
// for integers: the products of 8- and 16-bit integers are summed in int32, never saturated).
//
// - u8 x s8 -> int32, groups of 4: vpdpbusd, 16 lanes with AVX512-VNNI, 8 or 4 with AVX512-VNNI +
//   AVX512-VL or with AVX-VNNI (the VEX form). A wider group_dot is split into native pieces.
// - bfloat16 x bfloat16 -> float32, groups of 2: vdpbf16ps, 16 lanes with AVX512-BF16, 8 or 4 with
//   AVX512-BF16 + AVX512-VL. It flushes subnormal inputs and results to zero.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <string>
#include <vector>

#include "support/dtype.h"

namespace tyche::codegen::detail {

struct GroupDotOperands {
  // Values as the emitter computes them, except bfloat16 operands: their i16 bits.
  llvm::Value *acc, *a, *b;
  DataType acc_t, a_t, b_t;
};

// Whether an LLVM feature string ("+avx512vnni,+avx512vl,...") enables `name`.
bool has_feature(const std::string& features, const char* name);
// Lanes [first, first + count) of a vector; vectors' lanes one after another.
llvm::Value* lanes_of(llvm::IRBuilderBase& b, llvm::Value* v, int first, int count);
llvm::Value* concat_lanes(llvm::IRBuilderBase& b, std::vector<llvm::Value*> parts);

// `features`: the function's LLVM feature string ("+avx512vnni,+avx512vl,...").
llvm::Value* emit_group_dot(llvm::IRBuilderBase& b, const std::string& features,
                            const GroupDotOperands& ops);

// The instruction emit_group_dot uses for these types on a CPU with `features` ("vpdpbusd",
// "vdpbf16ps"), or "" where it emits plain vector code.
std::string group_dot_instruction(DataType acc, DataType a, DataType b,
                                  const std::string& features);

}  // namespace tyche::codegen::detail
