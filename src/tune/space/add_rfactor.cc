// AddRFactor: a reduction with little spatial work and a long reduction (a norm, a row sum of a
// short matrix) has nothing to parallelize; rfactor turns part of the reduction into a spatial
// axis. The fused reduction loop is split by a sampled factor and either part factored out,
// besides the design that leaves the block alone.
#include "ir/annotation_keys.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::Schedule;

namespace {

class AddRFactor : public ScheduleRule {
 public:
  AddRFactor(int64_t max_jobs_per_core, int64_t max_innermost_factor)
      : max_jobs_per_core_(max_jobs_per_core), max_innermost_factor_(max_innermost_factor) {}
  std::string name() const override { return "AddRFactor"; }
  void initialize(const TuneContext& context) override {
    num_cores_ = std::max(1, context.target.num_cores);
    max_parallel_extent_ = max_jobs_per_core_ * num_cores_;
  }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    std::vector<Schedule> out;
    std::optional<ReductionLoops> loops;
    if (max_jobs_per_core_ > 0 && !is_root_block(sch, block)) loops = reduction_loops(sch, block);
    if (!loops || !worth_it(sch, block, *loops)) {
      out.push_back(std::move(sch));
      return out;
    }
    Schedule split_sch = sch.copy();
    out.push_back(std::move(sch));  // the block as it is
    auto fused = fuse_reduction_loops(split_sch, *loops);
    if (!fused) return out;
    auto factors = split_sch.sample_perfect_tile(*fused, 2, max_innermost_factor_);
    if (!factors.ok()) return out;
    auto parts = split_sch.split(*fused, {factors.value()[0], factors.value()[1]});
    if (!parts.ok()) return out;
    // The new axis goes last in the partial-result buffer (TVM's choice); RandomComputeLocation
    // then places the rfactor block, the producer of the annotated block.
    int factor_axis = static_cast<int>(loops->spatial.size());
    for (const schedule::LoopRV& part : parts.value()) {
      Schedule rf = split_sch.copy();
      if (rf.rfactor(part, factor_axis).ok() &&
          rf.annotate(block, ir::ann::kRandomComputeProducer, int64_t{1}).ok())
        out.push_back(std::move(rf));
    }
    return out;
  }

 private:
  // TVM's condition: a block MultiLevelTiling will tile only when its spatial loops cannot keep
  // the cores busy; any other reduction when it is longer than the core count.
  bool worth_it(const Schedule& sch, const BlockRV& block, const ReductionLoops& loops) const {
    if (needs_multi_level_tiling(sch, block))
      return loops.spatial_extent < loops.reduce_extent &&
             loops.spatial_extent <= max_parallel_extent_;
    return loops.reduce_extent > num_cores_;
  }

  int64_t max_jobs_per_core_, max_innermost_factor_;
  int64_t num_cores_ = 1;
  int64_t max_parallel_extent_ = 16;
};

}  // namespace

ScheduleRulePtr add_rfactor(int64_t max_jobs_per_core, int64_t max_innermost_factor) {
  return std::make_shared<AddRFactor>(max_jobs_per_core, max_innermost_factor);
}

}  // namespace tyche::tune
