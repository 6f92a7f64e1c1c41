#include "model_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "codegen/export/export.h"
#include "command_output.h"
#include "executor/executor.h"
#include "executor/export_model.h"
#include "flag_checks.h"
#include "graph/onnx_import.h"
#include "graph/tasks.h"
#include "model/pipeline.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/median.h"
#include "target/cpu.h"
#include "target/target.h"
#include "tune/model/model_tasks.h"

namespace tyche::tools {

namespace {

// `dtype`: float32 (as the model is) or bfloat16 (graph::convert_to_bfloat16); tune-model and
// run-model must be given the same, since the tasks differ.
// `binds`: NAME=FILE.npy, an input bound to the array in that file at compile time.
model::LoadedModel load_model(const std::string& path, const std::vector<std::string>& input_shapes,
                              const std::vector<std::string>& binds, const std::string& dtype) {
  graph::ImportOptions shapes;
  for (const std::string& s : input_shapes) graph::parse_input_shape(s, shapes);
  model::LoadOptions options;
  options.input_shapes = shapes.input_shapes;
  for (const std::string& b : binds) {
    size_t eq = b.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == b.size())
      throw_input_error("--bind '{}' is not NAME=FILE.npy", b);
    std::string name = b.substr(0, eq);
    if (options.bound_inputs.count(name)) throw_input_error("--bind {} is given twice", name);
    options.bound_inputs[name] = runtime::load_npy(b.substr(eq + 1));
  }
  options.dtype = dtype;
  return model::load_model(model::ModelSource::file(path), options);
}

constexpr const char* kBindHelp =
    "NAME=FILE.npy: bind an input to this value at compile time (an op that needs its axes, "
    "shape or bounds as constants can then read them); the input is no longer given at run time";

std::string hex(uint64_t h) {
  return fmt::format("{:016x}", h);
}

// Per task, the record it runs: its program's structural hash and when it was measured (null for
// a default schedule). Python's CompiledModel.records is the same list.
nlohmann::json records_json(const graph::TaskTable& table, const model::ModelPrograms& chosen) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t t = 0; t < table.tasks.size(); ++t) {
    bool tuned = chosen.program_hash[t] != 0;
    rows.push_back(
        {{"task", table.tasks[t].name},
         {"hash", hex(table.tasks[t].hash)},
         {"program", tuned ? nlohmann::json(hex(chosen.program_hash[t])) : nlohmann::json(nullptr)},
         {"measured_at", tuned ? nlohmann::json(chosen.measured_at[t]) : nlohmann::json(nullptr)}});
  }
  return rows;
}

std::string value_text(const graph::Graph& g, int v) {
  const graph::Value& val = g.value(v);
  return fmt::format("{}:{}[{}]", val.name, val.dtype.str(), graph::shape_text(val.shape));
}

// A file name for an output (its name, with anything but [A-Za-z0-9_.-] as '_').
std::string file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  return s.empty() || s[0] == '.' ? "_" + s : s;
}

// A random input from a fixed seed; integer inputs that index a table (a Gather's indices) stay
// inside it, other integers and bools are 0 or 1.
runtime::NDArray random_input(const graph::Graph& g, size_t i) {
  int id = g.inputs[i];
  const graph::Value& v = g.value(id);
  runtime::NDArray a(v.shape, v.dtype);
  if (v.dtype.is_float()) {
    a.fill_uniform(42 + i);
    return a;
  }
  int64_t bound = 2;
  for (const graph::Node& n : g.nodes)
    if (n.op == "Gather" && n.inputs.size() > 1 && n.inputs[1] == id) {
      const auto& data = g.value(n.inputs[0]).shape;
      int64_t axis = n.get_int("axis", 0);
      bound = data[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(data.size()) : axis)];
    }
  a.fill_uniform(42 + i, 0, static_cast<double>(bound));
  return a;
}

// Runs the model in Python's onnxruntime (CPU provider, all graph optimizations, `threads`
// intra-op threads) on the inputs saved in `dir`; writes its outputs there as ort_<i>.npy and
// prints its median latency in ms.
constexpr const char* kOnnxruntimeScript = R"(
import sys, time, statistics
try:
    import numpy as np, onnxruntime as ort
except ImportError as e:
    sys.exit("onnxruntime is not installed (pip install onnxruntime): %s" % e)
model, threads, repeat, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names = sys.argv[5:]
o = ort.SessionOptions()
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
feeds = {n: np.load("%s/in_%d.npy" % (d, i)) for i, n in enumerate(names)}
outs = s.run(None, feeds)
times = []
for _ in range(repeat):
    t = time.perf_counter(); s.run(None, feeds); times.append(time.perf_counter() - t)
for i, a in enumerate(outs):
    np.save("%s/ort_%d.npy" % (d, i), a)
print(statistics.median(times) * 1e3)
)";

struct OrtRun {
  double median_ms = 0;
  std::vector<runtime::NDArray> outputs;
};

OrtRun run_onnxruntime(const std::string& model, const graph::Graph& g,
                       const std::vector<runtime::NDArray>& inputs, int threads, int repeat) {
  char dir[] = "/tmp/tyche_ort_XXXXXX";
  if (!::mkdtemp(dir)) throw_error("cannot create a temporary directory");
  std::string names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    runtime::save_npy(fmt::format("{}/in_{}.npy", dir, i), inputs[i]);
    names += fmt::format(" '{}'", g.value(g.inputs[i]).name);
  }
  std::string script = std::string(dir) + "/run.py";
  std::ofstream(script) << kOnnxruntimeScript;
  std::string cmd = fmt::format("python3 '{}' '{}' {} {} '{}'{} 2>&1", script, model, threads,
                                repeat, dir, names);
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (pipe && std::fgets(buf, sizeof buf, pipe)) out += buf;
  int status = pipe ? ::pclose(pipe) : -1;
  OrtRun r;
  if (status != 0) {
    std::filesystem::remove_all(dir);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    throw_error("--compare onnxruntime: {}",
                out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1));
  }
  r.median_ms = std::stod(out.substr(out.rfind('\n', out.size() - 2) == std::string::npos
                                         ? 0
                                         : out.rfind('\n', out.size() - 2) + 1));
  for (size_t o = 0; o < g.outputs.size(); ++o)
    r.outputs.push_back(runtime::load_npy(fmt::format("{}/ort_{}.npy", dir, o)));
  std::filesystem::remove_all(dir);
  return r;
}

// run-model --profile: `repeat` more runs with every call timed; per task (largest share first)
// its calls, time per call in the model, its tuned best (as measured alone) and their ratio.
nlohmann::json print_profile(executor::Executor& exec, const std::vector<runtime::NDArray>& inputs,
                             int repeat, const std::vector<double>& tuned_seconds) {
  const graph::TaskTable& table = exec.table();
  std::vector<double> call_seconds;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeat; ++r) exec.run(inputs, &call_seconds);
  double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeat;
  std::vector<double> task_seconds(table.tasks.size(), 0.0);
  std::vector<int> calls(table.tasks.size(), 0);
  for (size_t c = 0; c < table.calls.size(); ++c) {
    auto t = static_cast<size_t>(table.calls[c].task);
    task_seconds[t] += call_seconds[c] / repeat;
    ++calls[t];
  }
  std::vector<size_t> order(table.tasks.size());
  for (size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return task_seconds[a] > task_seconds[b]; });
  double in_calls = 0, tuned_total = 0;
  for (size_t t = 0; t < order.size(); ++t) {
    in_calls += task_seconds[t];
    tuned_total += tuned_seconds[t] * calls[t];
  }
  fmt::print("\nprofile ({} runs): {:<40} {:>5} {:>12} {:>10} {:>7} {:>6}\n", repeat, "task",
             "calls", "in model ms", "tuned ms", "ratio", "share");
  nlohmann::json rows = nlohmann::json::array();
  for (size_t t : order) {
    double per_call = calls[t] ? task_seconds[t] / calls[t] : 0, tuned = tuned_seconds[t];
    fmt::print("{:>18}{:<40} {:>5} {:>12.4f} {:>10} {:>7} {:>5.1f}%\n", "", table.tasks[t].name,
               calls[t], per_call * 1e3, tuned > 0 ? fmt::format("{:.4f}", tuned * 1e3) : "-",
               tuned > 0 ? fmt::format("{:.2f}", per_call / tuned) : "-",
               total > 0 ? task_seconds[t] / total * 100 : 0);
    rows.push_back(
        {{"task", table.tasks[t].name},
         {"calls", calls[t]},
         {"in_model_ms", per_call * 1e3},
         {"tuned_ms", tuned > 0 ? nlohmann::json(tuned * 1e3) : nlohmann::json(nullptr)}});
  }
  fmt::print(
      "calls {:.3f} ms of {:.3f} ms per run (the rest: between calls); tuned tasks alone sum to "
      "{:.3f} ms\n",
      in_calls * 1e3, total * 1e3, tuned_total * 1e3);
  return {{"run_ms", total * 1e3},
          {"calls_ms", in_calls * 1e3},
          {"tuned_sum_ms", tuned_total * 1e3},
          {"tasks", rows}};
}

namespace fs = std::filesystem;

// --save-outputs DIR as a path whose last component names DIR ("out/" is "out").
fs::path save_outputs_path(const std::string& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

// What can be told before the model runs: DIR, if it exists, is a directory.
void check_save_outputs(const std::string& dir) {
  std::error_code ec;
  fs::path target = save_outputs_path(dir);
  if (fs::exists(target, ec) && !fs::is_directory(target, ec))
    throw_input_error("--save-outputs '{}' is not a directory", dir);
}

// run-model --save-outputs DIR writes DIR/OUTPUT.npy for every output, all or nothing. Every file
// is written first into a fresh temporary folder beside DIR (in its parent: renames then stay on
// one file system). A new DIR is that folder renamed into place. Into an existing DIR the files
// are moved one by one, only once all were written and none would land on a directory; a file
// one replaces is kept (hard-linked into the temporary folder) until every move succeeded, so a
// failed move puts DIR back as it was. Either way a failure leaves nothing new in DIR.
void save_outputs(const std::string& dir, const std::vector<std::string>& names,
                  const std::vector<runtime::NDArray>& arrays) {
  fs::path target = save_outputs_path(dir), parent = target.parent_path();
  std::error_code ec;
  std::map<std::string, std::string> owner;  // file -> output
  std::vector<std::string> files;
  for (const std::string& name : names) {
    std::string file = file_name(name) + ".npy";
    if (auto [it, inserted] = owner.emplace(file, name); !inserted)
      throw_input_error("--save-outputs: outputs '{}' and '{}' would both be written to {}",
                        it->second, name, file);
    files.push_back(file);
  }
  check_save_outputs(dir);
  fs::create_directories(parent, ec);
  if (ec)
    throw_input_error("--save-outputs: cannot create the directory '{}': {}", parent.string(),
                      ec.message());
  std::string pattern = (parent / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw_input_error("--save-outputs: cannot create a temporary directory in '{}': {}",
                      parent.string(), std::strerror(errno));
  fs::path tmp = pattern;
  auto fail = [&](const std::string& why) {
    fs::remove_all(tmp, ec);
    throw_input_error("--save-outputs '{}': {}; nothing was saved", dir, why);
  };
  for (size_t o = 0; o < files.size(); ++o) {
    try {
      runtime::save_npy((tmp / files[o]).string(), arrays[o]);
    } catch (const std::exception& e) {
      fail(fmt::format("output '{}': {}", names[o], e.what()));
    }
  }
  if (!fs::exists(target, ec)) {
    fs::rename(tmp, target, ec);
    if (ec)
      fail(fmt::format("cannot rename '{}' to '{}': {}", tmp.string(), target.string(),
                       ec.message()));
    return;
  }
  for (const std::string& file : files)
    if (fs::is_directory(target / file, ec))
      fail(fmt::format("'{}' is a directory", (target / file).string()));
  std::vector<bool> kept(files.size(), false);  // the file replaced is kept in tmp as .old-FILE
  size_t moved = 0;
  std::string why;
  for (; moved < files.size(); ++moved) {
    fs::path dest = target / files[moved], old = tmp / (".old-" + files[moved]);
    if (fs::exists(dest, ec)) {
      fs::create_hard_link(dest, old, ec);
      if (ec) fs::copy_file(dest, old, ec);  // a file system without hard links
      if (ec) {
        why = fmt::format("cannot keep '{}' aside: {}", dest.string(), ec.message());
        break;
      }
      kept[moved] = true;
    }
    fs::rename(tmp / files[moved], dest, ec);
    if (ec) {
      why = fmt::format("cannot move '{}' into place: {}", dest.string(), ec.message());
      break;
    }
  }
  if (moved < files.size()) {  // undo the moves made: DIR as it was
    for (size_t i = 0; i < moved; ++i) {
      std::error_code ignored;
      fs::path dest = target / files[i];
      if (kept[i])
        fs::rename(tmp / (".old-" + files[i]), dest, ignored);
      else
        fs::remove(dest, ignored);
    }
    fail(why);
  }
  fs::remove_all(tmp, ec);
}

}  // namespace

ModelCommands::ModelCommands(CLI::App& app) {
  import_ = app.add_subcommand("import",
                               "read an ONNX model: print its fused graph and its tuning tasks");
  run_model_ = app.add_subcommand(
      "run-model", "compile an ONNX model (with a database's best programs) and run it");
  for (CLI::App* sub : {import_, run_model_}) {
    sub->add_option("model", model_, "the .onnx file")->required();
    sub->add_option(
        "--input-shape,--shape", input_shapes_,
        "NAME=1x3x224x224 (or 1,3,224,224): a static shape for an input with symbolic dimensions");
    sub->add_option("--bind", binds_, kBindHelp);
    sub->add_option("--json", json_file_, "write the result as JSON here");
  }
  tune_model_ = app.add_subcommand(
      "tune-model",
      "tune every task of an ONNX model, trials shared by the gradient task scheduler");
  tune_model_->add_option("model", model_, "the .onnx file")->required();
  tune_model_->add_option(
      "--input-shape,--shape", input_shapes_,
      "NAME=1x3x224x224 (or 1,3,224,224): a static shape for an input with symbolic dimensions");
  tune_model_->add_option("--bind", binds_, kBindHelp);
  tools::at_least(
      tune_model_->add_option("--trials", trials_, "candidates to measure, all tasks together")
          ->required(),
      1);
  tune_model_
      ->add_option("--db", db_,
                   "the tuning database directory: records kept, a killed tune resumes")
      ->required();
  tools::thread_count(tune_model_->add_option(
      "--threads", threads_, "threads for search and the cost model (default: all)"));
  tune_model_->add_option("--seed", seed_, "seed of the spaces and the search (default 0)");
  tools::at_least(
      tune_model_->add_option("--population", population_,
                              "the evolutionary search's population per round (default 512)"),
      2);
  tools::at_least(
      tune_model_->add_option("--generations", generations_,
                              "the evolutionary search's generations per round (default 4)"),
      1);
  tune_model_->add_option("--json", json_file_,
                          "write {model, trials, wall_s, estimated_latency_ms, tasks, times} here");
  tune_model_->add_option("--cpu", cpu_, "generate code for this CPU (as tyche tune --cpu)");
  for (CLI::App* sub : {import_, run_model_, tune_model_})
    sub->add_option("--dtype", dtype_,
                    "float32 (default) or bfloat16: the convolutions' and matrix products' weights "
                    "and activations in "
                    "bfloat16, accumulated in float32 (give tune-model and run-model the same)");
  tune_model_->add_option("--timing", timing_,
                          "auto (default: mixed), mixed (before each of 10 runs the cores' private "
                          "caches are evicted, so the "
                          "activations wait in the last-level cache, and the weights are evicted "
                          "from every cache), llc (the "
                          "weights too in the last-level cache), cold (every argument evicted from "
                          "every cache) or warm "
                          "(repeated back to back for 20 ms, as tyche tune)");
  run_model_->add_option(
      "--db", db_, "a tuning database: each task runs its best record (others a default schedule)");
  run_model_->add_option("--input", inputs_,
                         "NAME=FILE.npy: an input's value (others are random, from a fixed seed)");
  run_model_->add_option("--save-outputs", save_outputs_,
                         "write DIR/OUTPUT_NAME.npy for each output");
  tools::at_least(run_model_->add_option("--repeat", repeat_, "timed runs (default 10)"), 1);
  tools::thread_count(
      run_model_->add_option("--threads", threads_, "threads for the kernels (default: all)"));
  run_model_
      ->add_option(
          "--compare", compare_,
          "onnxruntime: run the model there too (Python's onnxruntime), time it, compare outputs")
      ->check(CLI::IsMember({"onnxruntime"}));
  run_model_->add_option("--cpu", cpu_, "generate code for this CPU (as tyche run --cpu)");
  run_model_->add_flag(
      "--profile", profile_,
      "time every call as the model runs: per task, its time in the model against its tuned best");
  export_model_ = app.add_subcommand(
      "export-model",
      "write an ONNX model, with a database's best programs, as a C header and a static library");
  export_model_->add_option("model", model_, "the .onnx file")->required();
  export_model_->add_option(
      "--input-shape,--shape", input_shapes_,
      "NAME=1x3x224x224 (or 1,3,224,224): a static shape for an input with symbolic dimensions");
  export_model_->add_option("--bind", binds_, kBindHelp);
  export_model_->add_option(
      "--db", db_,
      "a tuning database: each task exports its best record (others a default schedule)");
  export_model_
      ->add_option("--name", name_,
                   "the C function's name (a C identifier); also the header's, NAME.h, and the "
                   "library's, libNAME.a")
      ->required();
  export_model_
      ->add_option("-o,--output", output_, "the directory to write into (created if missing)")
      ->required();
  export_model_->add_option(
      "--cpu", cpu_,
      "generate code for this CPU: host (default), x86-64-v3, x86-64-v4, an LLVM CPU name");
  tools::thread_count(export_model_->add_option(
      "--threads", threads_,
      "1: parallel loops run serially (default: on the library's thread pool)"));
}

bool ModelCommands::parsed() const {
  return import_->parsed() || run_model_->parsed() || tune_model_->parsed() ||
         export_model_->parsed();
}

int ModelCommands::run() {
  if (import_->parsed()) return cmd_import();
  if (tune_model_->parsed()) return cmd_tune_model();
  if (export_model_->parsed()) return cmd_export_model();
  return cmd_run_model();
}

int ModelCommands::cmd_tune_model() {
  model::LoadedModel m = load_model(model_, input_shapes_, binds_, dtype_);
  model::TuneSetup setup;
  setup.trials = trials_;
  setup.db = db_;
  setup.threads = threads_;
  setup.seed = seed_;
  setup.timing = timing_;
  setup.cpu = cpu_;
  setup.worker = program_dir() + "/tyche-worker";
  setup.population = population_;
  setup.generations = generations_;
  model::ModelTuning tuning = model::prepare_tuning(m, setup);
  tuning.options.stop = &interrupted();
  const std::vector<tune::TuneTask>& tasks = tuning.tasks;
  fmt::print(
      "{}: {} tasks ({} calls), {:.3f} GFLOP, {:.1f} MB of weights, {} trials, timed {}; database "
      "{}\n",
      model_, tasks.size(), m.table.calls.size(),
      [&] {
        double f = 0;
        for (const graph::Task& t : m.table.tasks) f += t.flop * t.weight;
        return f / 1e9;
      }(),
      tune::model_weight_bytes(m.graph) / 1e6, trials_, tuning.timing, db_);
  model::LatencyEstimate estimate(tasks);
  bool live = ::isatty(1);
  std::signal(SIGINT, on_interrupt);
  auto report = [&](const tune::TuneProgress& p) {
    const tune::TaskResult& t = *p.task;
    estimate.update(t.name, t.best_seconds);
    std::string line = fmt::format(
        "[{}/{}] {}: {} trials, best {}; model ~{:.3f} ms ({} of {} tasks measured), elapsed "
        "{:.0f}s",
        p.trials, p.budget, t.name, t.trials,
        t.best_seconds > 0 ? fmt::format("{:.4f} ms", t.best_seconds * 1e3) : "none",
        estimate.seconds() * 1e3, estimate.measured(), tasks.size(), p.elapsed_s);
    if (live)
      fmt::print("\r\x1b[2K{}", line);
    else
      fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  tune::TuneResult r = tune::tune(tasks, tuning.target, tuning.options, report);
  std::signal(SIGINT, SIG_DFL);
  if (live) fmt::print("\n");
  for (const std::string& w : r.warnings) fmt::print(stderr, "warning: {}\n", w);
  model::TuningSummary summary = model::summarize_tuning(tuning, r);
  fmt::print("\n{:<44} {:>6} {:>7} {:>10} {:>11} {:>6}\n", "task", "weight", "trials", "best ms",
             "weighted ms", "share");
  nlohmann::json tasks_json = nlohmann::json::array();
  for (const model::TaskSummary& t : summary.tasks) {
    double w = t.weight, s = t.best_seconds;
    fmt::print("{:<44} {:>6} {:>7} {:>10} {:>11} {:>5.1f}%\n", t.name, w, t.trials,
               s > 0 ? fmt::format("{:.4f}", s * 1e3) : "-",
               s > 0 ? fmt::format("{:.4f}", w * s * 1e3) : "-", t.share * 100);
    tasks_json.push_back({{"name", t.name},
                          {"weight", w},
                          {"trials", t.trials},
                          {"failed", t.failed},
                          {"best_ms", s > 0 ? nlohmann::json(s * 1e3) : nlohmann::json(nullptr)},
                          {"share", t.share},
                          {"gflop", t.gflop}});
  }
  const tune::TuneTimes& tm = r.times;
  fmt::print(
      "estimated model latency {:.3f} ms ({} of {} tasks measured); {} trials in {:.0f} s: build "
      "{:.0f} s, run {:.0f} s, search {:.0f} s, "
      "model {:.0f} s, leaders timed again {:.0f} s ({:.1f}%){}\n",
      summary.estimated_seconds * 1e3, summary.measured, tasks.size(), trials_, tm.total, tm.build,
      tm.run, tm.search, tm.model, tm.confirm, tm.total > 0 ? tm.confirm / tm.total * 100 : 0,
      r.interrupted ? "; interrupted: run it again to resume" : "");
  if (!json_file_.empty()) {
    nlohmann::json j = {{"model", model_},
                        {"trials", trials_},
                        {"timing", tuning.timing},
                        {"wall_s", tm.total},
                        {"estimated_latency_ms", summary.estimated_seconds * 1e3},
                        {"tasks", tasks_json},
                        {"interrupted", r.interrupted},
                        {"times",
                         {{"build", tm.build},
                          {"run", tm.run},
                          {"search", tm.search},
                          {"model", tm.model},
                          {"database", tm.database},
                          {"confirm", tm.confirm}}}};
    std::ofstream out(json_file_);
    if (!(out << j.dump(2) << "\n")) throw_error("cannot write '{}'", json_file_);
  }
  return r.interrupted ? 130 : 0;
}

// tyche export-model: the model as the executor would run it (each task's best record, or its
// default schedule) as a C header and a static library that need nothing of Tyche to run.
int ModelCommands::cmd_export_model() {
  codegen::check_export_name(name_);  // refusals before any work
  target::resolve_cpu(cpu_);
  if (threads_ > 1)
    throw_input_error(
        "--threads takes 1 (serial code); without it, parallel loops run on the library's thread "
        "pool");
  model::LoadedModel m = load_model(model_, input_shapes_, binds_, dtype_);
  model::ModelPrograms best = model::model_programs(m, db_, model::model_target(cpu_));
  for (const std::string& warning : best.warnings) fmt::print(stderr, "warning: {}\n", warning);
  int tuned = best.tuned;
  const std::vector<ir::PrimFunc>& programs = best.programs;
  size_t ntasks = m.table.tasks.size();
  if (static_cast<size_t>(tuned) < ntasks)
    fmt::print("{} of {} tasks have no record{}: they export a default schedule\n",
               ntasks - static_cast<size_t>(tuned), ntasks,
               db_.empty() ? " (no --db)" : " in the database");
  executor::ModelExportOptions eo;
  eo.name = name_;
  eo.cpu = cpu_;
  eo.parallel = threads_ != 1;
  eo.description = fmt::format("{}: {} tasks, {} calls; {} of them tuned{}", model_, ntasks,
                               m.table.calls.size(), tuned,
                               db_.empty() ? "" : fmt::format(" (the best records of {})", db_));
  executor::ModelExportResult r = executor::export_model(m.graph, m.table, programs, output_, eo);
  for (const std::string& note : r.notes) fmt::print(stderr, "note: {}\n", note);
  fmt::print("exported {} ({}): {}\n", name_, model_, fmt::join(r.files, ", "));
  return 0;
}

int ModelCommands::cmd_import() {
  model::LoadedModel m = load_model(model_, input_shapes_, binds_, dtype_);
  const graph::Graph& g = m.graph;
  std::string opset = g.opset == g.opset_read
                          ? fmt::format("opset {}", g.opset)
                          : fmt::format("opset {}, upgraded to {} by ONNX's version converter",
                                        g.opset_read, g.opset);
  fmt::print("model {} ({}): {} nodes, {} groups, {} tasks\n", g.name, opset, g.nodes.size(),
             m.table.groups.size(), m.table.tasks.size());
  std::vector<std::string> ins;
  for (int i : g.inputs) ins.push_back(value_text(g, i));
  std::vector<std::string> outs;
  for (int o : g.outputs) outs.push_back(value_text(g, o));
  fmt::print("inputs:  {}\noutputs: {}\n\nfused graph:\n", fmt::join(ins, ", "),
             fmt::join(outs, ", "));
  nlohmann::json nodes = nlohmann::json::array();
  std::vector<int> task_of_group(m.table.groups.size(), -1);
  for (const graph::Call& c : m.table.calls) task_of_group[static_cast<size_t>(c.group)] = c.task;
  for (size_t gi = 0; gi < m.table.groups.size(); ++gi) {
    const graph::FusedGroup& grp = m.table.groups[gi];
    std::vector<std::string> ops;
    for (int n : grp.nodes) ops.push_back(g.nodes[static_cast<size_t>(n)].op);
    const graph::Node& last = g.nodes[static_cast<size_t>(grp.last())];
    int t = task_of_group[gi];
    std::string task = t < 0 ? "(view)" : m.table.tasks[static_cast<size_t>(t)].name;
    std::vector<std::string> results;
    for (int o : last.outputs)
      if (o >= 0) results.push_back(value_text(g, o));
    fmt::print("  {:>3}  {:<40} {:<34} -> {}\n", gi, fmt::format("{}", fmt::join(ops, "+")), task,
               fmt::join(results, ", "));
    nodes.push_back({{"ops", ops},
                     {"task", t < 0 ? nlohmann::json(nullptr) : nlohmann::json(task)},
                     {"outputs", results}});
  }
  fmt::print("\n{:<40} {:>6} {:>10}  {}\n", "task", "weight", "GFLOP", "hash");
  nlohmann::json tasks = nlohmann::json::array();
  double total = 0;
  for (const graph::Task& t : m.table.tasks) {
    fmt::print("{:<40} {:>6} {:>10.4f}  {}\n", t.name, t.weight, t.flop / 1e9, hex(t.hash));
    tasks.push_back(
        {{"name", t.name}, {"weight", t.weight}, {"gflop", t.flop / 1e9}, {"hash", hex(t.hash)}});
    total += t.flop * t.weight;
  }
  fmt::print("{:<40} {:>6} {:>10.4f}\n", "total (weighted)", m.table.calls.size(), total / 1e9);
  if (!json_file_.empty()) {
    std::ofstream out(json_file_);
    nlohmann::json j = {{"model", model_}, {"nodes", nodes}, {"tasks", tasks}};
    if (!(out << j.dump(2) << "\n")) throw_error("cannot write '{}'", json_file_);
  }
  return 0;
}

int ModelCommands::cmd_run_model() {
  if (!save_outputs_.empty()) check_save_outputs(save_outputs_);  // before the work, not after it
  if (threads_ > 0) runtime::ThreadPool::global().set_num_threads(threads_);
  model::LoadedModel m = load_model(model_, input_shapes_, binds_, dtype_);
  const graph::Graph& g = m.graph;
  // Inputs: given ones by name, the rest random.
  std::map<std::string, std::string> given;
  for (const std::string& s : inputs_) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw_input_error("--input '{}' is not NAME=FILE.npy", s);
    if (!given.emplace(s.substr(0, eq), s.substr(eq + 1)).second)
      throw_input_error("--input names '{}' twice", s.substr(0, eq));
  }
  std::vector<runtime::NDArray> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const std::string& name = g.value(g.inputs[i]).name;
    auto it = given.find(name);
    if (it == given.end()) {
      inputs.push_back(random_input(g, i));
      continue;
    }
    inputs.push_back(runtime::load_npy(it->second));
    given.erase(it);
  }
  if (!given.empty())
    throw_input_error("--input names '{}', which is not an input of the model",
                      given.begin()->first);
  // Programs: each task's best record, where the database has one.
  model::CompileSetup setup;
  setup.db = db_;
  setup.cpu = cpu_;
  model::CompiledModel compiled = model::compile_model(std::move(m), setup);
  for (const std::string& warning : compiled.chosen.warnings)
    fmt::print(stderr, "warning: {}\n", warning);
  executor::Executor& exec = *compiled.executor;
  const std::vector<double>& tuned_seconds = compiled.chosen.best_seconds;
  int tuned = compiled.chosen.tuned;
  const graph::Graph& eg = exec.graph();
  size_t ntasks = exec.table().tasks.size();
  if (static_cast<size_t>(tuned) < ntasks)
    fmt::print("{} of {} tasks untuned: they run a default schedule\n",
               ntasks - static_cast<size_t>(tuned), ntasks);
  std::vector<runtime::NDArray> outputs = exec.run(inputs);  // also the warm-up
  std::vector<double> seconds;
  for (int r = 0; r < repeat_; ++r) {
    auto start = std::chrono::steady_clock::now();
    outputs = exec.run(inputs);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  double med = median(seconds), best = *std::min_element(seconds.begin(), seconds.end());
  fmt::print(
      "{}: {:.3f} ms median ({:.3f} min, {} runs), {} threads, compile {:.2f} s, arena {:.2f} MiB "
      "(naive {:.2f} MiB, bound {:.2f} MiB)\n",
      model_, med * 1e3, best * 1e3, repeat_, runtime::ThreadPool::global().num_threads(),
      exec.compile_seconds(), static_cast<double>(exec.memory().arena_bytes) / (1 << 20),
      static_cast<double>(exec.memory().naive_bytes) / (1 << 20),
      static_cast<double>(exec.memory().lower_bound) / (1 << 20));
  nlohmann::json profile =
      profile_ ? print_profile(exec, inputs, repeat_, tuned_seconds) : nlohmann::json();
  nlohmann::json shapes = nlohmann::json::object();
  for (size_t o = 0; o < eg.outputs.size(); ++o) {
    const graph::Value& v = eg.value(eg.outputs[o]);
    shapes[v.name] = v.shape;
    fmt::print("  output {}: {} {}\n", v.name, v.dtype.str(), graph::shape_text(v.shape));
  }
  if (!save_outputs_.empty()) {
    std::vector<std::string> names;
    for (int o : eg.outputs) names.push_back(eg.value(o).name);
    save_outputs(save_outputs_, names, outputs);
  }
  std::optional<OrtRun> ort;
  double max_abs_diff = 0;
  if (!compare_.empty()) {
    ort = run_onnxruntime(model_, eg, inputs, runtime::ThreadPool::global().num_threads(), repeat_);
    for (size_t o = 0; o < outputs.size(); ++o) {
      const runtime::NDArray& ref = ort->outputs[o];
      if (ref.shape() != outputs[o].shape())
        throw_error("onnxruntime's output {} has shape {}", o, graph::shape_text(ref.shape()));
      double scale = 0, diff = 0;
      for (int64_t i = 0; i < ref.numel(); ++i) {
        scale = std::max(scale, std::abs(ref.get_flat(i)));
        diff = std::max(diff, std::abs(ref.get_flat(i) - outputs[o].get_flat(i)));
      }
      max_abs_diff = std::max(max_abs_diff, diff);
      fmt::print("  {} vs onnxruntime: max |diff| {:.3g} (max |onnxruntime| {:.3g})\n",
                 eg.value(eg.outputs[o]).name, diff, scale);
    }
    fmt::print("onnxruntime: {:.3f} ms median, same threads: Tyche / onnxruntime = {:.2f}\n",
               ort->median_ms, med * 1e3 / ort->median_ms);
  }
  if (!json_file_.empty()) {
    nlohmann::json j = {{"model", model_},
                        {"latency_ms", med * 1e3},
                        {"latency_ms_min", best * 1e3},
                        {"outputs", shapes},
                        {"tasks", ntasks},
                        {"tasks_tuned", tuned},
                        {"arena_bytes", exec.memory().arena_bytes},
                        {"naive_bytes", exec.memory().naive_bytes},
                        {"lower_bound_bytes", exec.memory().lower_bound},
                        {"threads", runtime::ThreadPool::global().num_threads()},
                        {"compile_s", exec.compile_seconds()}};
    if (profile_) j["profile"] = profile;
    j["records"] = records_json(exec.table(), compiled.chosen);
    if (ort) {
      j["onnxruntime_ms"] = ort->median_ms;
      j["max_abs_diff"] = max_abs_diff;
    }
    std::ofstream out(json_file_);
    if (!(out << j.dump(2) << "\n")) throw_error("cannot write '{}'", json_file_);
  }
  return 0;
}

}  // namespace tyche::tools
