// RandomComputeLocation: a block that is not an output, not tiled, and sits directly in the root scope is
// moved to a sampled loop of its consumers' nests (or left, or inlined), the choice a search
// mutates: fusion of producers into consumer tiles without a hand-written rule per operator.
#include "tune/space/annotations.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::Schedule;

namespace {

class RandomComputeLocation : public ScheduleRule {
 public:
  std::string name() const override { return "RandomComputeLocation"; }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    // A block MultiLevelTiling tiled keeps its tiles as the outer nest.
    const ir::BlockNode* b = block_node(sch, block);
    bool applies = b && !b->annotations.count(ann::kTilingStructure) && !is_root_block(sch, block) &&
                   is_subroot_block(sch, block) && !writes_output(sch, block);
    if (applies) {
      auto loops = sch.get_loops(block);
      auto consumers = sch.get_consumers(block);
      applies = loops.ok() && !loops.value().empty() && consumers.ok() && !consumers.value().empty();
    }
    if (applies) {
      // The sampled location is legal by construction; compute_at of the marks means stay/inline.
      auto at = sch.sample_compute_location(block);
      if (at.ok()) (void)sch.compute_at(block, at.value(), false);
    }
    std::vector<Schedule> out;
    out.push_back(std::move(sch));
    return out;
  }
};

}  // namespace

ScheduleRulePtr random_compute_location() { return std::make_shared<RandomComputeLocation>(); }

}  // namespace tyche::tune
