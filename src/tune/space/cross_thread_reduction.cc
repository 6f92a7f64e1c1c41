// CrossThreadReduction (GPU): a reduction with little spatial work gets its fused reduction loop
// split by a sampled thread count and the inner part bound to threadIdx.x, so the threads of a
// block share the reduction (the GPU back end lowers it to a cross-thread reduction). Branches:
// the block as it is, and bound.
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::Schedule;

namespace {

class CrossThreadReduction : public ScheduleRule {
 public:
  explicit CrossThreadReduction(std::vector<int64_t> extents) : all_extents_(std::move(extents)) {}
  std::string name() const override { return "CrossThreadReduction"; }
  void initialize(const TuneContext& context) override {
    gpu_ = context.target.is_gpu();
    max_threads_ = context.target.max_threads_per_block;
    extents_.clear();
    for (int64_t e : all_extents_)
      if (e <= max_threads_) extents_.push_back(e);
  }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    std::vector<Schedule> out;
    std::optional<ReductionLoops> loops;
    if (gpu_ && !extents_.empty() && !is_root_block(sch, block))
      loops = reduction_loops(sch, block);
    // Worth it when the spatial loops alone cannot fill a block's threads.
    if (!loops || loops->spatial_extent >= max_threads_ || loops->reduce_extent <= 1 ||
        any_bound(sch, *loops)) {
      out.push_back(std::move(sch));
      return out;
    }
    Schedule bound = sch.copy();
    out.push_back(std::move(sch));
    auto fused = fuse_reduction_loops(bound, *loops);
    if (!fused) return out;
    auto threads = bound.sample_categorical(extents_, uniform_probs(extents_.size()));
    if (!threads.ok()) return out;
    auto parts = bound.split(*fused, {std::nullopt, threads.value()});
    if (!parts.ok() || !bound.bind(parts.value()[1], "threadIdx.x").ok()) return out;
    out.push_back(std::move(bound));
    return out;
  }

 private:
  static bool any_bound(const Schedule& sch, const ReductionLoops& loops) {
    for (const auto* list : {&loops.spatial, &loops.reduce})
      for (const schedule::LoopRV& l : *list)
        if (sch.loop_sref(l).value()->as_for()->for_kind == ir::ForKind::kThreadBinding)
          return true;
    return false;
  }

  std::vector<int64_t> all_extents_, extents_;
  bool gpu_ = false;
  int64_t max_threads_ = 1024;
};

}  // namespace

ScheduleRulePtr cross_thread_reduction(std::vector<int64_t> thread_extents) {
  return std::make_shared<CrossThreadReduction>(std::move(thread_extents));
}

}  // namespace tyche::tune
