// GPU lowering: a scheduled PrimFunc whose loops are bound to blockIdx / threadIdx -> kernels a
// GPU back end prints (CUDA C, OpenCL C) with one launch description each.
//
// The pipeline (lower_gpu): cross-thread reductions become a per-thread partial and a tree over
// shared memory; blocks -> loops (bindings kept); intermediates compacted; then each top-level
// statement bound to blockIdx is a kernel: its thread loops are unified (every loop bound to
// threadIdx.x is the same thread index; a loop shorter than the launch is guarded), vthreads run
// serially, shared buffers move to the kernel's top; the CPU passes that apply run (flatten,
// simplify, vectorize, unroll); software-pipelined loops get versions of their shared copies;
// barriers go where a thread reads shared memory another may have
// written (or writes what another may still read). Global buffers between kernels are the
// program's intermediates, which the host allocates.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "lower/lower.h"

namespace tyche::lower {

// What the thread indices are called in a kernel's body: these variables, one per tag used.
struct ThreadIndex {
  std::string tag;  // "blockIdx.x", "threadIdx.y", ...
  ir::Var var;
};

struct GpuKernel {
  std::string name;  // <function>_kernel<k>
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::vector<ThreadIndex> indices;
  std::vector<ir::Buffer> buffers;  // the global buffers it accesses, in the program's order
  std::vector<ir::Buffer> shared;   // its shared-memory buffers (1-d, constant sizes)
  int64_t shared_bytes = 0;         // kernel_resources(*this).shared_bytes (gpu_resources.h)
  // Its fragments are arrays of 16 x 16 tiles, each a thread's registers (lowered for CUDA by
  // lower_warp_matrix_ops); otherwise a fragment is a plain array of its elements.
  bool fragment_tiles = false;
  ir::Stmt body;  // what one thread runs
};

struct GpuProgram {
  std::string name;
  std::vector<ir::Buffer> params;  // the function's, flattened, outputs last
  int num_outputs = 0;
  std::vector<ir::Buffer> intermediates;  // global buffers the host allocates between kernels
  std::vector<GpuKernel> kernels;         // launched in order
  std::vector<std::string> notes;
};

// Throws tyche::Error with one line where the program cannot run on a GPU (a statement outside
// every kernel, a thread extent that is not constant, a barrier needed under a branch some
// threads skip, ...).
struct GpuLowerOptions {
  // CUDA's warp-level instructions: cross-thread reductions combine within warps by shuffles, and
  // the tensor-core intrinsics' nests become WMMA instructions (elsewhere they run as loops).
  bool cuda = false;
  // CUDA's compute capability (80: sm_80): cp.async from 80 on.
  int sm = 80;
  // What a target of `kind` ("cuda", "opencl") and compute capability asks for: the one rule the
  // builders and VerifyGPUCode both lower by (lower/ does not know targets).
  static GpuLowerOptions for_target(const std::string& kind, int compute_capability) {
    return {.cuda = kind == "cuda", .sm = compute_capability};
  }
};
GpuProgram lower_gpu(const ir::PrimFunc& func, const LowerOptions& options = {},
                     const GpuLowerOptions& gpu = {});

// ---- the GPU passes, in pipeline order (each also callable alone for tests) ----
// A reduction block whose reduce iterators use a loop bound to threadIdx: each thread folds its
// share into a local partial, the partials go to shared memory and are combined as a tree; every
// thread then stores the result (with warp_shuffles, by warp shuffles where the reduction allows:
// gpu_cross_thread_reduction.cc). Runs on blocks (before lower_blocks).
ir::PrimFunc lower_cross_thread_reductions(const ir::PrimFunc& func, bool warp_shuffles = false);
// Each kernel as one nest: loops bound to blockIdx.x/y/z then threadIdx.x/y/z (launch extents:
// the largest loop of each tag), then its shared Allocates, then the body in which every thread
// loop became its index (guarded where shorter) and vthreads serial loops. Shared buffers move to
// the kernel's top; another buffer allocated inside a kernel is shared by the block's threads
// (scope shared) unless it lies under a thread loop (scope local, one per thread).
ir::PrimFunc bind_gpu_threads(const ir::PrimFunc& func);
// CUDA: the nests of the tensor-core intrinsics (annotated warp_matrix) as warp_matrix_* calls on
// fragment arrays of 16 x 16 tiles; a kernel using them launches threadIdx.x as one warp's 32
// lanes (gpu_warp_matrix.cc). Runs on bind_gpu_threads' kernels, before flattening.
ir::PrimFunc lower_warp_matrix_ops(const ir::PrimFunc& func);
// Loops annotated software_pipeline_stages: the shared buffers their leading copies fill get one
// version per stage, the copy of a later iteration issued before this one's reads; with
// async_copy those copies are cp.async (gpu_software_pipeline.cc). Runs on flattened buffers,
// before the barriers.
ir::PrimFunc pipeline_shared_copies(const ir::PrimFunc& func, bool async_copy);
// Inserts thread_barrier() evaluations into bind_gpu_threads' kernels (see gpu_barriers.cc).
ir::PrimFunc insert_thread_barriers(const ir::PrimFunc& func);
// The kernels of a function finished by the passes above: launch nests peeled into GpuKernels,
// each with its shared bytes sized by kernel_resources (gpu_resources.h). `fragment_tiles`: the
// fragments are lower_warp_matrix_ops' tile arrays.
GpuProgram split_kernels(const ir::PrimFunc& func, bool fragment_tiles = false);

}  // namespace tyche::lower
