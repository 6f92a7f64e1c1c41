// The XGBoost cost model, through XGBoost's C API. Every store of a candidate is a row; a
// candidate's score is the sum of its rows' outputs. Training boosts trees with a custom
// objective: the squared error between a candidate's sum and its normalized throughput y, every
// row of a candidate getting its candidate's gradient. (Weighting candidates by y, to favour the
// fast ones, ranked GMM-4's held-out candidates worse, top 32 included, so it is not done.)
// Each update retrains on everything measured: early stopping on a held-out fifth's top-k score
// (how fast the k best-scored of a workload are, next to the truly best k) chooses the number of
// rounds, then all candidates train that many. A loaded model is the starting point: new trees
// are boosted on top of its trees.
#include <fmt/format.h>
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>
#include <unordered_map>

#include "support/error.h"
#include "tune/cost_model/cost_model.h"
#include "tune/cost_model/model_file.h"

namespace tyche::tune {

using json = nlohmann::json;

namespace {

void xgb(int rc, const char* what) {
  if (rc != 0) throw Error(fmt::format("xgboost: {}: {}", what, XGBGetLastError()));
}

class DMatrix {
 public:
  DMatrix() = default;
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  ~DMatrix() {
    if (h_) XGDMatrixFree(h_);
  }
  // The rows of `inputs` (all their stores), in order.
  void build(const std::vector<const ModelInput*>& inputs, int threads) {
    std::vector<float> data;
    bst_ulong rows = 0;
    for (const ModelInput* in : inputs) {
      data.insert(data.end(), in->features.values.begin(), in->features.values.end());
      rows += static_cast<bst_ulong>(in->features.rows);
    }
    if (rows == 0) {  // XGBoost refuses an empty matrix: one row of zeros stands in
      data.assign(static_cast<size_t>(feature_count()), 0.0f);
      rows = 1;
    }
    xgb(XGDMatrixCreateFromMat_omp(data.data(), rows, static_cast<bst_ulong>(feature_count()),
                                   std::nanf(""), &h_, threads),
        "creating a matrix");
  }
  DMatrixHandle get() const { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

class Booster {
 public:
  Booster() = default;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  Booster(Booster&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Booster& operator=(Booster&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Booster() {
    if (h_) XGBoosterFree(h_);
  }
  // Takes ownership of `h`.
  void reset(BoosterHandle h) {
    if (h_) XGBoosterFree(h_);
    h_ = h;
  }
  void create(std::vector<DMatrixHandle> cache) {
    xgb(XGBoosterCreate(cache.data(), static_cast<bst_ulong>(cache.size()), &h_),
        "creating a booster");
  }
  void set(const char* key, const std::string& value) {
    xgb(XGBoosterSetParam(h_, key, value.c_str()), key);
  }
  BoosterHandle get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

  std::string save() const {
    bst_ulong len = 0;
    const char* buf = nullptr;
    xgb(XGBoosterSaveModelToBuffer(h_, R"({"format": "json"})", &len, &buf), "saving");
    return std::string(buf, len);
  }
  void load(const std::string& model) {
    xgb(XGBoosterLoadModelFromBuffer(h_, model.data(), model.size()), "loading");
  }
  int rounds() const {
    int r = 0;
    xgb(XGBoosterBoostedRounds(h_, &r), "counting rounds");
    return r;
  }
  // Raw outputs (margins), one per row.
  std::vector<float> predict(const DMatrix& m, bool training) const {
    bst_ulong len = 0;
    const float* out = nullptr;
    xgb(XGBoosterPredict(h_, m.get(), /*output margin*/ 1, 0, training ? 1 : 0, &len, &out),
        "predicting");
    return std::vector<float>(out, out + len);
  }

 private:
  BoosterHandle h_ = nullptr;
};

// Per candidate, the sum of its rows.
std::vector<double> sum_rows(const std::vector<float>& rows,
                             const std::vector<const ModelInput*>& inputs) {
  std::vector<double> out;
  size_t r = 0;
  for (const ModelInput* in : inputs) {
    double s = 0;
    for (int i = 0; i < in->features.rows; ++i) s += rows[r++];
    out.push_back(s);
  }
  return out;
}

// How good the k best-scored candidates of each workload are: the sum of their normalized
// throughputs over that of the truly best k (1 when the model's top k is the true top k), averaged
// over workloads weighted by their candidates. MetaSchedule's "average peak" at k, made relative.
double top_k_score(const std::vector<double>& scores, const std::vector<double>& y,
                   const std::vector<uint64_t>& workloads, int k) {
  std::unordered_map<uint64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < y.size(); ++i) groups[workloads[i]].push_back(i);
  double total = 0, weight = 0;
  for (auto& [w, idx] : groups) {
    size_t kk = std::min(idx.size(), static_cast<size_t>(std::max(k, 1)));
    std::vector<double> ys;
    for (size_t i : idx) ys.push_back(y[i]);
    std::sort(ys.rbegin(), ys.rend());
    double ideal = std::accumulate(ys.begin(), ys.begin() + static_cast<std::ptrdiff_t>(kk), 0.0);
    if (ideal <= 0) continue;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    double got = 0;
    for (size_t t = 0; t < kk; ++t) got += y[idx[t]];
    total += got / ideal * static_cast<double>(idx.size());
    weight += static_cast<double>(idx.size());
  }
  return weight > 0 ? total / weight : 0;
}

class XGBoostModel : public CostModel {
 public:
  explicit XGBoostModel(const XGBoostOptions& options)
      : options_(options), fallback_(make_random_model(options.seed)) {
    threads_ = options.threads > 0
                   ? options.threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  std::string name() const override { return "xgboost"; }

  void update_features(const std::vector<ModelInput>& inputs,
                       const std::vector<double>& seconds) override {
    if (inputs.size() != seconds.size())
      throw Error(
          fmt::format("cost model: {} candidates but {} results", inputs.size(), seconds.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      data_.push_back(inputs[i]);
      seconds_.push_back(seconds[i]);
    }
    if (static_cast<int>(data_.size()) >= options_.min_measured) train();
  }

  std::vector<double> predict(const std::vector<ModelCandidate>& candidates) override {
    if (!booster_) return fallback_->predict(candidates);  // random scores need no features
    return CostModel::predict(candidates);
  }

  std::vector<double> predict_features(const std::vector<ModelInput>& inputs) override {
    if (!booster_) return fallback_->predict_features(inputs);
    std::vector<const ModelInput*> ptrs;
    for (const ModelInput& in : inputs) ptrs.push_back(&in);
    DMatrix m;
    m.build(ptrs, threads_);
    return sum_rows(booster_.predict(m, false), ptrs);
  }

  void save(const std::string& path) const override {
    json m = detail::model_envelope("xgboost");
    m["params"] = params_json();
    m["measured"] = data_.size() + pretrained_measured_;
    m["booster"] = booster_ ? json::parse(booster_.save()) : json(nullptr);
    detail::write_model_file(path, m);
  }

  void load(const json& m) {
    pretrained_measured_ = m.value("measured", size_t{0});
    if (!m.contains("booster") || m["booster"].is_null()) return;
    base_ = m["booster"].dump();
    booster_ = Booster();
    booster_.create({});
    booster_.load(base_);
    booster_.set("nthread", std::to_string(threads_));
  }

 private:
  json params_json() const {
    return {{"max_depth", options_.max_depth},
            {"eta", options_.eta},
            {"gamma", options_.gamma},
            {"min_child_weight", options_.min_child_weight},
            {"objective", "pack-sum squared error on normalized throughput"}};
  }

  void set_params(Booster& b) const {
    b.set("booster", "gbtree");
    b.set("tree_method", "hist");
    b.set("max_depth", std::to_string(options_.max_depth));
    b.set("eta", fmt::format("{}", options_.eta));
    b.set("gamma", fmt::format("{}", options_.gamma));
    b.set("min_child_weight", fmt::format("{}", options_.min_child_weight));
    b.set("base_score", "0");
    b.set("disable_default_eval_metric", "1");
    b.set("nthread", std::to_string(threads_));
    b.set("seed", std::to_string(options_.seed % 2147483647));
    b.set("verbosity", "0");
  }

  // Candidates as XGBoost sees them: their rows, targets and workloads.
  struct Split {
    std::vector<const ModelInput*> inputs;
    std::vector<double> y;
    std::vector<uint64_t> workloads;
  };

  Split split_of(const std::vector<size_t>& idx, const std::vector<double>& y) const {
    Split out;
    for (size_t i : idx) {
      out.inputs.push_back(&data_[i]);
      out.y.push_back(y[i]);
      out.workloads.push_back(data_[i].workload);
    }
    return out;
  }

  // Boosts up to `rounds` rounds on `train` (on top of the loaded model, if any). With `val`,
  // stops once its top-k score has not improved for early_stopping_rounds and returns the
  // number of rounds that scored best; without, runs them all.
  int boost(Booster& b, const Split& train, const Split* val, int rounds) const {
    DMatrix dtrain, dval;
    dtrain.build(train.inputs, threads_);
    if (val) dval.build(val->inputs, threads_);
    std::vector<DMatrixHandle> cache = {dtrain.get()};
    if (val) cache.push_back(dval.get());
    b.create(cache);
    if (!base_.empty()) b.load(base_);
    set_params(b);
    // Every row of a candidate gets the candidate's gradient: d/dp (sum - y)^2.
    std::vector<size_t> owner;
    for (size_t c = 0; c < train.inputs.size(); ++c)
      owner.insert(owner.end(), static_cast<size_t>(train.inputs[c]->features.rows), c);
    std::vector<float> grad(owner.size()), hess(owner.size(), 2.0f);
    double best = -1;
    int best_rounds = rounds;
    for (int round = 0; round < rounds && !owner.empty(); ++round) {
      std::vector<double> sums = sum_rows(b.predict(dtrain, true), train.inputs);
      for (size_t r = 0; r < owner.size(); ++r)
        grad[r] = static_cast<float>(2 * (sums[owner[r]] - train.y[owner[r]]));
      xgb(XGBoosterBoostOneIter(b.get(), dtrain.get(), grad.data(), hess.data(), owner.size()),
          "boosting");
      if (!val) continue;
      double score = top_k_score(sum_rows(b.predict(dval, false), val->inputs), val->y,
                                 val->workloads, options_.top_k);
      if (score > best + 1e-12) {
        best = score;
        best_rounds = round + 1;
      } else if (options_.early_stopping_rounds > 0 &&
                 round + 1 - best_rounds >= options_.early_stopping_rounds) {
        break;
      }
    }
    return best_rounds;
  }

  // Finds the number of rounds on a held-out fifth (by its top-k score), then trains on all
  // candidates for that many rounds. Too few candidates to hold any out: all rounds on all.
  void train() {
    std::vector<uint64_t> workloads;
    for (const ModelInput& in : data_) workloads.push_back(in.workload);
    std::vector<double> y = normalized_throughputs(workloads, seconds_);
    std::vector<size_t> order(data_.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(options_.seed + data_.size());
    std::shuffle(order.begin(), order.end(), rng);
    size_t held = static_cast<size_t>(
        std::llround(options_.validation_fraction * static_cast<double>(data_.size())));
    int rounds = options_.max_rounds;
    if (held >= 10) {
      Split val = split_of({order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held)}, y);
      Split rest = split_of({order.begin() + static_cast<std::ptrdiff_t>(held), order.end()}, y);
      Booster probe;
      rounds = boost(probe, rest, &val, options_.max_rounds);
    }
    Booster b;
    boost(b, split_of(order, y), nullptr, rounds);
    booster_ = std::move(b);
    booster_.set("nthread", std::to_string(threads_));
  }

  XGBoostOptions options_;
  std::unique_ptr<CostModel> fallback_;
  std::vector<ModelInput> data_;
  std::vector<double> seconds_;
  Booster booster_;
  std::string base_;  // the loaded model, which training starts from
  size_t pretrained_measured_ = 0;
};

}  // namespace

std::unique_ptr<CostModel> make_xgboost_model(const XGBoostOptions& options) {
  return std::make_unique<XGBoostModel>(options);
}

namespace detail {

std::unique_ptr<CostModel> load_xgboost_model(const json& model, const std::string& path,
                                              const XGBoostOptions& options) {
  auto m = std::make_unique<XGBoostModel>(options);
  try {
    m->load(model);
  } catch (const Error& e) {
    throw Error(fmt::format("model file '{}': {}", path, e.what()));
  }
  return m;
}

}  // namespace detail

}  // namespace tyche::tune
