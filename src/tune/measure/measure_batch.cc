#include "tune/measure/measure_batch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "support/error.h"
#include "support/median.h"

namespace tyche::tune {

namespace {

// Why a run is a failure; empty when it ran and computed the right result.
std::string run_failure(const RunResult& res) {
  if (!res.ok()) return "run: " + res.error;
  if (!res.correct) return "wrong result: " + res.mismatch;
  return "";
}

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool stopped(const BatchOptions& o) {
  return o.stop && o.stop->load();
}

void remove_objects(const std::vector<BuildResult>& built) {
  for (const BuildResult& b : built)
    if (!b.object_path.empty()) std::remove(b.object_path.c_str());
}

}  // namespace

void require_device(const target::Target& target) {
  if (target.kind == "cuda") runtime::cuda::driver_version();
  if (target.kind == "opencl") runtime::opencl::Device::open();
}

Measurer::Measurer(const target::Target& target, RunnerOptions runner) : gpu_(target.is_gpu()) {
  static std::atomic<int> count{0};
  object_dir_ = (std::filesystem::temp_directory_path() /
                 fmt::format("tyche_measure_{}_{}", ::getpid(), count++))
                    .string();
  if (target.is_gpu())
    builder_ = std::make_unique<Builder>(BuilderOptions{.object_dir = object_dir_, .gpu = target});
  else
    builder_ = std::make_unique<Builder>(
        BuilderOptions{.object_dir = object_dir_, .cpu = target.cpu_info().name});
  if (runner.threads <= 0) runner.threads = target.num_cores;
  runner_ = std::make_unique<Runner>(std::move(runner));
}

Measurer::~Measurer() {
  builder_.reset();  // waits for compiles that outlived their deadline
  std::error_code ignored;
  std::filesystem::remove_all(object_dir_, ignored);
}

void Measurer::run_built(Trial& trial, const BuildResult& built, const MeasureTask& task,
                         const BatchOptions& o) {
  RunInput in = run_input_for(built.object_path, built.name, trial.program(), task.expected);
  for (const BuiltPreproc& p : built.preprocs)
    in.preprocs.push_back({p.param, p.object_path, p.name, p.shape});
  in.constant_params = task.constant_params;
  if (o.single_run_slowdown > 0 && o.best_seconds > 0)
    in.single_run_after_s = o.single_run_slowdown * o.best_seconds;
  // A GPU candidate's run also loads its code (OpenCL compiles it there, a second or more on
  // PoCL): its floor is the runner's whole timeout.
  if (o.timeout_slowdown > 0 && o.best_seconds > 0 && !gpu_)
    in.timeout_s = std::max(o.timeout_floor_s, o.timeout_slowdown * o.best_seconds);
  RunResult res = runner_->run(in);
  trial.error = run_failure(res);
  if (trial.error.empty())
    trial.seconds.insert(trial.seconds.end(), res.time.seconds.begin(), res.time.seconds.end());
  else
    trial.seconds.clear();
}

BatchTimes Measurer::measure_remotely(std::vector<Trial>& trials, const MeasureTask& task,
                                      const RecordSink& save, const BatchOptions& o) {
  BatchTimes times;
  auto t0 = Clock::now();
  std::vector<std::string> traces;
  for (const Trial& t : trials) traces.push_back(t.trace.to_json());
  std::vector<TuningRecord> records = remote_(task, traces, o);
  times.run = since(t0);
  if (records.size() != trials.size())
    throw Error(fmt::format("remote measurement returned {} records for {} programs",
                            records.size(), trials.size()));
  for (size_t k = 0; k < trials.size(); ++k) {
    Trial& t = trials[k];
    const TuningRecord& r = records[k];
    if (r.workload.hash != task.workload.hash || (r.program != 0 && r.program != t.program_hash))
      throw Error(
          fmt::format("remote measurement returned a record of another program for program {}", k));
    if (target_key(r.target) != target_key(task.target))
      throw Error(fmt::format("remote measurement ran on another target ({}; the task's: {})",
                              target_key(r.target), target_key(task.target)));
    t.measured = true;
    t.error = r.error;
    t.seconds = r.error.empty() ? r.seconds : std::vector<double>{};
    if (t.error.empty() && t.seconds.empty()) t.error = "run: no timing came back";
    t.ranked_seconds = t.ok() ? t.typical_seconds() : std::numeric_limits<double>::quiet_NaN();
  }
  t0 = Clock::now();
  if (save && !records.empty()) save(records);
  times.save = since(t0);
  return times;
}

BatchTimes Measurer::measure_batch(std::vector<Trial>& trials, const MeasureTask& task,
                                   const RecordSink& save, const BatchOptions& o) {
  if (remote_) return measure_remotely(trials, task, save, o);
  BatchTimes times;
  auto t0 = Clock::now();
  std::vector<BuildInput> inputs;
  for (const Trial& t : trials) inputs.push_back({t.program(), t.lowered});
  std::vector<BuildResult> built = builder_->build(inputs);
  times.build = since(t0);
  t0 = Clock::now();
  BatchOptions limits = o;
  for (int round = 0; round < std::max(1, o.rounds); ++round) {
    for (size_t k = 0; k < trials.size() && !stopped(o); ++k) {
      Trial& t = trials[k];
      if (round > 0 && !t.error.empty()) continue;
      t.measured = true;
      if (!built[k].ok()) {
        t.error = "build: " + built[k].error;
        continue;
      }
      run_built(t, built[k], task, limits);
      if (t.ok() && (limits.best_seconds == 0 || t.typical_seconds() < limits.best_seconds))
        limits.best_seconds = t.typical_seconds();
    }
  }
  remove_objects(built);
  times.run = since(t0);
  if (o.rounds > 1 && stopped(o)) {  // an interrupted confirmation is not one
    for (Trial& t : trials) t.measured = false;
    return times;
  }
  std::vector<TuningRecord> records;
  for (Trial& t : trials) {
    if (!t.measured) continue;
    t.ranked_seconds = t.ok() ? t.typical_seconds() : std::numeric_limits<double>::quiet_NaN();
    records.push_back(t.record(task.workload, task.target, o.confirmed));
  }
  t0 = Clock::now();
  if (save && !records.empty()) save(records);
  times.save = since(t0);
  return times;
}

std::optional<KeptProgram> Measurer::keep(const Trial& trial) {
  if (remote_) return std::nullopt;
  BuildResult b = builder_->build(std::vector<BuildInput>{{trial.program(), trial.lowered}})[0];
  if (!b.ok()) return std::nullopt;
  return KeptProgram{trial, std::move(b)};
}

double Measurer::time(KeptProgram& kept, const MeasureTask& task) {
  kept.trial.seconds.clear();
  run_built(kept.trial, kept.build, task, {});
  return kept.trial.seconds.empty() ? 0 : median(kept.trial.seconds);
}

}  // namespace tyche::tune
