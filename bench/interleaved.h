// Measuring several kernels interleaved: round after round, each runs for one window of a given
// length, so all of them see the same periods of a shared host. Ratios of medians measured so
// are what the benchmarks report.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace tyche::bench {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Measured {
  std::string name;
  std::function<void()> run;
  int calls = 1;                // per window, calibrated once
  std::vector<double> seconds;  // per call, one entry per window
  double median() const {
    auto s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double cv() const {
    double m = 0, v = 0;
    for (double x : seconds) m += x;
    m /= static_cast<double>(seconds.size());
    for (double x : seconds) v += (x - m) * (x - m);
    return std::sqrt(v / static_cast<double>(seconds.size() - 1)) / m;
  }
};

inline void measure_interleaved(std::vector<Measured>& ms, int rounds, double window_s) {
  for (auto& m : ms) {
    m.run();  // warm-up
    double t0 = now();
    m.run();
    m.calls = std::max(1, static_cast<int>(window_s / std::max(now() - t0, 1e-6)));
  }
  for (int r = 0; r < rounds; ++r)
    for (auto& m : ms) {
      double t0 = now();
      for (int c = 0; c < m.calls; ++c) m.run();
      m.seconds.push_back((now() - t0) / m.calls);
    }
}

}  // namespace tyche::bench
