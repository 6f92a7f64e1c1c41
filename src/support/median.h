// The median of a sample (the mean of the middle two for an even count): what timings are
// summarized by, since one hiccup of a shared host does not move it.
#pragma once

#include <algorithm>
#include <vector>

namespace tyche {

// `v` must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace tyche
