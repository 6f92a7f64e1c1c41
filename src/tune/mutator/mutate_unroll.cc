// MutateUnroll: another outcome of the sample_categorical whose value is a
// meta_schedule.unroll_explicit / unroll_implicit annotation on the root block.
#include <set>

#include "tune/mutator/mutator.h"
#include "tune/space/annotations.h"

namespace tyche::tune {

namespace {

using schedule::Value;

// Another index of a categorical, drawn by the remaining probabilities (TVM's rule); nullopt
// when no other candidate has a positive probability.
std::optional<int64_t> other_index(const schedule::Instruction& inst, int64_t current, RandomEngine& rng) {
  std::vector<double> weights;
  bool any = false;
  for (size_t k = 0; k < inst.args[1].list.size(); ++k) {
    const Value& p = inst.args[1].list[k];
    double w = static_cast<int64_t>(k) == current ? 0 : (p.kind == Value::Kind::kFloat ? p.f : static_cast<double>(p.i));
    weights.push_back(w > 0 ? w : 0);
    any = any || w > 0;
  }
  if (!any) return std::nullopt;
  return rng.weighted_index(weights);
}

class MutateUnroll : public Mutator {
 public:
  std::string name() const override { return "MutateUnroll"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    const auto& insts = trace.instructions();
    std::set<int64_t> unroll_values;  // ExprRV ids annotated as unroll limits
    for (const schedule::Instruction& inst : insts)
      if (inst.kind->name == "annotate" && inst.args[2].kind == Value::Kind::kExprRV &&
          (inst.args[1].s == ann::kUnrollExplicit || inst.args[1].s == ann::kUnrollImplicit))
        unroll_values.insert(inst.args[2].i);
    std::vector<size_t> candidates;
    for (size_t i = 0; i < insts.size(); ++i)
      if (insts[i].kind->name == "sample_categorical" && trace.decisions().count(i) && !insts[i].outputs.empty() &&
          unroll_values.count(insts[i].outputs[0].i))
        candidates.push_back(i);
    // Try them in a random order: one whose other outcomes all have probability 0 cannot change.
    while (!candidates.empty()) {
      size_t k = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(candidates.size())));
      size_t i = candidates[k];
      if (auto d = other_index(insts[i], trace.decisions().at(i).i, rng)) return trace.with_decision(i, Value::integer(*d));
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(k));
    }
    return std::nullopt;
  }
};

}  // namespace

MutatorPtr mutate_unroll() { return std::make_shared<MutateUnroll>(); }

}  // namespace tyche::tune
