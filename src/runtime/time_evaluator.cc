#include "runtime/time_evaluator.h"

#include "runtime/thread_pool.h"
#include "support/median.h"
#include "target/host.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tyche::runtime {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void flush_cpu_cache() {
  // A quarter more than the last-level cache (a 300 MiB one on the machines these run on; a
  // fixed 64 MiB buffer left most of it warm).
  static std::vector<char> buffer(target::last_level_cache_bytes(size_t{64} << 20) / 4 * 5);
  char acc = 0;
  for (size_t i = 0; i < buffer.size(); i += 64) {
    buffer[i] = static_cast<char>(buffer[i] + 1);
    acc = static_cast<char>(acc ^ buffer[i]);
  }
  // Keep the loop: the result is observable.
  asm volatile("" : : "r"(acc) : "memory");
}

void flush_cpu_cache(const void* data, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  auto* p = static_cast<const char*>(data);
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(p + i);
  if (bytes) _mm_clflush(p + bytes - 1);
  _mm_mfence();
#else
  (void)data;
  (void)bytes;
  flush_cpu_cache();
#endif
}

namespace {

// The ranges' lines evicted by every thread of the pool together, in 64 KiB pieces: faster than
// one thread, and it leaves the pool's workers spinning, as they are between a model's calls, so
// the timed call that follows does not pay for waking them.
void flush_ranges_in_parallel(const std::vector<std::pair<const void*, size_t>>& ranges) {
  constexpr size_t kPiece = size_t{64} << 10;
  struct Piece {
    const void* data;
    size_t bytes;
  };
  std::vector<Piece> pieces;
  for (const auto& [data, bytes] : ranges)
    for (size_t off = 0; off < bytes; off += kPiece)
      pieces.push_back({static_cast<const char*>(data) + off, std::min(kPiece, bytes - off)});
  ThreadPool::global().parallel_for(
      static_cast<int64_t>(pieces.size()),
      [](int64_t begin, int64_t end, void* env) -> int32_t {
        auto* ps = static_cast<const Piece*>(env);
        for (int64_t i = begin; i < end; ++i) flush_cpu_cache(ps[i].data, ps[i].bytes);
        return 0;
      },
      pieces.data());
}

// Reads a private buffer twice the size of this thread's core's L1 and L2, once per epoch.
void evict_own_private_caches(uint64_t epoch) {
  static const size_t bytes = 2 * (target::data_cache_bytes(1, size_t{48} << 10) +
                                   target::data_cache_bytes(2, size_t{2} << 20));
  thread_local std::vector<char> scratch;
  thread_local uint64_t done = 0;
  if (done == epoch) return;
  done = epoch;
  if (scratch.size() != bytes) scratch.assign(bytes, 1);
  char acc = 0;
  for (size_t i = 0; i < scratch.size(); i += 64) acc = static_cast<char>(acc ^ scratch[i]);
  asm volatile("" : : "r"(acc) : "memory");
}

}  // namespace

void evict_private_caches() {
  static std::atomic<uint64_t> epochs{0};
  uint64_t epoch = epochs.fetch_add(1) + 1;
  ThreadPool& pool = ThreadPool::global();
  // Pieces are handed out dynamically, so each thread evicts its caches on the first piece it
  // takes and the rest are free; four per thread, so every worker is awake before they run out.
  pool.parallel_for(
      4 * pool.num_threads(),
      [](int64_t, int64_t, void* env) -> int32_t {
        evict_own_private_caches(*static_cast<const uint64_t*>(env));
        return 0;
      },
      &epoch);
  evict_own_private_caches(epoch);  // the caller runs the timed call's serial parts: never skipped
}

TimeResult time_function(const std::function<void()>& f, const TimeOptions& o) {
  for (int i = 0; i < o.warmup; ++i) f();
  TimeResult r;
  r.number = std::max(1, o.number);
  if (o.min_repeat_ms > 0) {
    // Grow `number` until one measurement lasts min_repeat_ms. When the first one already does
    // (and caches need not be cold), it is the first repeat: a slow kernel is not run twice
    // for nothing.
    for (bool first = true;; first = false) {
      double t0 = now();
      for (int i = 0; i < r.number; ++i) f();
      double elapsed = now() - t0;
      if (first && elapsed * 1000 >= o.min_repeat_ms && !o.flush_cache)
        r.seconds.push_back(elapsed / r.number);
      if (elapsed * 1000 >= o.min_repeat_ms || r.number >= (1 << 24)) break;
      double scale = elapsed > 0 ? o.min_repeat_ms / (elapsed * 1000) * 1.2 : 10;
      r.number =
          static_cast<int>(std::min<double>(1 << 24, std::max(r.number * 2.0, r.number * scale)));
    }
  }
  for (int rep = static_cast<int>(r.seconds.size()); rep < std::max(1, o.repeat); ++rep) {
    if (o.flush_cache) {
      if (o.keep_in_llc) {
        evict_private_caches();
        if (!o.flush_ranges.empty()) flush_ranges_in_parallel(o.flush_ranges);
      } else if (o.flush_ranges.empty()) {
        flush_cpu_cache();
      } else {
        flush_ranges_in_parallel(o.flush_ranges);
      }
    }
    double t0 = now();
    for (int i = 0; i < r.number; ++i) f();
    r.seconds.push_back((now() - t0) / r.number);
  }
  std::vector<double> sorted = r.seconds;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  r.median = median(sorted);
  r.min = sorted.front();
  r.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double var = 0;
  for (double s : sorted) var += (s - r.mean) * (s - r.mean);
  r.cv = n > 1 && r.mean > 0 ? std::sqrt(var / (n - 1)) / r.mean : 0;
  return r;
}

}  // namespace tyche::runtime
