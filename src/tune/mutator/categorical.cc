#include "tune/mutator/categorical.h"

#include <vector>

namespace tyche::tune {

using schedule::Value;

namespace {

std::optional<int64_t> other_index(const schedule::Instruction& inst, int64_t current,
                                   RandomEngine& rng) {
  std::vector<double> weights;
  bool any = false;
  const std::vector<Value>& probs = inst.arg("probs").list;
  for (size_t k = 0; k < probs.size(); ++k) {
    const Value& p = probs[k];
    double w = static_cast<int64_t>(k) == current
                   ? 0
                   : (p.kind == Value::Kind::kFloat ? p.f : static_cast<double>(p.i));
    weights.push_back(w > 0 ? w : 0);
    any = any || w > 0;
  }
  if (!any) return std::nullopt;
  return rng.weighted_index(weights);
}

}  // namespace

std::optional<schedule::Trace> redraw_categorical(const schedule::Trace& trace,
                                                  const std::set<int64_t>& outputs,
                                                  RandomEngine& rng) {
  const auto& insts = trace.instructions();
  std::vector<size_t> candidates;
  for (size_t i = 0; i < insts.size(); ++i)
    if (insts[i].is(schedule::kind_sample_categorical()) && trace.decisions().count(i) &&
        !insts[i].outputs.empty() && outputs.count(insts[i].outputs[0].i))
      candidates.push_back(i);
  while (!candidates.empty()) {
    size_t k = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(candidates.size())));
    size_t i = candidates[k];
    if (auto d = other_index(insts[i], trace.decisions().at(i).i, rng))
      return trace.with_decision(i, Value::integer(*d));
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return std::nullopt;
}

}  // namespace tyche::tune
