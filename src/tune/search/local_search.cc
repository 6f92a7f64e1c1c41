// Local search: hill climbing without a cost model. Each batch mutates the fastest programs
// measured so far (a mutator drawn by its weight, as the evolutionary search does) and proposes
// the valid children not measured before; until something has run, and whenever the neighbours
// run dry, fresh samples fill the batch. The ablation that shows what the cost model adds.
#include <algorithm>
#include <unordered_set>

#include "support/random.h"
#include "tune/search/search_strategy.h"

namespace tyche::tune {

namespace {

constexpr int kParents = 8;            // the fastest measured programs mutated
constexpr int kTriesPerCandidate = 8;  // draws per wanted trial before giving up

class LocalSearch : public SearchStrategy {
 public:
  std::string name() const override { return "local-search"; }

  void initialize(SearchTask* task, int64_t seed) override {
    task_ = task;
    rng_ = RandomEngine(seed);
    for (const auto& [mutator, weight] : task_->mutators) weights_.push_back(weight);
  }

  std::vector<Trial> generate(int count) override {
    std::vector<Trial> out;
    std::unordered_set<uint64_t> taken;
    auto take = [&](std::optional<Trial> t) {
      if (t && !task_->measured.count(t->program_hash) && taken.insert(t->program_hash).second)
        out.push_back(std::move(*t));
    };
    std::vector<schedule::Trace> parents = fastest_measured();
    for (int tries = 0; !parents.empty() && static_cast<int>(out.size()) < count &&
                        tries < count * kTriesPerCandidate;
         ++tries)
      take(neighbour(
          parents[static_cast<size_t>(rng_.uniform_int(0, static_cast<int64_t>(parents.size())))]));
    for (int tries = 0; static_cast<int>(out.size()) < count && tries < count * kTriesPerCandidate;
         ++tries)
      take(task_->sample(rng_));
    return out;
  }

 private:
  std::vector<schedule::Trace> fastest_measured() const {
    std::vector<std::pair<double, schedule::Trace>> measured = task_->measured_traces;
    std::stable_sort(measured.begin(), measured.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<schedule::Trace> out;
    for (size_t i = 0; i < measured.size() && i < kParents; ++i) out.push_back(measured[i].second);
    return out;
  }

  // A valid program one mutation away from `parent`, or nullopt.
  std::optional<Trial> neighbour(const schedule::Trace& parent) {
    if (task_->mutators.empty()) return std::nullopt;
    const MutatorPtr& m = task_->mutators[static_cast<size_t>(rng_.weighted_index(weights_))].first;
    std::optional<schedule::Trace> child = m->mutate(parent, rng_);
    if (!child) return std::nullopt;
    return task_->replay(*child, rng_.fork().seed());
  }

  SearchTask* task_ = nullptr;
  RandomEngine rng_{0};
  std::vector<double> weights_;
};

}  // namespace

SearchStrategyPtr make_local_search(const EvolutionaryOptions&) {
  return std::make_unique<LocalSearch>();
}

}  // namespace tyche::tune
