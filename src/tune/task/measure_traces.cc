#include "tune/task/measure_traces.h"

#include <fmt/format.h>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/postproc/candidate.h"
#include "tune/postproc/postproc.h"
#include "tune/trial/trial.h"

namespace tyche::tune {

std::vector<TuningRecord> measure_traces(const workloads::Workload& w,
                                         const RecordWorkload& record_workload,
                                         const target::Target& target,
                                         const std::vector<std::string>& trace_jsons,
                                         const TraceMeasureOptions& options) {
  if (ir::structural_hash(w.func) != record_workload.hash)
    throw Error(
        fmt::format("measure: this machine rebuilt {} as another program than the driver's (a "
                    "different Tyche?)",
                    record_workload.name));
  TuneContext context{w.func, target};
  std::vector<PostprocPtr> postprocs = default_postprocs(context);
  MeasureTask task{record_workload, record_target(target, options.runner.time),
                   w.reference(workloads::make_inputs(w.func, 42)), w.constant_params};
  // Slot k of the answer: a trial to measure, or the record of a trace that did not replay.
  std::vector<TuningRecord> out(trace_jsons.size());
  std::vector<Trial> trials;
  std::vector<size_t> slot;
  for (size_t k = 0; k < trace_jsons.size(); ++k) {
    schedule::Trace trace = schedule::Trace::from_json(trace_jsons[k]);
    schedule::Trace replayed;
    auto c = make_candidate(context, trace, {}, postprocs, 0, &replayed);
    if (auto* e = std::get_if<CandidateError>(&c)) {
      out[k] = TuningRecord{record_workload,
                            trace_jsons[k],
                            task.target,
                            0,
                            {},
                            fmt::format("{}: {}", e->category, e->message),
                            utc_now(),
                            options.batch.confirmed};
      continue;
    }
    trials.push_back(
        Trial::of(std::move(replayed), std::get<schedule::Schedule>(c).func(), target.is_gpu()));
    slot.push_back(k);
  }
  require_device(target);
  Measurer measurer(target, options.runner);
  measurer.measure_batch(trials, task, nullptr, options.batch);
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!trials[i].measured) throw Error("measure: interrupted before every program ran");
    out[slot[i]] = trials[i].record(task.workload, task.target, options.batch.confirmed);
    out[slot[i]].trace_json = trace_jsons[slot[i]];  // as sent: the driver's records keep its text
  }
  return out;
}

}  // namespace tyche::tune
