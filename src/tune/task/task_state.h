// One task of a tune as the loop (tune.cc) keeps it: its search, its measuring setup, what it
// has found. Private to tune/task.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tune/database/database.h"
#include "tune/measure/measure_batch.h"
#include "tune/search/search_strategy.h"
#include "tune/task/drift.h"
#include "tune/task/tune.h"

namespace tyche::tune {

struct TaskState {
  TuneTask task;
  SearchTask search;
  SearchStrategyPtr strategy;
  MeasureTask measure;  // the record's workload and target, the reference outputs
  TaskResult result;
  std::string best_trace_json;
  DriftCorrection drift;
  // The ranked (drift-corrected) time of each program measured in this run, by program hash.
  std::unordered_map<uint64_t, double> ranked;
  RefusalCounts refusals;  // why the search's candidates died

  // Makes `trace_json`, run in `seconds`, the best if it is.
  void note_result(double seconds, const std::string& trace_json);
  // Takes in a measured round: what search knows was measured, the best, the failures.
  void absorb(const std::vector<Trial>& round);
};

// What the cost model learns before the first round: the measured records a database held.
struct ModelSeeds {
  std::vector<ModelCandidate> candidates;
  std::vector<double> seconds;
};

// Record files whose programs may start a task (TuneOptions::warm_start_records): read once, when
// a task first needs them, keeping each workload's few fastest programs.
class WarmStartRecords {
 public:
  explicit WarmStartRecords(std::vector<std::string> files = {}) : files_(std::move(files)) {}
  // Workloads in the order of their first record. Throws tyche::Error if a file cannot be read.
  const std::vector<TuningRecord>& fastest();

 private:
  std::vector<std::string> files_;
  std::optional<std::vector<TuningRecord>> fastest_;
};

// Sets up task `index` of a tune: its design spaces, postprocessors, mutators and strategy, and
// what `db` already measured of it (which seeds the search, `seeds` and the best); with
// options.warm_start, its warm start from db's other workloads and then from `shipped` (records
// of any workloads). Throws InputError when its design space is empty.
std::unique_ptr<TaskState> start_task(const TuneTask& task, size_t index,
                                      const target::Target& target, const TuneOptions& options,
                                      CostModel* model, Database& db, ModelSeeds& seeds,
                                      WarmStartRecords& shipped);

}  // namespace tyche::tune
