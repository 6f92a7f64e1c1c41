#include "model/pipeline.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "graph/layout.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "ir/structural.h"
#include "support/error.h"
#include "target/cpu.h"
#include "tune/database/database.h"
#include "tune/model/model_tasks.h"
#include "tune/search/records.h"

namespace tyche::model {

namespace {

// An unknown CPU name is the user's mistake: an InputError, like every other refusal here.
void check_cpu(const std::string& cpu) {
  if (cpu.empty()) return;
  try {
    target::resolve_cpu(cpu);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(e.what());
  }
}

}  // namespace

ModelSource ModelSource::file(const std::string& path) {
  ModelSource s;
  s.path = path;
  s.what = path;
  return s;
}

ModelSource ModelSource::in_memory(std::string bytes, const std::string& what,
                                   const std::string& dir) {
  ModelSource s;
  s.bytes = std::move(bytes);
  s.what = what;
  s.dir = dir;
  return s;
}

LoadedModel load_model(const ModelSource& source, const LoadOptions& options) {
  graph::ImportOptions import;
  for (const auto& [name, dims] : options.input_shapes) {
    for (int64_t d : dims)
      if (d < 0 || d > (int64_t{1} << 31))
        throw_input_error("the shape of input '{}': {} is not a dimension", name, d);
    import.input_shapes[name] = dims;
  }
  import.bound_inputs = options.bound_inputs;
  LoadedModel m;
  m.what = source.what;
  m.graph = source.path.empty()
                ? graph::import_onnx_bytes(source.bytes, source.what, source.dir, import)
                : graph::import_onnx(source.path, import);
  graph::fold_batch_norm(m.graph);
  graph::convert_layout(m.graph, graph::Layout::kNHWC);
  graph::apply_dtype(m.graph, options.dtype);
  m.table = graph::extract_tasks(m.graph);
  return m;
}

target::Target model_target(const std::string& cpu) {
  target::Target t = target::Target::host();
  t.cpu = cpu;
  return t;
}

ModelTuning prepare_tuning(const LoadedModel& model, const TuneSetup& setup) {
  if (setup.trials <= 0)
    throw_input_error("tune: trials must be positive (given {})", setup.trials);
  if (setup.threads < 0)
    throw_input_error("tune: threads must be positive (given {})", setup.threads);
  if (setup.db.empty())
    throw InputError("tune: a database directory (for the tuning records) is required");
  if (setup.population < 0 || setup.population == 1)
    throw_input_error("tune: population must be at least 2 (given {})", setup.population);
  if (setup.generations < 0)
    throw_input_error("tune: generations must be positive (given {})", setup.generations);
  check_cpu(setup.cpu);
  ModelTuning t;
  if (setup.population > 0) t.options.evolutionary.population = setup.population;
  if (setup.generations > 0) t.options.evolutionary.generations = setup.generations;
  t.target = model_target(setup.cpu);
  t.options.trials = setup.trials;
  t.options.db_dir = setup.db;
  t.options.seed = setup.seed;
  t.options.threads = setup.threads;
  t.options.runner.worker_path = setup.worker;
  t.options.runner.time = tune::model_timing(setup.timing);
  t.timing = tune::timing_label(t.options.runner.time);
  t.tasks = tune::model_tune_tasks(model.table, model.graph);
  return t;
}

LatencyEstimate::LatencyEstimate(const std::vector<tune::TuneTask>& tasks) {
  for (const tune::TuneTask& t : tasks) weight_[t.workload.name] = t.weight;
}

void LatencyEstimate::update(const std::string& task, double best_seconds) {
  if (best_seconds > 0) best_[task] = best_seconds;
}

double LatencyEstimate::weight(const std::string& task) const {
  auto it = weight_.find(task);
  return it == weight_.end() ? 0.0 : it->second;
}

double LatencyEstimate::seconds() const {
  double s = 0;
  for (const auto& [name, best] : best_) s += weight(name) * best;
  return s;
}

TuningSummary summarize_tuning(const ModelTuning& tuning, const tune::TuneResult& result) {
  LatencyEstimate estimate(tuning.tasks);
  for (const tune::TaskResult& t : result.tasks) estimate.update(t.name, t.best_seconds);
  TuningSummary s;
  s.estimated_seconds = estimate.seconds();
  s.measured = estimate.measured();
  for (const tune::TaskResult& t : result.tasks) {
    TaskSummary row;
    row.name = t.name;
    row.weight = estimate.weight(t.name);
    row.trials = t.trials;
    row.failed = t.failed;
    row.best_seconds = t.best_seconds > 0 ? t.best_seconds : 0;
    row.share = row.best_seconds > 0 && s.estimated_seconds > 0
                    ? row.weight * row.best_seconds / s.estimated_seconds
                    : 0;
    row.gflop = t.flop / 1e9;
    s.tasks.push_back(std::move(row));
  }
  return s;
}

ModelPrograms model_programs(const LoadedModel& model, const std::string& db,
                             const target::Target& target) {
  ModelPrograms out;
  size_t n = model.table.tasks.size();
  out.programs.resize(n);
  out.best_seconds.assign(n, 0.0);
  out.program_hash.assign(n, 0);
  out.measured_at.assign(n, "");
  if (db.empty()) return out;
  if (!std::filesystem::is_directory(db)) throw_input_error("no tuning database at '{}'", db);
  // Read only: compiling never writes to the database (it may be another user's, or read-only).
  tune::Database database(db, tune::OpenMode::kReadOnly);
  for (size_t t = 0; t < n; ++t) {
    const graph::Task& task = model.table.tasks[t];
    tune::BestPrograms best;
    if (!database.best(task.hash, tune::preferred_target_key(database, task.hash, target), 1)
             .empty())
      best = tune::replayable_best(database, task.name, task.func, target, 1);
    out.warnings.insert(out.warnings.end(), best.warnings.begin(), best.warnings.end());
    if (best.programs.empty()) continue;
    // The record that replayed (the best one may have been skipped).
    out.programs[t] = best.programs[0];
    out.best_seconds[t] = best.records[0]->typical_seconds();
    out.program_hash[t] = ir::structural_hash(best.programs[0]);
    out.measured_at[t] = best.records[0]->measured_at;
    ++out.tuned;
  }
  return out;
}

CompiledModel compile_model(LoadedModel model, const CompileSetup& setup) {
  check_cpu(setup.cpu);
  CompiledModel c;
  c.what = model.what;
  c.chosen = model_programs(model, setup.db, model_target(setup.cpu));
  executor::ExecutorOptions options;
  options.compile.cpu = setup.cpu;
  c.executor = std::make_unique<executor::Executor>(std::move(model.graph), std::move(model.table),
                                                    c.chosen.programs, options);
  return c;
}

}  // namespace tyche::model
