// Mutators on hand-built traces: each mutation differs from its input, replays with its recorded
// decisions and still computes the reference; nothing-to-change cases give nullopt; same seed,
// same result.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../../schedule/schedule_test_util.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "tune/mutator/mutator.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {
namespace {

using schedule::BlockRV;
using schedule::ExprRV;
using schedule::LoopRV;
using schedule::Schedule;
using schedule::ScheduleOptions;
using schedule::Trace;
using schedule::Value;
using schedule::testing::computes_reference;
using schedule::testing::small;
using Tiles = std::vector<std::vector<int64_t>>;

constexpr int kTries = 200;

MutatorPtr make(MutatorPtr m, const workloads::Workload& w) {
  m->initialize(TuneContext{w.func, target::Target{}});
  return m;
}

::testing::AssertionResult replays_correctly(const workloads::Workload& w, const Trace& t) {
  Schedule s(w.func, ScheduleOptions{.seed = 0});
  auto st = t.apply_to(s);
  if (!st.ok()) return ::testing::AssertionFailure() << "replay: " << st.error().reason();
  return computes_reference(w, s.func());
}

// Indices of the instructions whose decision differs between a and b.
std::vector<size_t> changed_decisions(const Trace& a, const Trace& b) {
  std::vector<size_t> out;
  for (const auto& [i, d] : a.decisions())
    if (!(b.decisions().at(i) == d)) out.push_back(i);
  return out;
}

// Z of GMM-1 (scaled down: b=1, i=j=k=32) tiled four ways per loop, SSRSRS-like order; root
// annotated with parallel 32 and an unroll limit drawn from a categorical.
Trace gmm_trace(const workloads::Workload& w, int64_t seed,
                const std::optional<Tiles>& tiles = std::nullopt, bool annotate = true) {
  Schedule sch(w.func, ScheduleOptions{.seed = seed});
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();  // b, i, j, k
  std::vector<std::vector<LoopRV>> parts;
  for (size_t l = 0; l < loops.size(); ++l) {
    auto t =
        sch.sample_perfect_tile(loops[l], 4, 16, tiles ? std::optional((*tiles)[l]) : std::nullopt)
            .value();
    parts.push_back(sch.split(loops[l], {t[0], t[1], t[2], t[3]}).value());
  }
  std::vector<LoopRV> order;
  for (auto [loop, level] : std::vector<std::pair<int, int>>{{0, 0},
                                                             {1, 0},
                                                             {2, 0},
                                                             {0, 1},
                                                             {1, 1},
                                                             {2, 1},
                                                             {3, 0},
                                                             {3, 1},
                                                             {0, 2},
                                                             {1, 2},
                                                             {2, 2},
                                                             {3, 2},
                                                             {3, 3},
                                                             {0, 3},
                                                             {1, 3},
                                                             {2, 3}})
    order.push_back(parts[loop][level]);
  EXPECT_TRUE(sch.reorder(order).ok());
  if (annotate) {
    BlockRV root = sch.get_block("root").value();
    EXPECT_TRUE(sch.annotate(root, ir::ann::kParallel, int64_t{32}).ok());
    ExprRV unroll = sch.sample_categorical({0, 16, 64, 512}, {0.25, 0.25, 0.25, 0.25}).value();
    EXPECT_TRUE(sch.annotate(root, ir::ann::kUnrollExplicit, unroll).ok());
  }
  return *sch.trace();
}

// Runs `m` on `trace` with seeds 0..tries-1; checks each result and returns how many were
// different, valid traces. `check(result)` adds mutator-specific expectations.
template <typename Check>
int count_valid(Mutator& m, const workloads::Workload& w, const Trace& trace, int tries,
                Check check) {
  int valid = 0;
  for (int seed = 0; seed < tries; ++seed) {
    RandomEngine rng(seed);
    auto out = m.mutate(trace, rng);
    if (!out) continue;
    EXPECT_NE(out->to_json(), trace.to_json()) << "seed " << seed;
    check(*out);
    auto ok = replays_correctly(w, *out);
    if (ok && out->to_json() != trace.to_json()) ++valid;
  }
  return valid;
}

// Same seed, same mutation; different seeds reach more than one result.
void expect_deterministic(Mutator& m, const Trace& trace) {
  std::set<std::string> results;
  for (int seed = 0; seed < 30; ++seed) {
    RandomEngine a(seed), b(seed);
    auto x = m.mutate(trace, a), y = m.mutate(trace, b);
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->to_json(), y->to_json());
    results.insert(x->to_json());
  }
  EXPECT_GT(results.size(), 1u) << m.name();
}

// ---- MutateTileSize ----

TEST(MutateTileSize, MovesOneFactorAndStaysValid) {
  auto w = small("GMM-1");
  auto m = make(mutate_tile_size(), w);
  EXPECT_EQ(m->name(), "MutateTileSize");
  Trace trace = gmm_trace(w, 1);
  int valid = count_valid(*m, w, trace, kTries, [&](const Trace& out) {
    auto changed = changed_decisions(trace, out);
    ASSERT_EQ(changed.size(), 1u);
    const schedule::Instruction& inst = out.instructions()[changed[0]];
    EXPECT_EQ(inst.kind->name, "sample_perfect_tile");
    int64_t before = 1, after = 1;
    for (const Value& v : trace.decisions().at(changed[0]).list) before *= v.i;
    for (const Value& v : out.decisions().at(changed[0]).list) after *= v.i;
    EXPECT_EQ(before, after);
    EXPECT_LE(out.decisions().at(changed[0]).list.back().i, 16);
  });
  EXPECT_GE(valid, kTries * 8 / 10);
  expect_deterministic(*m, trace);
}

Trace one_tile(const workloads::Workload& w, int n, int64_t max_innermost,
               std::vector<int64_t> decision) {
  Schedule sch(w.func, ScheduleOptions{.seed = 0});
  auto loops = sch.get_loops(sch.get_block("B").value()).value();
  EXPECT_TRUE(sch.sample_perfect_tile(loops[0], n, max_innermost, decision).ok());
  return *sch.trace();
}

std::vector<int64_t> decision_of(const Trace& t) {
  std::vector<int64_t> out;
  for (const Value& v : t.decisions().begin()->second.list) out.push_back(v.i);
  return out;
}

TEST(MutateTileSize, InnermostAtItsLimitReachesEveryNeighbour) {
  auto w = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=16");
  auto m = make(mutate_tile_size(), w);
  // [1, 1, 1, 16] with the innermost at its max: only the innermost can give, to 3 positions,
  // one of 4 divisors: 12 neighbours, all of which some seed reaches.
  Trace trace = one_tile(w, 4, 16, {1, 1, 1, 16});
  std::set<std::vector<int64_t>> seen;
  for (int seed = 0; seed < kTries; ++seed) {
    RandomEngine rng(seed);
    auto out = m->mutate(trace, rng);
    ASSERT_TRUE(out);
    auto d = decision_of(*out);
    EXPECT_LT(d[3], 16);
    EXPECT_EQ(d[0] * d[1] * d[2] * d[3], 16);
    seen.insert(d);
  }
  EXPECT_EQ(seen.size(), 12u);
  // Unlimited innermost (-1): the innermost may also grow.
  Trace unlimited = one_tile(w, 2, -1, {16, 1});
  RandomEngine rng(3);
  EXPECT_EQ(decision_of(*m->mutate(unlimited, rng))[0] < 16, true);
}

TEST(MutateTileSize, NothingToChange) {
  auto w = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=17");
  auto m = make(mutate_tile_size(), w);
  RandomEngine rng(0);
  // 17 is prime and may not move into an innermost limited to 16; n = 1 never changes.
  EXPECT_FALSE(m->mutate(one_tile(w, 2, 16, {17, 1}), rng));
  EXPECT_FALSE(m->mutate(one_tile(w, 1, -1, {17}), rng));
  // Extent-1 loops only, and a trace without tiles.
  auto unit = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=1");
  EXPECT_FALSE(m->mutate(one_tile(unit, 4, 16, {1, 1, 1, 1}), rng));
  EXPECT_FALSE(m->mutate(Trace{}, rng));
  // But [17, 1] with room in the innermost moves 17 inward.
  auto out = m->mutate(one_tile(w, 2, 32, {17, 1}), rng);
  ASSERT_TRUE(out);
  EXPECT_EQ(decision_of(*out), (std::vector<int64_t>{1, 17}));
}

// ---- MutateUnroll ----

TEST(MutateUnroll, PicksAnotherUnrollLimit) {
  auto w = small("GMM-1");
  auto m = make(mutate_unroll(), w);
  EXPECT_EQ(m->name(), "MutateUnroll");
  Schedule sch(w.func, ScheduleOptions{.seed = 4});
  BlockRV root = sch.get_block("root").value();
  // A categorical that feeds no unroll annotation must stay as it is.
  ExprRV other = sch.sample_categorical({1, 2, 3}, {1, 1, 1}).value();
  ASSERT_TRUE(sch.annotate(root, "other", other).ok());
  ExprRV unroll = sch.sample_categorical({0, 16, 64, 512}, {0.5, 0.0, 0.25, 0.25}).value();
  ASSERT_TRUE(sch.annotate(root, ir::ann::kUnrollImplicit, unroll).ok());
  Trace trace = *sch.trace();
  std::map<int64_t, int> seen;
  int valid = count_valid(*m, w, trace, kTries, [&](const Trace& out) {
    auto changed = changed_decisions(trace, out);
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(changed[0], 3u);
    ++seen[out.decisions().at(3).i];
  });
  EXPECT_GE(valid, kTries * 8 / 10);
  EXPECT_EQ(seen.count(1), 0u);  // probability 0
  EXPECT_EQ(seen.count(trace.decisions().at(3).i), 0u);
  expect_deterministic(*m, trace);
  // On the GMM trace with tiles, only the unroll categorical changes.
  Trace gmm = gmm_trace(w, 2);
  RandomEngine rng(0);
  auto out = m->mutate(gmm, rng);
  ASSERT_TRUE(out);
  ASSERT_EQ(changed_decisions(gmm, *out).size(), 1u);
  EXPECT_EQ(gmm.instructions()[changed_decisions(gmm, *out)[0]].kind->name, "sample_categorical");
  EXPECT_TRUE(replays_correctly(w, *out));
}

TEST(MutateUnroll, NothingToChange) {
  auto w = small("GMM-1");
  auto m = make(mutate_unroll(), w);
  RandomEngine rng(0);
  EXPECT_FALSE(m->mutate(gmm_trace(w, 1, std::nullopt, /*annotate=*/false), rng));
  // Every other outcome has probability 0.
  Schedule sch(w.func, ScheduleOptions{.seed = 4});
  ExprRV v = sch.sample_categorical({0, 16}, {1.0, 0.0}).value();
  ASSERT_TRUE(sch.annotate(sch.get_block("root").value(), ir::ann::kUnrollExplicit, v).ok());
  EXPECT_FALSE(m->mutate(*sch.trace(), rng));
}

// ---- MutateParallel ----

int64_t parallel_limit(const Trace& t) {
  for (const schedule::Instruction& inst : t.instructions())
    if (inst.kind->name == "annotate" && inst.args[1].s == ir::ann::kParallel)
      return inst.args[2].i;
  return -1;
}

TEST(MutateParallel, PicksLimitsThatChangeTheFusedLoops) {
  auto w = small("GMM-1");
  auto m = make(mutate_parallel(), w);
  EXPECT_EQ(m->name(), "MutateParallel");
  // Fusable outer loops b0 i0 j0 b1 i1 j1 (then k0 reduces): extents 1 2 4 1 4 2, cumulative
  // 1 2 8 8 32 64. A loop joins while the product so far is below the limit: 32 fuses five (as
  // does any limit from 9 to 32); 1, 2, 3 and 33 are the smallest limits of the other plans.
  Trace trace = gmm_trace(w, 0, Tiles{{1, 1, 1, 1}, {2, 4, 2, 2}, {4, 2, 2, 2}, {2, 2, 2, 4}});
  std::set<int64_t> seen;
  int valid = count_valid(*m, w, trace, kTries, [&](const Trace& out) {
    EXPECT_TRUE(changed_decisions(trace, out).empty());
    seen.insert(parallel_limit(out));
  });
  EXPECT_GE(valid, kTries * 8 / 10);
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2, 3, 33}));
  expect_deterministic(*m, trace);
  // Random tiles: always another limit.
  for (int seed = 0; seed < 20; ++seed) {
    Trace t = gmm_trace(w, seed);
    RandomEngine rng(seed);
    auto out = m->mutate(t, rng);
    ASSERT_TRUE(out);
    EXPECT_NE(parallel_limit(*out), 32);
    EXPECT_TRUE(replays_correctly(w, *out));
  }
}

TEST(MutateParallel, SeveralBlocksAndNothingToChange) {
  // Softmax: row_max and row_sum fuse only i (32; k reduces), row_exp and softmax i, and j too
  // once the limit exceeds 32. From 32, only a limit above 32 changes anything: 33.
  auto w = small("SFM-1");
  auto m = make(mutate_parallel(), w);
  Schedule sch(w.func, ScheduleOptions{.seed = 0});
  ASSERT_TRUE(sch.annotate(sch.get_block("root").value(), ir::ann::kParallel, int64_t{32}).ok());
  for (int seed = 0; seed < 10; ++seed) {
    RandomEngine rng(seed);
    auto out = m->mutate(*sch.trace(), rng);
    ASSERT_TRUE(out);
    EXPECT_EQ(parallel_limit(*out), 33);
  }
  // One loop of 16: every limit fuses it alone. No annotation: nothing to change.
  auto one = workloads::from_index_notation("B[i] = A[i] + 1.0", "i=16");
  auto m1 = make(mutate_parallel(), one);
  Schedule s1(one.func, ScheduleOptions{.seed = 0});
  ASSERT_TRUE(s1.annotate(s1.get_block("root").value(), ir::ann::kParallel, int64_t{32}).ok());
  RandomEngine rng(0);
  EXPECT_FALSE(m1->mutate(*s1.trace(), rng));
  EXPECT_FALSE(m->mutate(gmm_trace(small("GMM-1"), 0, std::nullopt, false), rng));
}

// Against the real postprocessor: the limits MutateParallel picks give pairwise different
// programs, none the current one, and every other limit up to `max_limit` gives one of those or
// the current one.
void expect_one_limit_per_program(const workloads::Workload& w, const Trace& trace,
                                  int64_t max_limit) {
  auto m = make(mutate_parallel(), w);
  size_t index = 0;
  for (size_t i = 0; i < trace.size(); ++i)
    if (trace.instructions()[i].kind->name == "annotate" &&
        trace.instructions()[i].args[1].s == ir::ann::kParallel)
      index = i;
  auto program = [&](int64_t limit) {
    Schedule s(w.func, ScheduleOptions{.seed = 0});
    EXPECT_TRUE(trace.with_argument(index, "ann_val", Value::integer(limit)).apply_to(s).ok());
    EXPECT_TRUE(rewrite_parallel_vectorize_unroll()->apply(s).ok());
    return ir::to_string(s.func());
  };
  std::set<int64_t> picked;
  for (int seed = 0; seed < kTries; ++seed) {
    RandomEngine rng(seed);
    if (auto out = m->mutate(trace, rng)) picked.insert(parallel_limit(*out));
  }
  std::set<std::string> programs = {program(trace.instructions()[index].args[2].i)};
  for (int64_t limit : picked)
    EXPECT_TRUE(programs.insert(program(limit)).second) << "limit " << limit;
  for (int64_t limit = 1; limit <= max_limit; ++limit)
    EXPECT_TRUE(programs.count(program(limit))) << "limit " << limit;
}

TEST(MutateParallel, PicksOneLimitPerPostprocessedProgram) {
  // GMM: b, i and j fuse to at most 1 * 32 * 32.
  auto w = small("GMM-1");
  expect_one_limit_per_program(
      w, gmm_trace(w, 0, Tiles{{1, 1, 1, 1}, {2, 4, 2, 2}, {4, 2, 2, 2}, {2, 2, 2, 4}}), 1025);
  for (int64_t seed : {1, 2, 3}) expect_one_limit_per_program(w, gmm_trace(w, seed), 1025);
  // A reduction computed under a loop it ignores (S under W's j): parallelizing j would re-run it
  // concurrently, so only i may fuse and no limit changes the program.
  auto rs =
      workloads::from_index_notation("S[i] += X[i,k]; W[i,j] = S[i] * Y[i,j]", "i=16,j=16,k=8");
  Schedule sch(rs.func, ScheduleOptions{.seed = 0});
  ASSERT_TRUE(sch.compute_at(sch.get_block("S").value(),
                             sch.get_loops(sch.get_block("W").value()).value()[1])
                  .ok());
  ASSERT_TRUE(sch.annotate(sch.get_block("root").value(), ir::ann::kParallel, int64_t{32}).ok());
  expect_one_limit_per_program(rs, *sch.trace(), 257);
  RandomEngine rng(0);
  EXPECT_FALSE(make(mutate_parallel(), rs)->mutate(*sch.trace(), rng));
}

// ---- MutateComputeLocation ----

TEST(MutateComputeLocation, PicksAnotherLegalLocation) {
  // B can go under C's i, j0 or j1, stay, or be inlined.
  auto w =
      workloads::from_index_notation("B[i,j] = A[i,j] * 2.0; C[i,j] = B[i,j] + 1.0", "i=16,j=16");
  auto m = make(mutate_compute_location(), w);
  EXPECT_EQ(m->name(), "MutateComputeLocation");
  Schedule sch(w.func, ScheduleOptions{.seed = 3});
  auto cl = sch.get_loops(sch.get_block("C").value()).value();
  auto t = sch.sample_perfect_tile(cl[1], 2, 16, std::vector<int64_t>{4, 4}).value();
  ASSERT_TRUE(sch.split(cl[1], {t[0], t[1]}).ok());
  BlockRV b = sch.get_block("B").value();
  LoopRV at = sch.sample_compute_location(b, int64_t{1}).value();
  ASSERT_TRUE(sch.compute_at(b, at).ok());
  Trace trace = *sch.trace();
  std::set<int64_t> seen;
  int valid = count_valid(*m, w, trace, kTries, [&](const Trace& out) {
    auto changed = changed_decisions(trace, out);
    ASSERT_EQ(changed.size(), 1u);
    seen.insert(out.decisions().at(changed[0]).i);
  });
  EXPECT_GE(valid, kTries * 8 / 10);
  EXPECT_EQ(seen, (std::set<int64_t>{-2, -1, 0, 2}));
  expect_deterministic(*m, trace);
}

TEST(MutateComputeLocation, SoftmaxAndConvolutionPad) {
  // Two locations in one trace (row_max, then row_exp); each mutation changes one of them.
  auto w = small("SFM-1");
  auto m = make(mutate_compute_location(), w);
  Schedule sch(w.func, ScheduleOptions{.seed = 5});
  for (const char* name : {"row_max", "row_exp"}) {
    BlockRV b = sch.get_block(name).value();
    ASSERT_TRUE(sch.compute_at(b, sch.sample_compute_location(b).value()).ok());
  }
  Trace trace = *sch.trace();
  int valid = count_valid(*m, w, trace, 60, [&](const Trace& out) {
    EXPECT_EQ(changed_decisions(trace, out).size(), 1u);
  });
  EXPECT_GE(valid, 60 * 8 / 10);
  // CBR's pad block, moved around the convolution's loops.
  auto c = small("CBR-1");
  auto mc = make(mutate_compute_location(), c);
  Schedule cs(c.func, ScheduleOptions{.seed = 1});
  BlockRV pad = cs.get_block("pad").value();
  ASSERT_TRUE(cs.compute_at(pad, cs.sample_compute_location(pad, int64_t{-1}).value()).ok());
  Trace ct = *cs.trace();
  EXPECT_EQ(count_valid(*mc, c, ct, 8, [](const Trace&) {}), 8);
}

TEST(MutateComputeLocation, NothingToChange) {
  auto w = small("GMM-1");
  auto m = make(mutate_compute_location(), w);
  RandomEngine rng(0);
  EXPECT_FALSE(m->mutate(gmm_trace(w, 0), rng));
  // A prefix that no longer replays (a tile decision illegal for the loop).
  auto chain =
      workloads::from_index_notation("B[i,j] = A[i,j] * 2.0; C[i,j] = B[i,j] + 1.0", "i=8,j=8");
  auto mc = make(mutate_compute_location(), chain);
  Schedule sch(chain.func, ScheduleOptions{.seed = 3});
  auto cl = sch.get_loops(sch.get_block("C").value()).value();
  auto t = sch.sample_perfect_tile(cl[1], 2, 16, std::vector<int64_t>{2, 4}).value();
  ASSERT_TRUE(sch.split(cl[1], {t[0], t[1]}).ok());
  BlockRV b = sch.get_block("B").value();
  ASSERT_TRUE(sch.compute_at(b, sch.sample_compute_location(b).value()).ok());
  Trace broken =
      sch.trace()->with_decision(2, Value::of_list({Value::integer(3), Value::integer(3)}));
  EXPECT_FALSE(mc->mutate(broken, rng));
  EXPECT_TRUE(mc->mutate(*sch.trace(), rng));
}

// ---- MutateThreadBinding ----

// Z's spatial loops fused, split by a categorical thread count, bound to blockIdx/threadIdx;
// `thread_axis` names the inner binding.
Trace bound_trace(const workloads::Workload& w, const std::string& thread_axis) {
  Schedule sch(w.func, ScheduleOptions{.seed = 6});
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  LoopRV fused = sch.fuse({loops[0], loops[1], loops[2]}).value();
  // Decoy: a categorical feeding an unroll annotation.
  ExprRV unroll = sch.sample_categorical({0, 16}, {0.5, 0.5}).value();
  EXPECT_TRUE(sch.annotate(sch.get_block("root").value(), ir::ann::kUnrollExplicit, unroll).ok());
  ExprRV threads = sch.sample_categorical({32, 64, 128, 256}, {0.25, 0.25, 0.25, 0.25}).value();
  auto split = sch.split(fused, {std::nullopt, threads}).value();
  EXPECT_TRUE(sch.bind(split[0], "blockIdx.x").ok());
  EXPECT_TRUE(sch.bind(split[1], thread_axis).ok());
  return *sch.trace();
}

TEST(MutateThreadBinding, PicksAnotherThreadCount) {
  auto w = small("GMM-1");
  auto m = make(mutate_thread_binding(), w);
  EXPECT_EQ(m->name(), "MutateThreadBinding");
  Trace trace = bound_trace(w, "threadIdx.x");
  std::set<int64_t> seen;
  int valid = count_valid(*m, w, trace, kTries, [&](const Trace& out) {
    auto changed = changed_decisions(trace, out);
    ASSERT_EQ(changed.size(), 1u);
    const schedule::Instruction& inst = out.instructions()[changed[0]];
    EXPECT_EQ(inst.args[0].list.size(), 4u);  // the thread count, not the unroll decoy
    seen.insert(out.decisions().at(changed[0]).i);
  });
  EXPECT_GE(valid, kTries * 8 / 10);
  EXPECT_EQ(seen.size(), 3u);
  expect_deterministic(*m, trace);
  RandomEngine rng(0);
  EXPECT_FALSE(m->mutate(bound_trace(w, "blockIdx.y"), rng));
  EXPECT_FALSE(m->mutate(gmm_trace(w, 0), rng));
}

}  // namespace
}  // namespace tyche::tune
