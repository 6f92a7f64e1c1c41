// RandomComputeLocation: a block that is not an output, not tiled, and sits directly in the root
// scope is moved to a sampled loop of its consumers' nests (or left, or inlined), the choice a
// search mutates: fusion of producers into consumer tiles without a hand-written rule per operator.
#include "ir/annotation_keys.h"
#include "schedule/analysis.h"
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
    if (applies(sch, block)) place(sch, block);
    // AddRFactor asks for the rfactor block it made (a producer of this block) to be placed.
    const ir::BlockNode* b = block_node(sch, block);
    if (b && b->annotations.count(ir::ann::kRandomComputeProducer)) {
      (void)sch.unannotate(block, ir::ann::kRandomComputeProducer);
      // By name: a traced get_producers would record how many there are now, which a replay
      // with other decisions need not reproduce.
      std::vector<std::string> names;
      for (const schedule::SRef& p :
           schedule::get_producers(sch.state(), sch.block_sref(block).value()))
        names.push_back(p->as_block()->name);
      for (const std::string& name : names) {
        auto p = sch.get_block(name);
        if (p.ok() && applies(sch, p.value())) place(sch, p.value());
      }
    }
    std::vector<Schedule> out;
    out.push_back(std::move(sch));
    return out;
  }

 private:
  // A block MultiLevelTiling tiled keeps its tiles as the outer nest. The state is queried
  // directly: these facts decide whether the rule applies and must not enter the trace.
  static bool applies(Schedule& sch, const BlockRV& block) {
    const ir::BlockNode* b = block_node(sch, block);
    if (!b || b->annotations.count(ir::ann::kTilingStructure) || is_root_block(sch, block) ||
        !is_subroot_block(sch, block) || writes_output(sch, block))
      return false;
    const schedule::SRef sref = sch.block_sref(block).value();
    return !schedule::get_loops(sch.state(), sref).empty() &&
           !schedule::get_consumers(sch.state(), sref).empty();
  }

  // The sampled location is legal by construction; compute_at of the marks means stay/inline.
  static void place(Schedule& sch, const BlockRV& block) {
    auto at = sch.sample_compute_location(block);
    if (at.ok()) (void)sch.compute_at(block, at.value(), false);
  }
};

}  // namespace

ScheduleRulePtr random_compute_location() {
  return std::make_shared<RandomComputeLocation>();
}

}  // namespace tyche::tune
