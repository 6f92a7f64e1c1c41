#include "tune/model/model_tasks.h"

#include <fmt/format.h>

#include <memory>
#include <mutex>

#include "codegen/llvm_codegen.h"
#include "graph/executor.h"
#include "ir/op.h"
#include "lower/lower.h"
#include "support/error.h"
#include "tune/measure/runner.h"
#include "tune/search/records.h"

namespace tyche::tune {

namespace {

std::string params_text(const ir::PrimFunc& f) {
  std::vector<std::string> parts;
  for (const ir::Buffer& b : f->params) {
    std::vector<int64_t> dims;
    for (const ir::Expr& e : b->shape) dims.push_back(ir::as_const_int(e).value_or(-1));
    parts.push_back(graph::shape_text(dims));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

// The task's outputs by its default schedule, compiled the first time they are asked for.
workloads::ReferenceFn default_schedule_reference(const ir::PrimFunc& func) {
  struct Compiled {
    std::once_flag once;
    std::unique_ptr<codegen::CompiledKernel> kernel;
  };
  auto compiled = std::make_shared<Compiled>();
  return [func, compiled](const std::vector<runtime::NDArray>& inputs) {
    std::call_once(compiled->once, [&] { compiled->kernel = codegen::compile(lower::lower(graph::default_schedule(func)).func); });
    std::vector<runtime::NDArray> args = inputs;
    std::vector<runtime::NDArray> outs;
    for (const ir::Buffer& b : func.outputs()) {
      std::vector<int64_t> shape;
      for (const ir::Expr& e : b->shape) shape.push_back(ir::as_const_int(e).value_or(0));
      outs.emplace_back(shape, b->dtype);
      args.push_back(outs.back());
    }
    compiled->kernel->run(args);
    return outs;
  };
}

}  // namespace

std::vector<TuneTask> model_tune_tasks(const graph::TaskTable& table, const graph::Graph& graph) {
  std::vector<TuneTask> tasks;
  for (size_t k = 0; k < table.tasks.size(); ++k) {
    const graph::Task& t = table.tasks[k];
    workloads::Workload w;
    w.name = t.name;
    w.op = "graph";
    w.func = t.func;
    w.flop = t.flop;
    w.shape = params_text(t.func);
    w.reference = default_schedule_reference(t.func);
    // Calls of one task bind the same kinds of value: its first call says which are weights.
    for (const graph::Call& c : table.calls) {
      if (c.task != static_cast<int>(k)) continue;
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (graph.value(c.inputs[i]).is_constant()) w.constant_params.push_back(i);
      break;
    }
    tasks.push_back({std::move(w), "", static_cast<double>(t.weight), nullptr});
  }
  return tasks;
}

ModelPrograms best_model_programs(const Database& db, const graph::TaskTable& table, const target::Target& target) {
  ModelPrograms out;
  for (const graph::Task& t : table.tasks) {
    BestPrograms best;
    if (!db.best(t.hash, preferred_target_key(db, t.hash, target), 1).empty()) best = replayable_best(db, t.name, t.func, target, 1);
    out.programs.push_back(best.programs.empty() ? ir::PrimFunc() : best.programs[0]);
    // The time of the record that replayed (the best one may have been skipped).
    out.best_seconds.push_back(best.programs.empty() ? 0.0 : best.records[0]->typical_seconds());
    if (!best.programs.empty()) ++out.tuned;
    out.warnings.insert(out.warnings.end(), best.warnings.begin(), best.warnings.end());
  }
  return out;
}

size_t model_weight_bytes(const graph::Graph& graph) {
  size_t bytes = 0;
  for (const graph::Value& v : graph.values)
    if (v.is_constant()) bytes += v.constant.nbytes();
  return bytes;
}

runtime::TimeOptions model_timing(const std::string& name) {
  if (name != "auto" && name != "llc" && name != "mixed" && name != "cold" && name != "warm")
    throw InputError(fmt::format("unknown timing '{}' (expected auto, llc, mixed, cold or warm)", name));
  return timing_named(name == "auto" ? "mixed" : name);
}

}  // namespace tyche::tune
