// Fork-join overhead of the runtime thread pool: the time of one parallel region whose body does
// nothing, averaged over many back-to-back regions (the case inside one kernel call), against a
// plain function call measured in the same run.
#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/thread_pool.h"

namespace {

int32_t empty_body(int64_t, int64_t, void* env) {
  static_cast<volatile int*>(env)[0] = 1;
  return 0;
}

double seconds_per_region(int64_t n_iters, int regions) {
  volatile int sink = 0;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < regions; ++r)
    tyche::runtime::ThreadPool::global().parallel_for(n_iters, empty_body, const_cast<int*>(&sink));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / regions;
}

}  // namespace

int main() {
  auto& pool = tyche::runtime::ThreadPool::global();
  std::printf("threads: %d (hardware %u)\n", pool.num_threads(),
              std::thread::hardware_concurrency());
  seconds_per_region(pool.num_threads(), 10000);  // warm up
  double best = 1e9, serial_best = 1e9;
  for (int trial = 0; trial < 5; ++trial) {
    best = std::min(best, seconds_per_region(pool.num_threads(), 100000));
    serial_best =
        std::min(serial_best, seconds_per_region(1, 100000));  // runs inline: the call cost
  }
  std::printf(
      "fork-join per parallel region: %.2f us (target <= 10 us); inline call: %.3f us; ratio "
      "%.1fx\n",
      best * 1e6, serial_best * 1e6, best / serial_best);
  return best <= 10e-6 ? 0 : 1;
}
