#include "tune_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "command_output.h"
#include "flag_checks.h"
#include "target/target.h"
#include "tune/cost_model/cost_model.h"
#include "tune/cost_model/metrics.h"
#include "tune/explore/sample_measure.h"
#include "tune/search/search_strategy.h"
#include "tune/space/multi_level_tiling_with_intrin.h"
#include "tune/task/tune.h"
#include "workloads/workloads.h"

namespace tyche::tools {

namespace {

constexpr const char* kTargetHelp =
    "llvm (default), 'llvm -mcpu=NAME -num-cores=N', 'cuda -arch=sm_XY' or opencl (run on that "
    "device)";
constexpr const char* kTimeoutHelp = "seconds a candidate may run, all repeats (default 10)";
constexpr const char* kRecordsHelp = "record files (JSON lines, .gz too)";

std::string duration_text(double s) {
  int t = static_cast<int>(std::lround(s));
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

}  // namespace

TuneCommands::TuneCommands(CLI::App& app) {
  sample_measure_ = app.add_subcommand(
      "sample-measure",
      "sample design-space candidates, time them in the isolated runner, append records");
  sample_measure_->add_option("workload", workload_, "preset name (GMM-4) or index notation")
      ->required();
  sample_measure_->add_option("--extents", extents_,
                              "index extents for a formula, e.g. i=64,j=64,k=64");
  sample_measure_->add_option("--dtypes", dtypes_, kDtypesHelp);
  at_least(
      sample_measure_->add_option("--samples", samples_, "candidates to measure (default 100)"), 1);
  sample_measure_->add_option("--records", records_, "the records file to append to (JSON lines)")
      ->required()
      ->expected(1);
  sample_measure_->add_option("--seed", seed_, "seed of the spaces and the samples (default 0)");
  sample_measure_->add_option("--target", target_, kTargetHelp);
  sample_measure_->add_option("--cpu", cpu_, "generate code for this CPU (as tyche run --cpu)");
  at_least(
      sample_measure_->add_option(
          "--batch", batch_, "candidates built together before they are measured (default 32)"),
      1);
  seconds(sample_measure_->add_option("--timeout", timeout_, kTimeoutHelp));

  tune_ = app.add_subcommand(
      "tune", "search for the fastest program of workloads, measuring up to --trials candidates");
  tune_->add_option("workloads", workload_list_, "preset names (GMM-4) or index-notation formulas")
      ->required();
  tune_->add_option("--extents", extents_, "index extents for the formulas, e.g. i=64,j=64,k=64");
  tune_->add_option("--dtypes", dtypes_, kDtypesHelp);
  at_least(tune_->add_option("--trials", trials_,
                             "candidates to measure, all workloads together (default 1000)"),
           1);
  tune_->add_option(
      "--db", db_,
      "the tuning database directory: records kept, resumed (default: a temporary one)");
  tune_
      ->add_option(
          "--strategy", strategy_,
          fmt::format("{} (default: evolutionary)", fmt::join(tune::search_strategy_names(), ", ")))
      ->check(CLI::IsMember(tune::search_strategy_names()));
  tune_->add_option("--acceptance", acceptance_, "eps-greedy (default) or annealing")
      ->check(CLI::IsMember({"eps-greedy", "annealing"}));
  tune_->add_option("--cost-model", cost_model_, "xgb (default) or random")
      ->check(CLI::IsMember({"xgb", "random"}));
  tune_->add_option("--model", model_,
                    "a cost model saved by 'tyche model train' to start from (default: the one "
                    "pre-trained on bench/data; "
                    "'none': untrained)");
  tune_->add_flag(
      "--no-warm-start", no_warm_start_,
      "do not start a workload the database has few records of from the best of similar ones");
  tune_
      ->add_option("--scheduler", scheduler_,
                   "gradient (default) or round-robin: which workload gets the next round")
      ->check(CLI::IsMember({"gradient", "round-robin"}));
  tune_->add_option("--seed", seed_, "seed of the spaces and the search (default 0)");
  tools::at_least(tune_->add_option("--population", population_,
                                    "the evolutionary search's population per round (default 512)"),
                  2);
  tools::at_least(tune_->add_option("--generations", generations_,
                                    "the evolutionary search's generations per round (default 4)"),
                  1);
  thread_count(tune_->add_option("--threads", threads_,
                                 "threads for search and the cost model (default: all)"));
  at_least(tune_->add_option("--batch", batch_, "candidates measured per round (default 64)"), 1);
  at_least(tune_->add_option("--confirm", confirm_,
                             "at the end, time the N fastest again, interleaved, and keep the "
                             "fastest (default 16; 0: off)"),
           0);
  seconds(tune_->add_option("--timeout", timeout_, kTimeoutHelp));
  tune_->add_option("--target", target_, kTargetHelp);
  tune_->add_option("--cpu", cpu_, "generate code for this CPU (as tyche run --cpu)");
  tune_->add_option(
      "--json", json_file_,
      "write {workload, trials, best_latency_s, best_gflops, wall_s, history, best_trace} here");

  CLI::App* model =
      app.add_subcommand("model", "train a cost model on tuning records, or evaluate one");
  model->require_subcommand(1);
  model_train_ =
      model->add_subcommand("train", "train an XGBoost cost model on records and save it");
  model_train_->add_option("--records", records_, kRecordsHelp)->required();
  model_train_->add_option("-o,--output", output_, "where to save the model (JSON)")->required();
  model_train_->add_option("--seed", seed_,
                           "seed of the held-out split and of XGBoost (default 0)");
  model_eval_ =
      model->add_subcommand("eval", "rank each workload's measured candidates with a saved model");
  model_eval_->add_option("--model", model_, "a model saved by 'tyche model train'")->required();
  model_eval_->add_option("--records", records_, kRecordsHelp)->required();
  at_least(model_eval_->add_option("--top-k", top_k_, "k of the top-k recall (default 32)"), 1);
  model_eval_->add_option("--json", json_file_, "write the metrics per workload here");
  for (CLI::App* sub : {model_train_, model_eval_})
    thread_count(sub->add_option("--threads", threads_,
                                 "threads for features, training and prediction (default: all)"));
}

bool TuneCommands::parsed() const {
  return sample_measure_->parsed() || tune_->parsed() || model_train_->parsed() ||
         model_eval_->parsed();
}

int TuneCommands::run() {
  if (sample_measure_->parsed()) return cmd_sample_measure();
  if (tune_->parsed()) return cmd_tune();
  if (model_train_->parsed()) return cmd_model_train();
  return cmd_model_eval();
}

// Samples, builds, times and records candidates of a workload's design space.
int TuneCommands::cmd_sample_measure() {
  workloads::Workload w = workloads::resolve(workload_, extents_, dtypes_);
  target::Target target = target::Target::parse(target_);
  if (!cpu_.empty()) target.cpu = cpu_;
  tune::SampleMeasureOptions so;
  so.samples = samples_;
  so.seed = seed_;
  so.batch = batch_ > 0 ? batch_ : 32;
  so.records_path = records_.empty() ? "" : records_[0];
  so.extents = extents_;
  so.runner.worker_path = program_dir() + "/tyche-worker";
  so.runner.timeout_s = timeout_;
  so.progress = [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  tune::SampleMeasureReport r = tune::sample_measure(w, target, so);
  fmt::print(
      "{} [{}] on {}: {} records appended to {} ({} measured, {} failed); {} drawn, {} invalid, {} "
      "already measured; "
      "best {:.4f} ms ({:.1f} GFLOP/s)\n",
      w.name, w.shape, target.str(), r.measured + r.failed, so.records_path, r.measured, r.failed,
      r.sampled, r.invalid, r.duplicates, r.best_seconds * 1e3,
      r.best_seconds > 0 ? w.flop / r.best_seconds / 1e9 : 0.0);
  return 0;
}

tune::Dataset TuneCommands::load_records() const {
  if (records_.empty()) throw Error("no --records file");
  tune::Dataset d = tune::load_dataset(records_, threads_);
  for (const std::string& w : d.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (d.skipped > static_cast<int>(d.warnings.size()))
    fmt::print(stderr, "warning: {} more skipped\n",
               d.skipped - static_cast<int>(d.warnings.size()));
  if (d.size() == 0) throw Error("the records hold no usable measurement");
  return d;
}

// tyche model train: an XGBoost model on every record given, saved for later searches.
int TuneCommands::cmd_model_train() {
  auto start = std::chrono::steady_clock::now();
  tune::Dataset d = load_records();
  auto model = tune::make_xgboost_model(
      {.min_measured = 0, .threads = threads_, .seed = static_cast<uint64_t>(seed_)});
  model->update_features(d.inputs, d.seconds);
  model->save(output_);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("trained {} on {} records of {} workloads ({} skipped) in {:.1f} s: {}\n",
             model->name(), d.size(), d.workloads().size(), d.skipped, seconds, output_);
  return 0;
}

// tyche model eval: how well a saved model ranks the measured candidates of each workload.
int TuneCommands::cmd_model_eval() {
  std::ofstream json_out = open_json_output(json_file_);
  auto model = tune::load_cost_model(model_, {.threads = threads_});
  tune::Dataset all = load_records();
  fmt::print("{:<14} {:>8} {:>9} {:>16} {:>8} {:>9}\n", "workload", "records", "pairwise",
             fmt::format("top-{} recall", top_k_), "random", "spearman");
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : all.workloads()) {
    tune::Dataset d = all.subset(name);
    std::vector<size_t> measured;
    for (size_t i = 0; i < d.size(); ++i)
      if (std::isfinite(d.seconds[i])) measured.push_back(i);
    tune::Dataset m = d.pick(measured);
    if (m.size() < 2) continue;
    std::vector<double> truth;
    for (double s : m.seconds) truth.push_back(1 / s);
    std::vector<double> scores = model->predict_features(m.inputs);
    double pairwise = tune::pairwise_accuracy(scores, truth),
           recall = tune::top_k_recall(scores, truth, top_k_);
    double random = std::min(1.0, static_cast<double>(top_k_) / static_cast<double>(m.size()));
    double rho = tune::spearman(scores, truth);
    fmt::print("{:<14} {:>8} {:>9.3f} {:>16.3f} {:>8.3f} {:>9.3f}\n", name, m.size(), pairwise,
               recall, random, rho);
    rows.push_back({{"workload", name},
                    {"records", m.size()},
                    {"pairwise_accuracy", pairwise},
                    {"top_k", top_k_},
                    {"top_k_recall", recall},
                    {"random_top_k_recall", random},
                    {"spearman", rho}});
  }
  if (!json_file_.empty()) {
    nlohmann::json j = {{"model", model_}, {"kind", model->name()}, {"workloads", rows}};
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", json_file_));
  }
  return 0;
}

// tyche tune: search each workload's design space, measuring up to --trials candidates in all.
int TuneCommands::cmd_tune() {
  std::ofstream json_out = open_json_output(json_file_);
  std::vector<tune::TuneTask> tasks;
  for (const std::string& name : workload_list_) {
    bool formula = name.find_first_of("[=") != std::string::npos;
    tasks.push_back({workloads::resolve(name, formula ? extents_ : "", formula ? dtypes_ : ""),
                     formula ? extents_ : "", 1.0, nullptr});
  }
  if (!dtypes_.empty() && std::none_of(tasks.begin(), tasks.end(), [](const tune::TuneTask& t) {
        return t.workload.op == "index_notation";
      }))
    throw InputError(
        "--dtypes is only for index-notation formulas; a preset names its types (e.g. GMM-4-U8S8)");
  target::Target target = target::Target::parse(target_);
  if (!cpu_.empty()) target.cpu = cpu_;
  for (const tune::TuneTask& t : tasks)
    if (!target.is_gpu())
      if (std::string note = tune::intrinsic_note(t.workload.func, target.cpu_info().name,
                                                  target.cpu_info().features);
          !note.empty())
        fmt::print("{}: {}\n", t.workload.name, note);
  tune::TuneOptions to;
  to.trials = trials_;
  to.batch = batch_ > 0 ? batch_ : 64;
  to.confirm_top = confirm_;
  to.strategy = strategy_;
  to.evolutionary.acceptance = acceptance_;
  if (population_ > 0) to.evolutionary.population = population_;
  if (generations_ > 0) to.evolutionary.generations = generations_;
  to.cost_model = cost_model_;
  to.model_path = model_;
  to.warm_start = !no_warm_start_;
  to.scheduler = scheduler_;
  to.seed = seed_;
  to.threads = threads_;
  to.runner.worker_path = program_dir() + "/tyche-worker";
  to.runner.timeout_s = timeout_;
  to.stop = &interrupted();
  to.db_dir = db_;
  bool temporary_db = to.db_dir.empty();
  if (temporary_db) {
    char dir[] = "/tmp/tyche_tune_XXXXXX";
    if (!::mkdtemp(dir)) throw Error("cannot create a temporary database directory");
    to.db_dir = dir;
  }
  bool live = ::isatty(1);
  std::signal(SIGINT, on_interrupt);
  auto report = [&](const tune::TuneProgress& p) {
    const tune::TaskResult& t = *p.task;
    double eta = p.trials > 0 ? p.elapsed_s * (p.budget - p.trials) / p.trials : 0;
    // As timed: the drift-corrected times rank the candidates but are not measurements.
    double fastest = t.search_best_seconds;
    std::string best = fastest > 0 ? fmt::format("{:.4f} ms ({:.1f} GFLOP/s)", fastest * 1e3,
                                                 t.flop / fastest / 1e9)
                                   : "none yet";
    std::string line =
        fmt::format("[{}/{}] {}: best {}, {} failed, elapsed {}, ETA {}", p.trials, p.budget,
                    t.name, best, t.failed, duration_text(p.elapsed_s), duration_text(eta));
    if (live)
      fmt::print("\r\x1b[2K{}", line);
    else
      fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  tune::TuneResult r = tune::tune(tasks, target, to, report);
  std::signal(SIGINT, SIG_DFL);
  if (live) fmt::print("\n");
  for (const std::string& w : r.warnings) fmt::print(stderr, "warning: {}\n", w);
  nlohmann::json tasks_json = nlohmann::json::array();
  for (const tune::TaskResult& t : r.tasks) {
    fmt::print("{} [{}]: {} trials ({} failed)", t.name, t.shape, t.trials, t.failed);
    if (t.best_seconds > 0) {
      std::string confirmed =
          t.confirmed
              ? fmt::format(
                    " (the fastest of the {} best timed again, {} rounds; the fastest single "
                    "measurement while searching: {:.4f} ms)",
                    t.confirmed, to.confirm_rounds, t.search_best_seconds * 1e3)
              : "";
      fmt::print(", best {:.4f} ms, {:.1f} GFLOP/s{}; its trace:\n{}", t.best_seconds * 1e3,
                 t.flop / t.best_seconds / 1e9, confirmed, t.best_trace_text);
    } else {
      fmt::print(", nothing ran correctly\n");
    }
    if (!t.refusals.empty())
      fmt::print("candidates refused while searching: {}\n", refusal_text(t.refusals));
    nlohmann::json history = nlohmann::json::array();
    for (const tune::TunePoint& h : t.history)
      history.push_back(
          {{"trials", h.trials},
           {"best_gflops",
            h.measured_best_seconds > 0 ? t.flop / h.measured_best_seconds / 1e9 : 0.0},
           {"corrected_best_gflops", h.best_seconds > 0 ? t.flop / h.best_seconds / 1e9 : 0.0},
           {"elapsed_s", h.elapsed_s}});
    tasks_json.push_back(
        {{"workload", t.name},
         {"trials", t.trials},
         {"failed", t.failed},
         {"best_latency_s",
          t.best_seconds > 0 ? nlohmann::json(t.best_seconds) : nlohmann::json(nullptr)},
         {"best_gflops", t.best_seconds > 0 ? t.flop / t.best_seconds / 1e9 : 0.0},
         {"confirmed", t.confirmed},
         {"warm_start", t.warm_start},
         {"search_best_latency_s", t.search_best_seconds > 0 ? nlohmann::json(t.search_best_seconds)
                                                             : nlohmann::json(nullptr)},
         {"wall_s", r.times.total},
         {"refusals", t.refusals},
         {"history", history},
         {"best_trace", t.best_trace_text}});
  }
  const tune::TuneTimes& tm = r.times;
  double outside = tm.search + tm.model + tm.database;
  fmt::print(
      "time {}: build {:.1f} s, run {:.1f} s, search {:.1f} s, model {:.1f} s, database {:.1f} s, "
      "leaders timed again {:.1f} s "
      "({:.1f}% outside building and running)\n",
      duration_text(tm.total), tm.build, tm.run, tm.search, tm.model, tm.database, tm.confirm,
      tm.total > 0 ? 100 * outside / tm.total : 0.0);
  fmt::print("records: {}{}{}\n", to.db_dir,
             temporary_db ? " (a temporary database: pass --db DIR to keep and resume)" : "",
             r.resumed_records ? fmt::format("; resumed from {} records", r.resumed_records) : "");
  fmt::print("cost model: started from {}\n",
             r.model == "untrained" || r.model == "random" ? r.model : "the model in " + r.model);
  int warm = 0;
  for (const tune::TaskResult& t : r.tasks) warm += t.warm_start;
  if (warm > 0)
    fmt::print("warm start: {} programs of similar workloads, their decisions carried over\n",
               warm);
  if (!json_file_.empty()) {
    nlohmann::json j = tasks_json.size() == 1
                           ? tasks_json[0]
                           : nlohmann::json{{"tasks", tasks_json}, {"wall_s", tm.total}};
    j["times"] = {{"build_s", tm.build}, {"run_s", tm.run},           {"search_s", tm.search},
                  {"model_s", tm.model}, {"database_s", tm.database}, {"confirm_s", tm.confirm},
                  {"total_s", tm.total}};
    j["interrupted"] = r.interrupted;
    j["db"] = to.db_dir;
    j["cost_model"] = r.model;
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", json_file_));
  }
  if (r.interrupted) {
    fmt::print(stderr, "interrupted: what was measured is saved in {}\n", to.db_dir);
    return 130;
  }
  return 0;
}

}  // namespace tyche::tools
