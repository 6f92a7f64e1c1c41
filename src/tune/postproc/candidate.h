// A candidate program: a design-space trace replayed (with recorded, fresh or overridden
// decisions) onto a fresh schedule, then finished by the postprocessors.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

struct CandidateError {
  std::string category;  // "replay" or the postprocessor's name
  schedule::ErrorCode code = schedule::ErrorCode::kInvalidArgument;
  std::string message;  // one line

  // What refusals are counted under: the stage and the code, "replay: dependence_violated".
  std::string reason() const { return category + ": " + schedule::error_code_name(code); }
};

// Why candidates died, counted by CandidateError::reason(); threads may add at once.
class RefusalCounts {
 public:
  void add(const CandidateError& e) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[e.reason()];
  }
  std::map<std::string, int64_t> counts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> counts_;
};

// The schedule, or why the candidate is invalid. The postprocessors must have been initialized
// with `context` (once per task: make_candidate only reads them, so threads may share them).
// The returned schedule's trace holds the replayed instructions and then the postprocessors';
// `replayed`, when given, receives the trace before the postprocessors, with its decisions:
// what search keeps, mutates and replays (the postprocessors run again on every replay, as in
// TVM, where the trace is cut at EnterPostproc).
std::variant<schedule::Schedule, CandidateError> make_candidate(
    const TuneContext& context, const schedule::Trace& trace, const schedule::ReplayOptions& replay,
    const std::vector<PostprocPtr>& postprocs, int64_t seed, schedule::Trace* replayed = nullptr);

}  // namespace tyche::tune
