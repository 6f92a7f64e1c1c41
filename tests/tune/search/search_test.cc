// Search strategies on real design spaces: new programs only, none twice; evolution follows
// the model's scores.
#include <gmock/gmock.h>

#include <unordered_set>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/search/search_strategy.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

struct Fixture {
  std::unique_ptr<CostModel> model = make_random_model(1);
  SearchTask task;
  explicit Fixture(const workloads::Workload& w) {
    target::Target target;
    target.num_cores = 2;
    task.context = TuneContext{w.func, target};
    for (const schedule::Schedule& d :
         post_order_apply(default_rules(target))->generate(task.context, 0))
      task.spaces.push_back(d.trace()->simplified());
    task.postprocs = default_postprocs(task.context);
    task.mutators = default_mutators(target);
    for (auto& [m, weight] : task.mutators) m->initialize(task.context);
    task.model = model.get();
    task.workload = ir::structural_hash(w.func);
    task.threads = 2;  // sampling and mutation in parallel
  }
  // Marks a batch measured, as the tuner does.
  void measure(const std::vector<Trial>& batch, double seconds) {
    for (const Trial& c : batch) {
      task.measured.insert(c.program_hash);
      task.measured_traces.emplace_back(seconds, c.trace);
    }
  }
};

void expect_new_and_distinct(const std::vector<Trial>& batch, const SearchTask& task) {
  std::unordered_set<uint64_t> seen;
  for (const Trial& c : batch) {
    EXPECT_EQ(c.program_hash, ir::structural_hash(c.program()));
    EXPECT_FALSE(task.measured.count(c.program_hash)) << "measured before";
    EXPECT_TRUE(seen.insert(c.program_hash).second) << "twice in a batch";
  }
}

TEST(Search, EachStrategyProposesOnlyNewPrograms) {
  ASSERT_EQ(search_strategy_names(),
            (std::vector<std::string>{"evolutionary", "replay-trace", "local-search"}));
  for (const std::string& name : search_strategy_names()) {
    SCOPED_TRACE(name);
    Fixture f(workloads::get_preset("GMM-1"));
    SearchStrategyPtr s = make_search_strategy(name, {.population = 64, .init_min_unmeasured = 16});
    s->initialize(&f.task, 3);
    for (int round = 0; round < 3; ++round) {
      std::vector<Trial> batch = s->generate(12);
      EXPECT_EQ(batch.size(), 12u);
      expect_new_and_distinct(batch, f.task);
      f.measure(batch, 1e-3 * (round + 1));
      for (Trial& t : batch) {
        t.measured = true;
        t.seconds = {1e-3};
        t.ranked_seconds = 1e-3;
      }
      s->notify(batch);
    }
  }
}

TEST(Search, ASmallSpaceRunsDry) {
  // An element-wise map over 4 x 4: few distinct programs exist.
  Fixture f(workloads::from_index_notation("B[i,j] = A[i,j] * 2.0", "i=4,j=4"));
  SearchStrategyPtr s = make_search_strategy("replay-trace");
  s->initialize(&f.task, 0);
  size_t total = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<Trial> batch = s->generate(8);
    expect_new_and_distinct(batch, f.task);
    f.measure(batch, 1e-6);
    total += batch.size();
    if (batch.empty()) break;
  }
  EXPECT_GT(total, 0u);
  EXPECT_TRUE(s->generate(8).empty()) << total << " programs";
}

// A model that likes one program above all: the evolutionary search puts it first.
class Favourite : public CostModel {
 public:
  explicit Favourite(uint64_t hash) : hash_(hash) {}
  std::string name() const override { return "favourite"; }
  void update_features(const std::vector<ModelInput>&, const std::vector<double>&) override {}
  std::vector<double> predict_features(const std::vector<ModelInput>& in) override {
    return std::vector<double>(in.size(), 0);
  }
  std::vector<double> predict(const std::vector<ModelCandidate>& cs) override {
    std::vector<double> s;
    for (const ModelCandidate& c : cs)
      s.push_back(ir::structural_hash(c.program) == hash_ ? 10.0 : 0.0);
    return s;
  }
  void save(const std::string&) const override {}

 private:
  uint64_t hash_;
};

TEST(Search, RefusedCandidatesAreCountedWhenTheTaskAsks) {
  Fixture f(workloads::get_preset("GMM-1"));
  RefusalCounts counts;
  f.task.refusals = &counts;
  schedule::Trace bad = schedule::Trace::parse_text(
      "b0 = sch.get_block(name=\"Z\")\nl1, l2, l3, l4 = "
      "sch.get_loops(block=b0)\nsch.vectorize(loop=l4)\n");
  EXPECT_FALSE(f.task.replay(bad, 0).has_value());
  EXPECT_FALSE(f.task.replay(bad, 1).has_value());
  EXPECT_EQ(counts.counts(), (std::map<std::string, int64_t>{{"replay: invalid_loop_kind", 2}}));
  RandomEngine rng(3);
  for (int i = 0; i < 20; ++i) (void)f.task.sample(rng);  // valid samples count nothing
  for (const auto& [reason, n] : counts.counts())
    EXPECT_THAT(reason, ::testing::MatchesRegex("[A-Za-z]+: [a-z_]+")) << n;
}

TEST(Search, TheSameSeedGivesTheSameBatchWhateverTheThreads) {
  std::vector<std::vector<uint64_t>> batches;
  for (int threads : {1, 2}) {
    Fixture f(workloads::get_preset("GMM-1"));
    f.task.threads = threads;
    SearchStrategyPtr s =
        make_search_strategy("evolutionary", {.population = 48, .init_min_unmeasured = 16});
    s->initialize(&f.task, 11);
    std::vector<uint64_t> hashes;
    for (const Trial& c : s->generate(10)) hashes.push_back(c.program_hash);
    batches.push_back(hashes);
  }
  EXPECT_EQ(batches[0], batches[1]);
}

TEST(Search, EvolutionPicksWhatTheModelScoresBest) {
  for (const std::string acceptance : {"eps-greedy", "annealing"}) {
    SCOPED_TRACE(acceptance);
    Fixture f(workloads::get_preset("GMM-1"));
    // The favourite is a fresh sample the search will draw too (same seed).
    RandomEngine rng(5);
    std::optional<Trial> fav;
    while (!fav) fav = f.task.sample(rng);
    Favourite model(fav->program_hash);
    f.task.model = &model;
    f.task.measured_traces.emplace_back(1e-3,
                                        fav->trace);  // the best measured seeds the population
    SearchStrategyPtr s = make_search_strategy(
        "evolutionary", {.population = 32, .init_min_unmeasured = 8, .acceptance = acceptance});
    s->initialize(&f.task, 1);
    std::vector<Trial> batch = s->generate(4);
    ASSERT_FALSE(batch.empty());
    EXPECT_EQ(batch[0].program_hash, fav->program_hash);
    expect_new_and_distinct(batch, f.task);
  }
  EXPECT_THROW(make_search_strategy("bayes"), Error);
  EXPECT_THROW(make_search_strategy("evolutionary", {.acceptance = "metropolis"}), Error);
}

}  // namespace
}  // namespace tyche::tune
