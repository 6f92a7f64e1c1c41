// The cost model on the measured dataset (bench/data, made by bench/make_dataset.sh):
//  - within a workload: train on 80 % of its records, rank the measured rest; 5 random splits;
//  - across workloads: train on every other workload's records, rank GMM-4's, then C2D-4's;
//  - cost: features per GMM-4 candidate, prediction of 512 candidates, retraining on 1000 records.
// Every ranking figure is printed beside the random model's on the same candidates.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>
#include <thread>

#include "target/cpu.h"
#include "target/host.h"
#include "tune/cost_model/cost_model.h"
#include "tune/cost_model/metrics.h"
#include "tune/explore/dataset.h"
#include "tune/postproc/candidate.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

using namespace tyche;
using namespace tyche::tune;

namespace {

constexpr int kTopK = 32;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Scores {
  double pairwise = 0, recall = 0, spearman = 0, random_recall = 0;
  size_t n = 0;
};

// Ranks the measured candidates of `test` with `model`.
Scores rank(CostModel& model, const Dataset& test) {
  std::vector<size_t> measured;
  for (size_t i = 0; i < test.size(); ++i)
    if (std::isfinite(test.seconds[i])) measured.push_back(i);
  Dataset m = test.pick(measured);
  std::vector<double> truth;
  for (double s : m.seconds) truth.push_back(1 / s);
  std::vector<double> scores = model.predict_features(m.inputs);
  return {pairwise_accuracy(scores, truth), top_k_recall(scores, truth, kTopK),
          spearman(scores, truth),
          std::min(1.0, static_cast<double>(kTopK) / static_cast<double>(m.size())), m.size()};
}

std::unique_ptr<CostModel> trained(const Dataset& train, uint64_t seed) {
  auto model = make_xgboost_model({.min_measured = 0, .seed = seed});
  model->update_features(train.inputs, train.seconds);
  return model;
}

void print(const char* label, const Scores& x, const Scores& r) {
  std::printf(
      "  %-30s %5zu test  pairwise %.3f (random %.3f)  top-%d recall %.3f (random model %.3f, "
      "expected %.3f)  spearman %.3f\n",
      label, x.n, x.pairwise, r.pairwise, kTopK, x.recall, r.recall, x.random_recall, x.spearman);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : std::string(TYCHE_SOURCE_DIR) + "/bench/data";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().ends_with(".jsonl.gz") || e.path().string().ends_with(".jsonl"))
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr,
                 "bench_cost_model: no record files in %s (bench/make_dataset.sh makes them)\n",
                 dir.c_str());
    return 1;
  }
  double t0 = now();
  Dataset all = load_dataset(files);
  std::printf("cpu: %s (%s), %u threads\n", target::cpu_model_name().c_str(),
              target::resolve_cpu("host").llvm_cpu.c_str(), std::thread::hardware_concurrency());
  std::printf(
      "dataset: %zu records of %zu workloads (%d skipped), loaded with features in %.1f s\n",
      all.size(), all.workloads().size(), all.skipped, now() - t0);
  for (const std::string& w : all.workloads()) {
    Dataset d = all.subset(w);
    size_t ok = static_cast<size_t>(std::count_if(d.seconds.begin(), d.seconds.end(),
                                                  [](double s) { return std::isfinite(s); }));
    std::printf("  %-8s %5zu records, %5zu measured\n", w.c_str(), d.size(), ok);
  }

  bool pass = true;
  std::printf("\nwithin a workload (80/20, 5 random splits; mean):\n");
  for (const char* w : {"GMM-4", "C2D-4"}) {
    Dataset d = all.subset(w);
    if (d.size() < 50) {
      std::printf("  %s: too few records\n", w);
      continue;
    }
    Scores mean, mean_random;
    for (int split = 0; split < 5; ++split) {
      std::vector<size_t> order(d.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(static_cast<uint64_t>(split) + 100));
      size_t cut = d.size() * 4 / 5;
      Dataset train = d.pick({order.begin(), order.begin() + static_cast<std::ptrdiff_t>(cut)});
      Dataset test = d.pick({order.begin() + static_cast<std::ptrdiff_t>(cut), order.end()});
      Scores s = rank(*trained(train, static_cast<uint64_t>(split)), test);
      auto random = make_random_model(static_cast<uint64_t>(split));
      Scores r = rank(*random, test);
      for (auto [acc, x] : {std::pair{&mean, s}, std::pair{&mean_random, r}}) {
        acc->pairwise += x.pairwise / 5;
        acc->recall += x.recall / 5;
        acc->spearman += x.spearman / 5;
        acc->random_recall += x.random_recall / 5;
        acc->n = x.n;
      }
    }
    print(w, mean, mean_random);
    bool ok = mean.pairwise >= 0.80 && mean.recall >= 3 * mean.random_recall;
    std::printf("    target pairwise >= 0.80 and top-%d recall >= 3x random (%.3f): %s\n", kTopK,
                3 * mean.random_recall, ok ? "met" : "MISSED");
    pass = pass && ok;
  }

  std::printf("\nacross workloads (train on every other workload's records):\n");
  for (const char* w : {"GMM-4", "C2D-4"}) {
    Dataset test = all.subset(w), train = all.subset(w, true);
    if (test.size() == 0 || train.size() == 0) continue;
    Scores s = rank(*trained(train, 7), test);
    auto random = make_random_model(7);
    Scores r = rank(*random, test);
    print(w, s, r);
    bool beats = s.pairwise > r.pairwise && s.recall > s.random_recall;
    std::printf("    beats random: %s\n", beats ? "yes" : "NO");
  }

  std::printf("\ncost:\n");
  {
    auto w = workloads::get_preset("GMM-4");
    target::Target target = target::Target::host();
    TuneContext context{w.func, target};
    auto postprocs = default_postprocs(context);
    auto spaces = post_order_apply(default_rules(target))->generate(context, 0);
    std::vector<double> per;
    for (int i = 0; i < 200; ++i) {
      auto c = make_candidate(context, *spaces[static_cast<size_t>(i) % spaces.size()].trace(),
                              {.fresh_decisions = true}, postprocs, i);
      auto* sch = std::get_if<schedule::Schedule>(&c);
      if (!sch) continue;
      double a = now();
      FeatureRows f = per_store_features(sch->func());
      per.push_back(now() - a);
    }
    std::printf("  features of a GMM-4 candidate: median %.3f ms over %zu (target <= 0.5 ms)\n",
                median(per) * 1e3, per.size());
  }
  {
    Dataset d = all.subset("GMM-4");
    std::vector<size_t> idx;
    for (size_t i = 0; idx.size() < 1000 && d.size() > 0; ++i) idx.push_back(i % d.size());
    Dataset thousand = all.pick([&] {
      std::vector<size_t> v(std::min<size_t>(1000, all.size()));
      std::iota(v.begin(), v.end(), 0);
      return v;
    }());
    std::vector<double> train_s;
    std::unique_ptr<CostModel> model;
    for (int rep = 0; rep < 3; ++rep) {
      double a = now();
      model = trained(thousand, static_cast<uint64_t>(rep));
      train_s.push_back(now() - a);
    }
    std::printf("  retraining on %zu records: median %.2f s of 3 (target <= 2 s)\n",
                thousand.size(), median(train_s));
    std::vector<ModelInput> batch;
    for (size_t i = 0; batch.size() < 512 && d.size() > 0; ++i)
      batch.push_back(d.inputs[i % d.size()]);
    std::vector<double> pred_s;
    for (int rep = 0; rep < 5; ++rep) {
      double a = now();
      model->predict_features(batch);
      pred_s.push_back(now() - a);
    }
    std::printf("  predicting %zu GMM-4 candidates: median %.1f ms of 5 (target <= 50 ms)\n",
                batch.size(), median(pred_s) * 1e3);
  }
  std::printf("\nwithin-workload targets: %s\n", pass ? "met" : "MISSED");
  return 0;
}
