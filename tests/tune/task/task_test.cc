// The task schedulers, and tune() end to end: each strategy beats the unscheduled program and
// never measures a program twice; a rerun resumes; failing candidates are recorded and the tune
// goes on.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "codegen/llvm/llvm_codegen.h"
#include "ir/op.h"
#include "ir/structural.h"
#include "lower/lower.h"
#include "runtime/time_evaluator.h"
#include "tune/database/database.h"
#include "tune/search/records.h"
#include "tune/task/task_scheduler.h"
#include "tune/task/tune.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

// Feeds a scheduler rounds of two tasks: one at 8 ms that falls by 10 % in every round it gets, one
// at 2 ms that barely improves (1 %). The first has more to gain and must get most of the rounds.
TEST(TaskScheduler, GradientGivesMoreTrialsToTheTaskThatGainsMore) {
  auto scheduler = make_gradient_scheduler();
  std::vector<TaskProgress> tasks(2);
  std::vector<double> latency = {8.0, 2.0}, factor = {0.9, 0.99};
  std::vector<int> rounds = {0, 0};
  for (int r = 0; r < 16; ++r) {
    int i = scheduler->next(tasks);
    ASSERT_GE(i, 0);
    size_t k = static_cast<size_t>(i);
    ++rounds[k];
    latency[k] *= factor[k];
    tasks[k].trials.push_back(64 * rounds[k]);
    tasks[k].best_seconds.push_back(latency[k]);
  }
  EXPECT_GT(rounds[0], rounds[1]);
  EXPECT_GE(rounds[1], 1);  // every task gets a first round
  // Of two tasks alike but for the weight, the heavier is worth more.
  std::vector<TaskProgress> weighted(2);
  weighted[0].weight = 1;
  weighted[1].weight = 10;
  for (auto& t : weighted) {
    t.trials = {64, 128};
    t.best_seconds = {2.0, 1.0};
  }
  EXPECT_EQ(scheduler->next(weighted), 1);
  for (auto& t : weighted) t.done = true;
  EXPECT_EQ(scheduler->next(weighted), -1);
}

TEST(TaskScheduler, RoundRobinTakesTurnsAndSkipsFinishedTasks) {
  auto rr = make_task_scheduler("round-robin");
  std::vector<TaskProgress> tasks(3);
  EXPECT_EQ(rr->next(tasks), 0);
  EXPECT_EQ(rr->next(tasks), 1);
  tasks[2].done = true;
  EXPECT_EQ(rr->next(tasks), 0);
  EXPECT_THROW(make_task_scheduler("lottery"), Error);
}

std::string worker() {
  return std::string(TYCHE_BINARY_DIR) + "/tools/tyche-worker";
}

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/tyche_tune_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  return d;
}

TuneOptions quick(const std::string& db, const std::string& strategy, int trials) {
  TuneOptions o;
  o.trials = trials;
  o.batch = 8;
  o.db_dir = db;
  o.strategy = strategy;
  o.evolutionary.population = 64;
  o.evolutionary.init_min_unmeasured = 16;
  o.threads = 2;
  o.runner.worker_path = worker();
  o.runner.timeout_s = 20;
  o.runner.time = {.warmup = 0,
                   .number = 1,
                   .repeat = 2,
                   .min_repeat_ms = 2,
                   .flush_cache = false,
                   .flush_ranges = {}};
  o.confirm_top = 0;           // Tune.TheLeadersAreTimedAgain tests it
  o.drift_correction = false;  // Tune.EachRoundIsScaledByTheYardstick tests it
  return o;
}

target::Target two_cores() {
  target::Target t;
  t.num_cores = 2;
  return t;
}

double unscheduled_seconds(const workloads::Workload& w) {
  auto k = codegen::compile(lower::lower(w.func).func);
  auto inputs = workloads::make_inputs(w.func);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args = inputs;
  for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  return runtime::time_function([&] { k->run(args); }, {.warmup = 1,
                                                        .number = 1,
                                                        .repeat = 3,
                                                        .min_repeat_ms = 5,
                                                        .flush_cache = false,
                                                        .flush_ranges = {}})
      .median;
}

TEST(Tune, EachStrategyBeatsTheUnscheduledProgramAndResumes) {
  auto w = workloads::get_preset("GMM-1");
  double plain = unscheduled_seconds(w);
  for (const std::string& strategy : search_strategy_names()) {
    SCOPED_TRACE(strategy);
    std::string db = fresh_dir(strategy);
    int rounds = 0;
    TuneResult r = tune({{w, "", 1.0, nullptr}}, two_cores(), quick(db, strategy, 16),
                        [&](const TuneProgress& p) {
                          ++rounds;
                          EXPECT_EQ(p.budget, 16);
                          EXPECT_EQ(p.task->name, "GMM-1");
                        });
    ASSERT_EQ(r.tasks.size(), 1u);
    EXPECT_EQ(r.tasks[0].trials, 16);
    EXPECT_EQ(rounds, 2);
    EXPECT_GT(r.tasks[0].best_seconds, 0);
    EXPECT_LT(r.tasks[0].best_seconds, plain) << "unscheduled " << plain;
    EXPECT_THAT(r.tasks[0].best_trace_text, HasSubstr("sch.get_block"));
    EXPECT_EQ(r.resumed_records, 0);
    // Again on the same database: it resumes, and measures only new programs.
    TuneResult again = tune({{w, "", 1.0, nullptr}}, two_cores(), quick(db, strategy, 8));
    EXPECT_EQ(again.resumed_records, 16);
    EXPECT_LE(again.tasks[0].best_seconds, r.tasks[0].best_seconds);
    Database d(db);
    ASSERT_EQ(d.records().size(), 24u);
    std::unordered_set<uint64_t> programs;
    for (const TuningRecord& rec : d.records())
      EXPECT_TRUE(programs.insert(rec.program).second) << "measured twice";
    // The best records replay to the programs measured, fastest first.
    std::vector<ir::PrimFunc> top = best_programs(d, "GMM-1", w.func, two_cores(), 3);
    auto best = d.best(ir::structural_hash(w.func), target_key(record_target(two_cores())), 3);
    ASSERT_EQ(top.size(), 3u);
    for (size_t k = 0; k < top.size(); ++k)
      EXPECT_EQ(ir::structural_hash(top[k]), best[k]->program);
    if (strategy ==
        "evolutionary") {  // a record whose program is not what its trace gives is refused
      std::string path = db + "/records.jsonl";
      std::ifstream in(path);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::string hex = fmt::format("{:016x}", best[0]->program);
      ASSERT_NE(text.find(hex), std::string::npos);
      text.replace(text.find(hex), hex.size(), "0123456789abcdef");
      std::ofstream(path) << text;
      EXPECT_THAT([&] { best_program(Database(db), "GMM-1", w.func, two_cores()); },
                  ::testing::ThrowsMessage<Error>(
                      HasSubstr("replays to another program than the one measured")));
    }
    std::filesystem::remove_all(db);
  }
}

TEST(Tune, ColdTimedRecordsAreKeptApartAndPreferredByTheirReaders) {
  auto w = workloads::get_preset("GMM-1");
  std::string db = fresh_dir("cold");
  tune({{w, "", 1.0, nullptr}}, two_cores(), quick(db, "replay-trace", 8));
  TuneOptions o = quick(db, "replay-trace", 8);
  o.runner.time = timing_named("cold");
  TuneResult cold = tune({{w, "", 1.0, nullptr}}, two_cores(), o);
  EXPECT_EQ(cold.resumed_records, 0);  // warm times are not resumed into a cold tune
  EXPECT_EQ(cold.tasks[0].trials, 8);
  Database d(db);
  ASSERT_EQ(d.records().size(), 16u);
  int ten_runs = 0;
  for (size_t k = 0; k < 16; ++k) {
    const TuningRecord& r = d.records()[k];
    EXPECT_EQ(r.target.timing, k < 8 ? "" : "cold");
    if (k < 8 || !r.ok()) continue;
    // Ten single cold runs; a candidate far slower than the best so far, its checking run only.
    EXPECT_TRUE(r.seconds.size() == 10u || r.seconds.size() == 1u) << r.seconds.size();
    ten_runs += r.seconds.size() == 10u;
  }
  EXPECT_GT(ten_runs, 0);
  RecordTarget as_cold = record_target(two_cores());
  as_cold.timing = "cold";
  auto best = d.best(ir::structural_hash(w.func), target_key(as_cold), 1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(preferred_target_key(d, ir::structural_hash(w.func), two_cores()), target_key(as_cold));
  EXPECT_EQ(ir::structural_hash(best_program(d, "GMM-1", w.func, two_cores())), best[0]->program);
  // Timed with the arguments in the last-level cache: kept apart again, and preferred to cold.
  o.runner.time = timing_named("llc");
  EXPECT_TRUE(o.runner.time.flush_cache && o.runner.time.keep_in_llc);
  EXPECT_EQ(timing_name(o.runner.time), "llc");
  EXPECT_EQ(timing_name(timing_named("cold")), "cold");
  EXPECT_EQ(timing_name(timing_named("mixed")), "mixed");
  EXPECT_TRUE(timing_named("mixed").keep_in_llc && timing_named("mixed").flush_constants);
  EXPECT_EQ(timing_name(timing_named("warm")), "");
  TuneResult llc = tune({{w, "", 1.0, nullptr}}, two_cores(), o);
  EXPECT_EQ(llc.resumed_records, 0);
  EXPECT_EQ(llc.tasks[0].trials, 8);
  Database again(db);
  ASSERT_EQ(again.records().size(), 24u);
  for (size_t k = 16; k < 24; ++k) EXPECT_EQ(again.records()[k].target.timing, "llc");
  RecordTarget as_llc = record_target(two_cores(), llc_timing());
  EXPECT_EQ(preferred_target_key(again, ir::structural_hash(w.func), two_cores()),
            target_key(as_llc));
  EXPECT_THAT([] { timing_named("lukewarm"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("unknown timing 'lukewarm' (expected cold, llc, mixed or warm)")));
  std::filesystem::remove_all(db);
}

TEST(Tune, TheLeadersAreTimedAgainInterleavedAndTheFastestOfThemIsTheBest) {
  auto w = workloads::get_preset("GMM-1");
  std::string db = fresh_dir("confirm");
  TuneOptions o = quick(db, "replay-trace", 16);
  o.confirm_top = 4;
  o.confirm_rounds = 3;
  o.confirm_share = 0;  // exactly confirm_top
  TuneResult r = tune({{w, "", 1.0, nullptr}}, two_cores(), o);
  ASSERT_EQ(r.tasks.size(), 1u);
  const TaskResult& t = r.tasks[0];
  EXPECT_EQ(t.trials, 16);  // the confirmation is not part of the trial budget
  EXPECT_EQ(t.confirmed, 4);
  EXPECT_GT(r.times.confirm, 0);
  Database d(db);
  ASSERT_EQ(d.records().size(), 20u);
  std::vector<const TuningRecord*> searched;
  for (size_t k = 0; k < 16; ++k) {
    EXPECT_FALSE(d.records()[k].confirmed);
    if (d.records()[k].ok()) searched.push_back(&d.records()[k]);
  }
  std::sort(searched.begin(), searched.end(),
            [](auto* a, auto* b) { return a->typical_seconds() < b->typical_seconds(); });
  ASSERT_GE(searched.size(), 4u);
  EXPECT_DOUBLE_EQ(t.search_best_seconds, searched[0]->typical_seconds());
  double fastest_confirmed = std::numeric_limits<double>::infinity();
  for (size_t k = 16; k < 20; ++k) {
    const TuningRecord& c = d.records()[k];
    EXPECT_TRUE(c.confirmed);
    EXPECT_EQ(c.program, searched[k - 16]->program) << "the leaders in order";
    EXPECT_EQ(c.trace_json, searched[k - 16]->trace_json);
    ASSERT_TRUE(c.ok()) << c.error;
    EXPECT_EQ(c.seconds.size(), 6u);  // 3 rounds of 2 repeats
    fastest_confirmed = std::min(fastest_confirmed, c.typical_seconds());
  }
  EXPECT_DOUBLE_EQ(t.best_seconds, fastest_confirmed);
  std::string key = target_key(record_target(two_cores()));
  auto best = d.best(ir::structural_hash(w.func), key, 5);
  ASSERT_EQ(best.size(), 5u);
  for (size_t k = 0; k < 4; ++k) EXPECT_TRUE(best[k]->confirmed);
  EXPECT_DOUBLE_EQ(best[0]->typical_seconds(), t.best_seconds);
  EXPECT_FALSE(best[4]->confirmed);
  // A rerun resumes from the latest record of each program and measures only new ones.
  TuneResult again = tune({{w, "", 1.0, nullptr}}, two_cores(), quick(db, "replay-trace", 8));
  EXPECT_EQ(again.resumed_records, 20);
  EXPECT_EQ(again.tasks[0].confirmed, 0);
  Database after(db);
  std::unordered_set<uint64_t> programs;
  for (const TuningRecord& rec : after.records())
    if (!rec.confirmed) {
      EXPECT_TRUE(programs.insert(rec.program).second) << "measured twice while searching";
    }
  std::filesystem::remove_all(db);
}

// With several tasks every task gets rounds early, and the leaders' confirmation is held to its
// share of the tuning time.
TEST(Tune, RoundsAreSizedToTheBudgetAndTheConfirmationToItsShare) {
  EXPECT_EQ(round_size(64, 1000, 1), 64);
  EXPECT_EQ(round_size(64, 64, 2), 8);
  EXPECT_EQ(round_size(64, 4000, 25), 40);
  EXPECT_EQ(round_size(64, 100000, 25), 64);
  EXPECT_EQ(round_size(64, 10, 25), 8);
  std::string db = fresh_dir("budget");
  TuneOptions o = quick(db, "replay-trace", 32);
  o.batch = 64;
  o.confirm_top = 8;
  o.confirm_rounds = 2;
  o.confirm_share = 1e-9;  // pays for no leader: nothing confirmed
  std::vector<TuneTask> tasks = {{workloads::get_preset("GMM-1"), "", 1.0, nullptr},
                                 {workloads::get_preset("NRM-1"), "", 1.0, nullptr}};
  TuneResult r = tune(tasks, two_cores(), o);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].trials + r.tasks[1].trials, 32);
  EXPECT_GT(r.tasks[1].trials, 0) << "the second task gets rounds too";
  EXPECT_EQ(r.tasks[0].confirmed, 0);
  EXPECT_EQ(r.tasks[1].confirmed, 0);
  EXPECT_EQ(r.times.confirm, 0);
  // An ample share: the task with (by far) the larger weighted latency gets the leaders.
  tasks[0].weight = 1000;
  o.confirm_share = 1e6;
  o.trials = 16;
  TuneResult again = tune(tasks, two_cores(), o);
  EXPECT_GE(again.tasks[0].confirmed, 2);
  std::filesystem::remove_all(db);
}

// Drift correction: the first round's fastest program is timed before and after each later round,
// and the round's times are scaled by its typical time (the median of its timings so far) over
// the faster of its two times then (held within [0.8, 1.25]); the records keep the raw
// times, the best and the leaders follow the scaled ones, the fastest measurement stays as timed.
TEST(Tune, EachRoundIsScaledByTheYardstick) {
  auto w = workloads::get_preset("GMM-1");
  std::string db = fresh_dir("drift");
  TuneOptions o = quick(db, "replay-trace", 24);
  o.drift_correction = true;
  o.confirm_top = 4;
  o.confirm_rounds = 1;
  o.confirm_share = 0;
  TuneResult r = tune({{w, "", 1.0, nullptr}}, two_cores(), o);
  ASSERT_EQ(r.tasks.size(), 1u);
  const TaskResult& t = r.tasks[0];
  ASSERT_EQ(t.history.size(), 3u);
  EXPECT_EQ(t.history[0].yardstick_before, 0);  // the first round chooses the yardstick
  EXPECT_EQ(t.history[0].yardstick_typical, 0);
  Database d(db);
  ASSERT_EQ(d.records().size(), 28u);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::vector<std::pair<double, uint64_t>> corrected;  // (scaled time, program) of every ok record
  std::vector<double> yardstick;                       // its timings, as the tune saw them
  for (size_t round = 0; round < 3; ++round) {
    const TunePoint& h = t.history[round];
    if (round > 0) {
      ASSERT_GT(h.yardstick_before, 0);
      ASSERT_GT(h.yardstick_after, 0);
      yardstick.push_back(h.yardstick_before);
      yardstick.push_back(h.yardstick_after);
      EXPECT_DOUBLE_EQ(h.yardstick_typical, median(yardstick));
    }
    double round_best = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < 8; ++k) {
      const TuningRecord& rec = d.records()[round * 8 + k];
      if (!rec.ok()) continue;
      double s = rec.typical_seconds();
      round_best = std::min(round_best, s);
      if (round > 0)
        s *= std::clamp(h.yardstick_typical / std::min(h.yardstick_before, h.yardstick_after), 0.8,
                        1.25);
      corrected.emplace_back(s, rec.program);
    }
    if (round == 0) yardstick.push_back(round_best);  // its first time: the first round's fastest
  }
  std::sort(corrected.begin(), corrected.end());
  EXPECT_NEAR(t.history.back().best_seconds, corrected[0].first,
              1e-12);  // before the leaders are timed again
  double fastest = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < 24; ++k)
    if (d.records()[k].ok()) fastest = std::min(fastest, d.records()[k].typical_seconds());
  EXPECT_DOUBLE_EQ(t.search_best_seconds, fastest);  // as timed
  EXPECT_DOUBLE_EQ(t.history.back().measured_best_seconds, fastest);
  for (size_t k = 0; k < 4; ++k)  // the leaders, in the order of their scaled times
    EXPECT_EQ(d.records()[24 + k].program, corrected[k].second) << k;
  std::filesystem::remove_all(db);
}

// A strategy that proposes a crash, a hang, a wrong result and a correct program (or, with
// `right_first`, a correct program, those four, in that order).
class Saboteur : public SearchStrategy {
 public:
  explicit Saboteur(bool right_first = false) : right_first_(right_first) {}
  std::string name() const override { return "saboteur"; }
  void initialize(SearchTask* task, int64_t) override { task_ = task; }
  std::vector<Trial> generate(int) override {
    if (done_) return {};
    done_ = true;
    const ir::PrimFunc& f = task_->context.func;  // C[i] = A[i] + 1 over 64
    ir::Buffer a = f->params[0], c = f->params[1];
    ir::Var i("i", kInt64);
    ir::Expr zero = ir::make_int(0, kInt64);
    auto loop = [&](int64_t n, ir::Stmt body) {
      return ir::for_loop(i, zero, ir::make_int(n, kInt64), ir::ForKind::kSerial, body);
    };
    std::vector<ir::Stmt> bodies = {
        loop(1000000000, ir::buffer_store(c, ir::make_float(1.0),
                                          {i * ir::make_int(1 << 20, kInt64)})),  // crash
        loop(1000000000000000000LL,
             ir::buffer_store(
                 c, ir::buffer_load(c, {zero}) * ir::make_float(1.0000001) + ir::make_float(1.0),
                 {zero})),                                            // hang
        loop(64, ir::buffer_store(c, ir::buffer_load(a, {i}), {i})),  // wrong
        loop(64,
             ir::buffer_store(c, ir::buffer_load(a, {i}) + ir::make_float(1.0), {i}))};  // right
    if (right_first_) bodies.insert(bodies.begin(), bodies.back());
    std::vector<Trial> out;
    for (const ir::Stmt& b : bodies)
      out.push_back(Trial::of(schedule::Trace(), ir::PrimFunc("C", f->params, 1, b), false));
    return out;
  }

 private:
  SearchTask* task_ = nullptr;
  bool done_ = false;
  bool right_first_;
};

TEST(Tune, CrashesHangsAndWrongResultsAreFailedRecordsAndTheTuneGoesOn) {
  auto w = workloads::from_index_notation("C[i] = A[i] + 1.0", "i=64");
  std::string db = fresh_dir("saboteur");
  TuneOptions o = quick(db, "replay-trace", 10);
  o.runner.timeout_s = 1;
  o.make_strategy = [] { return std::make_unique<Saboteur>(); };
  TuneResult r = tune({{w, "i=64", 1.0, nullptr}}, two_cores(), o);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].trials, 4);  // then the strategy ran dry
  EXPECT_EQ(r.tasks[0].failed, 3);
  EXPECT_GT(r.tasks[0].best_seconds, 0);
  Database d(db);
  ASSERT_EQ(d.records().size(), 4u);
  EXPECT_THAT(d.records()[0].error, HasSubstr("crashed the worker"));
  EXPECT_THAT(d.records()[1].error, HasSubstr("timed out"));
  EXPECT_THAT(d.records()[2].error, HasSubstr("wrong result"));
  EXPECT_TRUE(d.records()[3].ok());
  std::filesystem::remove_all(db);
}

TEST(Tune, CandidatesSlowerThanTheBestAreTimedOnceAndStoppedEarly) {
  auto w = workloads::from_index_notation("C[i] = A[i] + 1.0", "i=64");
  std::string db = fresh_dir("slow");
  TuneOptions o = quick(db, "replay-trace", 10);
  o.runner.timeout_s = 20;
  o.single_run_slowdown = 1e-9;  // every candidate is "slower" than the first correct one
  o.timeout_slowdown = 1e-9;     // so the hang is stopped after the floor
  o.timeout_floor_s = 1;
  o.make_strategy = [] { return std::make_unique<Saboteur>(true); };
  auto t0 = std::chrono::steady_clock::now();
  TuneResult r = tune({{w, "i=64", 1.0, nullptr}}, two_cores(), o);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15);
  EXPECT_EQ(r.tasks[0].trials, 5);
  Database d(db);
  ASSERT_EQ(d.records().size(), 5u);
  EXPECT_EQ(d.records()[0].seconds.size(), 2u);  // no best yet: every repeat
  EXPECT_THAT(d.records()[2].error, HasSubstr("timed out after 1 s"));
  ASSERT_TRUE(d.records()[4].ok());
  EXPECT_EQ(d.records()[4].seconds.size(), 1u);  // its checking run only
  std::filesystem::remove_all(db);
}

// A task's own design space (a schedule function here, as the Python package's spaces are)
// replaces the default rules: every record is a program of that space.
TEST(Tune, SearchesTheTasksOwnSpace) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  std::string db = fresh_dir("own_space");
  SpaceGeneratorPtr space = schedule_fn([](schedule::Schedule& sch) -> schedule::Status {
    TYCHE_TRY_ASSIGN(block, sch.get_block("Z"));
    TYCHE_TRY_ASSIGN(loops, sch.get_loops(block));
    TYCHE_TRY_ASSIGN(tiles, sch.sample_perfect_tile(loops[2], 2, 16));
    TYCHE_TRY_ASSIGN(split, sch.split(loops[2], {tiles[0], tiles[1]}));
    return sch.parallel(loops[1]);
  });
  TuneResult r = tune({{w, "", 1.0, space}}, two_cores(), quick(db, "evolutionary", 4));
  EXPECT_EQ(r.tasks[0].trials, 4);
  EXPECT_GT(r.tasks[0].best_seconds, 0);
  EXPECT_THAT(r.tasks[0].best_trace_text, HasSubstr("sch.sample_perfect_tile(loop="));
  EXPECT_THAT(r.tasks[0].best_trace_text, HasSubstr("sch.parallel(loop="));
  for (const TuningRecord& rec : Database(db).records())
    EXPECT_THAT(rec.trace_json, HasSubstr("\"sample_perfect_tile\""));
  std::filesystem::remove_all(db);
}

TEST(Tune, StartsFromThePreTrainedModelUnlessToldOtherwise) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  const std::string path = default_cost_model_path();
  ASSERT_FALSE(path.empty())
      << "the build trains the default cost model on bench/data (tools/CMakeLists.txt)";
  std::string db = fresh_dir("pretrained");
  TuneOptions o = quick(db, "evolutionary", 8);
  EXPECT_EQ(tune({{w, "", 1.0, nullptr}}, two_cores(), o).model, path);
  o.model_path = "none";
  EXPECT_EQ(tune({{w, "", 1.0, nullptr}}, two_cores(), o).model, "untrained");
  // A default that cannot be read is a warning, and the tune starts untrained.
  std::string bad = db + "/corrupt_model.json";
  std::ofstream(bad) << "{not a model";
  ::setenv("TYCHE_COST_MODEL", bad.c_str(), 1);
  o.model_path = "";
  TuneResult r = tune({{w, "", 1.0, nullptr}}, two_cores(), o);
  ::unsetenv("TYCHE_COST_MODEL");
  EXPECT_EQ(r.model, "untrained");
  EXPECT_THAT(r.warnings,
              ::testing::Contains(HasSubstr("the pre-trained cost model was not loaded")));
  std::filesystem::remove_all(db);
}

TEST(Tune, AFreshTaskStartsFromTheFastestRecordsOfItsFamilysOtherShapes) {
  workloads::Workload small = workloads::make_workload("GMM", {1, 48, 64, 32});
  workloads::Workload large = workloads::make_workload("GMM", {1, 96, 64, 32});
  workloads::Workload conv = workloads::scaled_down(workloads::get_preset("C2D-3"));
  std::string db = fresh_dir("warm_records");
  TuneOptions o = quick(db + "/gmm", "evolutionary", 8);
  o.warm_start = false;
  ASSERT_EQ(tune({{small, "", 1.0, nullptr}}, two_cores(), o).tasks[0].warm_start, 0);
  o = quick(db + "/conv", "replay-trace", 8);
  o.warm_start = false;
  tune({{conv, "", 1.0, nullptr}}, two_cores(), o);
  const std::string gmm_records = db + "/gmm/records.jsonl",
                    conv_records = db + "/conv/records.jsonl";

  // Records of another shape: its fastest four lead a fresh database's tune.
  o = quick(db + "/fresh", "evolutionary", 8);
  o.warm_start_records = std::vector<std::string>{conv_records, gmm_records};
  TuneResult r = tune({{large, "", 1.0, nullptr}}, two_cores(), o);
  EXPECT_EQ(r.tasks[0].warm_start, 4);  // not the convolution's: another structure
  EXPECT_EQ(r.tasks[0].trials, 8);
  // Only a convolution's records: nothing carries over to a matmul.
  o = quick(db + "/fresh2", "evolutionary", 8);
  o.warm_start_records = std::vector<std::string>{conv_records};
  EXPECT_EQ(tune({{large, "", 1.0, nullptr}}, two_cores(), o).tasks[0].warm_start, 0);
  // Turned off, or a task with records of its own (16 or more), starts cold.
  o = quick(db + "/fresh3", "evolutionary", 8);
  o.warm_start_records = std::vector<std::string>{gmm_records};
  o.warm_start = false;
  EXPECT_EQ(tune({{large, "", 1.0, nullptr}}, two_cores(), o).tasks[0].warm_start, 0);
  o = quick(db + "/gmm", "evolutionary", 8);
  o.warm_start_records = std::vector<std::string>{gmm_records};
  ASSERT_EQ(tune({{small, "", 1.0, nullptr}}, two_cores(), o).tasks[0].warm_start,
            4);  // 8 of its own: still warm
  EXPECT_EQ(tune({{small, "", 1.0, nullptr}}, two_cores(), o).tasks[0].warm_start, 0);  // 16
  // A file that cannot be read is one line, before any work.
  o = quick(db + "/fresh4", "evolutionary", 8);
  o.warm_start_records = std::vector<std::string>{db + "/missing.jsonl"};
  EXPECT_THAT(
      [&] {
        tune({{large, "", 1.0, nullptr}}, two_cores(), o);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("missing.jsonl")));
  EXPECT_FALSE(std::filesystem::exists(db + "/fresh4/records.jsonl") &&
               std::filesystem::file_size(db + "/fresh4/records.jsonl") > 0);

  // By default: the dataset the build copies beside the default model (one shape a family).
  std::vector<std::string> shipped = default_warm_start_records();
  ASSERT_FALSE(shipped.empty())
      << "the build copies bench/data to share/tyche/records (tools/CMakeLists.txt)";
  for (const std::string& f : shipped) EXPECT_TRUE(f.ends_with(".jsonl.gz")) << f;
  o = quick(db + "/default", "evolutionary", 8);
  EXPECT_GT(tune({{large, "", 1.0, nullptr}}, two_cores(), o).tasks[0].warm_start, 0);
  std::filesystem::remove_all(db);
}

TEST(Tune, RefusesBadOptionsBeforeAnyWork) {
  auto w = workloads::get_preset("GMM-1");
  std::string db = fresh_dir("refusals");
  TuneOptions o = quick(db, "bayesian", 8);
  EXPECT_THAT(
      [&] {
        tune({{w, "", 1.0, nullptr}}, two_cores(), o);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("unknown search strategy")));
  o = quick(db, "evolutionary", 8);
  o.cost_model = "random";
  o.model_path = "/tmp/model.json";
  EXPECT_THAT(
      [&] {
        tune({{w, "", 1.0, nullptr}}, two_cores(), o);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("--model needs the xgb")));
  o = quick(db, "evolutionary", 8);
  ::setenv("TYCHE_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1",
           1);  // no driver, whatever this machine has
  EXPECT_THAT(
      [&] {
        tune({{w, "", 1.0, nullptr}}, target::Target::parse("cuda"), o);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("cannot load the CUDA driver")));
  ::unsetenv("TYCHE_CUDA_DRIVER_LIBRARY");
  o.runner.time.repeat = 0;
  EXPECT_THAT(
      [&] {
        tune({{w, "", 1.0, nullptr}}, two_cores(), o);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("repeats")));
  o = quick(db, "evolutionary", 8);
  o.runner.timeout_s = -1;
  EXPECT_THAT(
      [&] {
        tune({{w, "", 1.0, nullptr}}, two_cores(), o);
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("timeout")));
  o = quick(db, "evolutionary", 8);
  SpaceGeneratorPtr nothing =
      post_order_apply({make_rule("drop", [](schedule::Schedule, const schedule::BlockRV&) {
        return std::vector<schedule::Schedule>{};
      })});
  EXPECT_THAT(
      [&] {
        tune({{w, "", 1.0, nothing}}, two_cores(), o);
      },
      ::testing::ThrowsMessage<InputError>(HasSubstr("design space of GMM-1 is empty")));
  std::filesystem::remove_all(db);
}

}  // namespace
}  // namespace tyche::tune
