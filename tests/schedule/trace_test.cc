// Traces: recording, replay (recorded, fresh and overridden decisions), simplification, and the
// JSON and text round trips for every instruction kind.
#include <gmock/gmock.h>

#include <set>
#include <thread>

#include "ir/structural.h"
#include "schedule_test_util.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::small;

workloads::Workload matmul(int64_t m, int64_t n, int64_t k) {
  return workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]",
                                        fmt::format("i={},j={},k={}", m, n, k));
}

std::vector<std::string_view> kind_names(const Trace& t) {
  std::vector<std::string_view> out;
  for (const Instruction& i : t.instructions()) out.push_back(i.kind->name);
  return out;
}

ScheduleOptions seeded(int64_t seed) {
  return ScheduleOptions{.seed = seed};
}

// ---- the MetaSchedule paper's example ----

// A host `if` picks between a sampled and a fixed tiling; only the instructions are recorded.
void paper_schedule(Schedule& sch, int64_t m) {
  BlockRV c = sch.get_block("C").value();
  auto loops = sch.get_loops(c).value();  // i, j, k
  std::vector<std::optional<ExprArg>> ti;
  if (m > 1024) {
    auto t = sch.sample_perfect_tile(loops[0], 2, 64).value();
    ti = {t[0], t[1]};
  } else {
    ti = {16, 1};
  }
  auto i = sch.split(loops[0], ti).value();
  auto tj = sch.sample_perfect_tile(loops[1], 2, 64).value();
  auto j = sch.split(loops[1], {tj[0], tj[1]}).value();
  sch.reorder({i[0], j[0], i[1], j[1], loops[2]}).value();
}

TEST(PaperExample, LargeMRecordsTwoSamples) {
  const int64_t m = 2048, n = 64;
  auto w = matmul(m, n, 8);
  Schedule sch(w.func, seeded(1));
  paper_schedule(sch, m);
  const Trace& trace = *sch.trace();
  EXPECT_THAT(kind_names(trace), ElementsAre("get_block", "get_loops", "sample_perfect_tile",
                                             "split", "sample_perfect_tile", "split", "reorder"));
  // Replaying with ti = (32, M/32) and tj = (8, N/8) gives what the primitives give by hand.
  Schedule replay(w.func, seeded(2));
  ReplayOptions opts;
  opts.overrides[2] = to_value(std::vector<int64_t>{32, m / 32});
  opts.overrides[4] = to_value(std::vector<int64_t>{8, n / 8});
  ASSERT_TRUE(trace.apply_to(replay, opts).ok());
  Schedule by_hand(w.func);
  auto loops = by_hand.get_loops(by_hand.get_block("C").value()).value();
  auto i = by_hand.split(loops[0], {32, m / 32}).value();
  auto j = by_hand.split(loops[1], {8, n / 8}).value();
  by_hand.reorder({i[0], j[0], i[1], j[1], loops[2]}).value();
  EXPECT_TRUE(ir::structural_equal(replay.func(), by_hand.func())) << ir::to_string(replay.func());
  // The replayed trace carries the overriding decisions.
  EXPECT_EQ(replay.trace()->decisions().at(2), to_value(std::vector<int64_t>{32, 64}));
}

TEST(PaperExample, SmallMRecordsOneSampleLess) {
  auto w = matmul(16, 64, 8);
  Schedule sch(w.func, seeded(1));
  paper_schedule(sch, 16);
  EXPECT_THAT(kind_names(*sch.trace()), ElementsAre("get_block", "get_loops", "split",
                                                    "sample_perfect_tile", "split", "reorder"));
  EXPECT_THAT(sch.trace()->to_text(), HasSubstr("sch.split(loop=l1, factors=[16, 1])"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(PaperExample, TextFormMatchesTheIssueExample) {
  auto w = matmul(1024, 1024, 1024);
  Schedule sch(w.func, seeded(3));
  BlockRV c = sch.get_block("C").value();
  auto loops = sch.get_loops(c).value();
  auto t = sch.sample_perfect_tile(loops[0], 2, 64, std::vector<int64_t>{16, 64}).value();
  auto i = sch.split(loops[0], {t[0], t[1]}).value();
  sch.reorder({i[0], i[1], loops[1], loops[2]}).value();
  EXPECT_EQ(
      sch.trace()->to_text(),
      "b0 = sch.get_block(name=\"C\")\n"
      "l1, l2, l3 = sch.get_loops(block=b0)\n"
      "v4, v5 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=64, decision=[16, 64])\n"
      "l6, l7 = sch.split(loop=l1, factors=[v4, v5])\n"
      "sch.reorder(l6, l7, l2, l3)\n");
}

// ---- round trips for every instruction kind ----

struct RoundTripCase {
  std::string name;
  std::string workload;
  std::function<void(Schedule&)> schedule;
};

std::vector<LoopRV> loops_of(Schedule& sch, const std::string& block) {
  return sch.get_loops(sch.get_block(block).value()).value();
}

std::vector<RoundTripCase> round_trip_cases() {
  return {
      {"loops_and_annotations", "GMM-1",
       [](Schedule& sch) {
         BlockRV z = sch.get_block("Z").value();
         auto l = sch.get_loops(z).value();  // b, i, j, k
         auto ti = sch.sample_perfect_tile(l[1], 3, 8).value();
         auto i = sch.split(l[1], {ti[0], ti[1], ti[2]}).value();
         auto j = sch.split(l[2], {std::nullopt, 4}).value();
         LoopRV bi = sch.fuse({l[0], i[0]}).value();
         sch.reorder({bi, j[0], i[1], i[2], j[1]}).value();
         sch.parallel(bi).value();
         sch.vectorize(j[1]).value();
         sch.unroll(l[3]).value();
         LoopRV unit = sch.add_unit_loop(z).value();
         sch.add_unit_loop(unit).value();
         ExprRV step = sch.sample_categorical({0, 16, 64, 512}, {0.25, 0.25, 0.25, 0.25}).value();
         sch.annotate(z, "meta_schedule.unroll_explicit", step).value();
         sch.annotate(bi, "pragma_auto_unroll_max_step", int64_t{16}).value();
         sch.annotate(z, "weight", 0.5).value();
         sch.annotate(z, "note", std::string("a \"quoted\" string")).value();
         sch.unannotate(z, "weight").value();
         sch.unannotate(bi, "pragma_auto_unroll_max_step").value();
       }},
      {"lookups_and_compute_location", "SFM-1",
       [](Schedule& sch) {
         BlockRV root = sch.get_block("root").value();
         auto children = sch.get_child_blocks(root).value();
         BlockRV sm = sch.get_block("softmax").value();
         auto producers = sch.get_producers(sm).value();
         auto consumers = sch.get_consumers(sch.get_block("row_max").value()).value();
         auto sl = sch.get_loops(sm).value();
         sch.get_child_blocks(sl[0]).value();
         BlockRV row_sum = sch.get_block("row_sum").value();
         LoopRV where =
             sch.sample_compute_location(row_sum, int64_t{0}).value();  // softmax's row loop
         sch.compute_at(row_sum, where, true).value();
         sch.compute_inline(sch.get_block("row_exp").value()).value();
         BlockRV row_max = sch.get_block("row_max").value();
         LoopRV where2 = sch.sample_compute_location(row_max).value();
         sch.compute_at(row_max, where2).value();
         (void)children, (void)producers, (void)consumers;
       }},
      {"reverse_compute", "DENSE_RELU-1",
       [](Schedule& sch) {
         BlockRV c = sch.get_block("C").value();
         auto dl = loops_of(sch, "dense");
         sch.reverse_compute_at(c, dl[1], false).value();
       }},
      {"reverse_inline", "CBR-1",
       [](Schedule& sch) { sch.reverse_compute_inline(sch.get_block("relu").value()).value(); }},
      {"caches", "CBR-1",
       [](Schedule& sch) {
         BlockRV conv = sch.get_block("conv2d").value();
         BlockRV pad = sch.get_block("pad").value();
         sch.cache_read(conv, 1, "local").value();
         sch.cache_write(conv, 0, "local").value();
         sch.set_scope(pad, 0, "shared").value();
         sch.transform_layout(pad, 0, "lambda n, h, w, c: (w // 2, n, h, w % 2, c)").value();
         sch.storage_align(pad, 0, 2, 8, 1).value();
       }},
      {"padding", "GMM-1",
       [](Schedule& sch) {
         BlockRV z = sch.get_block("Z").value();
         sch.pad_einsum(z, {1, 3, 16, 5}).value();
         sch.split(sch.get_loops(z).value()[2], {std::nullopt, 16}).value();
       }},
      {"reductions", "GMM-1",
       [](Schedule& sch) {
         BlockRV z = sch.get_block("Z").value();
         auto l = sch.get_loops(z).value();
         auto k = sch.split(l[3], {std::nullopt, 4}).value();
         sch.rfactor(k[1], 0).value();
         BlockRV z2 = sch.get_block("Z").value();
         sch.decompose_reduction(z2, sch.get_loops(z2).value()[1]).value();
       }},
      {"blockize_tensorize", "GMM-1",
       [](Schedule& sch) {
         auto l = loops_of(sch, "Z");  // b, i, j, k
         auto i = sch.split(l[1], {std::nullopt, 4}).value();
         auto j = sch.split(l[2], {std::nullopt, 4}).value();
         auto k = sch.split(l[3], {std::nullopt, 4}).value();
         sch.reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).value();
         sch.tensorize(i[1], "dot_4x4x4_f32").value();
         sch.blockize(k[0]).value();
       }},
      {"bind", "GMM-1",
       [](Schedule& sch) {
         auto l = loops_of(sch, "Z");
         LoopRV f = sch.fuse({l[0], l[1]}).value();
         sch.bind(f, "blockIdx.x").value();
         sch.bind(l[2], "threadIdx.x").value();
       }},
  };
}

TEST(TraceRoundTrip, EveryInstructionKindThroughJsonAndText) {
  std::set<std::string_view> covered;
  for (const RoundTripCase& c : round_trip_cases()) {
    SCOPED_TRACE(c.name);
    auto w = small(c.workload);
    Schedule sch(w.func, seeded(7));
    ASSERT_NO_THROW(c.schedule(sch)) << sch.trace()->to_text();
    const Trace& trace = *sch.trace();
    for (const Instruction& i : trace.instructions()) covered.insert(i.kind->name);
    EXPECT_TRUE(computes_reference(w, sch.func()));

    // trace -> JSON -> trace, replayed with the recorded decisions.
    std::string json = trace.to_json();
    Trace from_json = Trace::from_json(json);
    EXPECT_EQ(from_json.to_json(), json);
    Schedule a(w.func, seeded(99));
    auto st = from_json.apply_to(a);
    ASSERT_TRUE(st.ok()) << st.error().reason();
    EXPECT_TRUE(ir::structural_equal(a.func(), sch.func()));
    EXPECT_EQ(a.trace()->to_json(), json);

    // trace -> text -> trace.
    std::string text = trace.to_text();
    Trace from_text = Trace::parse_text(text);
    EXPECT_EQ(from_text.to_text(), text);
    Schedule b(w.func, seeded(123));
    st = from_text.apply_to(b);
    ASSERT_TRUE(st.ok()) << st.error().reason();
    EXPECT_TRUE(ir::structural_equal(b.func(), sch.func()));
    EXPECT_EQ(Trace::parse(json).to_text(), text);  // parse() tells JSON from text
  }
  std::set<std::string_view> all;
  for (const InstructionKind* k : instruction_kinds()) all.insert(k->name);
  std::vector<std::string_view> missing;
  std::set_difference(all.begin(), all.end(), covered.begin(), covered.end(),
                      std::back_inserter(missing));
  EXPECT_TRUE(missing.empty()) << "kinds without a round-trip case: "
                               << fmt::format("{}", fmt::join(missing, ", "));
}

// Each kind's parameters and outputs come from its instruction's C++ signature: this table is
// what the trace's JSON, the text form and the Python bindings see.
TEST(InstructionKinds, SignaturesComeFromTheTypedFunctions) {
  auto signature = [](const InstructionKind& k) {
    std::vector<std::string> params;
    for (const Param& p : k.params)
      params.push_back(fmt::format("{}{}: {}{}", p.variadic ? "*" : "", p.name,
                                   param_type_name(p.type), p.default_value ? " = default" : ""));
    static const char* outputs[] = {"none", "block", "loop", "expr", "blocks", "loops", "exprs"};
    return fmt::format("{}({}) -> {}{}{}", k.name, fmt::join(params, ", "),
                       outputs[static_cast<int>(k.output)], k.is_sampling() ? ", sampling" : "",
                       k.pure ? ", pure" : "");
  };
  EXPECT_EQ(
      signature(kind_split()),
      "split(loop: a loop, factors: a list of integers, expression variables or None) -> loops");
  EXPECT_EQ(signature(kind_fuse()), "fuse(*loops: a list of loops) -> loop");
  EXPECT_EQ(signature(kind_annotate()),
            "annotate(block_or_loop: a block or a loop, ann_key: a string, ann_val: an integer, "
            "float, string or expression "
            "variable) -> none");
  EXPECT_EQ(signature(kind_sample_perfect_tile()),
            "sample_perfect_tile(loop: a loop, n: an integer, max_innermost_factor: an integer = "
            "default) -> exprs, "
            "sampling, pure");
  EXPECT_EQ(signature(kind_compute_at()),
            "compute_at(block: a block, loop: a loop, preserve_unit_loops: True or False = "
            "default) -> none");
  EXPECT_EQ(signature(kind_storage_align()),
            "storage_align(block: a block, buffer_index: an integer, axis: an integer, factor: an "
            "integer, offset: an "
            "integer) -> none");
  EXPECT_EQ(signature(kind_get_child_blocks()),
            "get_child_blocks(block_or_loop: a block or a loop) -> blocks, pure");
  // Every handle is the registry's kind of that name.
  for (const InstructionKind* k : instruction_kinds())
    EXPECT_EQ(find_instruction_kind(k->name), k) << k->name;
}

TEST(InstructionKinds, InstructionsAreComparedByHandleAndReadByName) {
  auto w = small("GMM-1");
  Schedule sch(w.func, seeded(3));
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto tiles = sch.sample_perfect_tile(loops[1], 2, 8).value();
  ASSERT_TRUE(sch.split(loops[1], {tiles[0], tiles[1]}).ok());
  const Instruction& sample = sch.trace()->instructions()[2];
  const Instruction& split = sch.trace()->instructions()[3];
  EXPECT_TRUE(sample.is(kind_sample_perfect_tile()));
  EXPECT_TRUE(split.is(kind_split()));
  EXPECT_FALSE(split.is(kind_fuse()));
  EXPECT_EQ(sample.arg("n").i, 2);
  EXPECT_EQ(sample.arg("max_innermost_factor").i, 8);
  EXPECT_EQ(split.arg("loop").kind, Value::Kind::kLoopRV);
  EXPECT_EQ(split.arg("factors").list.size(), 2u);
  EXPECT_EQ(split.arg("factors").list[0].i, sample.outputs[0].i);
  EXPECT_THROW((void)split.arg("extent"), InternalError);
}

TEST(TraceRoundTrip, JsonCarriesFormatAndVersion) {
  auto w = small("GMM-1");
  Schedule sch(w.func, seeded(1));
  sch.get_block("Z").value();
  EXPECT_EQ(
      sch.trace()->to_json(),
      R"({"format":"tyche.trace","instructions":[{"args":{"name":"Z"},"kind":"get_block","outputs":["b0"]}],"version":1})");
}

// ---- replay ----

void tile_all(Schedule& sch) {
  BlockRV z = sch.get_block("Z").value();
  auto l = sch.get_loops(z).value();
  for (int d = 1; d <= 3; ++d) {
    auto t = sch.sample_perfect_tile(l[d], 2, 16).value();
    sch.split(l[d], {t[0], t[1]}).value();
  }
}

TEST(TraceReplay, FreshDecisionsResampleAndStillComputeTheReference) {
  auto w = small("GMM-1");
  Schedule sch(w.func, seeded(5));
  tile_all(sch);
  std::set<std::string> texts;
  for (int64_t seed = 0; seed < 20; ++seed) {
    Schedule s(w.func, seeded(seed));
    ASSERT_TRUE(sch.trace()->apply_to(s, ReplayOptions{.fresh_decisions = true}).ok());
    EXPECT_TRUE(computes_reference(w, s.func()));
    texts.insert(s.trace()->to_text());
  }
  EXPECT_GT(texts.size(), 5u);  // 32 = 2^5: 6 factorizations per loop, so fresh draws differ
}

TEST(TraceReplay, WithDecisionChangesOnlyThatSample) {
  auto w = small("GMM-1");
  Schedule sch(w.func, seeded(5));
  tile_all(sch);
  const Trace& trace = *sch.trace();
  ASSERT_EQ(trace.instructions()[2].kind->name, "sample_perfect_tile");
  Trace edited = trace.with_decision(2, to_value(std::vector<int64_t>{2, 16}));
  Schedule s(w.func, seeded(0));
  ASSERT_TRUE(edited.apply_to(s).ok());
  EXPECT_EQ(s.trace()->decisions().at(2), to_value(std::vector<int64_t>{2, 16}));
  EXPECT_EQ(s.trace()->decisions().at(4), trace.decisions().at(4));
  EXPECT_THROW(trace.with_decision(3, Value::integer(1)), InputError);  // split does not sample
  EXPECT_THROW(trace.with_decision(2, Value::integer(1)), InputError);  // wrong form
  EXPECT_THROW(trace.with_decision(99, to_value(std::vector<int64_t>{1})),
               InputError);  // no such instruction
}

TEST(TraceReplay, IllegalDecisionIsAScheduleErrorNamingInstructionAndDecision) {
  auto w = small("GMM-1");  // extent 32
  Schedule sch(w.func, seeded(5));
  tile_all(sch);
  Trace bad = sch.trace()->with_decision(2, to_value(std::vector<int64_t>{3, 16}));
  Schedule s(w.func, seeded(0));
  auto st = bad.apply_to(s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kIllegalDecision);
  EXPECT_THAT(st.error().reason(), HasSubstr("instruction 2 (sample_perfect_tile)"));
  EXPECT_THAT(st.error().reason(), HasSubstr("decision [3, 16] is not legal"));
  // Innermost above max_innermost_factor, and the wrong number of factors.
  Schedule s2(w.func, seeded(0));
  EXPECT_THAT(sch.trace()
                  ->with_decision(2, to_value(std::vector<int64_t>{1, 32}))
                  .apply_to(s2)
                  .error()
                  .reason(),
              HasSubstr("exceeds max_innermost_factor 16"));
  Schedule s3(w.func, seeded(0));
  EXPECT_THAT(sch.trace()
                  ->with_decision(2, to_value(std::vector<int64_t>{2, 4, 4}))
                  .apply_to(s3)
                  .error()
                  .reason(),
              HasSubstr("it has 3 factors, n is 2"));
}

TEST(TraceReplay, ReplayOnAnotherShapeFailsCleanly) {
  Schedule sch(small("GMM-1").func, seeded(5));
  tile_all(sch);
  auto other = workloads::make_workload("GMM", {1, 24, 24, 24});
  Schedule s(other.func, seeded(0));
  auto st = sch.trace()->apply_to(s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(), HasSubstr("not the extent 24"));
}

TEST(TraceReplay, PrimitiveFailureNamesTheInstruction) {
  auto w = small("GMM-1");
  Trace t = Trace::parse_text(
      "b0 = sch.get_block(name=\"Z\")\n"
      "l1, l2, l3, l4 = sch.get_loops(block=b0)\n"
      "\n"
      "sch.reorder(l2, l2)  # a loop twice\n");
  Schedule s(w.func);
  auto st = t.apply_to(s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kDuplicateLoop);
  EXPECT_THAT(st.error().reason(), HasSubstr("line 4 (reorder)"));
}

TEST(TraceReplay, OutputCountMismatchIsRefused) {
  auto w = small("GMM-1");
  Trace t = Trace::parse_text("b0 = sch.get_block(name=\"Z\")\nl1, l2 = sch.get_loops(block=b0)\n");
  Schedule s(w.func);
  auto st = t.apply_to(s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(), HasSubstr("produced 4 outputs, the trace names 2"));
}

// ---- simplified ----

TEST(TraceSimplified, DropsUnusedPureInstructionsOnly) {
  auto w = small("GMM-1");
  Schedule sch(w.func, seeded(5));
  BlockRV z = sch.get_block("Z").value();
  sch.get_block("Z").value();                          // dead lookup
  sch.sample_categorical({1, 2}, {0.5, 0.5}).value();  // dead sample
  auto l = sch.get_loops(z).value();
  auto t = sch.sample_perfect_tile(l[1], 2, 16).value();
  sch.split(l[1], {t[0], t[1]}).value();
  sch.get_consumers(z).value();  // dead lookup
  Trace simple = sch.trace()->simplified();
  EXPECT_THAT(kind_names(simple),
              ElementsAre("get_block", "get_loops", "sample_perfect_tile", "split"));
  EXPECT_EQ(simple.decisions().size(), 1u);
  EXPECT_EQ(simple.decisions().begin()->first, 2u);
  Schedule s(w.func, seeded(0));
  ASSERT_TRUE(simple.apply_to(s).ok());
  EXPECT_TRUE(ir::structural_equal(s.func(), sch.func()));
}

// ---- determinism ----

TEST(TraceDeterminism, SameSeedSameJson) {
  auto w = small("GMM-1");
  auto run = [&](int64_t seed) {
    Schedule sch(w.func, seeded(seed));
    tile_all(sch);
    sch.sample_categorical({0, 16, 64, 512}, {0.1, 0.2, 0.3, 0.4}).value();
    sch.sample_compute_location(sch.get_block("Z").value()).value();
    return sch.trace()->to_json();
  };
  EXPECT_EQ(run(42), run(42));
  std::set<std::string> distinct;
  for (int64_t s = 0; s < 10; ++s) distinct.insert(run(s));
  EXPECT_GT(distinct.size(), 1u);
}

// Pinned in a golden file: the same seed gives the same bytes in every run, on every machine
// (the engine and its draws do not depend on the standard library's distributions).
TEST(TraceDeterminism, SeededTraceMatchesGoldenJson) {
  auto w = small("GMM-1");
  Schedule sch(w.func, seeded(42));
  tile_all(sch);
  sch.sample_categorical({0, 16, 64, 512}, {0.1, 0.2, 0.3, 0.4}).value();
  sch.sample_compute_location(sch.get_block("Z").value()).value();
  testing::expect_golden("trace_seed42_json", sch.trace()->to_json(1) + "\n");
}

TEST(TraceDeterminism, ForkedEnginesGiveTheSameTracesPerThread) {
  auto w = small("GMM-1");
  auto traces = [&]() {
    RandomEngine parent(2024);
    std::vector<RandomEngine> engines = parent.fork(4);
    std::vector<std::string> out(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        Schedule sch(w.func, seeded(engines[t].seed()));
        tile_all(sch);
        out[t] = sch.trace()->to_json();
      });
    for (auto& th : threads) th.join();
    return out;
  };
  auto a = traces(), b = traces();
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
}

TEST(TraceRecording, TracingCanBeOffAndFailuresAreNotRecorded) {
  auto w = small("GMM-1");
  Schedule off(w.func, ScheduleOptions{.seed = 1, .trace = false});
  off.get_block("Z").value();
  EXPECT_EQ(off.trace(), nullptr);
  Schedule on(w.func, seeded(1));
  EXPECT_FALSE(on.get_block("nope").ok());
  BlockRV z = on.get_block("Z").value();
  auto l = on.get_loops(z).value();
  EXPECT_FALSE(on.split(l[1], {3, 3}).ok());
  EXPECT_EQ(on.trace()->size(), 2u);
}

}  // namespace
}  // namespace tyche::schedule
