// Tuning records: one measured candidate a line (JSON lines), the format the dataset, pre-training
// and the tuning database share.
//
//   {"format": "tyche.record", "version": 1,
//    "workload": {"name": "GMM-4", "extents": "", "hash": "<16 hex digits>", "shape": "B=1,...",
//    "flop": 2.1e9}, "trace": {...},               // the design-space trace with its decisions
//    (Trace::to_json),
//                                  // before the postprocessors, which run again on replay
//    "target": {"kind": "llvm", "num_cores": 2, "cpu": "host", "llvm_cpu": "sapphirerapids",
//               "cpu_model": "Intel(R) Xeon(R) ...", "features": "+adx,+aes,..."},
//               (and "timing": "cold" or "llc" for candidates timed with evicted caches; absent:
//               warm)
//    "program": "<16 hex digits>",          // structural hash of the program measured (optional)
//    "seconds": [0.0123, 0.0121, 0.0125],   // every timed repeat (empty on error)
//    "error": null,                         // or why it was not measured (build, run, wrong
//    result) "measured_at": "2026-12-01T07:00:00Z", "confirmed": true}                     //
//    optional: one of a tune's leaders, measured again
//                                           // at its end, interleaved with the others
//
// The workload is what workloads::resolve(name, extents, dtypes) rebuilds; its structural hash says
// the rebuilt function is the one that was measured. Appends write whole lines; a reader skips a
// line it cannot parse (a torn last line after a crash, a corrupt file) with a warning and counts
// it, never failing on it. Files ending in .gz are read through zlib.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tyche::tune {

inline constexpr int kRecordVersion = 1;

struct RecordWorkload {
  std::string name, extents;  // workloads::resolve's arguments, with dtypes
  uint64_t hash = 0;          // ir::structural_hash of the unscheduled function
  std::string shape;
  double flop = 0;
  std::string dtypes;  // index notation's element types (Workload::dtypes); "dtypes" in JSON,
                       // absent when empty
};

struct RecordTarget {
  std::string kind = "llvm";
  int num_cores = 1;
  std::string cpu = "host";  // what code was generated for (target/cpu.h)
  std::string llvm_cpu, cpu_model, features;
  // How the candidates were timed: "" warm (repeated back to back, caches warm: an operator
  // tuned on its own), "cold" (every argument evicted from the caches before each run, as a
  // model's task meets weights too large for the last-level cache) or "llc" (the private caches
  // evicted before each run: the arguments wait in the last-level cache). Times of the two do not
  // compare, so it is part of target_key.
  std::string timing;
};

struct TuningRecord {
  RecordWorkload workload;
  std::string trace_json;  // Trace::to_json()
  RecordTarget target;
  uint64_t program = 0;         // structural hash of the postprocessed program; 0: not recorded
  std::vector<double> seconds;  // every timed repeat
  std::string error;            // empty when measured
  std::string measured_at;      // ISO 8601, UTC
  bool confirmed = false;       // measured again among a tune's leaders (database.h)

  bool ok() const { return error.empty() && !seconds.empty(); }
  // The median of the timed runs: what candidates are ranked by. A shared host stalls a short
  // kernel's run now and then for far longer than the kernel (MobileNet-v2's tasks, timed one
  // call at a time: 3% of runs, +0.5-5 ms on 10-100 us); the mean turned one stall into a
  // slower program.
  double typical_seconds() const;  // +inf unless ok()
};

// One line, without the newline. Throws tyche::Error if trace_json is not JSON.
std::string to_json_line(const TuningRecord& record);
// Throws tyche::Error (one line saying what is wrong) for a line that is not a record.
TuningRecord parse_record(const std::string& line);

struct RecordFile {
  std::vector<TuningRecord> records;
  std::vector<int> lines;             // each record's line in the file (1-based), for messages
  int skipped = 0;                    // lines that were not records
  std::vector<std::string> warnings;  // "FILE:LINE: why", one per skipped line (the first 20)
};

// Reads every record of `path` (plain or .gz). Throws tyche::Error only if the file cannot be
// opened; bad lines are skipped and counted.
RecordFile read_records(const std::string& path);
// Appends whole lines and syncs them to disk: a crash loses at most what this call was writing.
// Throws tyche::Error if the file cannot be written (a .gz file cannot be appended to).
void append_records(const std::string& path, const std::vector<TuningRecord>& records);

// What records are compared by: the kind, cores, CPU and its features (records of one machine
// and code generation setting share it).
std::string target_key(const RecordTarget& target);

// The current time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

}  // namespace tyche::tune
