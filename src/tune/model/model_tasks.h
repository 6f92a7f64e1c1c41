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

// Each task's best program in `db` on `target`, undefined where the database has none (the
// executor then runs the default schedule).
struct ModelPrograms {
  std::vector<ir::PrimFunc> programs;
  std::vector<double> best_seconds;  // per task: its best record's mean time, 0 without one
  int tuned = 0;
};
ModelPrograms best_model_programs(const Database& db, const graph::TaskTable& table, const Target& target);

}  // namespace tyche::tune
