// The scheduling example of docs/scheduling.md, kept compiling and correct.
#include "ir/structural.h"
#include "schedule_test_util.h"

namespace tyche::schedule {
namespace {

TEST(DocsExample, TilesAndVectorizesGmm) {
  auto w = workloads::get_preset("GMM-1");
  Schedule sch(w.func);
  auto z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  auto i = sch.split(loops[1], {std::nullopt, 8}).value();
  auto j = sch.split(loops[2], {std::nullopt, 8}).value();
  sch.reorder({i[0], j[0], loops[3], i[1], j[1]}).value();
  sch.vectorize(j[1]).value();
  auto r = sch.compute_inline(z);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason(), "cannot inline reduction block 'Z'");
  EXPECT_TRUE(testing::computes_reference(w, sch.func()));
}

TEST(DocsExample, TracesRecordAndReplay) {
  auto w = workloads::get_preset("GMM-1");
  schedule::Schedule sch(w.func, schedule::ScheduleOptions{.seed = 42});
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto t = sch.sample_perfect_tile(loops[1], 2, 64).value();
  sch.split(loops[1], {t[0], t[1]}).value();
  std::string text = sch.trace()->to_text();
  schedule::Schedule again(w.func);
  sch.trace()->apply_to(again).value();
  EXPECT_TRUE(ir::structural_equal(again.func(), sch.func()));
  schedule::Schedule other(w.func, schedule::ScheduleOptions{.seed = 7});
  sch.trace()->apply_to(other, {.fresh_decisions = true}).value();
  EXPECT_TRUE(testing::computes_reference(w, other.func()));
}

// The hand-written trace in the first ```python block of docs/traces.md, "Random variables and
// traces", parses and schedules GMM-1.
TEST(DocsExample, HandWrittenTraceApplies) {
  std::ifstream in(std::string(TYCHE_SOURCE_DIR) + "/docs/traces.md");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  size_t section = doc.find("## Random variables and traces");
  ASSERT_NE(section, std::string::npos);
  size_t start = doc.find("```python\n", section);
  ASSERT_NE(start, std::string::npos);
  start += 10;
  std::string text = doc.substr(start, doc.find("```", start) - start);
  auto w = workloads::get_preset("GMM-1");
  Schedule sch(w.func);
  auto st = Trace::parse_text(text).apply_to(sch);
  ASSERT_TRUE(st.ok()) << st.error().reason();
  EXPECT_TRUE(testing::computes_reference(w, sch.func()));
}

}  // namespace
}  // namespace tyche::schedule
