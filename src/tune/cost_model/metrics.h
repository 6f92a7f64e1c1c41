// How well scores rank candidates against their measured throughputs (higher is faster in both).
#pragma once

#include <vector>

namespace tyche::tune {

// Of the pairs whose true values differ, the fraction the scores order the same way (score ties
// count half). 0.5 is random.
double pairwise_accuracy(const std::vector<double>& scores, const std::vector<double>& truth);
// How many of the k truly best are among the k best-scored, over k (k capped at the size).
// A random ranking expects k / n.
double top_k_recall(const std::vector<double>& scores, const std::vector<double>& truth, int k);
// Spearman's rank correlation (ties take their average rank); 0 when either side is constant.
double spearman(const std::vector<double>& scores, const std::vector<double>& truth);

}  // namespace tyche::tune
