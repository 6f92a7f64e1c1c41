// The text form as a language people write: what it accepts, and a one-line error for each
// malformed input (line and column, what was expected). Also the JSON form's refusals.
#include <gmock/gmock.h>

#include <random>

#include "ir/structural.h"
#include "schedule_test_util.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using ::testing::HasSubstr;
using testing::small;

TEST(TraceText, HandWrittenScheduleWithLiteralsCommentsAndDefaults) {
  auto w = small("GMM-1");  // 1 x 32 x 32 x 32
  Trace t = Trace::parse_text(R"(# a hand-written schedule for Z
b0 = sch.get_block(name='Z')
_, l1, l2, l3 = sch.get_loops(block=b0)
l4, l5 = sch.split(loop=l1, factors=[None, 8])   # inferred outer factor
(l6, l7,) = sch.split(l2, [4, 8])                # positional arguments, tuple targets

sch.reorder(l4, l6, l5, l7, l3,)
v8 = sch.sample_categorical(candidates=[0, 16], probs=[1, 0], decision=0)
sch.annotate(block_or_loop=b0, ann_key="meta_schedule.unroll_explicit", ann_val=v8)
sch.parallel(loop=l4)
v9, v10 = sch.sample_perfect_tile(loop=l3, n=2, decision=[4, 8])  # max_innermost_factor defaults to 16
sch.split(loop=l3, factors=[v9, v10])
)");
  Schedule sch(w.func);
  auto st = t.apply_to(sch);
  ASSERT_TRUE(st.ok()) << st.error().reason();
  EXPECT_TRUE(computes_reference(w, sch.func()));

  Schedule by_hand(w.func);
  BlockRV z = by_hand.get_block("Z").value();
  auto l = by_hand.get_loops(z).value();
  auto i = by_hand.split(l[1], {std::nullopt, 8}).value();
  auto j = by_hand.split(l[2], {4, 8}).value();
  by_hand.reorder({i[0], j[0], i[1], j[1], l[3]}).value();
  by_hand.annotate(z, "meta_schedule.unroll_explicit", int64_t{0}).value();
  by_hand.parallel(i[0]).value();
  by_hand.split(l[3], {4, 8}).value();
  EXPECT_TRUE(ir::structural_equal(sch.func(), by_hand.func())) << ir::to_string(sch.func());
  // Printed back in the canonical form: names renumbered, every argument by keyword.
  EXPECT_THAT(sch.trace()->to_text(),
              HasSubstr("l5, l6 = sch.split(loop=l2, factors=[None, 8])\n"));
  EXPECT_THAT(sch.trace()->to_text(), HasSubstr("v10, v11 = sch.sample_perfect_tile(loop=l4, n=2, "
                                                "max_innermost_factor=16, decision=[4, 8])\n"));
}

TEST(TraceText, StringsAndFloatsRoundTrip) {
  auto w = small("GMM-1");
  Schedule sch(w.func, ScheduleOptions{.seed = 1});
  BlockRV z = sch.get_block("Z").value();
  sch.annotate(z, "s", std::string("tab\there \"q\" back\\slash # not a comment")).value();
  sch.annotate(z, "f", 2.0).value();
  sch.annotate(z, "g", 1e-300).value();
  sch.annotate(z, "n", int64_t{-7}).value();
  std::string text = sch.trace()->to_text();
  EXPECT_THAT(text, HasSubstr("ann_val=2.0)"));
  Schedule r(w.func);
  ASSERT_TRUE(Trace::parse_text(text).apply_to(r).ok());
  EXPECT_TRUE(ir::structural_equal(r.func(), sch.func()));
  EXPECT_EQ(r.trace()->to_text(), text);
}

struct BadText {
  std::string text;
  std::string message;
};

TEST(TraceText, MalformedInputIsOneLineNamingLineAndColumn) {
  const std::string b0 = "b0 = sch.get_block(name=\"Z\")\n";
  std::vector<BadText> cases = {
      {"sch.splt(loop=l1)", "trace line 1, column 5: unknown instruction 'splt'"},
      {b0 + "l1 = sch.get_loops(block=b9)", "trace line 2, column 26: 'b9' is not defined"},
      {"sch.get_block(name=3)", "argument 'name' of get_block must be a string, got an integer"},
      {b0 + "sch.parallel(loop=b0)", "argument 'loop' of parallel must be a loop, got a block"},
      {b0 + "sch.split(loop=b0, factors=[2, \"x\"])", "argument 'loop' of split must be a loop"},
      {"sch.get_block()", "get_block: missing argument 'name'"},
      {"sch.get_block(name=\"Z\", nme=\"Z\")", "get_block has no argument 'nme' (arguments: name)"},
      {"sch.get_block(name=\"Z\", name=\"Z\")", "argument 'name' given twice"},
      {"sch.get_block(name=\"Z\", \"Y\")", "positional argument after a keyword argument"},
      {"sch.get_block(\"Z\", \"Y\")", "get_block takes 1 arguments"},
      {"b0 = sch.get_block(name=\"Z\"", "expected ',' or ')'"},
      {"b0 = sch.get_block(name=\"Z)", "unterminated string"},
      {"b0 = get_block(name=\"Z\")", "column 6: expected 'sch.<instruction>(...)'"},
      {"b0 = sch.get_block(name=\"Z\") + 1", "unexpected text after ')'"},
      {"b0, b1 = sch.get_block(name=\"Z\")", "get_block produces one value, not 2"},
      {b0 + "x = sch.compute_inline(block=b0)", "compute_inline produces nothing to assign"},
      {"sch.get_block(name=\"Z\", decision=1)", "get_block takes no decision"},
      {b0 + "l1, l2, l3, l4 = sch.get_loops(block=b0)\nsch.sample_perfect_tile(loop=l2, n=2, "
            "decision=3)",
       "trace line 3, column 39: the decision of sample_perfect_tile must be a list of integers"},
      {b0 + "l1, l2, l3, l4 = sch.get_loops(block=b0)\nsch.split(loop=l2, factors=[1.5e, 2])",
       "malformed number '1.5e'"},
      {"sch.get_block(name=\"Z\"))", "unexpected text after ')'"},
      {"sch.get_block(name=@)", "unexpected '@'"},
      {"sch", "expected '.' after 'sch'"},
      {"(b0 = sch.get_block(name=\"Z\")", "expected ')' after the names being assigned"},
      {b0 + "l1, l2, l3, l4 = sch.get_loops(block=b0)\nsch.split(loop=l2, factors=" +
           std::string(40, '['),
       "lists nest deeper than 32"},
  };
  for (const BadText& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      Trace::parse_text(c.text);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      std::string msg = e.what();
      EXPECT_THAT(msg, HasSubstr(c.message));
      EXPECT_EQ(msg.find('\n'), std::string::npos);
      EXPECT_EQ(msg.rfind("trace line ", 0), 0u) << msg;
    }
  }
}

TEST(TraceJson, MalformedInputIsRefusedWithOneLine) {
  const std::string head = R"({"format":"tyche.trace","version":1,"instructions":)";
  std::vector<BadText> cases = {
      {"{", "trace JSON: not valid JSON"},
      {R"({"format":"x","version":1,"instructions":[]})", "not a Tyche trace"},
      {R"({"format":5,"version":1,"instructions":[]})", "not a Tyche trace"},
      {R"({"format":"tyche.trace","version":2,"instructions":[]})",
       "unsupported version 2 (this build reads version 1)"},
      {R"({"format":"tyche.trace","version":1})", "missing the \"instructions\" array"},
      {head + R"([{"kind":"splt","args":{}}]})", "instruction 0: unknown instruction 'splt'"},
      {head + R"([{"kind":"get_loops","args":{"block":{"rv":"b9"}}}]})", "'b9' is not defined"},
      {head + R"([{"kind":"get_block","args":{"name":"Z","x":1}}]})", "unknown argument 'x'"},
      {head + R"([{"kind":"get_block","args":{}}]})", "missing argument 'name'"},
      {head + R"([{"kind":"get_block","args":{"name":1}}]})", "argument 'name' must be a string"},
      {head + R"([{"kind":"get_block","args":{"name":"Z"},"decision":1}]})", "takes no decision"},
      {head + R"([{"kind":"get_block","args":{"name":"Z"},"outputs":["b0","b1"]}]})",
       "produces one output"},
      {head + R"([{"kind":"get_block","args":{"name":{"x":1}}}]})", "unexpected value"},
      {head + R"([3]})", "expected an object with a \"kind\""},
  };
  for (const BadText& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      Trace::from_json(c.text);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(c.message));
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(TraceText, ApplyInstructionChecksArgumentsItself) {
  // The typed API cannot pass a wrong kind, but a caller of apply_instruction can.
  auto w = small("GMM-1");
  Schedule sch(w.func);
  const InstructionKind* split = find_instruction_kind("split");
  ASSERT_NE(split, nullptr);
  auto r = sch.apply_instruction(*split, {Value::integer(1), Value::of_list({})});
  EXPECT_THAT(r.error().reason(),
              HasSubstr("split: argument 'loop' must be a loop, got an integer"));
  EXPECT_THAT(sch.apply_instruction(*split, {}).error().reason(),
              HasSubstr("split takes 2 arguments, got 0"));
  EXPECT_THAT(sch.apply_instruction(*find_instruction_kind("get_block"), {Value::string("Z")},
                                    Value::integer(1))
                  .error()
                  .reason(),
              HasSubstr("get_block takes no decision"));
  EXPECT_EQ(find_instruction_kind("nope"), nullptr);
}

// Corrupted text and JSON (bytes dropped, duplicated or replaced) either parse or throw
// InputError; whatever parses replays to a program or a ScheduleError. Never a crash.
TEST(TraceText, CorruptedTracesNeverCrash) {
  auto w = small("GMM-1");
  Schedule sch(w.func, ScheduleOptions{.seed = 3});
  auto l = sch.get_loops(sch.get_block("Z").value()).value();
  auto t = sch.sample_perfect_tile(l[1], 3, 8).value();
  auto i = sch.split(l[1], {t[0], t[1], t[2]}).value();
  sch.reorder({i[0], l[2], i[1], i[2]}).value();
  sch.annotate(l[2], "key", std::string("v")).value();
  ExprRV c = sch.sample_categorical({1, 2}, {0.5, 0.5}).value();
  sch.annotate(l[2], "n", c).value();
  const std::string sources[] = {sch.trace()->to_text(), sch.trace()->to_json()};
  const std::string alphabet = "()[]{},.=_\"'#:-0123456789 \nlvbsch";
  std::mt19937 rng(99);
  int parsed = 0, replayed = 0;
  for (const std::string& src : sources) {
    for (int trial = 0; trial < 1500; ++trial) {
      std::string text = src;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t pos = rng() % text.size();
        switch (rng() % 3) {
          case 0:
            text.erase(pos, 1 + rng() % 3);
            break;
          case 1:
            text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            text[pos] = alphabet[rng() % alphabet.size()];
        }
      }
      Trace parsed_trace;
      try {
        parsed_trace = Trace::parse(text);
      } catch (const InputError&) {
        continue;
      }
      ++parsed;
      Schedule s(w.func, ScheduleOptions{.seed = 1});
      if (parsed_trace.apply_to(s).ok()) ++replayed;
    }
  }
  // Most corruptions are refused; some (a changed digit, a dropped comment) still parse.
  EXPECT_GT(parsed, 20);
  EXPECT_GT(replayed, 5);
  std::printf("corrupted traces: %d parsed, %d replayed\n", parsed, replayed);
}

}  // namespace
}  // namespace tyche::schedule
