#include "tune/database/record.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/hash.h"
#include "support/median.h"

namespace tyche::tune {

using json = nlohmann::json;

namespace {

constexpr size_t kMaxWarnings = 20;

std::string hex(uint64_t v) {
  return fmt::format("{:016x}", v);
}

uint64_t parse_hex(const std::string& s) {
  if (s.empty() || s.size() > 16 ||
      s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw Error(fmt::format("hash '{}' is not 16 hex digits", s));
  return std::stoull(s, nullptr, 16);
}

// The lines of a file, plain or gzip-compressed.
std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw Error(fmt::format("cannot read records file '{}'", path));
    std::string text;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    int err = 0;
    const char* msg = n < 0 ? gzerror(f, &err) : nullptr;
    std::string why = msg ? msg : "";
    gzclose(f);
    // A truncated archive still yields the lines before the damage; the torn one is skipped.
    if (n < 0 && text.empty())
      throw Error(fmt::format("cannot read records file '{}': {}", path, why));
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i)
      if (i == text.size() || text[i] == '\n') {
        if (i > start) lines.push_back(text.substr(start, i - start));
        start = i + 1;
      }
    return lines;
  }
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot read records file '{}'", path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

template <typename T>
T field(const json& j, const char* key, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(fmt::format("{} has no \"{}\"", what, key));
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(fmt::format("{}: \"{}\" has the wrong type", what, key));
  }
}

}  // namespace

double TuningRecord::typical_seconds() const {
  if (!ok()) return std::numeric_limits<double>::infinity();
  return median(seconds);
}

std::string to_json_line(const TuningRecord& r) {
  json trace;
  try {
    trace = json::parse(r.trace_json);
  } catch (const json::exception&) {
    throw Error("record: the trace is not JSON");
  }
  json j = {{"format", "tyche.record"},
            {"version", kRecordVersion},
            {"workload",
             {{"name", r.workload.name},
              {"extents", r.workload.extents},
              {"hash", hex(r.workload.hash)},
              {"shape", r.workload.shape},
              {"flop", r.workload.flop}}},
            {"trace", trace},
            {"target",
             {{"kind", r.target.kind},
              {"num_cores", r.target.num_cores},
              {"cpu", r.target.cpu},
              {"llvm_cpu", r.target.llvm_cpu},
              {"cpu_model", r.target.cpu_model},
              {"features", r.target.features}}},
            {"program", r.program ? json(hex(r.program)) : json(nullptr)},
            {"seconds", r.seconds},
            {"error", r.error.empty() ? json(nullptr) : json(r.error)},
            {"measured_at", r.measured_at}};
  if (!r.target.timing.empty()) j["target"]["timing"] = r.target.timing;
  if (!r.workload.dtypes.empty()) j["workload"]["dtypes"] = r.workload.dtypes;
  if (r.confirmed) j["confirmed"] = true;
  return j.dump();
}

TuningRecord parse_record(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception&) {
    throw Error("not JSON (a torn or corrupt line)");
  }
  if (!j.is_object() || j.value("format", "") != "tyche.record") throw Error("not a tyche.record");
  int version = field<int>(j, "version", "record");
  if (version != kRecordVersion)
    throw Error(fmt::format("record version {} (this build reads {})", version, kRecordVersion));
  TuningRecord r;
  json w = field<json>(j, "workload", "record");
  r.workload.name = field<std::string>(w, "name", "workload");
  r.workload.extents = field<std::string>(w, "extents", "workload");
  r.workload.hash = parse_hex(field<std::string>(w, "hash", "workload"));
  r.workload.shape = w.value("shape", "");
  r.workload.flop = w.value("flop", 0.0);
  r.workload.dtypes = w.value("dtypes", "");
  json trace = field<json>(j, "trace", "record");
  if (!trace.is_object()) throw Error("record: \"trace\" is not an object");
  r.trace_json = trace.dump();
  json t = field<json>(j, "target", "record");
  r.target.kind = field<std::string>(t, "kind", "target");
  r.target.num_cores = field<int>(t, "num_cores", "target");
  r.target.cpu = t.value("cpu", "host");
  r.target.llvm_cpu = t.value("llvm_cpu", "");
  r.target.cpu_model = t.value("cpu_model", "");
  r.target.features = t.value("features", "");
  r.target.timing = t.value("timing", "");
  if (!r.target.timing.empty() && r.target.timing != "cold" && r.target.timing != "llc" &&
      r.target.timing != "mixed")
    throw Error(fmt::format("record: unknown timing '{}'", r.target.timing));
  if (j.contains("program") && !j["program"].is_null())
    r.program = parse_hex(field<std::string>(j, "program", "record"));
  r.seconds = field<std::vector<double>>(j, "seconds", "record");
  for (double s : r.seconds)
    if (!(s > 0) || !std::isfinite(s))
      throw Error("record: a measured time is not a positive number");
  if (j.contains("error") && !j["error"].is_null())
    r.error = field<std::string>(j, "error", "record");
  if (r.error.empty() && r.seconds.empty()) throw Error("record: neither times nor an error");
  r.measured_at = j.value("measured_at", "");
  if (j.contains("confirmed")) r.confirmed = field<bool>(j, "confirmed", "record");
  return r;
}

RecordFile read_records(const std::string& path) {
  RecordFile out;
  std::vector<std::string> lines = read_lines(path);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.records.push_back(parse_record(lines[i]));
      out.lines.push_back(static_cast<int>(i + 1));
    } catch (const Error& e) {
      ++out.skipped;
      if (out.warnings.size() < kMaxWarnings)
        out.warnings.push_back(fmt::format("{}:{}: skipped: {}", path, i + 1, e.what()));
    }
  }
  return out;
}

void append_records(const std::string& path, const std::vector<TuningRecord>& records) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    throw Error(fmt::format("cannot append to '{}': compressed record files are read-only", path));
  std::string text;
  for (const TuningRecord& r : records) text += to_json_line(r) + "\n";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(fmt::format("cannot write records file '{}': {}", path, std::strerror(errno)));
  // A line torn by a crash gets its newline first, so the new lines stay whole.
  off_t size = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (size > 0 && ::pread(fd, &last, 1, size - 1) == 1 && last != '\n' &&
      ::write(fd, "\n", 1) != 1) {
    ::close(fd);
    throw Error(fmt::format("cannot write records file '{}'", path));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      throw Error(fmt::format("cannot write records file '{}': {}", path, std::strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

std::string target_key(const RecordTarget& t) {
  std::string key = fmt::format("{}|{}|{}|{}|{:016x}", t.kind, t.num_cores, t.cpu, t.llvm_cpu,
                                hash_string(t.features));
  return t.timing.empty() ? key : key + "|" + t.timing;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tyche::tune
