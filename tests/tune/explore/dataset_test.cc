// Records as training data: replayed with their decisions, features as the program has them;
// records that cannot be used are skipped with a reason.
#include <gmock/gmock.h>

#include <cstdio>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/database/record.h"
#include "tune/explore/dataset.h"
#include "tune/postproc/candidate.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

TEST(Dataset, RecordsReplayToTheirFeaturesAndBadOnesAreSkipped) {
  auto w = workloads::get_preset("GMM-1");
  target::Target target;
  target.num_cores = 2;
  TuneContext context{w.func, target};
  auto postprocs = default_postprocs(context);
  auto spaces = post_order_apply(default_rules(target))->generate(context, 0);
  std::vector<TuningRecord> records;
  std::vector<FeatureRows> expected;
  for (int i = 0; records.size() < 4; ++i) {
    schedule::Trace replayed;
    auto c = make_candidate(context, *spaces[static_cast<size_t>(i) % spaces.size()].trace(),
                            {.fresh_decisions = true}, postprocs, i, &replayed);
    auto* sch = std::get_if<schedule::Schedule>(&c);
    if (!sch) continue;
    expected.push_back(per_store_features(sch->func()));
    TuningRecord r;
    r.workload = {"GMM-1", "", ir::structural_hash(w.func), w.shape, w.flop, ""};
    r.trace_json = replayed.to_json();
    r.target.num_cores = 2;
    r.seconds = {1e-3 * static_cast<double>(records.size() + 1)};
    records.push_back(r);
  }
  records[3].seconds.clear();
  records[3].error = "run: timed out";
  TuningRecord wrong_hash = records[0], unknown = records[0];
  wrong_hash.workload.hash ^= 1;
  unknown.workload.name = "NOPE-1";
  std::string path = ::testing::TempDir() + "/tyche_dataset_records.jsonl";
  std::remove(path.c_str());
  append_records(path, records);
  append_records(path, {wrong_hash, unknown});
  Dataset d = load_dataset({path}, 2);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d.skipped, 2);
  ASSERT_EQ(d.warnings.size(), 2u);
  EXPECT_THAT(d.warnings[0], HasSubstr("structural hash differs"));
  EXPECT_THAT(d.warnings[1], HasSubstr("unknown workload 'NOPE-1'"));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d.inputs[i].features.values, expected[i].values) << i;
    EXPECT_EQ(d.inputs[i].workload, ir::structural_hash(w.func));
  }
  EXPECT_DOUBLE_EQ(d.seconds[1], 2e-3);
  EXPECT_TRUE(std::isnan(d.seconds[3]));  // a failure stays in, as a failure
  EXPECT_EQ(d.workloads(), std::vector<std::string>{"GMM-1"});
  EXPECT_EQ(d.subset("GMM-1", true).size(), 0u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tyche::tune
