// The one model pipeline. Every way into a model (the CLI's import, tune-model, run-model and
// export-model, and Python's tyche.onnx) goes through these functions, so that each sees the same
// graph, the same tasks and the same task hashes, and so picks the same records of a database:
//   load_model        import (shapes bound) -> fold_batch_norm -> convert_layout -> apply_dtype
//                     -> extract_tasks
//   prepare_tuning    the tasks as tuning tasks, the target and tune()'s options, checked
//   summarize_tuning  per task its weighted share; the model's estimated latency
//   model_programs    each task's best replayable record of a database (read only)
//   compile_model     those programs (or default schedules) compiled by the graph executor
// Callers add only what is theirs: flags and printing (tools/), GIL handling and Python objects
// (python/src), progress callbacks, a remote measurer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "graph/graph.h"
#include "graph/tasks.h"
#include "target/target.h"
#include "tune/task/tune.h"

namespace tyche::model {

using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Where a model comes from: a file (its external data beside it), or the bytes of a serialized
// ModelProto with the folder its external data is read from (empty: none may be read).
struct ModelSource {
  std::string path;  // a file; empty when `bytes` holds the model
  std::string bytes;
  std::string what;  // its name in messages (the path, for a file)
  std::string dir;   // external data of `bytes`: read below this folder only

  static ModelSource file(const std::string& path);
  static ModelSource in_memory(std::string bytes, const std::string& what, const std::string& dir);
};

// What changes the tasks, hence the task hashes that key a database: give tune-model and
// run-model the same.
struct LoadOptions {
  InputShapes input_shapes;  // static shapes for inputs with symbolic dimensions
  // Inputs bound to values at compile time (graph::ImportOptions::bound_inputs).
  std::map<std::string, runtime::NDArray> bound_inputs;
  std::string dtype = "float32";  // or bfloat16 (graph::apply_dtype)
};

// A model read and prepared: the graph after the passes, and its fused tasks.
struct LoadedModel {
  graph::Graph graph;
  graph::TaskTable table;
  std::string what;
};

// InputError (one line) for a model that cannot be read, a bad shape or an unknown dtype.
LoadedModel load_model(const ModelSource& source, const LoadOptions& options);

// The target a model's tasks are tuned and compiled for: the host, generating code for `cpu`
// ("" the default CPU of target/cpu.h). Records are keyed by it.
target::Target model_target(const std::string& cpu = "");

struct TuneSetup {
  int trials = 0;
  std::string db;   // required: the database directory (created if missing)
  int threads = 0;  // search and the cost model; 0: all
  int64_t seed = 0;
  std::string timing = "auto";  // tune::model_timing's names
  std::string cpu;              // as model_target
  std::string worker;           // the tyche-worker program; "" the default
  // The evolutionary search's population and generations per round; 0: its defaults (512, 4).
  // Smaller is a quicker, coarser search (a smoke test).
  int population = 0;
  int generations = 0;
};

// What tune() is given for a model. Callers may set options.stop, options.remote_measure and
// the like before they call tune::tune(tasks, target, options, progress).
struct ModelTuning {
  std::vector<tune::TuneTask> tasks;
  target::Target target;
  tune::TuneOptions options;
  std::string timing;  // its label, as records and reports name it
};
// InputError for trials < 1, threads < 0, no database, an unknown timing or CPU, a population
// below 2 or no generation.
ModelTuning prepare_tuning(const LoadedModel& model, const TuneSetup& setup);

// The model's latency as the tuner sees it: the sum over tasks of weight x best seconds.
class LatencyEstimate {
 public:
  explicit LatencyEstimate(const std::vector<tune::TuneTask>& tasks);
  void update(const std::string& task, double best_seconds);  // ignored while <= 0
  double seconds() const;
  int measured() const { return static_cast<int>(best_.size()); }
  double weight(const std::string& task) const;

 private:
  std::map<std::string, double> weight_, best_;
};

struct TaskSummary {
  std::string name;
  double weight = 0;
  int trials = 0, failed = 0;
  double best_seconds = 0;  // 0: nothing measured
  double share = 0;         // of the estimated latency
  double gflop = 0;
};
struct TuningSummary {
  std::vector<TaskSummary> tasks;
  double estimated_seconds = 0;
  int measured = 0;
};
TuningSummary summarize_tuning(const ModelTuning& tuning, const tune::TuneResult& result);

// The program each task runs, from a database's best records on `target`.
struct ModelPrograms {
  std::vector<ir::PrimFunc> programs;  // undefined: the task's default schedule
  std::vector<double> best_seconds;    // the record's median time; 0 without one
  std::vector<uint64_t> program_hash;  // structural hash of the program picked; 0 without one
  std::vector<std::string> measured_at;
  int tuned = 0;
  std::vector<std::string> warnings;  // records skipped because they do not replay
};
// `db` empty: every task its default schedule. InputError when `db` is not a directory. The
// database is opened read only (it may be another user's).
ModelPrograms model_programs(const LoadedModel& model, const std::string& db,
                             const target::Target& target);

struct CompileSetup {
  std::string db;   // "": every task its default schedule
  std::string cpu;  // as model_target
};

// A model compiled by the graph executor, and the records its tasks run.
struct CompiledModel {
  std::unique_ptr<executor::Executor> executor;
  ModelPrograms chosen;  // its programs moved into the executor
  std::string what;
};
CompiledModel compile_model(LoadedModel model, const CompileSetup& setup);

}  // namespace tyche::model
