#include "tune/database/database.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/error.h"

namespace tyche::tune {

using json = nlohmann::json;

namespace {

void append_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  std::string text = line + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::fsync(fd);
  ::close(fd);
  if (!ok) throw Error(fmt::format("cannot write '{}'", path));
}

json workload_json(const RecordWorkload& w) {
  json j = {{"format", "tyche.workload"}, {"name", w.name},
            {"extents", w.extents},       {"hash", fmt::format("{:016x}", w.hash)},
            {"shape", w.shape},           {"flop", w.flop}};
  if (!w.dtypes.empty()) j["dtypes"] = w.dtypes;
  return j;
}

RecordWorkload parse_workload(const std::string& line) {
  json j = json::parse(line);  // throws on a torn or corrupt line
  if (!j.is_object() || j.value("format", "") != "tyche.workload")
    throw Error("not a tyche.workload line");
  RecordWorkload w;
  w.name = j.at("name").get<std::string>();
  w.extents = j.at("extents").get<std::string>();
  std::string hash = j.at("hash").get<std::string>();
  if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw Error("bad hash");
  w.hash = std::stoull(hash, nullptr, 16);
  w.shape = j.value("shape", "");
  w.flop = j.value("flop", 0.0);
  w.dtypes = j.value("dtypes", "");
  return w;
}

}  // namespace

Database::Database(std::string dir, OpenMode mode) : dir_(std::move(dir)), mode_(mode) {
  std::error_code ec;
  if (read_only()) {
    if (!std::filesystem::is_directory(dir_, ec))
      throw Error(fmt::format("no tuning database at '{}'", dir_));
  } else {
    std::filesystem::create_directories(dir_, ec);
    if (ec || !std::filesystem::is_directory(dir_))
      throw Error(fmt::format("cannot create database directory '{}'", dir_));
  }
  workloads_path_ = (std::filesystem::path(dir_) / "workloads.jsonl").string();
  records_path_ = (std::filesystem::path(dir_) / "records.jsonl").string();
  if (!read_only()) {
    for (const std::string& p : {workloads_path_, records_path_}) {
      int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd < 0)
        throw Error(fmt::format("cannot write database file '{}': {}", p, std::strerror(errno)));
      ::close(fd);
    }
  }
  // Workloads: a torn last line is what a crash leaves (it is cut off, so the next line written
  // is whole); anything else bad is a corrupt file.
  std::vector<std::string> lines;
  if (!read_only() || std::filesystem::exists(workloads_path_, ec)) {
    std::ifstream in(workloads_path_);
    if (!in) throw Error(fmt::format("cannot read database file '{}'", workloads_path_));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  uintmax_t offset = 0;
  for (size_t i = 0; i < lines.size(); offset += lines[i].size() + 1, ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      RecordWorkload w = parse_workload(lines[i]);
      if (!has_workload(w.hash)) workloads_.push_back(w);
    } catch (const std::exception&) {
      if (i + 1 == lines.size()) {
        if (read_only()) {
          warnings_.push_back(
              fmt::format("{}:{}: skipped a truncated last line", workloads_path_, i + 1));
        } else {
          warnings_.push_back(
              fmt::format("{}:{}: removed a truncated last line", workloads_path_, i + 1));
          std::filesystem::resize_file(workloads_path_, offset, ec);
        }
        continue;
      }
      throw Error(fmt::format("database workloads file '{}' is corrupt at line {}", workloads_path_,
                              i + 1));
    }
  }
  if (read_only() && !std::filesystem::exists(records_path_, ec)) return;
  RecordFile f = read_records(records_path_);
  records_ = std::move(f.records);
  record_lines_ = std::move(f.lines);
  skipped_ = f.skipped;
  for (std::string& w : f.warnings) warnings_.push_back(std::move(w));
}

void Database::check_writable() const {
  if (read_only()) throw Error(fmt::format("the database at '{}' was opened read-only", dir_));
}

int Database::line_of(const TuningRecord* record) const {
  if (records_.empty() || record < records_.data() || record >= records_.data() + records_.size())
    return 0;
  auto i = static_cast<size_t>(record - records_.data());
  return i < record_lines_.size() ? record_lines_[i] : 0;
}

bool Database::has_workload(uint64_t hash) const {
  return std::any_of(workloads_.begin(), workloads_.end(),
                     [&](const RecordWorkload& w) { return w.hash == hash; });
}

void Database::add_workload(const RecordWorkload& workload) {
  check_writable();
  if (has_workload(workload.hash)) return;
  append_line(workloads_path_, workload_json(workload).dump());
  workloads_.push_back(workload);
}

void Database::add_records(const std::vector<TuningRecord>& records) {
  check_writable();
  if (records.empty()) return;
  append_records(records_path_, records);
  records_.insert(records_.end(), records.begin(), records.end());
}

std::vector<const TuningRecord*> Database::records_of(uint64_t workload,
                                                      const std::string& target) const {
  std::vector<const TuningRecord*> out;
  for (const TuningRecord& r : records_)
    if (r.workload.hash == workload && target_key(r.target) == target) out.push_back(&r);
  return out;
}

std::vector<const TuningRecord*> Database::latest_of(uint64_t workload,
                                                     const std::string& target) const {
  std::vector<const TuningRecord*> out = records_of(workload, target);
  std::unordered_map<uint64_t, size_t> first;  // program -> its slot in out
  size_t n = 0;
  for (const TuningRecord* r : out) {
    if (r->program == 0) {  // not recorded: every such record is a program of its own
      out[n++] = r;
      continue;
    }
    auto [it, inserted] = first.try_emplace(r->program, n);
    if (inserted)
      out[n++] = r;
    else
      out[it->second] = r;
  }
  out.resize(n);
  return out;
}

std::vector<const TuningRecord*> Database::best(uint64_t workload, const std::string& target,
                                                int k) const {
  std::vector<const TuningRecord*> out;
  for (const TuningRecord* r : latest_of(workload, target))
    if (r->ok()) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const TuningRecord* a, const TuningRecord* b) {
    if (a->confirmed != b->confirmed) return a->confirmed;
    return a->typical_seconds() < b->typical_seconds();
  });
  if (k >= 0 && out.size() > static_cast<size_t>(k)) out.resize(static_cast<size_t>(k));
  return out;
}

}  // namespace tyche::tune
