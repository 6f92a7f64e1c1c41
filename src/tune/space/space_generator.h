// Space generators: turn a function into design spaces, schedules whose traces are templates
// that search re-samples and mutates. PostOrderApply applies rules to every block; ScheduleFn
// runs a user's schedule function (a hand schedule or an AutoTVM-style template); Union joins.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "schedule/schedule.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

class SpaceGenerator {
 public:
  virtual ~SpaceGenerator() = default;
  virtual void initialize(const TuneContext& context) { (void)context; }
  // The design spaces of context.func; throws InputError when a user's function fails.
  virtual std::vector<schedule::Schedule> generate(const TuneContext& context, int64_t seed) = 0;
};
using SpaceGeneratorPtr = std::shared_ptr<SpaceGenerator>;

// Applies each rule in turn to every block of every schedule the previous rules produced (TVM's
// order): blocks as the function had them, consumers before producers (reverse program order,
// inner blocks before the block holding them, the root last). Blocks a rule removed (inlined)
// are skipped; an ambiguous block name is an InputError.
SpaceGeneratorPtr post_order_apply(std::vector<ScheduleRulePtr> rules);
// One design space from a user's schedule function; its samplings make it a template.
SpaceGeneratorPtr schedule_fn(std::function<schedule::Status(schedule::Schedule&)> fn);
// The design spaces of all the generators, in order.
SpaceGeneratorPtr space_union(std::vector<SpaceGeneratorPtr> generators);

}  // namespace tyche::tune
