// measure_batch(): the one place that builds, runs and records candidates. `tyche tune`, `tyche
// sample-measure` and Python's tyche.tune all measure through it: the batch is compiled
// concurrently (Builder), each program is run in the isolated worker with its outputs checked
// against the reference (Runner), and every measured trial becomes one tuning record, handed to
// the caller's sink in one call (a database, a records file). A trial that fails to build,
// crashes, hangs or computes a wrong result is a failed record; the batch goes on.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "tune/database/record.h"
#include "tune/measure/builder.h"
#include "tune/measure/runner.h"
#include "tune/trial/trial.h"

namespace tyche::tune {

// What every trial of one task shares.
struct MeasureTask {
  RecordWorkload workload;
  RecordTarget target;
  std::vector<runtime::NDArray> expected;  // the reference outputs for the inputs of seed 42
  std::vector<size_t> constant_params;     // Workload::constant_params
};

struct BatchOptions {
  // The task's best time so far (0: none). A trial whose checking run and the run after it
  // are single_run_slowdown times slower is timed by that second run alone; one still running after
  // timeout_slowdown times it (at least timeout_floor_s) is stopped as timed out. 0 turns either
  // off.
  double best_seconds = 0;
  double single_run_slowdown = 0;
  double timeout_slowdown = 0;
  double timeout_floor_s = 5;
  // More than 1: every trial is timed this many times, in rounds interleaved so that a slow or
  // quiet spell of the host falls on all alike, its repeats pooled (a tune's leaders, timed
  // again). Such a batch is recorded only if it was not stopped.
  int rounds = 1;
  bool confirmed = false;                   // the records say they are such leaders
  const std::atomic<bool>* stop = nullptr;  // set: the trials not run yet stay unmeasured
};

using RecordSink = std::function<void(const std::vector<TuningRecord>&)>;

// Measures a batch elsewhere (the nodes of a cluster: python/tyche/ray.py): given the trials'
// design-space traces (Trace::to_json) and the batch options, returns one record per trace, in
// order, as the node that measured it wrote it. Throws tyche::Error when it cannot.
using RemoteMeasure = std::function<std::vector<TuningRecord>(
    const MeasureTask& task, const std::vector<std::string>& trace_jsons,
    const BatchOptions& options)>;

// Where a batch's time went, in seconds.
struct BatchTimes {
  double build = 0, run = 0, save = 0;
};

// A program built once and kept, to be timed on demand (Measurer::keep).
struct KeptProgram {
  Trial trial;
  BuildResult build;
};

// Throws tyche::Error (one line) unless a GPU target's device is here: the CUDA driver and a
// device, or an OpenCL platform with a device. Nothing for a CPU target.
void require_device(const target::Target& target);

class Measurer {
 public:
  // Compiles for target.cpu into a temporary folder of its own (removed with it) and runs with
  // target.num_cores threads unless `runner` says otherwise; for a GPU target, builds its code
  // (gpu_build.h) for the worker to run on the device. Throws tyche::Error for a CPU this host
  // cannot run, or a missing worker program.
  Measurer(const target::Target& target, RunnerOptions runner);
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  // Builds, runs and records `trials` (see above); fills each trial's outcome, with
  // ranked_seconds = typical_seconds(). `save` receives the records of the trials measured.
  BatchTimes measure_batch(std::vector<Trial>& trials, const MeasureTask& task,
                           const RecordSink& save, const BatchOptions& options = {});

  // A program built once (its object lives as long as the Measurer) and timed on demand,
  // unrecorded: the tuner's drift yardstick. keep() is nullopt when it does not build; time() is
  // the median of one run's repeats, 0 if the run failed.
  std::optional<KeptProgram> keep(const Trial& trial);
  double time(KeptProgram& kept, const MeasureTask& task);

  // From now on batches are measured by `remote` (null: here again); keep() then keeps nothing,
  // as the programs run elsewhere.
  void set_remote(RemoteMeasure remote) { remote_ = std::move(remote); }

 private:
  // Runs one built trial once and adds its repeats (or its error) to it.
  void run_built(Trial& trial, const BuildResult& built, const MeasureTask& task,
                 const BatchOptions& options);
  BatchTimes measure_remotely(std::vector<Trial>& trials, const MeasureTask& task,
                              const RecordSink& save, const BatchOptions& options);

  bool gpu_ = false;
  std::string object_dir_;
  std::unique_ptr<Builder> builder_;
  std::unique_ptr<Runner> runner_;
  RemoteMeasure remote_;
};

}  // namespace tyche::tune
