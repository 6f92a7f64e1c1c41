// The best program of a workload in a database: a record whose trace does not replay (valid
// JSON, broken trace) gives way to the next best, with a warning naming it and its line.
#include <gmock/gmock.h>

#include <filesystem>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/search/records.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

constexpr const char* kEmptyTrace = R"({"format":"tyche.trace","version":1,"instructions":[]})";
constexpr const char* kBrokenTrace =
    R"({"format":"tyche.trace","version":1,"instructions":[{"kind":"Frobnicate"}]})";

target::Target two_cores() {
  target::Target t;
  t.num_cores = 2;
  return t;
}

TuningRecord record(const workloads::Workload& w, const std::string& trace, double seconds) {
  TuningRecord r;
  r.workload = {w.name, "", ir::structural_hash(w.func), w.shape, w.flop, ""};
  r.trace_json = trace;
  r.target = record_target(two_cores());
  r.seconds = {seconds};
  r.measured_at = utc_now();
  return r;
}

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/tyche_records_" + name;
  std::filesystem::remove_all(d);
  return d;
}

TEST(BestRecords, ARecordThatDoesNotReplayGivesWayToTheNextBest) {
  workloads::Workload w = workloads::get_preset("GMM-1");
  std::string dir = fresh_dir("fallback");
  {
    Database db(dir);
    db.add_records({record(w, kEmptyTrace, 3e-3), record(w, kBrokenTrace, 1e-3),
                    record(w, kEmptyTrace, 2e-3)});
  }
  Database db(dir, OpenMode::kReadOnly);
  BestPrograms best = replayable_best(db, "GMM-1", w.func, two_cores(), 1);
  ASSERT_EQ(best.programs.size(), 1u);
  EXPECT_EQ(best.records[0]->typical_seconds(), 2e-3);  // the next best, not the slowest
  ASSERT_EQ(best.warnings.size(), 1u);
  EXPECT_THAT(best.warnings[0], HasSubstr("the best record of GMM-1 (" + dir +
                                          "/records.jsonl:2) does not replay ("));
  EXPECT_THAT(best.warnings[0], HasSubstr("unknown instruction 'Frobnicate'"));
  EXPECT_THAT(best.warnings[0], HasSubstr("; using the next best"));
  // k programs that replay, the broken one skipped.
  std::vector<std::string> warnings;
  EXPECT_EQ(best_programs(db, "GMM-1", w.func, two_cores(), 5, 0, &warnings).size(), 2u);
  EXPECT_EQ(warnings.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(BestRecords, WhenNoRecordReplaysTheErrorSaysSo) {
  workloads::Workload w = workloads::get_preset("GMM-1");
  std::string dir = fresh_dir("none");
  {
    Database db(dir);
    db.add_records({record(w, kBrokenTrace, 1e-3), record(w, kBrokenTrace, 2e-3)});
  }
  EXPECT_THAT(
      [&] { best_program(Database(dir, OpenMode::kReadOnly), "GMM-1", w.func, two_cores()); },
      ::testing::ThrowsMessage<Error>(
          HasSubstr("the best record of GMM-1 no longer replays (trace JSON: instruction 0: "
                    "unknown instruction 'Frobnicate'), nor do the 1 other records of it")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tyche::tune
