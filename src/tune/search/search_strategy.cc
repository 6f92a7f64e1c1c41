#include "tune/search/search_strategy.h"

#include "tune/postproc/candidate.h"

namespace tyche::tune {

namespace {

std::optional<Trial> to_trial(std::variant<schedule::Schedule, CandidateError> c,
                              schedule::Trace replayed, const SearchTask& task) {
  if (auto* e = std::get_if<CandidateError>(&c)) {
    if (task.refusals) task.refusals->add(*e);
    return std::nullopt;
  }
  return Trial::of(std::move(replayed), std::get<schedule::Schedule>(c).func(),
                   task.context.target.is_gpu());
}

}  // namespace

std::optional<Trial> SearchTask::replay(const schedule::Trace& trace, int64_t seed) const {
  schedule::Trace replayed;
  auto c = make_candidate(context, trace, {}, postprocs, seed, &replayed);
  return to_trial(std::move(c), std::move(replayed), *this);
}

std::optional<Trial> SearchTask::sample(RandomEngine& rng) const {
  if (spaces.empty()) return std::nullopt;
  const schedule::Trace& space =
      spaces[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(spaces.size())))];
  schedule::Trace replayed;
  auto c = make_candidate(context, space, {.fresh_decisions = true}, postprocs, rng.fork().seed(),
                          &replayed);
  return to_trial(std::move(c), std::move(replayed), *this);
}

ModelCandidate SearchTask::model_candidate(const Trial& trial) const {
  return ModelCandidate{workload, trial.program(), context.target.is_gpu(), trial.lowered,
                        std::make_shared<const schedule::Trace>(trial.trace)};
}

}  // namespace tyche::tune
