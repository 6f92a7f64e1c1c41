// A Trial is one candidate on its way from trace to record: the design-space trace with its
// decisions (what a record keeps, what search mutates), the postprocessed program, lowered to
// loops once (the cost model's features and the builder both start from there), and, once
// measured (tune/measure/measure_batch.h), how it ran. Search strategies propose Trials, the tuner
// measures them, the cost model and the strategy learn from them, the database keeps their records.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/time_evaluator.h"
#include "schedule/trace.h"
#include "target/target.h"
#include "tune/database/record.h"
#include "tune/feature/per_store_feature.h"

namespace tyche::tune {

struct Trial {
  schedule::Trace trace;  // the design-space trace with its decisions (before the postprocessors)
  uint64_t program_hash = 0;  // ir::structural_hash(program())
  LoweredProgramPtr lowered;  // the program, lowered to loops and its features, each computed once

  // The outcome, filled by measure_batch.
  bool measured = false;  // built and run, or failed trying: it has a record
  std::string error;  // "build: ...", "run: ...", "wrong result: ..."; empty when it ran correctly
  std::vector<double> seconds;  // every timed repeat
  // What search ranks it by: typical_seconds(), or the tuner's drift-corrected figure; NaN unless
  // ok().
  double ranked_seconds = std::numeric_limits<double>::quiet_NaN();

  // A trial of `program` (postprocessed) replayed from `trace`.
  static Trial of(schedule::Trace trace, ir::PrimFunc program, bool is_gpu);

  // After the postprocessors: what is built and run.
  const ir::PrimFunc& program() const { return lowered->program(); }
  bool ok() const { return measured && error.empty() && !seconds.empty(); }
  double typical_seconds()
      const;  // the median run (TuningRecord::typical_seconds); +inf unless ok()
  // Its record, as measured.
  TuningRecord record(const RecordWorkload& workload, const RecordTarget& target,
                      bool confirmed = false) const;
};

// How a record names code generated for `target` on this machine: its CPU (target/cpu.h), the
// LLVM name, the model name /proc/cpuinfo gives and the feature list.
RecordTarget record_target(const target::Target& target);
// The same, timed as `time` says (RecordTarget::timing, timing.h).
RecordTarget record_target(const target::Target& target, const runtime::TimeOptions& time);

}  // namespace tyche::tune
