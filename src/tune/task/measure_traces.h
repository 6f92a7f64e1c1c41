// Measuring given design-space traces of one workload on this machine: what a node of a cluster
// does with the programs a tune's driver sends it (python/tyche/ray.py). Each trace is replayed
// with the target's postprocessors, the batch is built here and run in the isolated worker, and
// every trace comes back as the record this machine would have written for it, in order; a trace
// that does not replay is a failed record.
#pragma once

#include <string>
#include <vector>

#include "tune/core/context.h"
#include "tune/database/record.h"
#include "tune/measure/measure_batch.h"
#include "tune/measure/runner.h"
#include "workloads/workloads.h"

namespace tyche::tune {

struct TraceMeasureOptions {
  RunnerOptions runner;  // worker path, timeout, timing, threads (0: the target's cores)
  BatchOptions batch;    // rounds, confirmed, best_seconds and the slowdown limits
};

// `workload` must be the one `expected` was made from (RecordWorkload::hash is checked against
// the function's structural hash: a node that rebuilt another workload is refused with
// tyche::Error).
std::vector<TuningRecord> measure_traces(const workloads::Workload& workload,
                                         const RecordWorkload& record_workload,
                                         const target::Target& target,
                                         const std::vector<std::string>& trace_jsons,
                                         const TraceMeasureOptions& options);

}  // namespace tyche::tune
