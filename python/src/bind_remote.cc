// Measuring a tune's programs on other machines (python/tyche/ray.py). On the driver the native
// loop hands each batch to a Python function, which sends the traces (as text) to the nodes and
// returns their records (as database lines); on a node, measure_traces() replays, builds, runs and
// checks them here. Only the workload's recipe travels (a preset's op and parameters, or a formula
// and its extents): each node rebuilds it and checks that it rebuilt the same program.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include "bindings.h"
#include "support/error.h"
#include "tune/database/record.h"
#include "tune/task/measure_traces.h"
#include "tune/task/tune.h"
#include "tune/trial/trial.h"

namespace tyche::python {
namespace {

nb::dict workload_dict(const tune::RecordWorkload& w) {
  nb::dict d;
  d["name"] = w.name;
  d["extents"] = w.extents;
  d["hash"] = fmt::format("{:016x}", w.hash);
  d["shape"] = w.shape;
  d["flop"] = w.flop;
  d["dtypes"] = w.dtypes;
  return d;
}

tune::RecordWorkload record_workload(const nb::dict& d) {
  tune::RecordWorkload w;
  w.name = nb::cast<std::string>(d["name"]);
  w.extents = nb::cast<std::string>(d["extents"]);
  w.hash = std::stoull(nb::cast<std::string>(d["hash"]), nullptr, 16);
  w.shape = nb::cast<std::string>(d["shape"]);
  w.flop = nb::cast<double>(d["flop"]);
  if (d.contains("dtypes")) w.dtypes = nb::cast<std::string>(d["dtypes"]);
  return w;
}

// The workload a recipe describes: {"op", "params", "precision"} (a preset's family), {"formula",
// "extents", "dtypes"},
// or {"onnx_bytes", "input_shapes", "what", "dtype", "bind"} (the task of that model whose hash is
// `hash`).
workloads::Workload rebuild(const nb::dict& recipe, uint64_t hash) {
  auto text = [&](const char* key) {
    return recipe.contains(key) ? nb::cast<std::string>(recipe[key]) : std::string();
  };
  if (recipe.contains("op"))
    return workloads::make_workload(text("op"), nb::cast<std::vector<int64_t>>(recipe["params"]),
                                    text("precision"));
  if (recipe.contains("formula"))
    return workloads::from_index_notation(text("formula"), text("extents"), text("dtypes"));
  if (recipe.contains("onnx_bytes")) return onnx_task_workload(recipe, hash);
  throw InputError(
      "measure: a workload recipe has 'op' and 'params', 'formula' and 'extents', or 'onnx_bytes'");
}

nb::dict batch_dict(const tune::BatchOptions& o) {
  nb::dict d;
  d["rounds"] = o.rounds;
  d["confirmed"] = o.confirmed;
  d["best_seconds"] = o.best_seconds;
  d["single_run_slowdown"] = o.single_run_slowdown;
  d["timeout_slowdown"] = o.timeout_slowdown;
  d["timeout_floor_s"] = o.timeout_floor_s;
  return d;
}

// On a node: `options` holds the target ("llvm..."), the runner's settings and the batch's.
std::vector<std::string> node_measure(const nb::dict& recipe, const nb::dict& workload,
                                      const std::vector<std::string>& traces,
                                      const nb::dict& options) {
  tune::RecordWorkload rw = record_workload(workload);
  workloads::Workload w = rebuild(recipe, rw.hash);
  target::Target target = target::Target::parse(nb::cast<std::string>(options["target"]));
  tune::TraceMeasureOptions o;
  o.runner.worker_path = nb::cast<std::string>(options["worker"]);
  // The driver's timing first (its records' target says it), then the tune's overrides.
  if (options.contains("timing"))
    o.runner.time = tune::timing_named(nb::cast<std::string>(options["timing"]));
  if (options.contains("timeout_s")) o.runner.timeout_s = nb::cast<double>(options["timeout_s"]);
  if (options.contains("repeat")) o.runner.time.repeat = nb::cast<int>(options["repeat"]);
  if (options.contains("min_repeat_ms"))
    o.runner.time.min_repeat_ms = nb::cast<int>(options["min_repeat_ms"]);
  o.batch.rounds = nb::cast<int>(options["rounds"]);
  o.batch.confirmed = nb::cast<bool>(options["confirmed"]);
  o.batch.best_seconds = nb::cast<double>(options["best_seconds"]);
  o.batch.single_run_slowdown = nb::cast<double>(options["single_run_slowdown"]);
  o.batch.timeout_slowdown = nb::cast<double>(options["timeout_slowdown"]);
  o.batch.timeout_floor_s = nb::cast<double>(options["timeout_floor_s"]);
  std::vector<tune::TuningRecord> records;
  {
    nb::gil_scoped_release release;
    records = tune::measure_traces(w, rw, target, traces, o);
  }
  std::vector<std::string> out;
  for (const tune::TuningRecord& r : records) out.push_back(tune::to_json_line(r));
  return out;
}

// The key records of `target` timed with the runner's default timing carry: nodes whose key differs
// from the driver's are refused.
std::string node_target_key(const std::string& target_text) {
  return tune::target_key(
      tune::record_target(target::Target::parse(target_text), tune::RunnerOptions{}.time));
}

}  // namespace

tune::RemoteMeasure remote_measure_from(nb::handle remote,
                                        const std::shared_ptr<PendingError>& pending) {
  if (remote.is_none()) return nullptr;
  // Copied and dropped by the tune without the GIL: the reference is shared, dropped with it.
  std::shared_ptr<nb::object> fn(new nb::object(nb::borrow(remote)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
  return [fn, pending](const tune::MeasureTask& task, const std::vector<std::string>& traces,
                       const tune::BatchOptions& o) {
    nb::gil_scoped_acquire gil;
    std::vector<tune::TuningRecord> out;
    try {
      nb::dict batch = batch_dict(o);
      batch["timing"] = task.target.timing.empty() ? std::string("warm")
                                                   : task.target.timing;  // what the records say
      nb::object lines = (*fn)(workload_dict(task.workload), traces, batch);
      for (nb::handle line : lines) out.push_back(tune::parse_record(nb::cast<std::string>(line)));
    } catch (nb::python_error& e) {
      keep_and_unwind(*pending, e, "raised while measuring on the cluster");
    } catch (const nb::cast_error&) {
      throw InputError("the runner must return the records as a list of database lines (str)");
    }
    return out;
  };
}

void bind_remote(nb::module_& m) {
  m.def("measure_traces", &node_measure, nb::arg("recipe"), nb::arg("workload"), nb::arg("traces"),
        nb::arg("options"),
        "On a node: replays, builds, runs and checks the traces; their records as database lines.");
  m.def("target_key", &node_target_key, nb::arg("target") = "llvm",
        "What identifies this machine's records of `target` (CPU, features, cores, timing).");
}

}  // namespace tyche::python
