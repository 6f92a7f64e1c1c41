// The cost models: metrics, learning to rank synthetic candidates whose best are known, save and
// load, the layout refusal, the random start.
#include <gmock/gmock.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "support/error.h"
#include "tune/cost_model/cost_model.h"
#include "tune/cost_model/metrics.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

TEST(Metrics, KnownValues) {
  std::vector<double> truth = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(pairwise_accuracy(truth, truth), 1.0);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({5, 4, 3, 2, 1}, truth), 0.0);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({1, 1, 1, 1, 1}, truth), 0.5);
  EXPECT_DOUBLE_EQ(spearman(truth, truth), 1.0);
  EXPECT_DOUBLE_EQ(spearman({50, 40, 30, 20, 10}, truth), -1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 1, 1, 1, 1}, truth), 0.0);
  EXPECT_DOUBLE_EQ(top_k_recall({0, 0, 9, 8, 1}, truth, 2),
                   0.5);  // picks 3 and 4; best are 4 and 5
  EXPECT_DOUBLE_EQ(top_k_recall({0, 0, 0, 8, 9}, truth, 2), 1.0);
  EXPECT_DOUBLE_EQ(top_k_recall(truth, truth, 10), 1.0);            // k capped at the size
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9487, 1e-4);  // average ranks for ties
}

TEST(CostModel, NormalizedThroughputsArePerWorkload) {
  std::vector<double> y = normalized_throughputs({1, 1, 2, 2, 1}, {2.0, 4.0, 10.0, 5.0, -1.0});
  EXPECT_EQ(y, (std::vector<double>{1.0, 0.5, 0.5, 1.0, 0.0}));
}

// Candidates of 1-3 stores with random features; the throughput is a sum over stores of a
// function of a few features, so the best candidates are known exactly.
struct Synthetic {
  std::vector<ModelInput> inputs;
  std::vector<double> seconds, throughput;
};

Synthetic synthetic(int n, uint64_t seed, int workloads = 2) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 4);
  Synthetic s;
  const int f = feature_count();
  for (int c = 0; c < n; ++c) {
    ModelInput in;
    in.workload = static_cast<uint64_t>(c % workloads) + 7;
    in.features.rows = 1 + static_cast<int>(rng() % 3);
    double tp = 0;
    for (int r = 0; r < in.features.rows; ++r) {
      std::vector<float> row(static_cast<size_t>(f), 0.0f);
      for (int i = 0; i < 48; ++i)
        row[static_cast<size_t>(i)] = u(rng);  // real rows are sparse too
      tp += row[3] + (row[17] > 2 ? row[5] : 0.0f) + 0.1;
      in.features.values.insert(in.features.values.end(), row.begin(), row.end());
    }
    s.inputs.push_back(std::move(in));
    s.throughput.push_back(tp);
    s.seconds.push_back(1.0 / tp);
  }
  return s;
}

TEST(CostModel, XGBoostLearnsToRankSyntheticCandidates) {
  Synthetic train = synthetic(500, 1), test = synthetic(200, 2, 1);
  auto model = make_xgboost_model({.threads = 2});
  model->update_features(train.inputs, train.seconds);
  std::vector<double> scores = model->predict_features(test.inputs);
  double acc = pairwise_accuracy(scores, test.throughput);
  double recall = top_k_recall(scores, test.throughput, 10);
  EXPECT_GT(acc, 0.8) << "top-10 recall " << recall;
  EXPECT_GE(recall, 0.4) << "pairwise " << acc;  // random: 10 / 200 = 0.05
  // The random model does not.
  auto random = make_random_model(3);
  EXPECT_LT(pairwise_accuracy(random->predict_features(test.inputs), test.throughput), 0.6);
}

TEST(CostModel, RandomUntilEnoughMeasurements) {
  Synthetic few = synthetic(60, 4);
  auto model = make_xgboost_model({.min_measured = 100, .seed = 9});
  model->update_features(few.inputs, few.seconds);
  auto random = make_random_model(9);
  EXPECT_EQ(model->predict_features(few.inputs), random->predict_features(few.inputs));
  Synthetic more = synthetic(60, 5);
  model->update_features(more.inputs, more.seconds);  // 120 now: trained
  EXPECT_GT(pairwise_accuracy(model->predict_features(few.inputs), few.throughput), 0.7);
}

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/tyche_model_" + name;
}

TEST(CostModel, SaveLoadPredictsTheSameAndGoesOnLearning) {
  Synthetic train = synthetic(300, 6), test = synthetic(100, 7);
  auto model = make_xgboost_model({.threads = 1});
  model->update_features(train.inputs, train.seconds);
  std::string path = temp("saved.json");
  model->save(path);
  auto loaded = load_cost_model(path, {.threads = 1});
  EXPECT_EQ(loaded->name(), "xgboost");
  EXPECT_EQ(loaded->predict_features(test.inputs), model->predict_features(test.inputs));
  // It scores before it has data of its own, and new data adds to what it knew.
  Synthetic next = synthetic(150, 8);
  loaded->update_features(next.inputs, next.seconds);
  EXPECT_GT(pairwise_accuracy(loaded->predict_features(test.inputs), test.throughput), 0.8);
  std::remove(path.c_str());

  auto random = make_random_model(5);
  random->save(path);
  EXPECT_EQ(load_cost_model(path)->name(), "random");
  std::remove(path.c_str());
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(CostModel, LoadRefusesOtherLayoutsAndCorruptFiles) {
  Synthetic train = synthetic(120, 10);
  auto model = make_xgboost_model({.threads = 1});
  model->update_features(train.inputs, train.seconds);
  std::string path = temp("layout.json");
  model->save(path);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string other = text.str();
  auto at = other.find("\"count\":");
  ASSERT_NE(at, std::string::npos);
  std::string count = "\"count\":" + std::to_string(feature_count());
  ASSERT_EQ(other.substr(at, count.size()), count);
  other.replace(at, count.size(), "\"count\":1");
  write(path, other);
  EXPECT_THAT([&] { load_cost_model(path); },
              ::testing::ThrowsMessage<Error>(HasSubstr("was trained on feature layout")));
  write(path, text.str().substr(0, text.str().size() / 2));
  EXPECT_THAT([&] { load_cost_model(path); },
              ::testing::ThrowsMessage<Error>(HasSubstr("is not JSON")));
  write(path, R"({"format": "something else"})");
  EXPECT_THAT([&] { load_cost_model(path); },
              ::testing::ThrowsMessage<Error>(HasSubstr("is not a tyche cost model")));
  EXPECT_THAT([&] { load_cost_model("/nonexistent/model.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cannot read")));
  EXPECT_THROW(model->save("/nonexistent/dir/model.json"), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tyche::tune
