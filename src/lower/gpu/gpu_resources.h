// What one lowered GPU kernel takes of a GPU, sized as the back ends declare it. This is the one
// place the sizing rules live: split_kernels records a kernel's shared bytes with it, the printers
// (codegen/gpu) declare their arrays by its rules, the launch plans carry its figure, and
// VerifyGPUCode (tune/postproc) lowers a candidate and refuses it when one of its kernels
// exceeds the target's limits by it.
#pragma once

#include <cstdint>

#include "lower/gpu/gpu_lower.h"

namespace tyche::lower {

// Every shared array is declared this aligned (a tensor core's tile in shared memory must be
// 32-byte aligned), in both dialects, so a kernel's shared arrays lie in this layout.
inline constexpr int64_t kSharedArrayAlignment = 32;

// Bytes one element of `dtype` takes in a GPU array (16-bit floats as their bits, bool in a byte).
int64_t gpu_element_bytes(DataType dtype);
// Bytes a lowered (1-d) buffer's array holds. Throws tyche::Error for a size that is not constant.
int64_t gpu_array_bytes(const ir::Buffer& buffer);
// 32-bit registers one thread holds of one 16 x 16 fragment tile (GpuKernel::fragment_tiles):
// float32 accumulators 8 in both families; WMMA's float16 operands 8 (two halves a word),
// bfloat16 ones 4; mma.sync's operands 4 (A one m16k16 fragment, B two k16n8 ones).
int fragment_tile_registers(const ir::Buffer& fragment);

struct GpuKernelResources {
  int64_t threads = 1;  // per block: the block's extents multiplied
  // Per block: the kernel's shared arrays (GpuKernel::shared, pipelined ones with all their
  // versions) in their order, each starting at a multiple of kSharedArrayAlignment.
  int64_t shared_bytes = 0;
  // Per thread: the most bytes its local arrays (fragment tiles as their registers) hold in scope
  // at once, as the printed scopes nest them.
  int64_t local_bytes = 0;
  int64_t vector_bytes = 0;  // the widest vector load or store (lanes x element bytes); 0 without
};
// Throws tyche::Error for an array whose size is not constant.
GpuKernelResources kernel_resources(const GpuKernel& kernel);

}  // namespace tyche::lower
