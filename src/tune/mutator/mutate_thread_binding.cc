// MutateThreadBinding: another outcome of a sample_categorical that gives a split the factor whose
// loop is bound to threadIdx (the threads per block AutoBind chose).
#include <set>

#include "tune/mutator/categorical.h"
#include "tune/mutator/mutator.h"

namespace tyche::tune {

namespace {

using schedule::Value;

class MutateThreadBinding : public Mutator {
 public:
  std::string name() const override { return "MutateThreadBinding"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    const auto& insts = trace.instructions();
    std::set<int64_t> thread_loops, factors;  // trace-local ids
    for (const schedule::Instruction& inst : insts)
      if (inst.is(schedule::kind_bind()) && inst.arg("thread_axis").s.starts_with("threadIdx"))
        thread_loops.insert(inst.arg("loop").i);
    for (const schedule::Instruction& inst : insts) {
      if (!inst.is(schedule::kind_split())) continue;
      bool bound = false;
      for (const Value& o : inst.outputs) bound = bound || thread_loops.count(o.i);
      if (!bound) continue;
      for (const Value& f : inst.arg("factors").list)
        if (f.kind == Value::Kind::kExprRV) factors.insert(f.i);
    }
    return redraw_categorical(trace, factors, rng);
  }
};

}  // namespace

MutatorPtr mutate_thread_binding() {
  return std::make_shared<MutateThreadBinding>();
}

}  // namespace tyche::tune
