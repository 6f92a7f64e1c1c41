// tune(): the tuning loop. For every task (a workload) it generates the design spaces, then,
// round after round, lets the task scheduler pick a task, asks its search strategy for a batch
// of programs not measured before, builds them concurrently, times them in the isolated runner
// (checking their outputs), appends the records to the database (synced once per batch), feeds
// the measurements to the cost model and tells the strategy. A candidate that fails to build,
// crashes, hangs or computes a wrong result is a failed record; the tune goes on.
//
// The database makes a run resumable: its records of these workloads on this target seed the
// cost model and the search, and no program in it is measured again.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tune/core/context.h"
#include "tune/measure/measure_batch.h"
#include "tune/measure/runner.h"
#include "tune/search/search_strategy.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

namespace tyche::tune {

struct TuneTask {
  workloads::Workload workload;
  std::string extents;  // for index notation: what rebuilds it (workloads::resolve)
  double weight = 1;
  // The design spaces to search; nullptr: the target's default rules (post_order_apply).
  SpaceGeneratorPtr space;
};

struct TuneOptions {
  int trials = 1000;  // measured candidates, all tasks together
  // Candidates per round, at most: with several tasks a round is sized to the budget
  // (round_size()), so that every task gets rounds early.
  int batch = 64;
  std::string db_dir;                     // the database directory (created if missing)
  std::string strategy = "evolutionary";  // or "replay-trace"
  // A strategy of one's own (one per task), instead of the named one.
  std::function<std::unique_ptr<SearchStrategy>()> make_strategy;
  EvolutionaryOptions evolutionary;  // population, generations, acceptance, ...
  std::string cost_model = "xgb";    // or "random"
  // A cost model of one's own, instead of the named one (one for all tasks; model_path unused).
  std::function<std::unique_ptr<CostModel>()> make_cost_model;
  // Called once per task when its search is set up, before the model or the strategy sees it:
  // how the Python package hands strategies and models written in Python their task.
  std::function<void(SearchTask&)> on_search_task;
  // The model to start from (xgb): a saved model's path; "" the pre-trained one
  // (default_cost_model_path(), trained on bench/data at build time) where it exists; "none" an
  // untrained model.
  std::string model_path;
  std::string scheduler = "gradient";  // or "round-robin"
  // A task with few records of its own starts from the fastest programs of the database's other
  // workloads whose design space has its structure, then from those of warm_start_records
  // (SearchTask::warm_start, search/transfer.h).
  bool warm_start = true;
  // Record files (plain or .gz) whose fastest programs may start a task after the database's;
  // nullopt: the dataset shipped with Tyche (default_warm_start_records()).
  std::optional<std::vector<std::string>> warm_start_records;
  int64_t seed = 0;
  int threads = 0;       // for search, features and the model; 0: all
  RunnerOptions runner;  // worker path, timeout, timing
  // Set: every batch (the leaders' confirmation too) is measured by it, on other machines, instead
  // of here (measure_batch.h); drift correction is then off (it times a program kept here).
  RemoteMeasure remote_measure;
  // A candidate whose checking run and the run after it are this many times slower than the
  // task's best is timed by that second run alone (0: every candidate gets all its repeats).
  double single_run_slowdown = 4;
  // A candidate still running after this many times the task's best (at least timeout_floor_s,
  // which covers loading the object on a loaded host) is stopped and recorded as timed out
  // (0: only RunnerOptions::timeout_s stops candidates).
  double timeout_slowdown = 100;
  double timeout_floor_s = 5;
  // At the end each task's confirm_top fastest programs are built and timed again, confirm_rounds
  // rounds interleaved, and recorded as confirmed (record.h): a search times each candidate once,
  // at whatever moment the host allowed, so on a shared machine its fastest record is partly its
  // luckiest. The task's best is then the fastest confirmed program (0: no confirmation).
  int confirm_top = 16;
  int confirm_rounds = 5;
  // With several tasks, the confirmation's share of the tuning time so far. Tasks go largest
  // weighted latency first, each confirming as many leaders (at most confirm_top) as its part of
  // what is left of this budget pays for at the price a leader has cost so far; a task whose part
  // buys fewer than two confirms none. So many small tasks do not make confirmation the bulk of a
  // tune (0: every task confirms confirm_top).
  double confirm_share = 0.08;
  // The host's speed drifts over minutes on a shared machine, and a round measured in a quiet
  // spell would otherwise hold every leader. A yardstick (the task's fastest program of its first
  // round) is timed before and after each later round, and the round's times are scaled by its
  // typical time (the median of its timings so far) over the faster of its times then, held
  // within [0.8, 1.25] (drift.h says why). Records keep the raw times; the cost model, the search,
  // the best and the choice of leaders use the scaled ones.
  bool drift_correction = true;
  const std::atomic<bool>* stop = nullptr;  // set (Ctrl-C): stop after saving what was measured
};

// Where the time went, in seconds.
struct TuneTimes {
  double search = 0;  // sampling, mutation, validation, features and prediction
  double build = 0;
  double run = 0;
  double model = 0;  // training
  double database = 0;
  double confirm = 0;  // building and timing the leaders again
  double total = 0;
};

struct TunePoint {
  int trials = 0;           // of this task
  double best_seconds = 0;  // the fastest so far, drift-corrected (the search's ranking)
  double elapsed_s = 0;
  double measured_best_seconds = 0;  // the fastest single measurement so far, as timed
  // The yardstick's times before and after this round and its typical time then, the median of
  // all its timings so far (0: not timed; see drift_correction).
  double yardstick_before = 0, yardstick_after = 0, yardstick_typical = 0;
};

struct TaskResult {
  std::string name, shape;
  double flop = 0;
  int trials = 0, failed = 0;
  double best_seconds = 0;         // 0: nothing ran; after a confirmation, its fastest program
  double search_best_seconds = 0;  // the fastest single measurement while searching, as timed
  int confirmed = 0;               // programs timed again at the end
  int warm_start = 0;  // programs of other workloads it started from (TuneOptions::warm_start)
  std::string best_trace_text;  // the best program's trace, text form (design space + decisions)
  // Candidates the search drew or mutated that did not replay or that a postprocessor refused,
  // by CandidateError::reason() ("replay: dependence_violated").
  std::map<std::string, int64_t> refusals;
  std::vector<TunePoint> history;  // after every round of this task
};

struct TuneResult {
  std::vector<TaskResult> tasks;
  TuneTimes times;
  int resumed_records = 0;  // records of these tasks the database already held
  std::string model;        // what the cost model started from: a path, or "untrained"
  bool interrupted = false;
  std::vector<std::string> warnings;  // lines of the database that were skipped
};

struct TuneProgress {
  int trials = 0, budget = 0;        // all tasks
  const TaskResult* task = nullptr;  // the task of the round just measured
  double elapsed_s = 0;
};

// The pre-trained cost model a tune starts from by default: TYCHE_COST_MODEL when set ("none":
// no default), else the one the build trained on bench/data; "" when there is none.
std::string default_cost_model_path();
// The measured dataset the default model was trained on, as installed beside it (bench/data's
// files): a tune of another shape of one of its families starts from its fastest programs. Empty
// where it is missing.
std::vector<std::string> default_warm_start_records();

// The round size of a tune of `tasks` tasks: `batch`, or fewer so that every task gets about
// four rounds of the budget (never under 8, the smallest useful evolutionary round).
int round_size(int batch, int trials, int tasks);

// Throws tyche::Error for bad options (unknown strategy, model file, a GPU target), never for a
// candidate.
TuneResult tune(const std::vector<TuneTask>& tasks, const target::Target& target,
                const TuneOptions& options,
                const std::function<void(const TuneProgress&)>& progress = {});

}  // namespace tyche::tune
