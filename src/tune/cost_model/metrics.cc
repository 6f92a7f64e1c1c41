#include "tune/cost_model/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tyche::tune {

namespace {

// Average ranks (1-based), ties sharing the mean of their positions.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t t = i; t <= j; ++t) r[order[t]] = mean;
    i = j + 1;
  }
  return r;
}

std::vector<size_t> top(const std::vector<double>& v, size_t k) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] > v[b]; });
  order.resize(std::min(k, order.size()));
  return order;
}

}  // namespace

double pairwise_accuracy(const std::vector<double>& scores, const std::vector<double>& truth) {
  double agree = 0, pairs = 0;
  for (size_t i = 0; i < truth.size(); ++i)
    for (size_t j = i + 1; j < truth.size(); ++j) {
      if (truth[i] == truth[j]) continue;
      pairs += 1;
      double s = (scores[i] - scores[j]) * (truth[i] - truth[j]);
      agree += s > 0 ? 1.0 : s == 0 ? 0.5 : 0.0;
    }
  return pairs > 0 ? agree / pairs : 0.5;
}

double top_k_recall(const std::vector<double>& scores, const std::vector<double>& truth, int k) {
  size_t kk = std::min(static_cast<size_t>(std::max(k, 0)), truth.size());
  if (kk == 0) return 0;
  std::vector<size_t> a = top(scores, kk), b = top(truth, kk);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<size_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return static_cast<double>(both.size()) / static_cast<double>(kk);
}

double spearman(const std::vector<double>& scores, const std::vector<double>& truth) {
  if (scores.size() < 2) return 0;
  std::vector<double> a = ranks(scores), b = ranks(truth);
  double n = static_cast<double>(a.size());
  double ma = std::accumulate(a.begin(), a.end(), 0.0) / n,
         mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (a[i] - ma) * (b[i] - mb);
    va += (a[i] - ma) * (a[i] - ma);
    vb += (b[i] - mb) * (b[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

}  // namespace tyche::tune
