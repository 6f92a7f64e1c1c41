// The cost model: learns from measured candidates which programs are fast and scores new ones,
// so search measures only the promising. As in MetaSchedule, a candidate's score is the sum of
// its stores' predictions and the target is its throughput normalized by the best seen for its
// workload (1 for the best, 0 for a failure); scores compare candidates of one workload.
//
// Two models: random (ablations, and what search uses before there is data) and XGBoost
// (xgboost_model.cc). A model saves to one JSON file; the file records the feature layout and a
// model of another layout is refused on load.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/function.h"
#include "schedule/trace.h"
#include "tune/feature/per_store_feature.h"

namespace tyche::tune {

// A candidate as the model sees it: the program that would be compiled (scheduled and
// postprocessed) and the workload it implements (the structural hash of the unscheduled function).
struct ModelCandidate {
  uint64_t workload = 0;
  ir::PrimFunc program;
  bool is_gpu = false;
  // When set, the program's lowering and features, computed once and shared (a tuning candidate
  // is scored, then learned from, then built); else features are extracted from `program`.
  LoweredProgramPtr lowered = nullptr;
  // When set, the design-space trace (with its decisions) the program was replayed from: what a
  // model written in Python is given (python/tyche/strategy.py) instead of the program.
  std::shared_ptr<const schedule::Trace> trace = nullptr;
};

// The same, as features.
struct ModelInput {
  uint64_t workload = 0;
  FeatureRows features;
};

// Features of many candidates, on `threads` threads (0: all hardware threads).
std::vector<ModelInput> extract_features(const std::vector<ModelCandidate>& candidates,
                                         int threads = 0);

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Learns from measured candidates: seconds[i] is the mean run time of candidate i, or not a
  // positive finite number if it failed (build or run error, wrong result, timeout).
  virtual void update(const std::vector<ModelCandidate>& candidates,
                      const std::vector<double>& seconds);
  // One score per candidate; higher is faster.
  virtual std::vector<double> predict(const std::vector<ModelCandidate>& candidates);
  virtual void update_features(const std::vector<ModelInput>& inputs,
                               const std::vector<double>& seconds) = 0;
  virtual std::vector<double> predict_features(const std::vector<ModelInput>& inputs) = 0;
  // Throws tyche::Error if the file cannot be written.
  virtual void save(const std::string& path) const = 0;

 protected:
  int threads_ = 0;  // for feature extraction, training and prediction
};

struct XGBoostOptions {
  int max_depth = 10;
  double eta = 0.2;
  double gamma = 0.001;
  double min_child_weight = 0;
  int max_rounds = 300;
  int early_stopping_rounds = 50;  // rounds without a better held-out top-k score
  int top_k = 32;                  // the held-out metric's k
  double validation_fraction = 0.2;
  int min_measured = 100;  // fewer measured candidates (and no loaded model): random scores
  int threads = 0;  // 0: all hardware threads; the tuner passes those it does not measure with
  uint64_t seed = 0;
};

std::unique_ptr<CostModel> make_random_model(uint64_t seed = 0);
std::unique_ptr<CostModel> make_xgboost_model(const XGBoostOptions& options = {});
// A model saved by save() (random or XGBoost, as the file says); a loaded XGBoost model scores
// from the start and goes on learning from what it is given. Throws tyche::Error for a missing
// or corrupt file and for a model of another feature layout.
std::unique_ptr<CostModel> load_cost_model(const std::string& path,
                                           const XGBoostOptions& options = {});

// Throughputs normalized per workload: best time / time (1 for the fastest of its workload),
// 0 for failures. The training target.
std::vector<double> normalized_throughputs(const std::vector<uint64_t>& workloads,
                                           const std::vector<double>& seconds);

}  // namespace tyche::tune
