// Evolutionary search with the cost model, as in MetaSchedule. Each batch:
//  1. the population: the best measured programs (a fifth of it at most), replayed, plus fresh
//     samples of the design spaces (at least 50);
//  2. a few generations: parents drawn in proportion to their model score, each child mutated
//     (with probability 0.85, by a mutator drawn by its weight) and validated by replaying it
//     through the postprocessors; every scored program not measured yet is remembered;
//  3. the batch: the best-scored remembered programs, except a fraction epsilon drawn from the
//     fresh samples, none measured before and none twice. The first batch leads with the warm
//     start (SearchTask::warm_start), which also joins the first population.
// Annealing acceptance keeps a parent instead of its child when the child scores lower, unless
// a draw below exp(gain / T) says otherwise; T falls to zero over the generations.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "support/error.h"
#include "support/random.h"
#include "tune/search/search_strategy.h"

namespace tyche::tune {

namespace {

constexpr int kMutationTries = 3;

// Runs f(0..n-1) on `threads` threads. Each index gets its own random engine, forked before, so
// the result does not depend on the number of threads.
void parallel_indices(size_t n, int threads, const std::function<void(size_t)>& f) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(n)); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

class Evolutionary : public SearchStrategy {
 public:
  explicit Evolutionary(const EvolutionaryOptions& options) : options_(options) {}
  std::string name() const override { return "evolutionary"; }

  void initialize(SearchTask* task, int64_t seed) override {
    task_ = task;
    rng_ = RandomEngine(seed);
    std::vector<double> weights;
    for (const auto& [m, w] : task_->mutators) weights.push_back(w);
    mutator_weights_ = weights;
  }

  std::vector<Trial> generate(int count) override {
    scores_.clear();
    std::vector<Trial> population, fresh;
    std::vector<Trial> warm = warm_start(count / 2);
    initial_population(population, fresh);
    population.insert(population.end(), warm.begin(), warm.end());
    if (population.empty()) return {};
    // Remembered: scored and not measured yet, by program.
    std::unordered_map<uint64_t, std::pair<double, Trial>> seen;
    double temperature0 = 0;
    for (int gen = 0; gen < options_.generations; ++gen) {
      std::vector<double> s = score(population);
      if (gen == 0) temperature0 = spread(s);
      for (size_t i = 0; i < population.size(); ++i)
        if (!task_->measured.count(population[i].program_hash))
          seen.emplace(population[i].program_hash, std::pair{s[i], population[i]});
      if (gen + 1 == options_.generations) break;
      double temperature =
          temperature0 * (1.0 - static_cast<double>(gen + 1) / (options_.generations - 1));
      population = next_generation(population, s, temperature);
    }
    std::vector<Trial> out = pick(count - static_cast<int>(warm.size()), seen, fresh, warm);
    warm.insert(warm.end(), out.begin(), out.end());
    return warm;
  }

 private:
  // The first call's share of the warm start: replayed, new and distinct, in its order.
  std::vector<Trial> warm_start(int limit) {
    std::vector<Trial> out;
    if (warm_started_ || task_->warm_start.empty()) return out;
    warm_started_ = true;
    const std::vector<schedule::Trace>& traces = task_->warm_start;
    std::vector<int64_t> seeds;
    for (size_t i = 0; i < traces.size(); ++i) seeds.push_back(rng_.fork().seed());
    std::vector<std::optional<Trial>> replayed(traces.size());
    parallel_indices(traces.size(), task_->threads,
                     [&](size_t i) { replayed[i] = task_->replay(traces[i], seeds[i]); });
    std::unordered_set<uint64_t> taken;
    for (auto& t : replayed)
      if (t && static_cast<int>(out.size()) < limit && !task_->measured.count(t->program_hash) &&
          taken.insert(t->program_hash).second)
        out.push_back(std::move(*t));
    return out;
  }

  void initial_population(std::vector<Trial>& population, std::vector<Trial>& fresh) {
    std::vector<std::pair<double, schedule::Trace>> best = task_->measured_traces;
    std::stable_sort(best.begin(), best.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t n_best = std::min(
        best.size(), static_cast<size_t>(options_.population * options_.init_measured_ratio));
    std::vector<int64_t> seeds;
    for (size_t i = 0; i < n_best; ++i) seeds.push_back(rng_.fork().seed());
    std::vector<std::optional<Trial>> replayed(n_best);
    parallel_indices(n_best, task_->threads,
                     [&](size_t i) { replayed[i] = task_->replay(best[i].second, seeds[i]); });
    for (auto& c : replayed)
      if (c) population.push_back(std::move(*c));
    int n_fresh = std::max(options_.population - static_cast<int>(population.size()),
                           options_.init_min_unmeasured);
    std::unordered_set<uint64_t> fresh_seen;
    // Draws in parallel, a few rounds in case some samples are invalid.
    for (int round = 0, got = 0; round < 4 && got < n_fresh; ++round) {
      size_t want = static_cast<size_t>(n_fresh - got);
      std::vector<RandomEngine> rngs = rng_.fork(static_cast<int>(want));
      std::vector<std::optional<Trial>> drawn(want);
      parallel_indices(want, task_->threads, [&](size_t i) { drawn[i] = task_->sample(rngs[i]); });
      for (auto& c : drawn) {
        if (!c) continue;
        ++got;
        if (!task_->measured.count(c->program_hash) && fresh_seen.insert(c->program_hash).second)
          fresh.push_back(*c);
        population.push_back(std::move(*c));
      }
    }
  }

  // Model scores, each program scored once per batch (the model does not change meanwhile).
  std::vector<double> score(const std::vector<Trial>& cs) {
    std::vector<ModelCandidate> unscored;
    std::vector<uint64_t> unscored_hash;
    std::unordered_set<uint64_t> queued;
    for (const Trial& c : cs)
      if (!scores_.count(c.program_hash) && queued.insert(c.program_hash).second) {
        unscored.push_back(task_->model_candidate(c));
        unscored_hash.push_back(c.program_hash);
      }
    if (!unscored.empty()) {
      std::vector<double> s = task_->model->predict(unscored);
      for (size_t i = 0; i < s.size(); ++i) scores_[unscored_hash[i]] = s[i];
    }
    std::vector<double> out;
    for (const Trial& c : cs) out.push_back(scores_.at(c.program_hash));
    return out;
  }

  static double spread(const std::vector<double>& s) {
    if (s.size() < 2) return 0;
    double mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size()), var = 0;
    for (double x : s) var += (x - mean) * (x - mean);
    return std::sqrt(var / static_cast<double>(s.size()));
  }

  // A mutated, valid child of `parent`, or nullopt.
  std::optional<Trial> mutate(const Trial& parent, RandomEngine& rng) const {
    if (task_->mutators.empty()) return std::nullopt;
    for (int t = 0; t < kMutationTries; ++t) {
      const MutatorPtr& m =
          task_->mutators[static_cast<size_t>(rng.weighted_index(mutator_weights_))].first;
      std::optional<schedule::Trace> trace = m->mutate(parent.trace, rng);
      if (!trace) continue;
      if (auto child = task_->replay(*trace, rng.fork().seed())) return child;
    }
    return std::nullopt;
  }

  std::vector<Trial> next_generation(const std::vector<Trial>& population,
                                     const std::vector<double>& s, double temperature) {
    // Parents in proportion to their score (shifted to be positive).
    double lo = *std::min_element(s.begin(), s.end());
    std::vector<double> w;
    for (double x : s) w.push_back(x - lo + 1e-6);
    // Parents and whether to mutate are drawn in order; the mutations run in parallel.
    std::vector<size_t> parents;
    std::vector<bool> mutated;
    for (size_t i = 0; i < population.size(); ++i) {
      parents.push_back(static_cast<size_t>(rng_.weighted_index(w)));
      mutated.push_back(rng_.uniform_real() < options_.mutation_probability);
    }
    std::vector<RandomEngine> rngs = rng_.fork(static_cast<int>(population.size()));
    std::vector<std::optional<Trial>> children(population.size());
    parallel_indices(population.size(), task_->threads, [&](size_t i) {
      if (mutated[i]) children[i] = mutate(population[parents[i]], rngs[i]);
    });
    std::vector<Trial> next;
    for (size_t i = 0; i < population.size(); ++i)
      next.push_back(children[i] ? std::move(*children[i]) : population[parents[i]]);
    if (options_.acceptance != "annealing") return next;
    std::vector<double> child_scores = score(next);
    for (size_t i = 0; i < next.size(); ++i) {
      double gain = child_scores[i] - s[parents[i]];
      bool accept =
          gain >= 0 || (temperature > 0 && rng_.uniform_real() < std::exp(gain / temperature));
      if (!accept) next[i] = population[parents[i]];
    }
    return next;
  }

  std::vector<Trial> pick(int count, std::unordered_map<uint64_t, std::pair<double, Trial>>& seen,
                          std::vector<Trial>& fresh, const std::vector<Trial>& already) {
    std::vector<std::pair<double, Trial>*> ranked;
    for (auto& [h, e] : seen) ranked.push_back(&e);
    std::sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) {
      if (a->first != b->first) return a->first > b->first;
      return a->second.program_hash < b->second.program_hash;  // a stable order whatever the map's
    });
    int n_random = static_cast<int>(std::lround(count * options_.epsilon));
    std::vector<Trial> out;
    std::unordered_set<uint64_t> taken;
    for (const Trial& c : already) taken.insert(c.program_hash);
    auto take = [&](const Trial& c) {
      if (static_cast<int>(out.size()) >= count || task_->measured.count(c.program_hash) ||
          !taken.insert(c.program_hash).second)
        return;
      out.push_back(c);
    };
    for (size_t i = 0; i < ranked.size() && static_cast<int>(out.size()) < count - n_random; ++i)
      take(ranked[i]->second);
    // Epsilon: random fresh samples, then whatever ranks next if the fresh ones ran out.
    for (size_t i = 0; i < fresh.size() && static_cast<int>(out.size()) < count; ++i) {
      size_t j =
          i + static_cast<size_t>(rng_.uniform_int(0, static_cast<int64_t>(fresh.size() - i)));
      std::swap(fresh[i], fresh[j]);
      take(fresh[i]);
    }
    for (size_t i = 0; i < ranked.size() && static_cast<int>(out.size()) < count; ++i)
      take(ranked[i]->second);
    return out;
  }

  EvolutionaryOptions options_;
  SearchTask* task_ = nullptr;
  RandomEngine rng_{0};
  std::vector<double> mutator_weights_;
  std::unordered_map<uint64_t, double> scores_;
  bool warm_started_ = false;
};

}  // namespace

SearchStrategyPtr make_evolutionary(const EvolutionaryOptions& options) {
  if (options.acceptance != "eps-greedy" && options.acceptance != "annealing")
    throw Error(fmt::format("unknown acceptance '{}' (expected eps-greedy or annealing)",
                            options.acceptance));
  return std::make_unique<Evolutionary>(options);
}

}  // namespace tyche::tune
