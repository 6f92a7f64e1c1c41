// The tuning database: a directory of two JSON-lines files,
//   workloads.jsonl  one line per workload tuned (name, extents, structural hash, shape, FLOP);
//   records.jsonl    one tuning record per measured candidate (record.h).
// Records are keyed by their workload's structural hash and their target (target_key). Appends
// are whole lines, flushed and synced once per measured batch, so a crash or kill -9 loses at
// most the batch being measured; a truncated last line is skipped with a warning. A workloads file
// with any other bad line is refused: it names what the records belong to.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tune/database/record.h"

namespace tyche::tune {

// kReadOnly is for commands that only read (run, show, export, run-model, export-model with
// --db): nothing in DIR is created, locked, truncated or written, so a database on a read-only
// disk or of another user is usable; the adding methods then throw.
enum class OpenMode { kReadWrite, kReadOnly };

class Database {
 public:
  // Opens DIR, creating it and its files if missing. Throws tyche::Error if it cannot be created
  // or written, or if its workloads file is corrupt. Read-only: DIR must exist (its missing
  // files read as empty), and a truncated last line of the workloads file is skipped, not cut off.
  explicit Database(std::string dir, OpenMode mode = OpenMode::kReadWrite);

  const std::string& dir() const { return dir_; }
  bool read_only() const { return mode_ == OpenMode::kReadOnly; }
  const std::string& records_path() const { return records_path_; }
  // Lines of the records file that were skipped, with the first few reasons.
  int skipped() const { return skipped_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Records the workload once (by hash). Both throw on a read-only database.
  void add_workload(const RecordWorkload& workload);
  bool has_workload(uint64_t hash) const;
  const std::vector<RecordWorkload>& workloads() const { return workloads_; }
  // Appends and syncs a batch.
  void add_records(const std::vector<TuningRecord>& records);

  const std::vector<TuningRecord>& records() const { return records_; }
  // The line of records.jsonl that `record` (one of records()) was read from; 0 for one added
  // since.
  int line_of(const TuningRecord* record) const;
  // The records of a workload on a target, in the order measured.
  std::vector<const TuningRecord*> records_of(uint64_t workload, const std::string& target) const;
  // The same, a program measured more than once (a tune measures its leaders again at the end)
  // counting by its latest record only, which stands where the program was first measured.
  std::vector<const TuningRecord*> latest_of(uint64_t workload, const std::string& target) const;
  // The k fastest measured programs of a workload on a target (by their latest records), fastest
  // first; confirmed ones (measured again at the end of a tune, interleaved: record.h) rank ahead
  // of the rest, whose single measurement may have fallen on a quiet moment of a shared host.
  std::vector<const TuningRecord*> best(uint64_t workload, const std::string& target, int k) const;

 private:
  void check_writable() const;

  std::string dir_, workloads_path_, records_path_;
  OpenMode mode_ = OpenMode::kReadWrite;
  std::vector<RecordWorkload> workloads_;
  std::vector<TuningRecord> records_;
  std::vector<int> record_lines_;  // records_[i] was read from line record_lines_[i]
  int skipped_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace tyche::tune
