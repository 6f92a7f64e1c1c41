#include "tune/search/search_strategy.h"

#include <fmt/format.h>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/postproc/candidate.h"

namespace tyche::tune {

namespace {

std::optional<SearchCandidate> to_search_candidate(std::variant<schedule::Schedule, CandidateError> c, schedule::Trace replayed,
                                                   RefusalCounts* refusals) {
  if (auto* e = std::get_if<CandidateError>(&c)) {
    if (refusals) refusals->add(*e);
    return std::nullopt;
  }
  const ir::PrimFunc& func = std::get<schedule::Schedule>(c).func();
  return SearchCandidate{std::move(replayed), func, ir::structural_hash(func)};
}

}  // namespace

std::optional<SearchCandidate> SearchTask::replay(const schedule::Trace& trace, int64_t seed) const {
  schedule::Trace replayed;
  auto c = make_candidate(context, trace, {}, postprocs, seed, &replayed);
  return to_search_candidate(std::move(c), std::move(replayed), refusals);
}

std::optional<SearchCandidate> SearchTask::sample(RandomEngine& rng) const {
  if (spaces.empty()) return std::nullopt;
  const schedule::Trace& space = spaces[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(spaces.size())))];
  schedule::Trace replayed;
  auto c = make_candidate(context, space, {.fresh_decisions = true}, postprocs, rng.fork().seed(), &replayed);
  return to_search_candidate(std::move(c), std::move(replayed), refusals);
}

SearchStrategyPtr make_search_strategy(const std::string& name, const EvolutionaryOptions& options) {
  if (name == "replay-trace") return make_replay_trace();
  if (name == "evolutionary") {
    if (options.acceptance != "eps-greedy" && options.acceptance != "annealing")
      throw Error(fmt::format("unknown acceptance '{}' (expected eps-greedy or annealing)", options.acceptance));
    return make_evolutionary(options);
  }
  throw Error(fmt::format("unknown search strategy '{}' (expected evolutionary or replay-trace)", name));
}

}  // namespace tyche::tune
