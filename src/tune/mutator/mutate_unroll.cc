// MutateUnroll: another outcome of the sample_categorical whose value is a
// meta_schedule.unroll_explicit / unroll_implicit annotation on the root block.
#include <set>

#include "ir/annotation_keys.h"
#include "tune/mutator/categorical.h"
#include "tune/mutator/mutator.h"

namespace tyche::tune {

namespace {

using schedule::Value;

class MutateUnroll : public Mutator {
 public:
  std::string name() const override { return "MutateUnroll"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    const auto& insts = trace.instructions();
    std::set<int64_t> unroll_values;  // ExprRV ids annotated as unroll limits
    for (const schedule::Instruction& inst : insts) {
      if (!inst.is(schedule::kind_annotate())) continue;
      const std::string& key = inst.arg("ann_key").s;
      const Value& value = inst.arg("ann_val");
      if (value.kind == Value::Kind::kExprRV &&
          (key == ir::ann::kUnrollExplicit || key == ir::ann::kUnrollImplicit))
        unroll_values.insert(value.i);
    }
    return redraw_categorical(trace, unroll_values, rng);
  }
};

}  // namespace

MutatorPtr mutate_unroll() {
  return std::make_shared<MutateUnroll>();
}

}  // namespace tyche::tune
