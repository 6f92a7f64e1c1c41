// Plain C++ reference implementations of the preset operators (docs/workloads.md): loops over host
// tensors that never go through the IR, so they can serve as the correctness oracle for every
// scheduled and compiled program. Layouts, parameter tuples and FLOP conventions follow
// docs/workloads.md; all tensors are float32, padding is zero padding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "workloads/families.h"

namespace tyche::workloads {

// Shapes of an operator's inputs (in argument order) and outputs.
struct TensorShapes {
  std::vector<std::vector<int64_t>> inputs, outputs;
};

// The 14 operator names in docs/workloads.md order:
// GMM C1D C2D C3D GRP DIL DEP T2D CAP NRM SFM CBR TBG DENSE_RELU.
const std::vector<std::string>& reference_ops();

// Shapes for op `op` with the parameter tuple of docs/workloads.md (GMM: {B,N,M,K}, ...). GRP and
// DIL take the 8-value C2D tuple {N,H,W,CI,CO,K,stride,pad}; their groups (4) and dilation (2) are
// fixed. Op names match case-insensitively. Throws tyche::Error for an unknown op, a wrong
// parameter count, a non-positive extent/stride, a negative pad or an empty output.
TensorShapes reference_shapes(const std::string& op, const std::vector<int64_t>& params);

// Computes the outputs from inputs shaped as reference_shapes() says, typed as `types` says
// (float32 by default). Reductions accumulate in double (exact for the typed variants' 8-bit and
// bfloat16 products); results are stored in the output's type. Throws tyche::Error for a wrong
// input count, dtype or shape.
std::vector<runtime::NDArray> run_reference(const std::string& op,
                                            const std::vector<int64_t>& params,
                                            const std::vector<runtime::NDArray>& inputs,
                                            const Precision& types = precisions()[0]);

// FLOPs: 2 per multiply-accumulate of a reduction, 1 per output element of each element-wise
// stage; padding counts nothing. reference.cc documents the count per op.
double reference_flop(const std::string& op, const std::vector<int64_t>& params);

}  // namespace tyche::workloads
