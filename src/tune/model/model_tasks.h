// Tuning a model: its tasks (graph/tasks.h) as tuning tasks of tune(), weighted by how often the
// model calls them, and how they are timed. The tuner reaches the model only through the task
// table; the graph layer never sees the tuner. The model pipeline (model/pipeline.h) uses these.
#pragma once

#include <string>
#include <vector>

#include "graph/tasks.h"
#include "tune/task/tune.h"

namespace tyche::tune {

// One TuneTask per model task: a workload named after the task (op "graph"), its reference the
// task's default schedule compiled with LLVM (built on first use), its weight the task's calls,
// its constant_params the params `graph` binds to weights.
std::vector<TuneTask> model_tune_tasks(const graph::TaskTable& table, const graph::Graph& graph);

// The bytes of the model's weights (its constant values).
size_t model_weight_bytes(const graph::Graph& graph);

// How a model's tasks are timed. "auto": as the model meets its arguments, mixed_timing(): the
// activations a call reads were just written, so they wait in the last-level cache; the weights
// were last read a whole run ago and, with the rest of the model and the other tenants of a
// shared L3, come from memory. On AMD EPYC Zen 5 (32 MiB L3), interleaved with onnxruntime:
// MobileNet-v2 (14 MB of weights) tuned mixed ran at 1.00x, llc 1.07x, cold 1.06x; BERT-base
// (340 MB) mixed 0.96x, cold 0.97x, llc 1.19x. Any other name ("llc", "mixed", "cold", "warm"):
// timing_named(name).
runtime::TimeOptions model_timing(const std::string& name);

}  // namespace tyche::tune
