// Compiled by ctest (tests/CMakeLists.txt, Layers.*) as code under src/tune/ would be: with
// REACH unset it must compile (the public schedule API and its analysis queries); with each
// REACH value it must not, because that line changes the IR without tracing it.
#include "schedule/analysis.h"
#include "schedule/schedule.h"

#if REACH == 1
#include "schedule/primitive.h"  // the untraced primitives
#elif REACH == 2
#include "schedule/instruction_impl.h"  // the instruction implementations' context
#endif

namespace tyche::schedule {

[[maybe_unused]] int use(Schedule& sch, const InstructionKind& kind) {
#if REACH == 3
  sch.mutable_state();  // no mutable state outside src/schedule/
#elif REACH == 4
  InstructionContext context(sch, nullptr);  // only Schedule::apply_instruction makes one
  (void)kind.apply(context, {});
#elif REACH == 5
  sch.issue_block(sch.state().root());  // handles are issued by instructions only
#endif
  (void)kind;
  return static_cast<int>(child_blocks(sch.state(), sch.state().root().get()).size());
}

}  // namespace tyche::schedule
