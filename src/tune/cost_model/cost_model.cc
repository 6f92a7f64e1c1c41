#include "tune/cost_model/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "support/error.h"
#include "support/random.h"
#include "tune/cost_model/model_file.h"

namespace tyche::tune {

using json = nlohmann::json;

std::vector<ModelInput> extract_features(const std::vector<ModelCandidate>& candidates,
                                         int threads) {
  std::vector<ModelInput> out(candidates.size());
  int n =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = static_cast<int>(std::min<size_t>(static_cast<size_t>(n), candidates.size()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < candidates.size();) {
      const ModelCandidate& c = candidates[i];
      out[i] = {c.workload, c.lowered ? c.lowered->features()
                                      : per_store_features(c.program, {.is_gpu = c.is_gpu})};
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

void CostModel::update(const std::vector<ModelCandidate>& candidates,
                       const std::vector<double>& seconds) {
  if (candidates.size() != seconds.size())
    throw Error(
        fmt::format("cost model: {} candidates but {} results", candidates.size(), seconds.size()));
  update_features(extract_features(candidates, threads_), seconds);
}

std::vector<double> CostModel::predict(const std::vector<ModelCandidate>& candidates) {
  return predict_features(extract_features(candidates, threads_));
}

std::vector<double> normalized_throughputs(const std::vector<uint64_t>& workloads,
                                           const std::vector<double>& seconds) {
  auto ok = [](double s) { return s > 0 && std::isfinite(s); };
  std::unordered_map<uint64_t, double> best;
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (!ok(seconds[i])) continue;
    auto [it, fresh] = best.emplace(workloads[i], seconds[i]);
    if (!fresh) it->second = std::min(it->second, seconds[i]);
  }
  std::vector<double> y(seconds.size(), 0.0);
  for (size_t i = 0; i < seconds.size(); ++i)
    if (ok(seconds[i])) y[i] = best[workloads[i]] / seconds[i];
  return y;
}

namespace detail {

json model_envelope(const std::string& kind) {
  return {{"format", "tyche.cost_model"},
          {"version", kModelFileVersion},
          {"kind", kind},
          {"feature_layout",
           {{"version", kFeatureLayoutVersion},
            {"hash", fmt::format("{:016x}", feature_layout_hash())},
            {"count", feature_count()}}}};
}

void write_model_file(const std::string& path, const json& model) {
  std::ofstream out(path);
  if (!out || !(out << model.dump() << "\n") || !out.flush())
    throw Error(fmt::format("cannot write model file '{}'", path));
}

void check_feature_layout(const json& model, const std::string& path) {
  const json* layout = model.contains("feature_layout") ? &model["feature_layout"] : nullptr;
  int version = layout ? layout->value("version", -1) : -1;
  int count = layout ? layout->value("count", -1) : -1;
  std::string hash = layout ? layout->value("hash", "") : "";
  if (version != kFeatureLayoutVersion || count != feature_count() ||
      hash != fmt::format("{:016x}", feature_layout_hash()))
    throw Error(
        fmt::format("model '{}' was trained on feature layout {} ({} features); this build "
                    "extracts layout {} ({} "
                    "features): retrain it",
                    path, version, count, kFeatureLayoutVersion, feature_count()));
}

}  // namespace detail

namespace {

class RandomModel : public CostModel {
 public:
  explicit RandomModel(uint64_t seed)
      : seed_(seed), rng_(static_cast<int64_t>(seed & 0x7fffffffffffffffULL)) {}
  std::string name() const override { return "random"; }
  void update_features(const std::vector<ModelInput>&, const std::vector<double>&) override {}
  void update(const std::vector<ModelCandidate>&, const std::vector<double>&) override {}
  std::vector<double> predict_features(const std::vector<ModelInput>& inputs) override {
    return draw(inputs.size());
  }
  // Needs no features.
  std::vector<double> predict(const std::vector<ModelCandidate>& candidates) override {
    return draw(candidates.size());
  }
  void save(const std::string& path) const override {
    json m = detail::model_envelope("random");
    m["seed"] = seed_;
    detail::write_model_file(path, m);
  }

 private:
  std::vector<double> draw(size_t n) {
    std::vector<double> s(n);
    for (double& x : s) x = rng_.uniform_real();
    return s;
  }

  uint64_t seed_;
  RandomEngine rng_;
};

}  // namespace

std::unique_ptr<CostModel> make_random_model(uint64_t seed) {
  return std::make_unique<RandomModel>(seed);
}

std::unique_ptr<CostModel> load_cost_model(const std::string& path, const XGBoostOptions& options) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot read model file '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  json m;
  try {
    m = json::parse(text.str());
  } catch (const json::exception&) {
    throw Error(fmt::format("model file '{}' is not JSON (truncated or corrupt)", path));
  }
  if (!m.is_object() || m.value("format", "") != "tyche.cost_model")
    throw Error(fmt::format("'{}' is not a tyche cost model", path));
  if (m.value("version", -1) != detail::kModelFileVersion)
    throw Error(fmt::format("model file '{}' has version {} (this build reads {})", path,
                            m.value("version", -1), detail::kModelFileVersion));
  std::string kind = m.value("kind", "");
  if (kind == "random") return make_random_model(m.value("seed", uint64_t{0}));
  if (kind == "xgboost") {
    detail::check_feature_layout(m, path);
    return detail::load_xgboost_model(m, path, options);
  }
  throw Error(fmt::format("model file '{}': unknown kind '{}'", path, kind));
}

}  // namespace tyche::tune
