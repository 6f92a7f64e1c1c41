// Builds a measured dataset: samples valid candidates of a workload's design spaces, compiles
// them concurrently, times each in the isolated runner (checking its outputs against the
// reference) and appends one tuning record per candidate (tune/database/record.h). A program
// already in the records file, or already sampled in this run, is not measured again. Records are
// appended, flushed and synced after every batch, so an interrupted run keeps what it measured.
#pragma once

#include <functional>
#include <string>

#include "tune/core/context.h"
#include "tune/measure/runner.h"
#include "workloads/workloads.h"

namespace tyche::tune {

struct SampleMeasureOptions {
  int samples = 100;  // candidates to measure
  int64_t seed = 0;
  int batch = 32;            // built together, then measured, then appended
  std::string records_path;  // appended to (created if missing)
  std::string extents;       // the workload's extents (index notation), for the record
  RunnerOptions runner;      // worker path, timeout, timing
  std::function<void(const std::string&)> progress;  // one line per batch
};

struct SampleMeasureReport {
  int sampled = 0;     // candidates drawn
  int invalid = 0;     // refused by the postprocessors
  int duplicates = 0;  // programs already measured (in the file or this run)
  int measured = 0;    // records appended with times
  int failed = 0;      // records appended with an error (build, run, wrong result)
  double best_seconds = 0;
};

// Throws tyche::Error for a GPU target (nothing runs CUDA code yet) or an unwritable records file.
SampleMeasureReport sample_measure(const workloads::Workload& w, const target::Target& target,
                                   const SampleMeasureOptions& options);

}  // namespace tyche::tune
