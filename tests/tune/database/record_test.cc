// Tuning records: round trip, and files with torn or corrupt lines.
#include <gmock/gmock.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "tune/database/record.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

TuningRecord sample(double t) {
  TuningRecord r;
  r.workload = {"GMM-4", "", 0x0123456789abcdefULL, "B=1,N=1024,M=1024,K=1024", 2147483648.0, ""};
  r.trace_json = R"({"format":"tyche.trace","version":1,"instructions":[]})";
  r.target = {"llvm", 2, "x86-64-v3", "x86-64-v3", "Intel(R) Xeon(R) Processor", "+avx2,+fma", ""};
  r.seconds = {t, t * 1.01, t * 0.99};
  r.measured_at = utc_now();
  return r;
}

std::string temp(const std::string& name) {
  std::string p = ::testing::TempDir() + "/tyche_records_" + name;
  std::remove(p.c_str());
  return p;
}

TEST(Records, RoundTrip) {
  TuningRecord r = sample(0.01);
  TuningRecord back = parse_record(to_json_line(r));
  EXPECT_EQ(back.workload.name, "GMM-4");
  EXPECT_EQ(back.workload.hash, r.workload.hash);
  EXPECT_EQ(back.workload.shape, r.workload.shape);
  EXPECT_EQ(nlohmann::json::parse(back.trace_json), nlohmann::json::parse(r.trace_json));
  EXPECT_EQ(back.target.cpu, "x86-64-v3");
  EXPECT_EQ(back.target.num_cores, 2);
  EXPECT_EQ(back.seconds, r.seconds);
  EXPECT_TRUE(back.ok());
  EXPECT_NEAR(back.typical_seconds(), 0.01, 1e-12);
  EXPECT_FALSE(back.confirmed);
  EXPECT_EQ(to_json_line(r).find("confirmed"), std::string::npos);  // written only when set
  r.confirmed = true;
  EXPECT_TRUE(parse_record(to_json_line(r)).confirmed);
  EXPECT_EQ(to_json_line(r).find("dtypes"),
            std::string::npos);  // a float32 workload's record is unchanged
  r.workload.dtypes = "C=int32,A=uint8,B=int8";
  EXPECT_THAT(to_json_line(r), HasSubstr("\"dtypes\":\"C=int32,A=uint8,B=int8\""));
  EXPECT_EQ(parse_record(to_json_line(r)).workload.dtypes, "C=int32,A=uint8,B=int8");
  TuningRecord failed = sample(0.01);
  failed.seconds.clear();
  failed.error = "the kernel crashed the worker: signal 11";
  TuningRecord f = parse_record(to_json_line(failed));
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(f.error, failed.error);
  EXPECT_EQ(f.typical_seconds(), std::numeric_limits<double>::infinity());
  EXPECT_THAT(utc_now(),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
}

TEST(Records, ColdTimingIsKeptAndKeysItsOwnRecords) {
  TuningRecord warm = sample(0.01);
  EXPECT_EQ(to_json_line(warm).find("timing"), std::string::npos);  // old records read as warm
  TuningRecord cold = sample(0.02);
  cold.target.timing = "cold";
  TuningRecord back = parse_record(to_json_line(cold));
  EXPECT_EQ(back.target.timing, "cold");
  EXPECT_EQ(parse_record(to_json_line(warm)).target.timing, "");
  // Times taken cold and warm do not compare: each has its own key.
  EXPECT_NE(target_key(back.target), target_key(warm.target));
  EXPECT_EQ(target_key(back.target), target_key(warm.target) + "|cold");
  TuningRecord llc = sample(0.03);
  llc.target.timing = "llc";
  EXPECT_EQ(parse_record(to_json_line(llc)).target.timing, "llc");
  EXPECT_EQ(target_key(parse_record(to_json_line(llc)).target), target_key(warm.target) + "|llc");
  llc.target.timing = "mixed";
  EXPECT_EQ(target_key(parse_record(to_json_line(llc)).target), target_key(warm.target) + "|mixed");
  std::string line = to_json_line(cold);
  line.replace(line.find("\"cold\""), 6, "\"tepid\"");
  try {
    parse_record(line);
    FAIL() << "an unknown timing was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown timing 'tepid'"));
  }
}

TEST(Records, BadLinesAreSkippedCountedAndWarnedAbout) {
  std::string path = temp("bad.jsonl");
  append_records(path, {sample(0.01), sample(0.02)});
  std::string good = to_json_line(sample(0.03));
  nlohmann::json j = nlohmann::json::parse(good);
  j["version"] = 7;
  std::string wrong_version = j.dump();
  j["version"] = 1;
  j["confirmed"] = "yes";
  std::string bad_mark = j.dump();
  {
    std::ofstream out(path, std::ios::app);
    out << "not json at all\n"
        << wrong_version << "\n"
        << R"({"format":"tyche.record","version":1})"
        << "\n"
        << bad_mark << "\n\n";
    out << good.substr(0, good.size() / 2);  // torn by a crash, no newline
  }
  RecordFile f = read_records(path);
  EXPECT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.skipped, 5);
  ASSERT_EQ(f.warnings.size(), 5u);
  EXPECT_THAT(f.warnings[0], HasSubstr(":3: skipped: not JSON"));
  EXPECT_THAT(f.warnings[1], HasSubstr("record version 7"));
  EXPECT_THAT(f.warnings[2], HasSubstr("no \"workload\""));
  EXPECT_THAT(f.warnings[3], HasSubstr("\"confirmed\" has the wrong type"));
  // Appending after the torn line starts a new line: the new record is whole.
  append_records(path, {sample(0.04)});
  RecordFile again = read_records(path);
  EXPECT_EQ(again.records.size(), 3u);
  EXPECT_EQ(again.skipped, 5);
  EXPECT_NEAR(again.records.back().typical_seconds(), 0.04, 1e-12);
  std::remove(path.c_str());
}

TEST(Records, CompressedFilesAreReadNotAppended) {
  std::string path = temp("records.jsonl.gz");
  gzFile g = gzopen(path.c_str(), "wb");
  std::string text = to_json_line(sample(0.01)) + "\n" + to_json_line(sample(0.02)) + "\n";
  gzwrite(g, text.data(), static_cast<unsigned>(text.size()));
  gzclose(g);
  RecordFile f = read_records(path);
  EXPECT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.skipped, 0);
  EXPECT_THAT([&] { append_records(path, {sample(0.1)}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("read-only")));
  std::remove(path.c_str());
  EXPECT_THAT([] { read_records("/nonexistent/records.jsonl"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cannot read")));
  EXPECT_THAT([] { append_records("/nonexistent/dir/records.jsonl", {sample(0.1)}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cannot write")));
}

}  // namespace
}  // namespace tyche::tune
