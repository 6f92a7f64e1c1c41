#include "tune/postproc/candidate.h"

namespace tyche::tune {

std::variant<schedule::Schedule, CandidateError> make_candidate(
    const TuneContext& context, const schedule::Trace& trace, const schedule::ReplayOptions& replay,
    const std::vector<PostprocPtr>& postprocs, int64_t seed, schedule::Trace* replayed) {
  schedule::Schedule sch(context.func, schedule::ScheduleOptions{.seed = seed});
  if (auto st = trace.apply_to(sch, replay); !st.ok())
    return CandidateError{"replay", st.error().code(), st.error().reason()};
  if (replayed) *replayed = *sch.trace();
  for (const PostprocPtr& p : postprocs) {
    if (auto st = p->apply(sch); !st.ok())
      return CandidateError{p->name(), st.error().code(), st.error().reason()};
  }
  return sch;
}

}  // namespace tyche::tune
