// Tuning a model: its tasks (graph/tasks.h) as tuning tasks of tune(), weighted by how often the
// model calls them, and each task's best program in a database for the executor. The tuner
// reaches the model only through the task table; the graph layer never sees the tuner.
#pragma once

#include <string>
#include <vector>

#include "graph/tasks.h"
#include "tune/database/database.h"
#include "tune/task/tune.h"

namespace tyche::tune {

// One TuneTask per model task: a workload named after the task (op "graph"), its reference the
// task's default schedule compiled with LLVM (built on first use), its weight the task's calls.
std::vector<TuneTask> model_tune_tasks(const graph::TaskTable& table);

// The bytes of the model's weights (its constant values).
size_t model_weight_bytes(const graph::Graph& graph);

// How a model's tasks are timed. "auto": as the model meets its arguments. Where the weights take
// at most half of the last-level cache (`llc_bytes`; 0: unknown) they stay there from one run to
// the next, with the activations: llc_timing(). Else every call streams its weights from memory:
// cold_timing(). On AMD EPYC Zen 5 (32 MiB L3) BERT-base (340 MB of weights) tuned llc ran at
// 1.19x onnxruntime, tuned cold at 0.97x; MobileNet-v2 (14 MB) ran the same either way, and its
// llc estimate was the closer. Any other name: timing_named(name).
runtime::TimeOptions model_timing(const std::string& name, const graph::Graph& graph, size_t llc_bytes);

// Each task's best program in `db` on `target`, undefined where the database has none (the
// executor then runs the default schedule).
struct ModelPrograms {
  std::vector<ir::PrimFunc> programs;
  std::vector<double> best_seconds;  // per task: its best record's median time, 0 without one
  int tuned = 0;
};
ModelPrograms best_model_programs(const Database& db, const graph::TaskTable& table, const Target& target);

}  // namespace tyche::tune
