#include "tune/task/task_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/error.h"

namespace tyche::tune {

namespace {

class RoundRobin : public TaskScheduler {
 public:
  std::string name() const override { return "round-robin"; }
  int next(const std::vector<TaskProgress>& tasks) override {
    for (size_t k = 0; k < tasks.size(); ++k) {
      size_t i = (last_ + 1 + k) % tasks.size();
      if (!tasks[i].done) {
        last_ = i;
        return static_cast<int>(i);
      }
    }
    return -1;
  }

 private:
  size_t last_ = static_cast<size_t>(-1);
};

class Gradient : public TaskScheduler {
 public:
  Gradient(double alpha, int window) : alpha_(alpha), window_(window) {}
  std::string name() const override { return "gradient"; }
  int next(const std::vector<TaskProgress>& tasks) override {
    // Every task gets a first round, and one with no success yet goes first.
    for (size_t i = 0; i < tasks.size(); ++i)
      if (!tasks[i].done &&
          (tasks[i].trials.empty() || !std::isfinite(tasks[i].best_seconds.back())))
        return static_cast<int>(i);
    // Per round: backward, the best latency's fall over the last `window` rounds; forward, the
    // best latency over the rounds so far.
    int best = -1;
    double best_gain = -1;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const TaskProgress& t = tasks[i];
      if (t.done) continue;
      size_t n = t.best_seconds.size();
      double now = t.best_seconds.back();
      double backward = n > static_cast<size_t>(window_) &&
                                std::isfinite(t.best_seconds[n - 1 - static_cast<size_t>(window_)])
                            ? (t.best_seconds[n - 1 - static_cast<size_t>(window_)] - now) / window_
                            : 0;
      double forward = now / static_cast<double>(n);
      double gain = t.weight * (alpha_ * backward + (1 - alpha_) * forward);
      if (gain > best_gain) {
        best_gain = gain;
        best = static_cast<int>(i);
      }
    }
    return best;
  }

 private:
  double alpha_;
  int window_;
};

}  // namespace

std::unique_ptr<TaskScheduler> make_round_robin() {
  return std::make_unique<RoundRobin>();
}
std::unique_ptr<TaskScheduler> make_gradient_scheduler(double alpha, int window) {
  return std::make_unique<Gradient>(alpha, window);
}

std::unique_ptr<TaskScheduler> make_task_scheduler(const std::string& name) {
  if (name == "round-robin") return make_round_robin();
  if (name == "gradient") return make_gradient_scheduler();
  throw Error(fmt::format("unknown task scheduler '{}' (expected gradient or round-robin)", name));
}

}  // namespace tyche::tune
