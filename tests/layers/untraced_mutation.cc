// Compiled by ctest (tests/CMakeLists.txt, Layers.*) as code under src/tune/ would be compiled.
// With REACH unset it must compile, and its static_asserts check what the public headers leave
// out: no mutable state, no handle issuing, no instruction context, no private header. Each
// REACH value is one way around that, which must fail to compile for its own reason (ctest
// matches the compiler's message), so the asserts below cannot pass vacuously.
#include <type_traits>

#include "schedule/analysis.h"
#include "schedule/schedule.h"

#if REACH == 1
#include "schedule/primitive/primitive.h"  // the untraced primitives
#elif REACH == 2
#include "schedule/instruction_impl.h"  // the instruction implementations' context
#endif

namespace tyche::schedule {

// What the public API offers: state to read, never to write. (Concepts, so that a missing or
// private member makes them false instead of ill-formed.)
template <typename S>
concept HandsOutMutableState = requires(S& s) {
  s.mutable_state();
};
template <typename S>
concept IssuesHandles = requires(S& s, const SRef& r) {
  s.issue_block(r);
};
template <typename S>
concept ConsumesHandles = requires(S& s, const LoopRV& l) {
  s.consume(l);
};
template <typename S>
concept Replaceable = requires(S& st, const SRef& r, const ir::Stmt& x) {
  st.replace(r, x);
};

static_assert(std::is_same_v<decltype(std::declval<Schedule&>().state()), const ScheduleState&>);
static_assert(!HandsOutMutableState<Schedule>);
static_assert(!IssuesHandles<Schedule>);
static_assert(!ConsumesHandles<Schedule>);
// The concepts can hold (so the asserts above are not vacuous): on a type that offers these, and
// on a mutable ScheduleState, which can be replaced, unlike the const one state() gives.
struct Untraced {
  ScheduleState& mutable_state();
  BlockRV issue_block(const SRef&);
  void consume(const LoopRV&);
};
static_assert(HandsOutMutableState<Untraced> && IssuesHandles<Untraced> &&
              ConsumesHandles<Untraced>);
static_assert(Replaceable<ScheduleState>);
static_assert(!Replaceable<const ScheduleState>);
#ifdef TYCHE_SCHEDULE_INTERNAL
#error "this file must be compiled as code outside src/schedule/ is"
#endif

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
