// Which task gets the next batch of trials when several workloads are tuned in one run.
//   round-robin  each task in turn;
//   gradient     MetaSchedule's: after one round each, the task whose weighted latency is
//                expected to drop the most in its next round: a mix (alpha) of how fast its best
//                latency fell over its last `window` rounds (backward) and its best latency over
//                its rounds so far (forward: a slow task has more to gain).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tyche::tune {

struct TaskProgress {
  double weight = 1;                 // how much the task's latency counts (e.g. times it runs)
  std::vector<int> trials;           // trials done after each of its rounds
  std::vector<double> best_seconds;  // best latency after each round (+inf before any success)
  bool done = false;                 // budget or design space exhausted
};

class TaskScheduler {
 public:
  virtual ~TaskScheduler() = default;
  virtual std::string name() const = 0;
  // The task for the next round, or -1 when every task is done.
  virtual int next(const std::vector<TaskProgress>& tasks) = 0;
};

std::unique_ptr<TaskScheduler> make_round_robin();
// alpha: weight of the backward estimate; window: rounds it looks back over.
std::unique_ptr<TaskScheduler> make_gradient_scheduler(double alpha = 0.2, int window = 3);
// "round-robin" or "gradient"; throws tyche::Error for another name.
std::unique_ptr<TaskScheduler> make_task_scheduler(const std::string& name);

}  // namespace tyche::tune
