// Search strategies: what to measure next. A strategy generates Trials (programs not measured
// before) and is told how they ran; the tuner (tune/task) measures them in between. A new
// strategy (Bayesian optimization, RL) is one file implementing this interface plus one line in
// the table of strategy_registry.cc (docs/development.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "schedule/trace.h"
#include "tune/cost_model/cost_model.h"
#include "tune/mutator/mutator.h"
#include "tune/postproc/candidate.h"
#include "tune/postproc/postproc.h"
#include "tune/trial/trial.h"

namespace tyche::tune {

// One tuning task as strategies see it; the tuner sets it up and keeps `measured` and
// `measured_traces` up to date (from the database at the start, then after every batch).
struct SearchTask {
  TuneContext context;
  std::vector<schedule::Trace> spaces;                  // the design spaces, simplified
  std::vector<PostprocPtr> postprocs;                   // initialized with context
  std::vector<std::pair<MutatorPtr, double>> mutators;  // initialized with context, with weights
  CostModel* model = nullptr;
  std::unordered_set<uint64_t> measured;  // program hashes, failures included
  std::vector<std::pair<double, schedule::Trace>>
      measured_traces;  // (seconds, trace) of those that ran
  uint64_t workload = 0;
  int threads = 1;                    // for sampling, mutation and validation
  RefusalCounts* refusals = nullptr;  // when set, counts why replays and samples were refused
  // The warm start: programs to measure first, fastest first (the best of similar workloads'
  // records with their decisions transferred to this one: transfer.h). The evolutionary search
  // leads its first batch with those that replay and were not measured, up to half of it, and
  // breeds from them.
  std::vector<schedule::Trace> warm_start;

  // The trial `trace` replays to with its recorded decisions, or nullopt when the
  // postprocessors refuse it.
  std::optional<Trial> replay(const schedule::Trace& trace, int64_t seed) const;
  // A fresh sample of a random design space, or nullopt (invalid).
  std::optional<Trial> sample(RandomEngine& rng) const;
  // What the cost model is given of a trial: its program, its lowering and features shared.
  ModelCandidate model_candidate(const Trial& trial) const;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string name() const = 0;
  virtual void initialize(SearchTask* task, int64_t seed) = 0;
  // Up to `count` programs not measured before (none twice); fewer, or none, when the space
  // runs dry.
  virtual std::vector<Trial> generate(int count) = 0;
  // How the trials generate() returned ran: each one's outcome, ranked_seconds NaN if it failed
  // (an interrupted batch reports only the trials measured).
  virtual void notify(const std::vector<Trial>& trials) { (void)trials; }
};
using SearchStrategyPtr = std::unique_ptr<SearchStrategy>;

struct EvolutionaryOptions {
  int population = 512;
  double init_measured_ratio = 0.2;  // of the population, from the best measured
  int init_min_unmeasured = 50;      // fresh samples at least
  int generations = 4;
  double mutation_probability = 0.85;
  double epsilon = 0.05;  // of each batch, picked at random from fresh samples
  // "eps-greedy" (MetaSchedule: children replace their parents, the batch is the best scored
  // plus epsilon random) or "annealing" (a child replaces its parent if it scores higher, or
  // with probability exp(gain / T), T falling over the generations).
  std::string acceptance = "eps-greedy";
};

// The strategies by name (strategy_registry.cc): "evolutionary" (evolutionary.cc),
// "replay-trace" (fresh random decisions on the design spaces, the baseline: replay_trace.cc) or
// "local-search" (mutations of the fastest measured programs, no cost model: local_search.cc).
// Each factory reads the options it needs. Throws tyche::Error for an unknown name or options the
// strategy refuses.
SearchStrategyPtr make_search_strategy(const std::string& name,
                                       const EvolutionaryOptions& options = {});
std::vector<std::string> search_strategy_names();

}  // namespace tyche::tune
