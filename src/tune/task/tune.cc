#include "tune/task/tune.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>
#include <unordered_map>

#include "target/cpu.h"
#include "ir/structural.h"
#include "support/error.h"
#include "tune/database/database.h"
#include "tune/measure/builder.h"
#include "tune/postproc/candidate.h"
#include "tune/search/records.h"
#include "tune/search/search_strategy.h"
#include "tune/space/space_generator.h"
#include "tune/task/task_scheduler.h"

namespace tyche::tune {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct TaskState {
  TuneTask task;
  SearchTask search;
  SearchStrategyPtr strategy;
  RecordWorkload workload;
  std::vector<runtime::NDArray> expected;  // reference outputs of the inputs of seed 42
  TaskResult result;
  std::string best_trace_json;
  // Drift correction (TuneOptions::drift_correction): the yardstick, built once, and the
  // corrected time of each program measured in this run.
  ir::PrimFunc yardstick;
  BuildResult yardstick_build;
  std::vector<double> yardstick_times;  // every timing of it, the first round's included
  std::unordered_map<uint64_t, double> corrected;
  RefusalCounts refusals;  // why the search's candidates died
};

std::unique_ptr<CostModel> make_model(const TuneOptions& o) {
  XGBoostOptions xo;
  xo.threads = o.threads;
  xo.seed = static_cast<uint64_t>(o.seed);
  if (o.cost_model == "random") {
    if (!o.model_path.empty()) throw Error("--model needs the xgb cost model");
    return make_random_model(static_cast<uint64_t>(o.seed));
  }
  if (o.cost_model != "xgb") throw Error(fmt::format("unknown cost model '{}' (expected xgb or random)", o.cost_model));
  return o.model_path.empty() ? make_xgboost_model(xo) : load_cost_model(o.model_path, xo);
}

// The full trace (postprocessors included) of a recorded design-space trace, text form.
std::string full_trace_text(const SearchTask& s, const std::string& trace_json) {
  auto c = make_candidate(s.context, schedule::Trace::from_json(trace_json), {}, s.postprocs, 0);
  if (auto* sch = std::get_if<schedule::Schedule>(&c)) return sch->trace()->to_text();
  return schedule::Trace::from_json(trace_json).to_text();
}

void note_result(TaskState& st, double seconds, const std::string& trace_json) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  if (st.result.best_seconds == 0 || seconds < st.result.best_seconds) {
    st.result.best_seconds = seconds;
    st.best_trace_json = trace_json;
  }
}

// Why a candidate that was run is a failed record; empty when it ran and computed the right result.
std::string run_failure(const RunResult& res) {
  if (!res.ok()) return "run: " + res.error;
  if (!res.correct) return "wrong result: " + res.mismatch;
  return "";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One timing of the task's yardstick (the median of its repeats, which one hiccup does not
// move), 0 when it failed.
double time_yardstick(TaskState& st, Runner& runner) {
  RunResult res = runner.run(run_input_for(st.yardstick_build.object_path, st.yardstick_build.name, st.yardstick, st.expected));
  if (!run_failure(res).empty() || res.time.seconds.empty()) return 0;
  double y = median(res.time.seconds);
  st.yardstick_times.push_back(y);
  return y;
}

// Scales a round's times (`seconds`, in the order measured) by the yardstick: its typical time
// (the median of all its timings so far) over its time at each candidate, interpolated between
// the timings before and after the round. The factor is held within [1/2, 2]: the host's drift
// stays well inside it, and a timing that caught a hiccup cannot rank a round first.
double scale_round(TaskState& st, std::vector<double>& seconds, double before, double after) {
  if (before <= 0 && after <= 0) return 0;
  double y0 = before > 0 ? before : after, y1 = after > 0 ? after : before;
  double typical = median(st.yardstick_times);
  for (size_t k = 0; k < seconds.size(); ++k) {
    double y = y0 + (y1 - y0) * (static_cast<double>(k) + 0.5) / static_cast<double>(seconds.size());
    seconds[k] *= std::clamp(typical / y, 0.5, 2.0);
  }
  return typical;
}

// The yardstick of drift correction: the fastest program of the task's first measured round.
void choose_yardstick(TaskState& st, Builder& builder, const std::vector<ir::PrimFunc>& funcs, const std::vector<double>& seconds) {
  size_t best = seconds.size();
  for (size_t k = 0; k < seconds.size(); ++k)
    if (seconds[k] > 0 && (best == seconds.size() || seconds[k] < seconds[best])) best = k;
  if (best == seconds.size()) return;  // nothing ran: the next round chooses
  BuildResult b = builder.build({funcs[best]})[0];
  if (!b.ok()) return;
  st.yardstick = funcs[best];
  st.yardstick_build = std::move(b);
  st.yardstick_times = {seconds[best]};
}

// Times the leaders of a task again (TuneOptions::confirm_top), in rounds interleaved so that a
// slow or quiet spell of the host falls on all of them alike, and records them as confirmed; the
// task's best becomes the fastest of them.
void confirm_leaders(TaskState& st, Database& db, const RecordTarget& rt, Builder& builder, Runner& runner, const TuneOptions& o) {
  std::vector<const TuningRecord*> latest;
  for (const TuningRecord* r : db.latest_of(st.search.workload, target_key(rt)))
    if (r->ok()) latest.push_back(r);
  auto seconds = [&](const TuningRecord* r) {
    auto it = st.corrected.find(r->program);
    return it != st.corrected.end() ? it->second : r->mean_seconds();
  };
  std::stable_sort(latest.begin(), latest.end(), [&](const TuningRecord* a, const TuningRecord* b) { return seconds(a) < seconds(b); });
  std::vector<TuningRecord> records;
  std::vector<ir::PrimFunc> funcs;
  for (const TuningRecord* r : latest) {
    if (records.size() >= static_cast<size_t>(o.confirm_top)) break;
    std::optional<SearchCandidate> c;
    try {
      c = st.search.replay(schedule::Trace::from_json(r->trace_json), 0);
    } catch (const Error&) {
      // a record of other rules: not a program of this search
    }
    if (!c || (r->program && c->program_hash != r->program)) continue;  // not the program measured
    records.push_back(TuningRecord{st.workload, r->trace_json, rt, c->program_hash, {}, {}, {}, true});
    funcs.push_back(c->program);
  }
  if (records.size() < 2) return;  // nothing to compare
  std::vector<BuildResult> built = builder.build(funcs);
  for (int round = 0; round < o.confirm_rounds; ++round) {
    for (size_t k = 0; k < records.size() && !(o.stop && o.stop->load()); ++k) {
      TuningRecord& r = records[k];
      if (!r.error.empty()) continue;
      if (!built[k].ok()) {
        r.error = "build: " + built[k].error;
        continue;
      }
      RunResult res = runner.run(run_input_for(built[k].object_path, built[k].name, funcs[k], st.expected));
      r.error = run_failure(res);
      if (r.error.empty()) r.seconds.insert(r.seconds.end(), res.time.seconds.begin(), res.time.seconds.end());
      else r.seconds.clear();
    }
  }
  for (const BuildResult& b : built)
    if (!b.object_path.empty()) std::remove(b.object_path.c_str());
  if (o.stop && o.stop->load()) return;  // an interrupted confirmation is not one
  for (TuningRecord& r : records) r.measured_at = utc_now();
  db.add_records(records);
  st.result.confirmed = static_cast<int>(records.size());
  if (std::none_of(records.begin(), records.end(), [](const TuningRecord& r) { return r.ok(); })) return;
  st.result.best_seconds = 0;
  st.best_trace_json.clear();
  for (const TuningRecord& r : records)
    if (r.ok()) note_result(st, r.mean_seconds(), r.trace_json);
}

}  // namespace

TuneResult tune(const std::vector<TuneTask>& tasks, const Target& target, const TuneOptions& options,
                const std::function<void(const TuneProgress&)>& progress) {
  auto start = Clock::now();
  if (target.is_gpu()) throw Error("tune: CUDA kernels cannot be run yet (tune an llvm target)");
  if (tasks.empty()) throw Error("tune: no workload to tune");
  if (options.trials <= 0 || options.batch <= 0) throw Error("tune: --trials and the batch must be positive");
  const runtime::TimeOptions& timing = options.runner.time;
  if (!(options.runner.timeout_s > 0) || timing.repeat <= 0 || timing.number <= 0 || timing.warmup < 0 || timing.min_repeat_ms < 0)
    throw Error("tune: the timeout, repeats and calls per repeat must be positive, warm-up and minimum repeat time not negative");
  const target::Cpu& cpu = target::resolve_cpu(target.cpu);
  target::check_runs_on_host(cpu);
  const EvolutionaryOptions& evo = options.evolutionary;
  if (!options.make_strategy) make_search_strategy(options.strategy, evo);  // refuses an unknown name before any work
  std::unique_ptr<TaskScheduler> scheduler = make_task_scheduler(options.scheduler);
  std::unique_ptr<CostModel> model = make_model(options);
  Database db(options.db_dir);
  TuneResult out;
  const RecordTarget rt = record_target(target);
  const std::string key = target_key(rt);

  // Tasks: spaces, postprocessors, mutators, strategy; what the database already holds.
  std::vector<std::unique_ptr<TaskState>> states;
  std::vector<ModelCandidate> seen_candidates;
  std::vector<double> seen_seconds;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto st = std::make_unique<TaskState>();
    st->task = tasks[i];
    const workloads::Workload& w = st->task.workload;
    SearchTask& s = st->search;
    s.context = TuneContext{w.func, target};
    SpaceGeneratorPtr space = st->task.space ? st->task.space : post_order_apply(default_rules(target));
    space->initialize(s.context);
    for (const schedule::Schedule& d : space->generate(s.context, options.seed))
      s.spaces.push_back(d.trace()->simplified());
    if (s.spaces.empty()) throw InputError(fmt::format("tune: the design space of {} is empty (a rule returned no schedule)", w.name));
    s.postprocs = default_postprocs(target);
    for (const PostprocPtr& p : s.postprocs) p->initialize(s.context);
    s.mutators = default_mutators(target);
    for (auto& [m, weight] : s.mutators) m->initialize(s.context);
    s.model = model.get();
    s.refusals = &st->refusals;
    s.workload = ir::structural_hash(w.func);
    s.threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    st->workload = RecordWorkload{w.name, st->task.extents, s.workload, w.shape, w.flop};
    db.add_workload(st->workload);
    out.resumed_records += static_cast<int>(db.records_of(s.workload, key).size());
    std::vector<const TuningRecord*> records = db.latest_of(s.workload, key);
    s.measured = measured_programs(records, s.context, s.postprocs);
    for (const TuningRecord* r : records) {
      if (!r->ok()) continue;
      try {
        schedule::Trace trace = schedule::Trace::from_json(r->trace_json);
        std::optional<SearchCandidate> c = s.replay(trace, 0);
        if (!c) continue;
        s.measured_traces.emplace_back(r->mean_seconds(), trace);
        seen_candidates.push_back({s.workload, c->program, false});
        seen_seconds.push_back(r->mean_seconds());
        note_result(*st, r->mean_seconds(), r->trace_json);
      } catch (const Error&) {
        // a record of other rules: it cannot seed this search
      }
    }
    st->strategy = options.make_strategy ? options.make_strategy() : make_search_strategy(options.strategy, evo);
    st->strategy->initialize(&s, options.seed + static_cast<int64_t>(i));
    st->expected = w.reference(workloads::make_inputs(w.func, 42));
    st->result.name = w.name;
    st->result.shape = w.shape;
    st->result.flop = w.flop;
    states.push_back(std::move(st));
  }
  for (const std::string& w : db.warnings()) out.warnings.push_back(w);
  if (!seen_candidates.empty()) {
    auto t = Clock::now();
    model->update(seen_candidates, seen_seconds);
    out.times.model += since(t);
  }

  std::string object_dir = (std::filesystem::temp_directory_path() / fmt::format("tyche_tune_{}", ::getpid())).string();
  Builder builder(BuilderOptions{.object_dir = object_dir, .cpu = cpu.name});
  RunnerOptions runner_options = options.runner;
  if (runner_options.threads <= 0) runner_options.threads = target.num_cores;
  Runner runner(runner_options);

  std::vector<TaskProgress> progress_state(states.size());
  for (size_t i = 0; i < states.size(); ++i) progress_state[i].weight = states[i]->task.weight;
  int done = 0;
  auto stopped = [&] { return options.stop && options.stop->load(); };
  while (done < options.trials && !stopped()) {
    int i = scheduler->next(progress_state);
    if (i < 0) break;
    TaskState& st = *states[static_cast<size_t>(i)];
    auto t = Clock::now();
    std::vector<SearchCandidate> batch = st.strategy->generate(std::min(options.batch, options.trials - done));
    out.times.search += since(t);
    if (batch.empty()) {  // nothing left to measure in this design space
      progress_state[static_cast<size_t>(i)].done = true;
      continue;
    }
    std::vector<ir::PrimFunc> funcs;
    for (const SearchCandidate& c : batch) funcs.push_back(c.program);
    t = Clock::now();
    std::vector<BuildResult> built = builder.build(funcs);
    out.times.build += since(t);
    std::vector<TuningRecord> records;
    std::vector<double> seconds;
    t = Clock::now();
    bool correct_drift = options.drift_correction && st.yardstick.defined();
    double yard_before = correct_drift ? time_yardstick(st, runner) : 0;
    double batch_best = st.result.best_seconds;
    for (size_t k = 0; k < batch.size() && !stopped(); ++k) {
      TuningRecord r{st.workload, batch[k].trace.to_json(), rt, batch[k].program_hash, {}, {}, utc_now()};
      if (!built[k].ok()) {
        r.error = "build: " + built[k].error;
      } else {
        RunInput in = run_input_for(built[k].object_path, built[k].name, funcs[k], st.expected);
        if (options.single_run_slowdown > 0 && batch_best > 0) in.single_run_after_s = options.single_run_slowdown * batch_best;
        if (options.timeout_slowdown > 0 && batch_best > 0) in.timeout_s = std::max(options.timeout_floor_s, options.timeout_slowdown * batch_best);
        RunResult res = runner.run(in);
        r.error = run_failure(res);
        if (r.error.empty()) r.seconds = res.time.seconds;
      }
      seconds.push_back(r.ok() ? r.mean_seconds() : std::numeric_limits<double>::quiet_NaN());
      if (r.ok() && (batch_best == 0 || seconds.back() < batch_best)) batch_best = seconds.back();
      records.push_back(std::move(r));
    }
    double yard_after = correct_drift && !stopped() ? time_yardstick(st, runner) : 0;
    out.times.run += since(t);
    double yard_typical = scale_round(st, seconds, yard_before, yard_after);
    for (const BuildResult& b : built)
      if (!b.object_path.empty()) std::remove(b.object_path.c_str());
    batch.resize(records.size());  // an interrupted batch keeps what was measured
    t = Clock::now();
    db.add_records(records);
    out.times.database += since(t);
    if (options.drift_correction && !st.yardstick.defined() && !stopped()) {
      t = Clock::now();
      choose_yardstick(st, builder, funcs, seconds);
      out.times.build += since(t);
    }

    std::vector<ModelCandidate> measured;
    for (size_t k = 0; k < records.size(); ++k) {
      st.search.measured.insert(batch[k].program_hash);
      measured.push_back({st.search.workload, batch[k].program, false});
      if (records[k].ok()) {
        st.corrected[batch[k].program_hash] = seconds[k];
        double raw = records[k].mean_seconds();
        if (st.result.search_best_seconds == 0 || raw < st.result.search_best_seconds) st.result.search_best_seconds = raw;
        st.search.measured_traces.emplace_back(seconds[k], batch[k].trace);
        note_result(st, seconds[k], records[k].trace_json);
      } else {
        ++st.result.failed;
      }
    }
    t = Clock::now();
    model->update(measured, seconds);
    out.times.model += since(t);
    t = Clock::now();
    st.strategy->notify(batch, seconds);
    out.times.search += since(t);

    done += static_cast<int>(records.size());
    st.result.trials += static_cast<int>(records.size());
    TaskProgress& p = progress_state[static_cast<size_t>(i)];
    p.trials.push_back(st.result.trials);
    p.best_seconds.push_back(st.result.best_seconds > 0 ? st.result.best_seconds : std::numeric_limits<double>::infinity());
    st.result.history.push_back(
        {st.result.trials, st.result.best_seconds, since(start), st.result.search_best_seconds, yard_before, yard_after, yard_typical});
    if (progress) progress(TuneProgress{done, options.trials, &st.result, since(start)});
  }
  for (auto& st : states) {
    if (stopped() || options.confirm_top <= 0 || options.confirm_rounds <= 0) continue;
    auto t = Clock::now();
    confirm_leaders(*st, db, rt, builder, runner, options);
    out.times.confirm += since(t);
  }
  out.interrupted = stopped();
  std::filesystem::remove_all(object_dir);
  for (auto& st : states) {
    if (!st->best_trace_json.empty()) st->result.best_trace_text = full_trace_text(st->search, st->best_trace_json);
    st->result.refusals = st->refusals.counts();
    out.tasks.push_back(std::move(st->result));
  }
  out.times.total = since(start);
  return out;
}

}  // namespace tyche::tune
