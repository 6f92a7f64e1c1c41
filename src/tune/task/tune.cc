#include "tune/task/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "support/error.h"
#include "tune/postproc/candidate.h"
#include "tune/task/task_scheduler.h"
#include "tune/task/task_state.h"

namespace tyche::tune {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool stopped(const TuneOptions& o) {
  return o.stop && o.stop->load();
}

// Refuses bad options before any work.
void check_options(const std::vector<TuneTask>& tasks, const target::Target& target,
                   const TuneOptions& o) {
  if (tasks.empty()) throw Error("tune: no workload to tune");
  if (o.trials <= 0 || o.batch <= 0) throw Error("tune: --trials and the batch must be positive");
  const runtime::TimeOptions& timing = o.runner.time;
  if (!(o.runner.timeout_s > 0) || timing.repeat <= 0 || timing.number <= 0 || timing.warmup < 0 ||
      timing.min_repeat_ms < 0)
    throw Error(
        "tune: the timeout, repeats and calls per repeat must be positive, warm-up and minimum "
        "repeat time not negative");
  if (!target.is_gpu()) target::check_runs_on_host(target.cpu_info());
  if (!o.remote_measure) require_device(target);
  if (!o.make_strategy)
    make_search_strategy(o.strategy, o.evolutionary);  // an unknown name or acceptance
}

// The model, and what it started from (TuneResult::model). A default model that cannot be read
// (another feature layout, a corrupt file) is a warning, and the tune starts untrained.
std::unique_ptr<CostModel> make_model(const TuneOptions& o, TuneResult& out) {
  XGBoostOptions xo;
  xo.threads = o.threads;
  xo.seed = static_cast<uint64_t>(o.seed);
  if (o.make_cost_model) {
    std::unique_ptr<CostModel> m = o.make_cost_model();
    out.model = m->name();
    return m;
  }
  if (o.cost_model == "random") {
    if (!o.model_path.empty() && o.model_path != "none")
      throw Error("--model needs the xgb cost model");
    out.model = "random";
    return make_random_model(static_cast<uint64_t>(o.seed));
  }
  if (o.cost_model != "xgb")
    throw Error(fmt::format("unknown cost model '{}' (expected xgb or random)", o.cost_model));
  if (o.model_path == "none") {
    out.model = "untrained";
    return make_xgboost_model(xo);
  }
  if (!o.model_path.empty()) {
    out.model = o.model_path;
    return load_cost_model(o.model_path, xo);
  }
  const std::string path = default_cost_model_path();
  if (!path.empty()) {
    try {
      std::unique_ptr<CostModel> m = load_cost_model(path, xo);
      out.model = path;
      return m;
    } catch (const Error& e) {
      out.warnings.push_back(fmt::format(
          "the pre-trained cost model was not loaded ({}); starting untrained", e.what()));
    }
  }
  out.model = "untrained";
  return make_xgboost_model(xo);
}

// Every task set up, resumed from the database, and the model seeded with what it measured.
std::vector<std::unique_ptr<TaskState>> start_tasks(const std::vector<TuneTask>& tasks,
                                                    const target::Target& target,
                                                    const TuneOptions& o, CostModel& model,
                                                    Database& db, TuneResult& out) {
  std::vector<std::unique_ptr<TaskState>> states;
  ModelSeeds seeds;
  WarmStartRecords shipped(o.warm_start_records ? *o.warm_start_records
                                                : default_warm_start_records());
  for (size_t i = 0; i < tasks.size(); ++i) {
    states.push_back(start_task(tasks[i], i, target, o, &model, db, seeds, shipped));
    out.resumed_records += static_cast<int>(
        db.records_of(states.back()->search.workload, target_key(states.back()->measure.target))
            .size());
  }
  for (const std::string& w : db.warnings()) out.warnings.push_back(w);
  if (!seeds.candidates.empty()) {
    auto t = Clock::now();
    model.update(seeds.candidates, seeds.seconds);
    out.times.model += since(t);
  }
  return states;
}

// One round of a task: the batch measured and recorded, between two timings of the drift
// yardstick whose drift its ranked times are corrected for.
TunePoint measure_round(TaskState& st, std::vector<Trial>& batch, Measurer& measurer, Database& db,
                        const TuneOptions& o, TuneTimes& times) {
  TunePoint p;
  bool correct = o.drift_correction && st.drift.has_yardstick();
  auto t = Clock::now();
  if (correct) p.yardstick_before = st.drift.time_yardstick(measurer, st.measure);
  times.run += since(t);
  BatchOptions limits{.best_seconds = st.result.best_seconds,
                      .single_run_slowdown = o.single_run_slowdown,
                      .timeout_slowdown = o.timeout_slowdown,
                      .timeout_floor_s = o.timeout_floor_s,
                      .stop = o.stop};
  BatchTimes bt = measurer.measure_batch(
      batch, st.measure, [&](const std::vector<TuningRecord>& r) { db.add_records(r); }, limits);
  times.build += bt.build, times.run += bt.run, times.database += bt.save;
  std::erase_if(batch, [](const Trial& x) {
    return !x.measured;
  });  // an interrupted batch keeps what was measured
  t = Clock::now();
  if (correct && !stopped(o)) p.yardstick_after = st.drift.time_yardstick(measurer, st.measure);
  times.run += since(t);
  p.yardstick_typical = st.drift.scale(batch, p.yardstick_before, p.yardstick_after);
  if (o.drift_correction && !st.drift.has_yardstick() && !stopped(o)) {
    t = Clock::now();
    st.drift.choose_yardstick(measurer, batch);
    times.build += since(t);
  }
  return p;
}

// The task, the cost model and the strategy learn from a measured round.
void learn(TaskState& st, const std::vector<Trial>& round, CostModel& model, TuneTimes& times) {
  st.absorb(round);
  std::vector<ModelCandidate> candidates;
  std::vector<double> seconds;
  for (const Trial& t : round) {
    candidates.push_back(st.search.model_candidate(t));
    seconds.push_back(t.ranked_seconds);
  }
  auto t = Clock::now();
  model.update(candidates, seconds);
  times.model += since(t);
  t = Clock::now();
  st.strategy->notify(round);
  times.search += since(t);
}

void record_point(TaskState& st, TaskProgress& progress, TunePoint p) {
  p.trials = st.result.trials;
  p.best_seconds = st.result.best_seconds;
  p.measured_best_seconds = st.result.search_best_seconds;
  st.result.history.push_back(p);
  progress.trials.push_back(st.result.trials);
  progress.best_seconds.push_back(p.best_seconds > 0 ? p.best_seconds
                                                     : std::numeric_limits<double>::infinity());
}

// The task's `top` fastest programs in the database (by their ranked time in this run, else as
// recorded) that still replay to the program measured.
std::vector<Trial> leaders(const TaskState& st, const Database& db, int top) {
  std::vector<const TuningRecord*> latest;
  for (const TuningRecord* r : db.latest_of(st.search.workload, target_key(st.measure.target)))
    if (r->ok()) latest.push_back(r);
  auto seconds = [&](const TuningRecord* r) {
    auto it = st.ranked.find(r->program);
    return it != st.ranked.end() ? it->second : r->typical_seconds();
  };
  std::stable_sort(latest.begin(), latest.end(), [&](const TuningRecord* a, const TuningRecord* b) {
    return seconds(a) < seconds(b);
  });
  std::vector<Trial> out;
  for (const TuningRecord* r : latest) {
    if (out.size() >= static_cast<size_t>(top)) break;
    try {
      schedule::Trace trace = schedule::Trace::from_json(r->trace_json);
      std::optional<Trial> t = st.search.replay(trace, 0);
      if (!t || (r->program && t->program_hash != r->program))
        continue;  // not the program measured
      t->trace = std::move(trace);
      out.push_back(std::move(*t));
    } catch (const Error&) {
      // a record of other rules: not a program of this search
    }
  }
  return out;
}

// Times the task's `top` leaders again, interleaved, and records them as confirmed; the task's
// best becomes the fastest of them.
void confirm_leaders(TaskState& st, Database& db, Measurer& measurer, const TuneOptions& o,
                     int top) {
  std::vector<Trial> trials = leaders(st, db, top);
  if (trials.size() < 2) return;  // nothing to compare
  measurer.measure_batch(trials, st.measure,
                         [&](const std::vector<TuningRecord>& r) { db.add_records(r); },
                         {.rounds = o.confirm_rounds, .confirmed = true, .stop = o.stop});
  if (!trials[0].measured) return;  // interrupted: not a confirmation
  st.result.confirmed = static_cast<int>(trials.size());
  if (std::none_of(trials.begin(), trials.end(), [](const Trial& t) { return t.ok(); })) return;
  st.result.best_seconds = 0;
  st.best_trace_json.clear();
  for (const Trial& t : trials)
    if (t.ok()) st.note_result(t.typical_seconds(), t.trace.to_json());
}

// The full trace (postprocessors included) of a recorded design-space trace, text form.
std::string full_trace_text(const SearchTask& s, const std::string& trace_json) {
  auto c = make_candidate(s.context, schedule::Trace::from_json(trace_json), {}, s.postprocs, 0);
  if (auto* sch = std::get_if<schedule::Schedule>(&c)) return sch->trace()->to_text();
  return schedule::Trace::from_json(trace_json).to_text();
}

// The leaders timed again, then each task's result.
void finish(std::vector<std::unique_ptr<TaskState>>& states, Database& db, Measurer& measurer,
            const TuneOptions& o, TuneResult& out, int measured, double elapsed) {
  // The budget is confirm_share of the tuning time. Tasks go in order of weighted latency, the
  // largest first, and each gets as many leaders as its part of what is left of the budget buys
  // (its weighted latency over that of the tasks still to go): a task whose part buys fewer than
  // two confirms none (nothing to compare). A leader's price starts as a search candidate's (built,
  // timed confirm_rounds times) and then is what confirming has actually cost, which is more for
  // small batches: estimated once, the 8% share came to 11.4% of a MobileNet-v2 tune.
  std::vector<TaskState*> order;
  for (auto& st : states) order.push_back(st.get());
  auto weighted = [](const TaskState* st) {
    return st->task.weight * std::max(st->result.best_seconds, 0.0);
  };
  std::stable_sort(order.begin(), order.end(), [&](const TaskState* a, const TaskState* b) {
    return weighted(a) > weighted(b);
  });
  double per_leader =
      measured > 0 ? (out.times.build + o.confirm_rounds * out.times.run) / measured : 0;
  double left = 0;  // the weighted latency of the tasks still to go
  for (const TaskState* st : order) left += weighted(st);
  double budget = o.confirm_share * elapsed, spent = 0;
  int leaders_timed = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    TaskState& st = *order[i];
    double part = left > 0 ? weighted(&st) / left : 1.0 / static_cast<double>(order.size() - i);
    left -= weighted(&st);
    if (stopped(o) || o.confirm_top <= 0 || o.confirm_rounds <= 0) continue;
    int top = o.confirm_top;
    if (o.confirm_share > 0 && per_leader > 0 && states.size() > 1) {
      double price = leaders_timed > 0 ? spent / leaders_timed : per_leader;
      top = std::min(o.confirm_top, static_cast<int>(std::max(budget - spent, 0.0) * part / price));
      if (top < 2) continue;
    }
    auto t = Clock::now();
    confirm_leaders(st, db, measurer, o, top);
    double took = since(t);
    out.times.confirm += took;
    spent += took;
    leaders_timed += st.result.confirmed;
  }
  out.interrupted = stopped(o);
  for (auto& st : states) {
    if (!st->best_trace_json.empty())
      st->result.best_trace_text = full_trace_text(st->search, st->best_trace_json);
    st->result.refusals = st->refusals.counts();
    out.tasks.push_back(std::move(st->result));
  }
}

}  // namespace

std::string default_cost_model_path() {
  std::string path;
  if (const char* env = std::getenv("TYCHE_COST_MODEL")) {
    path = env;
  } else {
#ifdef TYCHE_DEFAULT_COST_MODEL
    path = TYCHE_DEFAULT_COST_MODEL;
#endif
  }
  if (path == "none" || path.empty() || !std::filesystem::exists(path)) return "";
  return path;
}

std::vector<std::string> default_warm_start_records() {
  std::vector<std::string> files;
#ifdef TYCHE_SHIPPED_RECORDS_DIR
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(TYCHE_SHIPPED_RECORDS_DIR, ec))
    if (entry.path().string().ends_with(".jsonl.gz")) files.push_back(entry.path().string());
#endif
  std::sort(files.begin(), files.end());
  return files;
}

int round_size(int batch, int trials, int tasks) {
  if (tasks <= 1) return batch;
  return std::min(batch, std::max(8, trials / (4 * tasks)));
}

// The paper's loop: the task scheduler picks a task, its strategy proposes trials, they are
// measured and recorded, the cost model and the strategy learn from them.
TuneResult tune(const std::vector<TuneTask>& tasks, const target::Target& target,
                const TuneOptions& options,
                const std::function<void(const TuneProgress&)>& progress) {
  auto start = Clock::now();
  check_options(tasks, target, options);
  std::unique_ptr<TaskScheduler> scheduler = make_task_scheduler(options.scheduler);
  TuneResult out;
  std::unique_ptr<CostModel> model = make_model(options, out);
  Database db(options.db_dir);
  std::vector<std::unique_ptr<TaskState>> states =
      start_tasks(tasks, target, options, *model, db, out);
  Measurer measurer(target, options.runner);
  if (options.remote_measure) measurer.set_remote(options.remote_measure);
  std::vector<TaskProgress> task_progress(states.size());
  for (size_t i = 0; i < states.size(); ++i) task_progress[i].weight = states[i]->task.weight;
  const int round = round_size(options.batch, options.trials, static_cast<int>(states.size()));
  int done = 0;
  for (; done < options.trials && !stopped(options);) {
    int i = scheduler->next(task_progress);
    if (i < 0) break;
    TaskState& st = *states[static_cast<size_t>(i)];
    auto t = Clock::now();
    std::vector<Trial> batch = st.strategy->generate(std::min(round, options.trials - done));
    out.times.search += since(t);
    if (batch.empty()) {  // nothing left to measure in this design space
      task_progress[static_cast<size_t>(i)].done = true;
      continue;
    }
    TunePoint point = measure_round(st, batch, measurer, db, options, out.times);
    learn(st, batch, *model, out.times);
    done += static_cast<int>(batch.size());
    point.elapsed_s = since(start);
    record_point(st, task_progress[static_cast<size_t>(i)], point);
    if (progress) progress(TuneProgress{done, options.trials, &st.result, since(start)});
  }
  finish(states, db, measurer, options, out, done, since(start));
  out.times.total = since(start);
  return out;
}

}  // namespace tyche::tune
