// The graph executor: a model's calls compiled once and run in order. Each task's kernel is the
// scheduled program given for it (a tuning record's best) or, for a task without one, a default
// schedule (elementwise stages inlined, the outer loops of each remaining stage fused and run in
// parallel). Weights are laid out once, at construction, in the layout each kernel reads (a
// tuned program's layout rewrites run then, on every call's weight); every intermediate value
// lives in one arena at the offset of a static liveness plan (execution_plan.h, memory_plan.h);
// views share their input's bytes. All kernels run on Tyche's thread pool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/layout_rewrites.h"
#include "codegen/llvm/llvm_codegen.h"
#include "executor/execution_plan.h"
#include "executor/memory_plan.h"
#include "graph/graph.h"
#include "graph/tasks.h"
#include "lower/layout_rewrite.h"

namespace tyche::executor {

// A task program's layout rewrites (lower/layout_rewrite.h), JIT-compiled for this host.
using codegen::compile_rewrites;
using codegen::CompiledRewrite;

// Weights in the layouts their kernels read: each task's rewrites (`rewrites[task]`) run once on
// each of its calls' weights. Per call: (argument index, the rewritten weight), to pass in place
// of the constant.
using CallWeights = std::vector<std::vector<std::pair<size_t, runtime::NDArray>>>;
CallWeights rewrite_call_weights(const Graph& graph, const TaskTable& table,
                                 const ExecutionPlan& plan,
                                 const std::vector<std::vector<CompiledRewrite>>& rewrites);

struct ExecutorOptions {
  codegen::CompileOptions compile;
  // After every call, fill the bytes of the buffers that died with NaN: a plan that let two live
  // buffers share bytes then shows up as wrong outputs (a test of the planner).
  bool poison_dead = false;
};

class Executor {
 public:
  // `programs[t]` is task t's scheduled PrimFunc, or an undefined one for the default schedule.
  Executor(Graph graph, TaskTable table, std::vector<ir::PrimFunc> programs,
           const ExecutorOptions& options = {});

  const Graph& graph() const { return graph_; }
  const TaskTable& table() const { return table_; }
  const ExecutionPlan& plan() const { return plan_; }
  const MemoryPlan& memory() const { return plan_.memory; }
  double compile_seconds() const { return compile_seconds_; }

  // Runs the model on one array per graph input (in graph.inputs order); returns one per graph
  // output. InputError naming the input when one has the wrong type or shape.
  // With `call_seconds` (one entry per call of table().calls), each call's wall time is added
  // to its entry: the profile of the model as run, where a kernel meets the caches its
  // neighbours left rather than the warm ones of a tuning measurement.
  std::vector<runtime::NDArray> run(const std::vector<runtime::NDArray>& inputs,
                                    std::vector<double>* call_seconds = nullptr);

 private:
  void* address(const Location& where, const std::vector<runtime::NDArray>& inputs);

  Graph graph_;
  TaskTable table_;
  ExecutorOptions options_;
  std::vector<std::unique_ptr<codegen::CompiledKernel>> kernels_;  // per task
  ExecutionPlan plan_;
  CallWeights call_weights_;  // weights laid out for their kernels, at construction
  runtime::NDArray arena_;
  double compile_seconds_ = 0;
};

}  // namespace tyche::executor
