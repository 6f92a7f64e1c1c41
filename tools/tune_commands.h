// The tuning commands of `tyche`: sample-measure (records of sampled candidates), tune (search for
// workloads' fastest programs) and model train / eval (the cost model on records).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "tune/explore/dataset.h"

namespace tyche::tools {

class TuneCommands {
 public:
  explicit TuneCommands(CLI::App& app);
  // Whether the command given is one of these.
  bool parsed() const;
  int run();

 private:
  int cmd_sample_measure();
  int cmd_tune();
  int cmd_model_train();
  int cmd_model_eval();
  // Loads the records (warning about what was skipped) for model training and evaluation.
  tune::Dataset load_records() const;

  CLI::App* sample_measure_ = nullptr;
  CLI::App* tune_ = nullptr;
  CLI::App* model_train_ = nullptr;
  CLI::App* model_eval_ = nullptr;
  std::string workload_, extents_, dtypes_, json_file_, cpu_;
  std::string target_ = "llvm";
  int64_t seed_ = 0;
  int population_ = 0;  // 0: the search's default
  int generations_ = 0;
  int threads_ = 0;
  int batch_ = 0;  // 0: the command's default (sample-measure 32, tune 64)
  double timeout_ = 10;
  // sample-measure, model
  std::vector<std::string> records_;
  int samples_ = 100;
  std::string model_, output_;
  int top_k_ = 32;
  // tune
  std::vector<std::string> workload_list_;
  int trials_ = 1000;
  int confirm_ = 16;  // leaders timed again at the end
  std::string db_, strategy_ = "evolutionary", acceptance_ = "eps-greedy", cost_model_ = "xgb",
                   scheduler_ = "gradient";
  bool no_warm_start_ = false;
};

}  // namespace tyche::tools
