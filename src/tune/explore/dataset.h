// Tuning records as training data for the cost model: each record's workload is rebuilt
// (workloads::resolve) and checked against the structural hash the record carries, its trace is
// replayed and postprocessed for its target, and the program's features are extracted. Records
// that do not replay (another version of the rules, a workload that hashes differently now) are
// skipped with a warning and counted, as unreadable lines are.
#pragma once

#include <string>
#include <vector>

#include "tune/cost_model/cost_model.h"

namespace tyche::tune {

struct Dataset {
  std::vector<ModelInput> inputs;
  std::vector<double> seconds;              // mean run time; NaN for a failed record
  std::vector<std::string> workload_names;  // per sample ("GMM-4")
  int skipped = 0;                          // lines or records that could not be used
  std::vector<std::string> warnings;        // the first few reasons

  size_t size() const { return inputs.size(); }
  // The samples of one workload (by name), or of every other one.
  Dataset subset(const std::string& workload, bool others = false) const;
  Dataset pick(const std::vector<size_t>& indices) const;
  std::vector<std::string> workloads() const;  // names, in order of first appearance
};

// Reads the record files (plain or .gz); feature extraction runs on `threads` threads.
Dataset load_dataset(const std::vector<std::string>& record_files, int threads = 0);

}  // namespace tyche::tune
