// Internal to the LLVM backend: tile_dot (ir/expr.h), the matrix product of CPUs' tile
// instructions.
//
// - As values (any CPU): each row of the tile is K/G group_dots (llvm_group_dot.h), so a CPU with
//   VNNI or AVX512-BF16 runs those instructions and any other the portable form.
// - On tiles in memory, with AMX (amx-tile and amx-int8 or amx-bf16): tileloadd, tdpbusd or
//   tdpbf16ps (one per 64 bytes of a's rows), tilestored. LLVM configures the tile registers
//   (ldtilecfg) from the shapes. The process must be allowed the tile state first
//   (runtime/cpu_state.h).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <string>

#include "codegen/llvm/llvm_group_dot.h"
#include "ir/op.h"

namespace tyche::codegen::detail {

llvm::Value* emit_tile_dot(llvm::IRBuilderBase& b, const std::string& features,
                           const GroupDotOperands& ops, const ir::TileDotShape& shape);

// The AMX instruction for these types and shape on a CPU with `features` ("tdpbusd", "tdpbf16ps"),
// or "" where emit_amx_tile_dot cannot be used: M <= 16 rows, N * 4 <= 64 bytes of acc per row,
// a's rows 64 bytes or a multiple of 64.
std::string amx_instruction(DataType acc, DataType a, DataType b, const ir::TileDotShape& shape,
                            const std::string& features);

// A tile in memory: rows of consecutive elements, `stride` bytes apart.
struct TileInMemory {
  llvm::Value* address;
  int64_t stride;
};
// out = acc + a x b (b packed as tile_dot's), where amx_instruction names an instruction.
void emit_amx_tile_dot(llvm::IRBuilderBase& b, const std::string& instruction,
                       const ir::TileDotShape& shape, int a_bytes, TileInMemory acc, TileInMemory a,
                       TileInMemory bm, TileInMemory out);

}  // namespace tyche::codegen::detail
