// MutateComputeLocation: another outcome a fresh sample_compute_location could draw (a legal
// one, not a loop where the block would recompute the same region on every iteration). The
// outcomes depend on everything before it, so the trace prefix is replayed to ask the schedule.
#include <algorithm>

#include "schedule/schedule.h"
#include "tune/mutator/mutator.h"

namespace tyche::tune {

namespace {

using schedule::Value;

class MutateComputeLocation : public Mutator {
 public:
  std::string name() const override { return "MutateComputeLocation"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < trace.size(); ++i)
      if (trace.instructions()[i].is(schedule::kind_sample_compute_location()) &&
          trace.decisions().count(i))
        candidates.push_back(i);
    // In a random order, the first whose prefix replays and that has another legal outcome.
    while (!candidates.empty()) {
      size_t k = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(candidates.size())));
      size_t i = candidates[k];
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(k));
      std::vector<int64_t> choices = other_choices(trace, i);
      if (choices.empty()) continue;
      int64_t d =
          choices[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(choices.size())))];
      return trace.with_decision(i, Value::integer(d));
    }
    return std::nullopt;
  }

 private:
  // The legal decisions of instruction `index` other than the recorded one; empty if the
  // prefix does not replay.
  std::vector<int64_t> other_choices(const schedule::Trace& trace, size_t index) const {
    // Replaying with recorded decisions draws nothing, so the seed does not matter.
    schedule::Schedule sch(context_.func, schedule::ScheduleOptions{.seed = 0, .trace = false});
    std::unordered_map<int64_t, Value> handles;
    if (!trace.apply_to(sch, {.stop_before = index, .handles = &handles}).ok()) return {};
    auto block = handles.find(trace.instructions()[index].arg("block").i);
    if (block == handles.end()) return {};
    auto choices =
        sch.compute_location_choices(schedule::BlockRV{block->second.i}, /*useful_only=*/true);
    if (!choices) return {};
    std::vector<int64_t> out = std::move(choices).value();
    std::erase(out, trace.decisions().at(index).i);
    return out;
  }
};

}  // namespace

MutatorPtr mutate_compute_location() {
  return std::make_shared<MutateComputeLocation>();
}

}  // namespace tyche::tune
