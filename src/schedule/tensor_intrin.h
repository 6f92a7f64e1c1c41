// Tensor intrinsics for tensorize (TVM's TensorIntrin): a description of a small computation and
// an implementation of the same computation. tensorize matches a loop nest against `desc` and
// replaces it by `impl`, with `impl`'s parameters bound to the matched regions of the program's
// buffers.
//
// Shape of an intrinsic:
// - desc: a PrimFunc whose root block holds a chain of loops around exactly one block (the
//   computation). tensorize compares the program's loops, block iterators (kinds, domains,
//   bindings), init and body with it, modulo renaming of variables and buffers; desc buffers
//   match regions of program buffers (extra leading program dimensions must have extent 1).
// - impl: a PrimFunc with params of the same count, shapes and dtypes (position i of impl
//   stands for position i of desc) whose root block body replaces the matched computation.
//
// The registry is process-wide and thread-safe. The built-in intrinsics are registered on the
// first call of any function below (an explicit table, no static initializers):
// - "dot_4x4x4_f32": C[i, j] += A[i, k] * B[k, j] over 4x4x4 float32 (reduce iterator k, no
//   init); impl loops k outermost with i and j unrolled.
// - "copy_4_f32": B[i] = A[i] over 4 float32; impl is four unrolled stores.
// - The CPUs' dot products (intrin/dot.h), one file per ISA, each implemented by ir::group_dot:
//   "x86_avx512_vnni_dot_16x4_u8s8", "x86_avx_vnni_dot_8x4_u8s8", "x86_avx2_dot_8x4_u8s8",
//   "x86_avx512_bf16_dot_16x2_bf16", "x86_avx512_bf16_dot_8x2_bf16".
// - AMX's tile products (intrin/dot.h, intrin/x86_amx.cc), implemented by ir::tile_dot:
//   "x86_amx_tile_16x16x64_u8s8", "x86_amx_tile_16x16x32_bf16".
// - NVIDIA's tensor cores through WMMA (intrin/cuda_wmma.cc), one intrinsic per instruction:
//   "cuda_wmma_fill_16x16_f32", "cuda_wmma_load_{a,b}_16x16_{f16,bf16}",
//   "cuda_wmma_mma_16x16x16_{f16,bf16}f32", "cuda_wmma_store_16x16_f32"; each implementation is
//   its description's loops annotated warp_matrix (ir/annotation_keys.h), which the CUDA lowering
//   emits as the instruction.
// - The same through mma.sync m16n8k16 with ldmatrix (intrin/cuda_wmma.cc, fragments in the
//   mma.* scopes): "cuda_mma_fill_16x16_f32", "cuda_mma_load_{a,b}_16x16_{f16,bf16}",
//   "cuda_mma_sync_16x16x16_{f16,bf16}f32", "cuda_mma_store_16x16_f32".
#pragma once

#include <string>
#include <vector>

#include "ir/function.h"

namespace tyche::schedule {

struct TensorIntrin {
  std::string name;
  ir::PrimFunc desc;
  ir::PrimFunc impl;
  // The CPU features (LLVM's names) that run impl as the instruction it stands for: any one of
  // these sets, all of its features. Empty: any CPU. Elsewhere impl still runs, as portable code.
  std::vector<std::vector<std::string>> requires_any;
  // Whether a CPU with these features (LLVM's names) has the instruction.
  bool available_on(const std::vector<std::string>& features) const;
};

// Registers an intrinsic. Throws tyche::Error when the name is taken (unless `override`), when
// desc and impl params differ in count, shape or dtype, or when desc is not a root block holding
// a chain of loops around one block.
void register_tensor_intrin(const std::string& name, ir::PrimFunc desc, ir::PrimFunc impl,
                            bool override = false);
// The intrinsic of that name, or nullptr. The pointer stays valid for the life of the process
// (also after an override, which registers a new entry).
const TensorIntrin* find_tensor_intrin(const std::string& name);
// Registered names, sorted.
std::vector<std::string> tensor_intrin_names();

}  // namespace tyche::schedule
