// The README's scheduling example, kept compiling and correct.
#include "schedule_test_util.h"

namespace tyche::schedule {
namespace {

TEST(ReadmeExample, TilesAndVectorizesGmm) {
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

}  // namespace
}  // namespace tyche::schedule
