// MultiLevelTilingWithIntrin: MultiLevelTiling whose innermost tile is a CPU dot-product tensor
// intrinsic (schedule/intrin/dot.h), the weights packed for it (multi_level_tiling_with_intrin.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/tensor_intrin.h"
#include "tune/space/multi_level_tiling.h"

namespace tyche::tune {

// How a block is one of the dot or tile intrinsics' multiply-accumulates: its output's last
// iterator j, the reduce iterator k its activations are read along, the read that holds the
// weights (with the dimensions j and k index), and for a tile intrinsic the iterator i of the
// output's and the activations' second-last dimensions (the tile's rows).
struct IntrinMatch {
  const ir::VarNode* j = nullptr;
  const ir::VarNode* k = nullptr;
  const ir::VarNode* i = nullptr;  // tile intrinsics only
  size_t weights = 0;
  int weight_j = 0, weight_k = 0;
  int64_t lanes = 0, group = 0;               // the intrinsic's N and the weights' packing group G
  int64_t depth = 0;                          // the k of one intrinsic: G for a dot, K for a tile
  int64_t rows = 0;                           // the tile's M; 0 for a dot
  size_t j_iter = 0, k_iter = 0, i_iter = 0;  // their positions among the block's iterators
  int64_t j_extent = 0, k_extent = 0, i_extent = 1;
  static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
  // The iterations the intrinsics compute, padding included: j, k and (for a tile) i rounded up.
  int64_t padded_work() const {
    return round_up(j_extent, lanes) * round_up(k_extent, depth) *
           (rows ? round_up(i_extent, rows) : i_extent);
  }
  // What the rule minimizes: the padded work, a tile's at an eighth (AMX's multiplier does 1024
  // int8 or 512 bfloat16 products a cycle, eight times two AVX-512 VNNI or BF16 ports).
  double cost() const { return static_cast<double>(padded_work()) / (rows ? 8.0 : 1.0); }
  bool needs_padding() const {
    return j_extent % lanes != 0 || k_extent % depth != 0 || (rows && i_extent % rows != 0);
  }
};
// Nullopt unless `block` accumulates (with an init) products of `intrin`'s types into its output
// over constant extents (which the intrinsic's shape need not divide: the rule pads them).
std::optional<IntrinMatch> match_dot_intrin(const schedule::Schedule& sch,
                                            const schedule::BlockRV& block,
                                            const schedule::TensorIntrin& intrin);

class MultiLevelTilingWithIntrin : public MultiLevelTiling {
 public:
  // `intrins`: the one whose types the block has and whose cost (IntrinMatch::cost) is least
  // is used (the earlier on a tie).
  MultiLevelTilingWithIntrin(std::vector<std::string> intrins, MultiLevelTilingConfig config);
  std::string name() const override { return "MultiLevelTilingWithIntrin"; }
  std::vector<schedule::Schedule> apply(schedule::Schedule sch,
                                        const schedule::BlockRV& block) override;

 private:
  std::vector<Step> intrin_steps(const IntrinMatch& m, const std::string& name) const;
  std::vector<TilingState> pack_weights(TilingState s, const IntrinMatch& m) const;
  std::vector<TilingState> tile_for_intrin(TilingState s, const IntrinMatch& m) const;

  std::vector<std::string> intrins_;
};

// The CPU dot and tile intrinsics a CPU with `features` (LLVM's names) has, best first: AMX's
// tiles, VNNI at 512 bits, at 256 (AVX-VNNI), AVX2's portable form where there is no VNNI,
// AVX512-BF16.
std::vector<std::string> cpu_dot_intrins(const std::vector<std::string>& features);

// One line naming the dot intrinsics whose types some block of `func` has but the CPU lacks
// (with the features each needs) and what computes those blocks instead; "" when it lacks none.
std::string intrinsic_note(const ir::PrimFunc& func, const std::string& cpu_name,
                           const std::vector<std::string>& features);

ScheduleRulePtr multi_level_tiling_with_intrin(std::vector<std::string> intrins,
                                               MultiLevelTilingConfig config);

}  // namespace tyche::tune
