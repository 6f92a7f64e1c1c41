// MultiLevelTilingWithIntrin: MultiLevelTiling whose innermost tile is a CPU dot-product tensor
// intrinsic (schedule/intrin/dot.h), the weights packed for it (multi_level_tiling_with_intrin.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/tensor_intrin.h"
#include "tune/space/multi_level_tiling.h"

namespace tyche::tune {

// How a block is one of the dot intrinsics' multiply-accumulates: its output's last iterator j,
// the reduce iterator k its activations are read along, and the read that holds the weights
// (with the dimensions j and k index).
struct IntrinMatch {
  const ir::VarNode* j = nullptr;
  const ir::VarNode* k = nullptr;
  size_t weights = 0;
  int weight_j = 0, weight_k = 0;
  int64_t lanes = 0, group = 0;  // the intrinsic's N and G
  size_t j_iter = 0, k_iter = 0;  // their positions among the block's iterators
  int64_t j_extent = 0, k_extent = 0;
  // The iterations the intrinsic computes, padding included: j and k rounded up to N and G.
  int64_t padded_work() const { return (j_extent + lanes - 1) / lanes * lanes * ((k_extent + group - 1) / group * group); }
  bool needs_padding() const { return j_extent % lanes != 0 || k_extent % group != 0; }
};
// Nullopt unless `block` accumulates (with an init) products of `intrin`'s types into its output
// over constant extents (which N and G need not divide: the rule pads them).
std::optional<IntrinMatch> match_dot_intrin(const schedule::Schedule& sch, const schedule::BlockRV& block,
                                            const schedule::TensorIntrin& intrin);

class MultiLevelTilingWithIntrin : public MultiLevelTiling {
 public:
  // `intrins`: the one whose types the block has and whose shape pads it least is used (the
  // earlier on a tie).
  MultiLevelTilingWithIntrin(std::vector<std::string> intrins, MultiLevelTilingConfig config);
  std::string name() const override { return "MultiLevelTilingWithIntrin"; }
  std::vector<schedule::Schedule> apply(schedule::Schedule sch, const schedule::BlockRV& block) override;

 private:
  std::vector<Step> intrin_steps(const IntrinMatch& m, const std::string& name) const;
  std::vector<TilingState> pack_weights(TilingState s, const IntrinMatch& m) const;
  std::vector<TilingState> tile_for_intrin(TilingState s, const IntrinMatch& m) const;

  std::vector<std::string> intrins_;
};

// The CPU dot intrinsics a CPU with `features` (LLVM's names) has, best first: VNNI at 512 bits,
// at 256 (AVX-VNNI), AVX2's portable form where there is no VNNI, AVX512-BF16.
std::vector<std::string> cpu_dot_intrins(const std::vector<std::string>& features);

// One line naming the dot intrinsics whose types some block of `func` has but the CPU lacks
// (with the features each needs) and what computes those blocks instead; "" when it lacks none.
std::string intrinsic_note(const ir::PrimFunc& func, const std::string& cpu_name, const std::vector<std::string>& features);

ScheduleRulePtr multi_level_tiling_with_intrin(std::vector<std::string> intrins, MultiLevelTilingConfig config);

}  // namespace tyche::tune
