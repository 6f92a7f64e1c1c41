// The baseline strategy: every trial is a design space replayed with fresh random decisions.
#include <unordered_set>

#include "support/random.h"
#include "tune/search/search_strategy.h"

namespace tyche::tune {

namespace {

// Draws per wanted candidate before giving up (a small space may hold fewer programs).
constexpr int kDrawsPerCandidate = 20;

class ReplayTrace : public SearchStrategy {
 public:
  std::string name() const override { return "replay-trace"; }
  void initialize(SearchTask* task, int64_t seed) override {
    task_ = task;
    rng_ = RandomEngine(seed);
  }
  std::vector<Trial> generate(int count) override {
    std::vector<Trial> out;
    std::unordered_set<uint64_t> batch;
    for (int draws = 0; static_cast<int>(out.size()) < count && draws < count * kDrawsPerCandidate;
         ++draws) {
      std::optional<Trial> c = task_->sample(rng_);
      if (!c || task_->measured.count(c->program_hash) || !batch.insert(c->program_hash).second)
        continue;
      out.push_back(std::move(*c));
    }
    return out;
  }

 private:
  SearchTask* task_ = nullptr;
  RandomEngine rng_{0};
};

}  // namespace

SearchStrategyPtr make_replay_trace(const EvolutionaryOptions&) {
  return std::make_unique<ReplayTrace>();
}

}  // namespace tyche::tune
