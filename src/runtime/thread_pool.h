// The persistent thread pool that runs parallel loops of generated code. Workers spin briefly on
// a generation counter before sleeping, so back-to-back parallel regions (the common case inside
// one kernel call) start in well under 10 microseconds; the calling thread takes a share too.
// Iterations are handed out in contiguous chunks (about four per thread) from a shared counter,
// so a thread slowed down by another tenant of its core takes fewer of them.
#pragma once

#include <cstdint>

namespace tyche::runtime {

// The body of a parallel loop: runs iterations [begin, end) with its captured values in `env`;
// returns 0, or a kernel's error status (module.h) to stop the loop.
using ParallelBody = int32_t (*)(int64_t begin, int64_t end, void* env);

class ThreadPool {
 public:
  // The process-wide pool; its size is TYCHE_NUM_THREADS or the number of hardware threads.
  static ThreadPool& global();

  int num_threads() const;
  // Changes the number of threads used by later parallel_for calls (1 runs everything inline).
  void set_num_threads(int n);
  // Runs body over [0, n) split across the threads; returns when every range is done. Called
  // from inside a running parallel body, it runs serially (no nested parallelism). Returns 0,
  // or the status of a body that failed (the ranges not yet started are then skipped).
  int32_t parallel_for(int64_t n, ParallelBody body, void* env);

  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

 private:
  ThreadPool();
  struct Impl;
  Impl* impl_;
};

}  // namespace tyche::runtime

// The C ABI generated code calls.
extern "C" {
int32_t tyche_parallel_for(int64_t n, tyche::runtime::ParallelBody body, void* env);
// 64-byte aligned storage for large intermediate buffers; null when memory is exhausted (the
// kernel then returns kKernelOutOfMemory).
void* tyche_alloc(int64_t bytes);
void tyche_free(void* ptr);
// Asks the OS, once per process, for AMX's tile registers (code using them calls this first):
// 0 when they may be used, else non-zero (the kernel then returns kKernelNoTileState).
int32_t tyche_request_tiles();
}
