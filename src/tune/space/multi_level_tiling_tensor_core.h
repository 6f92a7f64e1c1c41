// MultiLevelTilingTensorCore (MetaSchedule's rule of that name, the Use-Tensor-Core module): a
// matrix product of float16 or bfloat16 operands accumulated in float32 runs on NVIDIA's tensor
// cores through 16 x 16 x 16 intrinsics (schedule/intrin/cuda_wmma.cc) of each family the
// architecture has: mma.sync with ldmatrix (sm_80 and later) and WMMA, each its own design (as
// TVM's intrinsic groups).
#pragma once

#include <optional>
#include <string>

#include "tune/space/multi_level_tiling.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

// How a block is C[.., i, j] += float(A[.., i, k]) * float(B[.., k, j]): its iterators and the
// reads holding A and B.
struct TensorCoreMatch {
  const ir::VarNode *i = nullptr, *j = nullptr, *k = nullptr;
  size_t a = 0, b = 0;  // read indices
  std::string type;     // "f16" or "bf16" (sm_70 and later; bfloat16 from sm_80)
  bool padded = false;  // whether i, j and k need padding to multiples of 16
};
// Nullopt unless the block is one, of types architecture `sm` (80: sm_80) has tensor cores for.
std::optional<TensorCoreMatch> match_tensor_core(const schedule::Schedule& sch,
                                                 const schedule::BlockRV& block, int sm);
// The compute capability of a CUDA target's -arch ("sm_90a": 90); 80 (cuda_arch's default) when
// it names none.
int cuda_compute_capability(const target::Target& target);

class MultiLevelTilingTensorCore : public MultiLevelTiling {
 public:
  // `families`: "mma" and / or "wmma"; empty: those `sm` has (mma from sm_80).
  MultiLevelTilingTensorCore(MultiLevelTilingConfig config, int sm,
                             std::vector<std::string> families = {});
  std::string name() const override { return "MultiLevelTilingTensorCore"; }
  std::vector<schedule::Schedule> apply(schedule::Schedule sch,
                                        const schedule::BlockRV& block) override;

 private:
  std::vector<TilingState> tile(TilingState s, const TensorCoreMatch& m) const;
  std::vector<TilingState> stage_operands(TilingState s, const TensorCoreMatch& m,
                                          const std::string& family) const;
  std::vector<TilingState> tensorize(TilingState s, const TensorCoreMatch& m,
                                     const std::string& family) const;

  int sm_;
  std::vector<std::string> families_;
};

// TVM's defaults for cuda-tensorcore: structure "SSSRRSRS", the first three levels bound to
// blockIdx.y, blockIdx.x and threadIdx.y (warps), inner tiles of at most 4, shared read caches at
// level 4 with fragments at the last R level, the accumulator's fragments written back per warp
// (write reuse at level 3).
MultiLevelTilingConfig tensor_core_tiling();
ScheduleRulePtr multi_level_tiling_tensor_core(int sm = 80,
                                               MultiLevelTilingConfig config = tensor_core_tiling(),
                                               std::vector<std::string> families = {});

}  // namespace tyche::tune
