#include "codegen/llvm/llvm_tile_dot.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <vector>

namespace tyche::codegen::detail {

llvm::Value* emit_tile_dot(llvm::IRBuilderBase& b, const std::string& features,
                           const GroupDotOperands& o, const ir::TileDotShape& s) {
  std::vector<llvm::Value*> rows;
  for (int m = 0; m < s.m; ++m) {
    llvm::Value* acc = s.m == 1 ? o.acc : lanes_of(b, o.acc, m * s.n, s.n);
    for (int q = 0; q < s.k / s.g; ++q) {
      GroupDotOperands row{acc,
                           lanes_of(b, o.a, m * s.k + q * s.g, s.g),
                           lanes_of(b, o.b, q * s.n * s.g, s.n * s.g),
                           o.acc_t.with_lanes(s.n),
                           o.a_t.with_lanes(s.g),
                           o.b_t.with_lanes(s.n * s.g)};
      acc = emit_group_dot(b, features, row);
    }
    rows.push_back(acc);
  }
  return concat_lanes(b, std::move(rows));
}

std::string amx_instruction(DataType acc, DataType a, DataType bt, const ir::TileDotShape& s,
                            const std::string& features) {
  if (!has_feature(features, "amx-tile")) return "";
  const int a_row = s.k * a.bits() / 8;
  if (s.m > 16 || s.n > 16 || (a_row > 64 && a_row % 64) || a_row % 4) return "";
  if (acc.element_of() == kInt32 && a.element_of() == DataType::UInt(8) &&
      bt.element_of() == DataType::Int(8) && has_feature(features, "amx-int8"))
    return "tdpbusd";
  if (acc.element_of() == kFloat32 && a.is_bfloat16() && bt.is_bfloat16() &&
      has_feature(features, "amx-bf16"))
    return "tdpbf16ps";
  return "";
}

void emit_amx_tile_dot(llvm::IRBuilderBase& b, const std::string& instruction,
                       const ir::TileDotShape& s, int a_bytes, TileInMemory acc, TileInMemory a,
                       TileInMemory bm, TileInMemory out) {
  llvm::Module* mod = b.GetInsertBlock()->getModule();
  auto fn = [&](llvm::Intrinsic::ID id) { return llvm::Intrinsic::getDeclaration(mod, id); };
  auto i16 = [&](int64_t v) { return b.getInt16(static_cast<uint16_t>(v)); };
  auto load = [&](int64_t rows, int64_t bytes, llvm::Value* address, int64_t stride) {
    return b.CreateCall(fn(llvm::Intrinsic::x86_tileloadd64_internal),
                        {i16(rows), i16(bytes), address, b.getInt64(stride)});
  };
  const int64_t c_bytes = 4 * s.n, a_row = static_cast<int64_t>(s.k) * a_bytes,
                chunk = std::min<int64_t>(a_row, 64);
  llvm::Intrinsic::ID dp = instruction == "tdpbusd" ? llvm::Intrinsic::x86_tdpbusd_internal
                                                    : llvm::Intrinsic::x86_tdpbf16ps_internal;
  llvm::Value* c = load(s.m, c_bytes, acc.address, acc.stride);
  // A chunk of 64 bytes of a's rows meets 16 rows of packed b (each group is 4 bytes).
  for (int64_t at = 0; at < a_row; at += chunk) {
    llvm::Value* a_tile =
        load(s.m, chunk, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), a.address, at), a.stride);
    llvm::Value* b_tile = load(
        chunk / 4, c_bytes,
        b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), bm.address, at / 4 * bm.stride), bm.stride);
    c = b.CreateCall(fn(dp), {i16(s.m), i16(c_bytes), i16(chunk), c, a_tile, b_tile});
  }
  b.CreateCall(fn(llvm::Intrinsic::x86_tilestored64_internal),
               {i16(s.m), i16(c_bytes), out.address, b.getInt64(out.stride), c});
}

}  // namespace tyche::codegen::detail
