// The tuning database: round trip, resume after a kill, refusal of a corrupt workloads file.
#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "support/error.h"
#include "tune/database/database.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/tyche_db_" + name;
  std::filesystem::remove_all(d);
  return d;
}

RecordWorkload gmm() {
  return {"GMM-1", "", 0xabcULL, "B=1,N=128,M=128,K=128", 4194304.0, ""};
}

TuningRecord record(double seconds, uint64_t program, const std::string& cpu = "host") {
  TuningRecord r;
  r.workload = gmm();
  r.trace_json = R"({"format":"tyche.trace","version":1,"instructions":[]})";
  r.target = {"llvm", 2, cpu, "sapphirerapids", "Intel", "+avx2", ""};
  r.program = program;
  if (seconds > 0)
    r.seconds = {seconds};
  else
    r.error = "run: timed out";
  r.measured_at = utc_now();
  return r;
}

TEST(Database, RoundTripAndQueries) {
  std::string dir = fresh_dir("roundtrip");
  {
    Database db(dir);
    db.add_workload(gmm());
    db.add_workload(gmm());  // once
    db.add_records({record(3e-3, 1), record(1e-3, 2), record(-1, 3), record(2e-3, 4),
                    record(0.5e-3, 5, "x86-64-v3")});
  }
  Database db(dir);
  ASSERT_EQ(db.workloads().size(), 1u);
  EXPECT_EQ(db.workloads()[0].name, "GMM-1");
  EXPECT_EQ(db.records().size(), 5u);
  EXPECT_EQ(db.records()[3].program, 4u);
  std::string host = target_key(record(1, 1).target);
  EXPECT_EQ(db.records_of(0xabc, host).size(), 4u);  // the x86-64-v3 record is another target
  auto best = db.best(0xabc, host, 2);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0]->program, 2u);
  EXPECT_EQ(best[1]->program, 4u);
  EXPECT_EQ(db.best(0xabc, host, -1).size(), 3u);  // the failure is not among the measured
  EXPECT_TRUE(db.best(0xdef, host, 5).empty());
}

TEST(Database, AProgramMeasuredAgainCountsByItsLatestRecord) {
  Database db(fresh_dir("remeasured"));
  db.add_workload(gmm());
  // Program 2 looked fastest once (a quiet moment of the host); measured again it is not. Program
  // 3 failed when measured again (a flaky crash): it is no longer among the measured.
  db.add_records(
      {record(3e-3, 1), record(1e-3, 2), record(2e-3, 3), record(4e-3, 0), record(5e-3, 0)});
  std::vector<TuningRecord> again = {record(2.5e-3, 2), record(-1, 3), record(2.8e-3, 1)};
  for (TuningRecord& r : again) r.confirmed = true;
  db.add_records(again);
  db.add_records({record(0.9e-3, 6)});  // found later, measured once: ranks after the confirmed
  std::string host = target_key(record(1, 1).target);
  auto latest = db.latest_of(0xabc, host);
  ASSERT_EQ(latest.size(), 6u);  // two records without a program hash are two programs
  EXPECT_EQ(latest[0]->program, 1u);
  EXPECT_DOUBLE_EQ(latest[0]->typical_seconds(), 2.8e-3);  // in the slot where 1 was first measured
  EXPECT_DOUBLE_EQ(latest[1]->typical_seconds(), 2.5e-3);
  EXPECT_FALSE(latest[2]->ok());
  auto best = db.best(0xabc, host, -1);
  ASSERT_EQ(best.size(), 5u);
  EXPECT_EQ(best[0]->program, 2u);
  EXPECT_DOUBLE_EQ(best[0]->typical_seconds(), 2.5e-3);
  EXPECT_EQ(best[1]->program, 1u);
  EXPECT_EQ(best[2]->program, 6u);
  EXPECT_EQ(db.records_of(0xabc, host).size(), 9u);  // every measurement is kept
  Database reopened(db.dir());                       // the mark survives the file
  EXPECT_EQ(reopened.best(0xabc, host, 1)[0]->program, 2u);
}

TEST(Database, ResumesAfterAKillMidLine) {
  std::string dir = fresh_dir("killed");
  {
    Database db(dir);
    db.add_workload(gmm());
    db.add_records({record(1e-3, 1), record(2e-3, 2)});
  }
  {  // killed while writing the next batch: half a line
    std::string line = to_json_line(record(3e-3, 3));
    std::ofstream(dir + "/records.jsonl", std::ios::app) << line.substr(0, line.size() / 2);
    std::ofstream(dir + "/workloads.jsonl", std::ios::app) << R"({"format":"tyche.work)";
  }
  Database db(dir);
  EXPECT_EQ(db.records().size(), 2u);
  EXPECT_EQ(db.skipped(), 1);
  ASSERT_EQ(db.warnings().size(), 2u);
  EXPECT_THAT(db.warnings()[0], HasSubstr("removed a truncated last line"));
  EXPECT_THAT(db.warnings()[1], HasSubstr("skipped: not JSON"));
  db.add_records({record(0.7e-3, 4)});
  db.add_workload({"GMM-2", "", 0xdefULL, "", 1.0, ""});
  Database again(dir);
  EXPECT_EQ(again.records().size(), 3u);
  EXPECT_EQ(again.workloads().size(), 2u);
  EXPECT_EQ(again.best(0xabc, target_key(record(1, 1).target), 1)[0]->program, 4u);
}

TEST(Database, RefusesACorruptWorkloadsFileAndUnwritableDirectories) {
  std::string dir = fresh_dir("corrupt");
  {
    Database db(dir);
    db.add_workload(gmm());
  }
  {
    std::ofstream out(dir + "/workloads.jsonl", std::ios::app);
    out << "garbage in the middle\n"
        << R"({"format":"tyche.workload","name":"GMM-2","extents":"","hash":"0000000000000def"})"
        << "\n";
  }
  EXPECT_THAT([&] { Database db(dir); },
              ::testing::ThrowsMessage<Error>(HasSubstr("workloads.jsonl' is corrupt at line 2")));
  EXPECT_THAT([] { Database db("/proc/tyche_no_such_db"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cannot create database directory")));
}

// Every file in `dir` with its size and modification time: what a read-only open must leave as it
// was.
std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> snapshot(
    const std::string& dir) {
  std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out[e.path().filename().string()] = {std::filesystem::file_size(e.path()),
                                         std::filesystem::last_write_time(e.path())};
  return out;
}

// run, show, export, run-model and export-model open the database read-only: nothing is created,
// locked, truncated or written (tests run as root, where permission bits stop nothing, so the
// files themselves are compared), and adding is refused.
TEST(Database, AReadOnlyOpenNeverCreatesOrWritesAFile) {
  EXPECT_THAT([] { Database db(fresh_dir("readonly_missing"), OpenMode::kReadOnly); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no tuning database at")));
  EXPECT_FALSE(std::filesystem::exists(fresh_dir("readonly_missing")));
  std::string dir = fresh_dir("readonly");
  {
    Database db(dir);
    db.add_workload(gmm());
    db.add_records({record(1e-3, 1), record(2e-3, 2)});
  }
  {  // a torn last line in each file, which a writable open would cut off
    std::string line = to_json_line(record(3e-3, 3));
    std::ofstream(dir + "/records.jsonl", std::ios::app) << line.substr(0, line.size() / 2);
    std::ofstream(dir + "/workloads.jsonl", std::ios::app) << R"({"format":"tyche.work)";
  }
  auto before = snapshot(dir);
  {
    Database db(dir, OpenMode::kReadOnly);
    EXPECT_TRUE(db.read_only());
    EXPECT_EQ(db.records().size(), 2u);
    EXPECT_EQ(db.workloads().size(), 1u);
    ASSERT_EQ(db.warnings().size(), 2u);
    EXPECT_THAT(db.warnings()[0], HasSubstr("skipped a truncated last line"));
    EXPECT_EQ(db.best(0xabc, target_key(record(1, 1).target), 1)[0]->program, 1u);
    EXPECT_EQ(db.line_of(&db.records()[1]), 2);
    EXPECT_THAT([&] { db.add_records({record(1e-3, 9)}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("opened read-only")));
    EXPECT_THAT(
        [&] {
          db.add_workload({"GMM-2", "", 0xdefULL, "", 1.0, ""});
        },
        ::testing::ThrowsMessage<Error>(HasSubstr("opened read-only")));
  }
  EXPECT_EQ(snapshot(dir), before);
  // A directory without its files (none created): an empty database.
  std::string empty = fresh_dir("readonly_empty");
  std::filesystem::create_directories(empty);
  Database db(empty, OpenMode::kReadOnly);
  EXPECT_TRUE(db.records().empty());
  EXPECT_TRUE(std::filesystem::is_empty(empty));
}

// Where writing really fails (an immutable directory; as another user, one without write
// permission), a read-only open reads the records.
TEST(Database, AReadOnlyOpenReadsADirectoryThatCannotBeWritten) {
  std::string dir = fresh_dir("immutable");
  {
    Database db(dir);
    db.add_workload(gmm());
    db.add_records({record(1e-3, 1)});
  }
  std::string lock =
      ::getuid() == 0 ? "chattr +i " + dir + "/* " + dir + " 2>/dev/null" : "chmod -R a-w " + dir;
  std::string unlock =
      ::getuid() == 0 ? "chattr -i " + dir + " " + dir + "/* 2>/dev/null" : "chmod -R u+w " + dir;
  auto sh = [](const std::string& command) { return std::system(command.c_str()); };
  if (sh(lock) != 0 || std::ofstream(dir + "/probe")) {
    sh(unlock);
    std::filesystem::remove(dir + "/probe");
    GTEST_SKIP() << "cannot make a directory unwritable here";
  }
  EXPECT_THAT([&] { Database db(dir); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cannot write database file")));
  Database db(dir, OpenMode::kReadOnly);
  EXPECT_EQ(db.records().size(), 1u);
  sh(unlock);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tyche::tune
