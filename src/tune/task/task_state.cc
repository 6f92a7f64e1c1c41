#include "tune/task/task_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <thread>
#include <unordered_map>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/search/records.h"
#include "tune/search/transfer.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {

namespace {

// The search's view of the task: design spaces, postprocessors, mutators, the model.
void set_up_search(TaskState& st, const target::Target& target, const TuneOptions& options,
                   CostModel* model) {
  const workloads::Workload& w = st.task.workload;
  SearchTask& s = st.search;
  s.context = TuneContext{w.func, target};
  SpaceGeneratorPtr space = st.task.space ? st.task.space : post_order_apply(default_rules(target));
  space->initialize(s.context);
  for (const schedule::Schedule& d : space->generate(s.context, options.seed))
    s.spaces.push_back(d.trace()->simplified());
  if (s.spaces.empty())
    throw InputError(
        fmt::format("tune: the design space of {} is empty (a rule returned no schedule)", w.name));
  s.postprocs = default_postprocs(s.context);
  s.mutators = default_mutators(target);
  for (auto& [m, weight] : s.mutators) m->initialize(s.context);
  s.model = model;
  s.refusals = &st.refusals;
  s.workload = ir::structural_hash(w.func);
  s.threads = options.threads > 0
                  ? options.threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.on_search_task) options.on_search_task(s);
}

// What the database already measured of the task: no program is measured again, the programs
// that ran seed the search and the model, and the fastest is the best so far.
void resume_from(TaskState& st, const Database& db, ModelSeeds& seeds) {
  SearchTask& s = st.search;
  std::vector<const TuningRecord*> records =
      db.latest_of(s.workload, target_key(st.measure.target));
  s.measured = measured_programs(records, s.context, s.postprocs);
  for (const TuningRecord* r : records) {
    if (!r->ok()) continue;
    try {
      schedule::Trace trace = schedule::Trace::from_json(r->trace_json);
      std::optional<Trial> t = s.replay(trace, 0);
      if (!t) continue;
      s.measured_traces.emplace_back(r->typical_seconds(), trace);
      seeds.candidates.push_back(s.model_candidate(*t));
      seeds.seconds.push_back(r->typical_seconds());
      st.note_result(r->typical_seconds(), r->trace_json);
    } catch (const Error&) {
      // a record of other rules: it cannot seed this search
    }
  }
}

// The warm start (SearchTask::warm_start) of a task the database knows little of: the fastest
// programs of the other workloads it holds, then of the shipped records, workloads of the task's
// family first, whose traces have the instructions of one of the task's design spaces, their
// decisions carried over.
constexpr size_t kWarmStartOwnRecords = 16;  // a task with this many programs of its own needs none
constexpr size_t kWarmStartPerWorkload = 4;
constexpr size_t kWarmStartTraces = 32;

// "DENSE_RELU-2" -> "DENSE_RELU": presets of one family differ only after the last '-'.
std::string family_of(const std::string& name) {
  size_t dash = name.rfind('-');
  return dash == std::string::npos ? name : name.substr(0, dash);
}

// Adds `r`'s program, transferred to the task, when it has the structure of a design space.
void add_warm_start(SearchTask& s, const TuningRecord& r) {
  std::optional<schedule::Trace> measured;
  try {
    measured = schedule::Trace::from_json(r.trace_json);
  } catch (const Error&) {
    return;
  }
  for (const schedule::Trace& space : s.spaces)
    if (std::optional<schedule::Trace> t = transfer_decisions(s.context, space, *measured)) {
      s.warm_start.push_back(std::move(*t));
      return;
    }
}

void warm_start_from(TaskState& st, const Database& db, WarmStartRecords& shipped) {
  SearchTask& s = st.search;
  if (s.measured_traces.size() >= kWarmStartOwnRecords) return;
  const std::string family = family_of(st.task.workload.name);
  std::vector<const RecordWorkload*> others;
  for (const RecordWorkload& w : db.workloads())
    if (w.hash != s.workload) others.push_back(&w);
  std::stable_partition(others.begin(), others.end(),
                        [&](const RecordWorkload* w) { return family_of(w->name) == family; });
  const std::string target = target_key(st.measure.target);
  for (const RecordWorkload* w : others)
    for (const TuningRecord* r : db.best(w->hash, target, kWarmStartPerWorkload)) {
      if (s.warm_start.size() >= kWarmStartTraces) return;
      add_warm_start(s, *r);
    }
  std::vector<const TuningRecord*> records;
  for (const TuningRecord& r : shipped.fastest()) records.push_back(&r);
  std::stable_partition(records.begin(), records.end(), [&](const TuningRecord* r) {
    return family_of(r->workload.name) == family;
  });
  for (const TuningRecord* r : records) {
    if (s.warm_start.size() >= kWarmStartTraces) return;
    add_warm_start(s, *r);
  }
}

}  // namespace

const std::vector<TuningRecord>& WarmStartRecords::fastest() {
  if (fastest_) return *fastest_;
  std::vector<uint64_t> order;
  std::unordered_map<uint64_t, std::vector<TuningRecord>> by_workload;
  for (const std::string& file : files_)
    for (TuningRecord& r :
         read_records(file).records) {  // throws, one line, if it cannot be opened
      if (!r.ok()) continue;
      auto [it, fresh] = by_workload.try_emplace(r.workload.hash);
      if (fresh) order.push_back(r.workload.hash);
      it->second.push_back(std::move(r));
    }
  fastest_.emplace();
  for (uint64_t h : order) {
    std::vector<TuningRecord>& rs = by_workload[h];
    size_t k = std::min(rs.size(), kWarmStartPerWorkload);
    std::partial_sort(rs.begin(), rs.begin() + static_cast<std::ptrdiff_t>(k), rs.end(),
                      [](const TuningRecord& a, const TuningRecord& b) {
                        return a.typical_seconds() < b.typical_seconds();
                      });
    std::move(rs.begin(), rs.begin() + static_cast<std::ptrdiff_t>(k),
              std::back_inserter(*fastest_));
  }
  return *fastest_;
}

void TaskState::note_result(double seconds, const std::string& trace_json) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  if (result.best_seconds == 0 || seconds < result.best_seconds) {
    result.best_seconds = seconds;
    best_trace_json = trace_json;
  }
}

void TaskState::absorb(const std::vector<Trial>& round) {
  for (const Trial& t : round) {
    search.measured.insert(t.program_hash);
    if (!t.ok()) {
      ++result.failed;
      continue;
    }
    ranked[t.program_hash] = t.ranked_seconds;
    double raw = t.typical_seconds();
    if (result.search_best_seconds == 0 || raw < result.search_best_seconds)
      result.search_best_seconds = raw;
    search.measured_traces.emplace_back(t.ranked_seconds, t.trace);
    if (result.best_seconds == 0 || t.ranked_seconds < result.best_seconds)
      note_result(t.ranked_seconds, t.trace.to_json());
  }
  result.trials += static_cast<int>(round.size());
}

std::unique_ptr<TaskState> start_task(const TuneTask& task, size_t index,
                                      const target::Target& target, const TuneOptions& options,
                                      CostModel* model, Database& db, ModelSeeds& seeds,
                                      WarmStartRecords& shipped) {
  auto st = std::make_unique<TaskState>();
  st->task = task;
  const workloads::Workload& w = st->task.workload;
  set_up_search(*st, target, options, model);
  st->measure = MeasureTask{
      RecordWorkload{w.name, task.extents, st->search.workload, w.shape, w.flop, w.dtypes},
      record_target(target, options.runner.time), w.reference(workloads::make_inputs(w.func, 42)),
      w.constant_params};
  db.add_workload(st->measure.workload);
  resume_from(*st, db, seeds);
  if (options.warm_start) warm_start_from(*st, db, shipped);
  st->result.warm_start = static_cast<int>(st->search.warm_start.size());
  st->strategy = options.make_strategy
                     ? options.make_strategy()
                     : make_search_strategy(options.strategy, options.evolutionary);
  st->strategy->initialize(&st->search, options.seed + static_cast<int64_t>(index));
  st->result.name = w.name;
  st->result.shape = w.shape;
  st->result.flop = w.flop;
  return st;
}

}  // namespace tyche::tune
