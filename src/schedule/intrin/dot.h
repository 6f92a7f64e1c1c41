// Private to src/schedule/: the shape every CPU dot-product intrinsic shares (intrin/x86_*.cc).
//
//   desc:  A[G] (activations), B[N, G] (weights, N rows of one group each), C[N] (accumulators)
//          for i in N, k in G: block(vi S, vk R): C[vi] = C[vi] + acc(A[vk]) * acc(B[vi, vk])
//   impl:  C[0:N] = group_dot(C[0:N], A[0:G], B[0:N, 0:G] as one vector of N*G)
//
// The weights a program tensorizes with these are best packed so that each tile of N x G is
// contiguous ([N/n][K/g][n][g], as oneDNN and TVM pack them for VNNI): B is then one load (the
// flattened row and column vectors fold back into one ramp).
#pragma once

#include <string>
#include <vector>

#include "schedule/tensor_intrin.h"

namespace tyche::schedule::intrin {

// An intrinsic's description or implementation: `body` under a root block, `params` its buffers.
ir::PrimFunc intrin_func(const std::string& name, std::vector<ir::Buffer> params, ir::Stmt body);

TensorIntrin dot_intrin(const std::string& name, int lanes, int group, DataType a, DataType b,
                        DataType acc, std::vector<std::vector<std::string>> requires_any);

// The CPUs' tile products (AMX):
//   desc:  A[M, K] (activations), B[K/G, N, G] (weights, packed in groups of G = 4 bytes), C[M, N]
//          for i in M, j in N, k in K: C[vi, vj] = C[vi, vj] + acc(A[vi, vk]) * acc(B[vk // G, vj,
//          vk % G])
//   impl:  C = tile_dot(C, A, B, M), each buffer one vector of its elements in order
// B's tile is a slice of the weights packed for the dot intrinsics ([N/n][K/G][n][G] with n = N):
// K/G rows of N * G elements, consecutive, as AMX loads them.
TensorIntrin tile_intrin(const std::string& name, int rows, int lanes, int depth, DataType a,
                         DataType b, DataType acc,
                         std::vector<std::vector<std::string>> requires_any);

// The intrinsics of each ISA, in their own files.
std::vector<TensorIntrin> x86_vnni_intrins();
std::vector<TensorIntrin> x86_avx2_intrins();
std::vector<TensorIntrin> x86_avx512_bf16_intrins();
std::vector<TensorIntrin> x86_amx_intrins();
// NVIDIA tensor cores (cuda_wmma.cc): fill, loads, update and store, one intrinsic each, for
// WMMA (cuda_wmma_*) and for mma.sync with ldmatrix (cuda_mma_*).
std::vector<TensorIntrin> cuda_wmma_intrins();
std::vector<TensorIntrin> cuda_mma_intrins();

}  // namespace tyche::schedule::intrin
