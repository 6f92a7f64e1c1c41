#include "model_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "graph/executor.h"
#include "graph/onnx_import.h"
#include "graph/op_registry.h"
#include "graph/passes.h"
#include "graph/tasks.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/median.h"
#include "target/target.h"
#include "tune/database/database.h"
#include "tune/search/records.h"

namespace tyche::tools {

namespace {

struct Model {
  graph::Graph graph;
  graph::TaskTable table;
};

Model load_model(const std::string& path, const std::vector<std::string>& input_shapes) {
  graph::ImportOptions options;
  for (const std::string& s : input_shapes) graph::parse_input_shape(s, options);
  Model m{graph::import_onnx(path, options), {}};
  graph::fold_batch_norm(m.graph);
  m.table = graph::extract_tasks(m.graph);
  return m;
}

std::string hex(uint64_t h) { return fmt::format("{:016x}", h); }

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

}  // namespace

ModelCommands::ModelCommands(CLI::App& app) {
  import_ = app.add_subcommand("import", "read an ONNX model: print its fused graph and its tuning tasks");
  run_model_ = app.add_subcommand("run-model", "compile an ONNX model (with a database's best programs) and run it");
  for (CLI::App* sub : {import_, run_model_}) {
    sub->add_option("model", model_, "the .onnx file")->required();
    sub->add_option("--input-shape", input_shapes_, "NAME=1x3x224x224: a static shape for an input with symbolic dimensions");
    sub->add_option("--json", json_file_, "write the result as JSON here");
  }
  run_model_->add_option("--db", db_, "a tuning database: each task runs its best record (others a default schedule)");
  run_model_->add_option("--input", inputs_, "NAME=FILE.npy: an input's value (others are random, from a fixed seed)");
  run_model_->add_option("--save-outputs", save_outputs_, "write DIR/OUTPUT_NAME.npy for each output");
  run_model_->add_option("--repeat", repeat_, "timed runs (default 10)")->check(CLI::PositiveNumber);
  run_model_->add_option("--threads", threads_, "threads for the kernels (default: all)")->check(CLI::PositiveNumber);
  run_model_->add_option("--compare", compare_, "onnxruntime: run the model there too (Python's onnxruntime), time it, compare outputs")
      ->check(CLI::IsMember({"onnxruntime"}));
  run_model_->add_option("--cpu", cpu_, "generate code for this CPU (as tyche run --cpu)");
}

bool ModelCommands::parsed() const { return import_->parsed() || run_model_->parsed(); }

int ModelCommands::run() {
  if (import_->parsed()) return cmd_import();
  return cmd_run_model();
}

int ModelCommands::cmd_import() {
  Model m = load_model(model_, input_shapes_);
  const graph::Graph& g = m.graph;
  fmt::print("model {} (opset {}): {} nodes, {} groups, {} tasks\n", g.name, g.opset, g.nodes.size(), m.table.groups.size(),
             m.table.tasks.size());
  std::vector<std::string> ins;
  for (int i : g.inputs) ins.push_back(value_text(g, i));
  std::vector<std::string> outs;
  for (int o : g.outputs) outs.push_back(value_text(g, o));
  fmt::print("inputs:  {}\noutputs: {}\n\nfused graph:\n", fmt::join(ins, ", "), fmt::join(outs, ", "));
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
    fmt::print("  {:>3}  {:<40} {:<34} -> {}\n", gi, fmt::format("{}", fmt::join(ops, "+")), task, fmt::join(results, ", "));
    nodes.push_back({{"ops", ops}, {"task", t < 0 ? nlohmann::json(nullptr) : nlohmann::json(task)}, {"outputs", results}});
  }
  fmt::print("\n{:<40} {:>6} {:>10}  {}\n", "task", "weight", "GFLOP", "hash");
  nlohmann::json tasks = nlohmann::json::array();
  double total = 0;
  for (const graph::Task& t : m.table.tasks) {
    fmt::print("{:<40} {:>6} {:>10.4f}  {}\n", t.name, t.weight, t.flop / 1e9, hex(t.hash));
    tasks.push_back({{"name", t.name}, {"weight", t.weight}, {"gflop", t.flop / 1e9}, {"hash", hex(t.hash)}});
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
  if (threads_ > 0) runtime::ThreadPool::global().set_num_threads(threads_);
  Model m = load_model(model_, input_shapes_);
  const graph::Graph& g = m.graph;
  // Inputs: given ones by name, the rest random.
  std::map<std::string, std::string> given;
  for (const std::string& s : inputs_) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw_input_error("--input '{}' is not NAME=FILE.npy", s);
    given[s.substr(0, eq)] = s.substr(eq + 1);
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
  if (!given.empty()) throw_input_error("--input names '{}', which is not an input of the model", given.begin()->first);
  // Programs: each task's best record, where the database has one.
  std::vector<ir::PrimFunc> programs(m.table.tasks.size());
  int tuned = 0;
  if (!db_.empty()) {
    if (!std::filesystem::is_directory(db_)) throw_input_error("no tuning database at '{}'", db_);
    tune::Database db(db_);
    target::Target target = target::Target::host();
    target.cpu = cpu_;
    for (size_t t = 0; t < m.table.tasks.size(); ++t) {
      const graph::Task& task = m.table.tasks[t];
      std::vector<ir::PrimFunc> best = tune::best_programs(db, task.name, task.func, target, 1);
      if (best.empty()) continue;
      programs[t] = best[0];
      ++tuned;
    }
  }
  graph::ExecutorOptions options;
  options.compile.cpu = cpu_;
  graph::Executor exec(std::move(m.graph), std::move(m.table), programs, options);
  const graph::Graph& eg = exec.graph();
  size_t ntasks = exec.table().tasks.size();
  if (static_cast<size_t>(tuned) < ntasks)
    fmt::print("{} of {} tasks untuned: they run a default schedule\n", ntasks - static_cast<size_t>(tuned), ntasks);
  std::vector<runtime::NDArray> outputs = exec.run(inputs);  // also the warm-up
  std::vector<double> seconds;
  for (int r = 0; r < repeat_; ++r) {
    auto start = std::chrono::steady_clock::now();
    outputs = exec.run(inputs);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  double med = median(seconds), best = *std::min_element(seconds.begin(), seconds.end());
  fmt::print("{}: {:.3f} ms median ({:.3f} min, {} runs), {} threads, compile {:.2f} s, arena {:.2f} MiB (naive {:.2f} MiB, bound {:.2f} MiB)\n",
             model_, med * 1e3, best * 1e3, repeat_, runtime::ThreadPool::global().num_threads(), exec.compile_seconds(),
             static_cast<double>(exec.memory().arena_bytes) / (1 << 20), static_cast<double>(exec.memory().naive_bytes) / (1 << 20),
             static_cast<double>(exec.memory().lower_bound) / (1 << 20));
  nlohmann::json shapes = nlohmann::json::object();
  for (size_t o = 0; o < eg.outputs.size(); ++o) {
    const graph::Value& v = eg.value(eg.outputs[o]);
    shapes[v.name] = v.shape;
    fmt::print("  output {}: {} {}\n", v.name, v.dtype.str(), graph::shape_text(v.shape));
  }
  if (!save_outputs_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(save_outputs_, ec);
    if (ec) throw_input_error("cannot create the directory '{}'", save_outputs_);
    for (size_t o = 0; o < eg.outputs.size(); ++o)
      runtime::save_npy((std::filesystem::path(save_outputs_) / (file_name(eg.value(eg.outputs[o]).name) + ".npy")).string(), outputs[o]);
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
    std::ofstream out(json_file_);
    if (!(out << j.dump(2) << "\n")) throw_error("cannot write '{}'", json_file_);
  }
  return 0;
}

}  // namespace tyche::tools
