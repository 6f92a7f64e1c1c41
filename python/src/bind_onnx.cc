// ONNX models from Python (tyche.onnx): a model imported, fused into tasks and compiled by the
// graph executor, each task running its best record of a tuning database (or its default
// schedule); the model's tasks; and tune-model. Thin calls of the model pipeline
// (model/pipeline.h), as the CLI's import, tune-model and run-model are, so both see the same
// task hashes and records. The GIL is released while a model is imported, compiled, run and tuned.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "graph/narrow_types.h"
#include "graph/op_registry.h"
#include "graph/tasks.h"
#include "ir/structural.h"
#include "model/pipeline.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "tune/model/model_tasks.h"
#include "tune/task/tune.h"

namespace tyche::python {
namespace {

using Shapes = model::InputShapes;

// A model from Python: a file, or the bytes of a serialized ModelProto (`what` names it in
// messages) whose external data is read below `dir` (the caller's base_dir; empty refuses it, so
// a model given as bytes never reads files relative to the current directory).
struct ModelSource {
  model::ModelSource source;
  model::LoadOptions options;
};

using Bound = std::map<std::string, runtime::NDArray>;

ModelSource model_source(const std::string& path, nb::handle bytes, const std::string& what,
                         const std::string& dtype, const std::string& dir, const Shapes& shapes,
                         Bound bound = {}) {
  ModelSource s;
  if (!bytes.is_none()) {
    nb::bytes b = nb::cast<nb::bytes>(bytes);
    s.source = model::ModelSource::in_memory(std::string(b.c_str(), b.size()), what, dir);
  } else {
    s.source = model::ModelSource::file(path);
    s.source.what = what;
  }
  s.options.dtype = dtype;
  s.options.input_shapes = shapes;
  s.options.bound_inputs = std::move(bound);
  return s;
}

model::LoadedModel load_released(const ModelSource& src) {
  nb::gil_scoped_release release;
  return model::load_model(src.source, src.options);
}

// The tasks of the models a node has been sent, by (bytes, shapes): a tune sends its model with
// every batch, and importing a network takes seconds.
struct ImportedModels {
  std::mutex mu;
  std::map<std::tuple<std::string, Shapes, std::string, std::string>, std::vector<tune::TuneTask>>
      tasks;  // bytes, shapes, dtype, bound inputs
};
ImportedModels& imported_models() {
  static ImportedModels models;
  return models;
}

nb::list task_list(const graph::TaskTable& table) {
  nb::list out;
  for (const graph::Task& t : table.tasks) {
    nb::dict d;
    d["name"] = t.name;
    d["weight"] = t.weight;
    d["gflop"] = t.flop / 1e9;
    d["hash"] = fmt::format("{:016x}", t.hash);
    out.append(d);
  }
  return out;
}

nb::list record_list(const graph::TaskTable& table, const model::ModelPrograms& chosen) {
  nb::list out;
  for (size_t t = 0; t < table.tasks.size(); ++t) {
    bool tuned = chosen.program_hash[t] != 0;
    nb::dict d;
    d["task"] = table.tasks[t].name;
    d["hash"] = fmt::format("{:016x}", table.tasks[t].hash);
    d["program"] = tuned ? nb::cast(fmt::format("{:016x}", chosen.program_hash[t])) : nb::none();
    d["measured_at"] = tuned ? nb::cast(chosen.measured_at[t]) : nb::none();
    out.append(d);
  }
  return out;
}

// A DLPack dtype as Tyche's (InputError for one it has no name for).
DataType dtype_of(const nb::dlpack::dtype& d, const std::string& name) {
  if (d.lanes == 1) {
    switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
      case nb::dlpack::dtype_code::Int:
        return DataType::Int(d.bits);
      case nb::dlpack::dtype_code::UInt:
        return DataType::UInt(d.bits);
      case nb::dlpack::dtype_code::Float:
        return DataType::Float(d.bits);
      case nb::dlpack::dtype_code::Bfloat:
        return DataType::BFloat16();
      case nb::dlpack::dtype_code::Bool:
        if (d.bits == 8) return DataType::Bool();
        break;
      default:
        break;
    }
  }
  std::string kind = d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Complex)
                         ? "complex"
                         : fmt::format("DLPack code {}", d.code);
  throw_input_error("input '{}' has an element type Tyche does not support ({}, {} bits)", name,
                    kind, d.bits);
}

using InputArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

runtime::NDArray to_ndarray(const InputArray& a, const std::string& name) {
  std::vector<int64_t> shape;
  for (size_t d = 0; d < a.ndim(); ++d) shape.push_back(static_cast<int64_t>(a.shape(d)));
  runtime::NDArray out(shape, dtype_of(a.dtype(), name));
  if (out.nbytes() != a.nbytes())
    throw_input_error("input '{}': {} bytes where its type needs {}", name, a.nbytes(),
                      out.nbytes());
  if (out.nbytes() > 0) std::memcpy(out.data(), a.data(), out.nbytes());
  return out;
}

// An ml_dtypes bfloat16 array (numpy has no bfloat16 of its own) read through its bits, or
// nothing when `v` is not one.
std::optional<runtime::NDArray> bfloat16_array(const nb::handle& v, const std::string& name) {
  if (!nb::hasattr(v, "dtype") || !nb::hasattr(v, "view")) return std::nullopt;
  nb::object dtype = v.attr("dtype");
  if (!nb::hasattr(dtype, "name") ||
      nb::cast<std::string>(nb::str(dtype.attr("name"))) != "bfloat16")
    return std::nullopt;
  InputArray bits;
  if (!nb::try_cast(v.attr("view")("uint16"), bits, false)) return std::nullopt;
  runtime::NDArray u = to_ndarray(bits, name);
  runtime::NDArray out(u.shape(), DataType::BFloat16());
  if (out.nbytes() > 0) std::memcpy(out.data(), u.data(), out.nbytes());
  return out;
}

// ml_dtypes' names of ONNX's narrow types (graph/narrow_types.h), by ONNX code.
const char* ml_dtypes_name(int64_t code) {
  switch (code) {
    case 17:
      return "float8_e4m3fn";
    case 18:
      return "float8_e4m3fnuz";
    case 19:
      return "float8_e5m2";
    case 20:
      return "float8_e5m2fnuz";
    case 21:
      return "uint4";
    case 22:
      return "int4";
    case 23:
      return "float4_e2m1fn";
    case 25:
      return "uint2";
    case 26:
      return "int2";
    default:
      return nullptr;
  }
}

// An ml_dtypes array of a narrow type, as Tyche stores it (a byte per element: the float types'
// bits, the integer types' values), or nothing when `v` is not one.
std::optional<runtime::NDArray> narrow_array(const nb::handle& v, const std::string& name) {
  if (!nb::hasattr(v, "dtype") || !nb::hasattr(v, "view")) return std::nullopt;
  nb::object dtype = v.attr("dtype");
  if (!nb::hasattr(dtype, "name")) return std::nullopt;
  std::string type = nb::cast<std::string>(nb::str(dtype.attr("name")));
  for (int64_t code = 17; code <= 26; ++code) {
    const char* ml = ml_dtypes_name(code);
    if (!ml || type != ml) continue;
    std::optional<graph::NarrowType> t = graph::narrow_type(code);
    nb::object bytes =
        t->is_float ? v.attr("view")("uint8") : v.attr("astype")(t->is_signed ? "int8" : "uint8");
    InputArray a;
    if (!nb::try_cast(bytes, a, false)) return std::nullopt;
    return to_ndarray(a, name);
  }
  return std::nullopt;
}

// A narrow result (stored a byte per element) as its ml_dtypes array.
nb::object narrow_result(runtime::NDArray a, int64_t code) {
  std::optional<graph::NarrowType> t = graph::narrow_type(code);
  nb::object bytes = nb::cast(to_numpy(std::move(a)));
  nb::object ml = nb::module_::import_("ml_dtypes").attr(ml_dtypes_name(code));
  return t->is_float ? bytes.attr("view")(ml) : bytes.attr("astype")(ml);
}

// A bfloat16 result as an ml_dtypes array where ml_dtypes is installed (onnx depends on it), else
// as numpy's float32.
nb::object bfloat16_result(runtime::NDArray a) {
  runtime::NDArray bits(a.shape(), DataType::UInt(16));
  if (a.nbytes() > 0) std::memcpy(bits.data(), a.data(), a.nbytes());
  nb::object u = nb::cast(to_numpy(std::move(bits)));
  try {
    nb::object ml = nb::module_::import_("ml_dtypes");
    return u.attr("view")(ml.attr("bfloat16"));
  } catch (const nb::python_error&) {
    return u.attr("astype")("uint32").attr("__lshift__")(16).attr("view")("float32");
  }
}

// Python's bind={name: array}.
Bound bound_inputs(const nb::dict& bind) {
  Bound out;
  for (auto [key, value] : bind) {
    std::string name = nb::cast<std::string>(key);
    InputArray a;
    if (std::optional<runtime::NDArray> bf = bfloat16_array(value, name)) {
      out[name] = std::move(*bf);
      continue;
    }
    if (!nb::try_cast(value, a, false))
      throw_input_error(
          "bind['{}'] is not an array Tyche can read (numeric, C-contiguous, in CPU memory): a {}",
          name, python_type_name(value));
    out[name] = to_ndarray(a, name);
  }
  return out;
}

// The bound inputs as bytes, to key the models a node imported.
std::string bound_key(const Bound& bound) {
  std::string key;
  for (const auto& [name, a] : bound) {
    key += fmt::format("{}:{}:{};", name, a.dtype().str(), fmt::join(a.shape(), "x"));
    key.append(static_cast<const char*>(a.data()), a.nbytes());
  }
  return key;
}

nb::tuple as_tuple(const std::vector<int64_t>& dims) {
  nb::list l;
  for (int64_t d : dims) l.append(d);
  return nb::steal<nb::tuple>(PyList_AsTuple(l.ptr()));
}

// A compiled model. One run at a time (the executor has one arena).
struct CompiledModel {
  model::CompiledModel compiled;
  std::unique_ptr<std::mutex> running = std::make_unique<std::mutex>();

  const executor::Executor& exec() const { return *compiled.executor; }

  std::vector<std::string> names(const std::vector<int>& ids) const {
    std::vector<std::string> out;
    for (int v : ids) out.push_back(exec().graph().value(v).name);
    return out;
  }

  nb::dict run(const nb::dict& given) {
    const graph::Graph& g = exec().graph();
    std::vector<std::string> inputs = names(g.inputs);
    for (auto [key, value] : given) {
      std::string k = nb::cast<std::string>(key);
      if (std::find(inputs.begin(), inputs.end(), k) == inputs.end())
        throw_input_error("'{}' is not an input of the model (its inputs: {})", k,
                          fmt::join(inputs, ", "));
    }
    std::vector<runtime::NDArray> arrays;
    for (const std::string& name : inputs) {
      if (!given.contains(name.c_str()))
        throw_input_error("missing input '{}' (the model takes: {})", name,
                          fmt::join(inputs, ", "));
      nb::object v = given[name.c_str()];
      InputArray a;
      if (std::optional<runtime::NDArray> bf = bfloat16_array(v, name)) {
        arrays.push_back(std::move(*bf));
        continue;
      }
      if (std::optional<runtime::NDArray> narrow = narrow_array(v, name)) {
        arrays.push_back(std::move(*narrow));
        continue;
      }
      if (!nb::try_cast(v, a, false))
        throw_input_error(
            "input '{}' is not an array Tyche can read (numeric, C-contiguous, in CPU memory): a "
            "{}",
            name, python_type_name(v));
      arrays.push_back(to_ndarray(a, name));
    }
    std::vector<runtime::NDArray> outs;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*running);
      outs = compiled.executor->run(arrays);
    }
    nb::dict result;
    std::vector<std::string> out_names = names(g.outputs);
    for (size_t o = 0; o < outs.size(); ++o) {
      int64_t narrow = g.value(g.outputs[o]).narrow_code;
      result[out_names[o].c_str()] = narrow != 0 ? narrow_result(std::move(outs[o]), narrow)
                                     : outs[o].dtype().is_bfloat16()
                                         ? bfloat16_result(std::move(outs[o]))
                                         : nb::cast(to_numpy(std::move(outs[o])));
    }
    return result;
  }
};

CompiledModel compile_model(const ModelSource& src, const std::string& db, int threads) {
  if (threads < 0) throw InputError("compile: threads must be positive");
  if (threads > 0) runtime::ThreadPool::global().set_num_threads(threads);
  CompiledModel c;
  nb::gil_scoped_release release;
  model::CompileSetup setup;
  setup.db = db;
  c.compiled = model::compile_model(model::load_model(src.source, src.options), setup);
  return c;
}

nb::dict tune_model(const ModelSource& src, int trials, const std::string& db, int threads,
                    int64_t seed, const std::string& timing, const std::string& worker,
                    nb::handle progress, nb::handle remote, int population, int generations) {
  model::TuneSetup setup;
  setup.population = population;
  setup.generations = generations;
  setup.trials = trials;
  setup.db = db;
  setup.threads = threads;
  setup.seed = seed;
  setup.timing = timing;
  setup.worker = worker;
  model::LoadedModel m = load_released(src);
  model::ModelTuning tuning = model::prepare_tuning(m, setup);
  const std::vector<tune::TuneTask>& tasks = tuning.tasks;
  tune::TuneOptions& o = tuning.options;
  auto remote_error = std::make_shared<PendingError>();
  o.remote_measure = remote_measure_from(remote, remote_error);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  model::LatencyEstimate estimate(tasks);
  // At the end of each round: a signal (Ctrl-C) or an exception of the callback stops the tune
  // once what was measured is saved, and is raised when the tune has returned.
  std::optional<nb::python_error> pending;
  auto on_progress = [&](const tune::TuneProgress& p) {
    estimate.update(p.task->name, p.task->best_seconds);
    double estimated_ms = estimate.seconds() * 1e3;
    nb::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      if (!progress.is_none())
        progress(p.trials, p.budget, p.task->name, p.task->best_seconds, estimated_ms,
                 estimate.measured(), tasks.size(), p.elapsed_s);
    } catch (nb::python_error& e) {
      if (!pending) pending.emplace(std::move(e));
      stop = true;
    }
  };
  tune::TuneResult r;
  try {
    nb::gil_scoped_release release;
    r = tune::tune(tasks, tuning.target, o, on_progress);
  } catch (const CallbackRaised&) {
    // measuring on the cluster raised: below
  }
  remote_error->raise_if_any();
  if (pending) {
    nb::python_error e = std::move(*pending);
    throw e;
  }
  model::TuningSummary summary = model::summarize_tuning(tuning, r);
  nb::list task_rows;
  for (const model::TaskSummary& t : summary.tasks) {
    nb::dict d;
    d["name"] = t.name;
    d["weight"] = t.weight;
    d["trials"] = t.trials;
    d["failed"] = t.failed;
    d["best_ms"] = t.best_seconds > 0 ? nb::cast(t.best_seconds * 1e3) : nb::object(nb::none());
    d["share"] = t.share;
    d["gflop"] = t.gflop;
    task_rows.append(d);
  }
  const tune::TuneTimes& tm = r.times;
  nb::dict times;
  times["build"] = tm.build;
  times["run"] = tm.run;
  times["search"] = tm.search;
  times["model"] = tm.model;
  times["database"] = tm.database;
  times["confirm"] = tm.confirm;
  nb::dict d;
  d["model"] = m.what;
  d["trials"] = trials;
  d["timing"] = tuning.timing;
  d["wall_s"] = tm.total;
  d["estimated_latency_ms"] = summary.estimated_seconds * 1e3;
  d["tasks"] = task_rows;
  d["interrupted"] = r.interrupted;
  d["times"] = times;
  d["warnings"] = r.warnings;
  return d;
}

}  // namespace

workloads::Workload onnx_task_workload(const nb::dict& recipe, uint64_t hash) {
  nb::bytes b = nb::cast<nb::bytes>(recipe["onnx_bytes"]);
  ModelSource src;
  // A node has the model's bytes alone: no external data.
  src.source = model::ModelSource::in_memory(std::string(b.c_str(), b.size()),
                                             nb::cast<std::string>(recipe["what"]), "");
  src.options.dtype =
      recipe.contains("dtype") ? nb::cast<std::string>(recipe["dtype"]) : std::string("float32");
  src.options.input_shapes = nb::cast<Shapes>(recipe["input_shapes"]);
  if (recipe.contains("bind")) src.options.bound_inputs = bound_inputs(recipe["bind"]);
  ImportedModels& models = imported_models();
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(models.mu);
  auto key = std::make_tuple(src.source.bytes, src.options.input_shapes, src.options.dtype,
                             bound_key(src.options.bound_inputs));
  auto it = models.tasks.find(key);
  if (it == models.tasks.end()) {
    model::LoadedModel m = model::load_model(src.source, src.options);
    it = models.tasks.emplace(std::move(key), tune::model_tune_tasks(m.table, m.graph)).first;
  }
  for (const tune::TuneTask& t : it->second)
    if (ir::structural_hash(t.workload.func) == hash) return t.workload;
  throw Error(fmt::format(
      "measure: {} has no task whose program hashes to {:016x} (another Tyche on this node?)",
      src.source.what, hash));
}

void bind_onnx(nb::module_& m) {
  nb::class_<CompiledModel>(m, "CompiledModelNative",
                            "An ONNX model compiled by the graph executor.")
      .def("run", &CompiledModel::run, nb::arg("inputs"),
           "Runs the model on {input name: array}; returns {output name: array}.")
      .def_prop_ro("input_names",
                   [](const CompiledModel& c) { return c.names(c.exec().graph().inputs); })
      .def_prop_ro("output_names",
                   [](const CompiledModel& c) { return c.names(c.exec().graph().outputs); })
      .def_prop_ro("inputs",
                   [](const CompiledModel& c) {
                     nb::dict d;
                     const graph::Graph& g = c.exec().graph();
                     for (int v : g.inputs)
                       d[g.value(v).name.c_str()] =
                           nb::make_tuple(as_tuple(g.value(v).shape), g.value(v).dtype.str());
                     return d;
                   })
      .def_prop_ro("tasks", [](const CompiledModel& c) { return task_list(c.exec().table()); })
      .def_prop_ro("tasks_tuned", [](const CompiledModel& c) { return c.compiled.chosen.tuned; })
      .def_prop_ro(
          "records",
          [](const CompiledModel& c) { return record_list(c.exec().table(), c.compiled.chosen); },
          "Per task, the record it runs: task, hash, program (its structural hash) and "
          "measured_at; None for a "
          "default schedule (as tyche run-model --json writes them).")
      .def_prop_ro("arena_bytes",
                   [](const CompiledModel& c) { return c.exec().memory().arena_bytes; })
      .def_prop_ro("naive_bytes",
                   [](const CompiledModel& c) { return c.exec().memory().naive_bytes; })
      .def_prop_ro("compile_seconds",
                   [](const CompiledModel& c) { return c.exec().compile_seconds(); });
  m.def(
      "onnx_compile",
      [](const std::string& path, nb::handle bytes, const std::string& what, const std::string& db,
         int threads, const Shapes& shapes, const std::string& dtype, const std::string& base_dir,
         const nb::dict& bind) {
        CompiledModel c = compile_model(
            model_source(path, bytes, what, dtype, base_dir, shapes, bound_inputs(bind)), db,
            threads);
        for (const std::string& w : c.compiled.chosen.warnings)
          if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0) throw nb::python_error();
        return c;
      },
      nb::arg("path"), nb::arg("bytes").none(), nb::arg("what"), nb::arg("db"), nb::arg("threads"),
      nb::arg("input_shapes"), nb::arg("dtype") = "float32", nb::arg("base_dir") = "",
      nb::arg("bind") = nb::dict());
  m.def(
      "onnx_tasks",
      [](const std::string& path, nb::handle bytes, const std::string& what, const Shapes& shapes,
         const std::string& dtype, const std::string& base_dir, const nb::dict& bind) {
        return task_list(load_released(model_source(path, bytes, what, dtype, base_dir, shapes,
                                                    bound_inputs(bind)))
                             .table);
      },
      nb::arg("path"), nb::arg("bytes").none(), nb::arg("what"), nb::arg("input_shapes"),
      nb::arg("dtype") = "float32", nb::arg("base_dir") = "", nb::arg("bind") = nb::dict());
  m.def(
      "onnx_tune",
      [](const std::string& path, nb::handle bytes, const std::string& what, int trials,
         const std::string& db, int threads, const Shapes& shapes, int64_t seed,
         const std::string& timing, const std::string& worker, nb::handle progress,
         nb::handle remote, const std::string& dtype, const std::string& base_dir, int population,
         int generations, const nb::dict& bind) {
        return tune_model(
            model_source(path, bytes, what, dtype, base_dir, shapes, bound_inputs(bind)), trials,
            db, threads, seed, timing, worker, progress, remote, population, generations);
      },
      nb::arg("path"), nb::arg("bytes").none(), nb::arg("what"), nb::arg("trials"), nb::arg("db"),
      nb::arg("threads"), nb::arg("input_shapes"), nb::arg("seed"), nb::arg("timing"),
      nb::arg("worker"), nb::arg("progress").none(), nb::arg("remote").none() = nb::none(),
      nb::arg("dtype") = "float32", nb::arg("base_dir") = "", nb::arg("population") = 0,
      nb::arg("generations") = 0, nb::arg("bind") = nb::dict());
  m.def(
      "onnx_target", [] { return model::model_target().str(); },
      "The target a model's tasks are tuned for (the host).");
  m.def(
      "onnx_supported_ops",
      [] {
        nb::list out;
        for (const std::string& op : graph::supported_ops()) {
          const graph::OpSpec* spec = graph::find_op(op);  // Constant: folded on import
          out.append(nb::make_tuple(op, spec ? graph::pattern_name(spec->pattern) : "constant"));
        }
        return out;
      },
      "The ONNX operators Tyche converts, each with its fusion pattern.");
}

}  // namespace tyche::python
