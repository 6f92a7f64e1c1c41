#include "tune/model/model_tasks.h"

#include <fmt/format.h>

#include <memory>
#include <mutex>

#include "graph/default_schedule.h"
#include "ir/op.h"
#include "support/error.h"
#include "tune/measure/builder.h"
#include "tune/measure/runner.h"

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

// The task's outputs by its default schedule, built (as candidates are, by the Builder) the
// first time they are asked for.
workloads::ReferenceFn default_schedule_reference(const ir::PrimFunc& func) {
  struct Built {
    std::once_flag once;
    BuildResult result;
  };
  auto built = std::make_shared<Built>();
  return [func, built](const std::vector<runtime::NDArray>& inputs) {
    std::call_once(built->once, [&] {
      BuilderOptions options;
      options.max_workers = 1;
      options.timeout_s = 600;  // a reference, built once: no candidate to give up on
      built->result = std::move(
          Builder(options).build(std::vector<ir::PrimFunc>{graph::default_schedule(func)})[0]);
    });
    if (!built->result.ok())
      throw_error("{}: its default schedule does not build: {}", func->name, built->result.error);
    std::vector<runtime::NDArray> args = inputs;
    std::vector<runtime::NDArray> outs;
    for (const ir::Buffer& b : func.outputs()) {
      std::vector<int64_t> shape;
      for (const ir::Expr& e : b->shape) shape.push_back(ir::as_const_int(e).value_or(0));
      outs.emplace_back(shape, b->dtype);
      args.push_back(outs.back());
    }
    run_built(built->result, args);
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

size_t model_weight_bytes(const graph::Graph& graph) {
  size_t bytes = 0;
  for (const graph::Value& v : graph.values)
    if (v.is_constant()) bytes += v.constant.nbytes();
  return bytes;
}

runtime::TimeOptions model_timing(const std::string& name) {
  if (name != "auto" && name != "llc" && name != "mixed" && name != "cold" && name != "warm")
    throw InputError(
        fmt::format("unknown timing '{}' (expected auto, llc, mixed, cold or warm)", name));
  return timing_named(name == "auto" ? "mixed" : name);
}

}  // namespace tyche::tune
