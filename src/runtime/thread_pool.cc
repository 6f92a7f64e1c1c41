#include "runtime/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string_view>
#include <thread>
#include <vector>

#include "support/tensor_size.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define TYCHE_PAUSE() _mm_pause()
#else
#define TYCHE_PAUSE() std::this_thread::yield()
#endif

namespace tyche::runtime {

namespace {

// How long a worker spins for the next region before sleeping (pause iterations, ~100 us).
constexpr int kSpinIterations = 20000;
// How long the caller spins for the workers of its region before yielding its CPU between checks.
constexpr int kCallerSpinIterations = 2000;
constexpr uint64_t kGateClosed = uint64_t{1} << 31;
thread_local bool in_parallel_region = false;

}  // namespace

struct ThreadPool::Impl {
  std::vector<std::thread> workers;
  std::atomic<int> num_threads{1};  // read without caller_mu by callers deciding to run serially

  // The current job: a sequence number and the number of parts in one word, so a worker that
  // wakes late learns from a single load whether it has a part; body/env/n are stable while any
  // part is unfinished, because the next job is published only after all parts are done.
  std::atomic<uint64_t> generation{0};  // (sequence << 16) | parts
  ParallelBody body = nullptr;
  void* env = nullptr;
  int64_t n = 0;
  // Who takes part in the current job: (sequence << 32) | closed flag | workers joined. A worker
  // joins before it reads the job and the caller closes the gate once every chunk is taken, then
  // waits only for those that joined. A worker that wakes late, or is not scheduled (its CPU
  // lent to another thread, a vCPU the hypervisor parked), costs the region nothing: waiting for
  // it cost single calls up to a scheduler time slice (4 ms for a 0.3 ms kernel).
  std::atomic<uint64_t> gate{0};
  std::atomic<int> finished{0};

  std::mutex caller_mu;  // one parallel region at a time when several host threads call in
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> sleeping{0};
  bool stop = false;

  // Every participant takes chunks from a shared counter: a thread slowed down by another tenant
  // of its core gets less work instead of holding up the region.
  std::atomic<int64_t> next{0};
  int64_t chunk = 1;
  std::atomic<int32_t> status{0};  // the first failing body's, for the caller

  void run_part() {
    in_parallel_region = true;
    while (status.load(std::memory_order_relaxed) == 0) {
      int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) break;
      if (int32_t s = body(begin, std::min(n, begin + chunk), env)) {
        int32_t none = 0;
        status.compare_exchange_strong(none, s, std::memory_order_relaxed);
      }
    }
    in_parallel_region = false;
  }

  void worker(int index, uint64_t seen) {
    // TYCHE_PIN=1: worker i keeps to CPU i + 1. Off by default: the caller's thread is not ours
    // to pin, and when the scheduler put it on a pinned worker's CPU the two took turns by time
    // slices (single calls of a 0.3 ms kernel took 1 to 4.5 ms on a 2-CPU host).
    unsigned cpus = std::thread::hardware_concurrency();
    const char* pin = std::getenv("TYCHE_PIN");
    if (cpus > 1 && pin != nullptr && std::string_view(pin) == "1") {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(static_cast<int>((index + 1) % cpus), &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    while (true) {
      uint64_t g = generation.load(std::memory_order_acquire);
      for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
        TYCHE_PAUSE();
        g = generation.load(std::memory_order_acquire);
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mu);
        sleeping.fetch_add(1, std::memory_order_seq_cst);
        cv.wait(lock, [&] { return stop || generation.load(std::memory_order_seq_cst) != seen; });
        sleeping.fetch_sub(1);
        if (stop) return;
        g = generation.load(std::memory_order_acquire);
      }
      seen = g;
      int num_parts = static_cast<int>(g & 0xffff);
      if (index + 1 < num_parts && join(g >> 16)) {  // part 0 is the caller's
        run_part();
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    }
  }

  // Takes part in job `sequence` unless it is over (or the gate closed on it).
  bool join(uint64_t sequence) {
    uint64_t g = gate.load(std::memory_order_acquire);
    while ((g >> 32) == (sequence & 0xffffffffu) && (g & kGateClosed) == 0)
      if (gate.compare_exchange_weak(g, g + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
        return true;
    return false;
  }

  void start(int threads) {
    num_threads = threads;
    // New workers must not mistake the last job (of an earlier set of workers) for a new one.
    uint64_t current = generation.load(std::memory_order_acquire);
    for (int i = 0; i + 1 < threads; ++i)
      workers.emplace_back([this, i, current] { worker(i, current); });
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
    stop = false;
  }
};

ThreadPool::ThreadPool() : impl_(new Impl) {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  if (const char* env = std::getenv("TYCHE_NUM_THREADS")) n = std::atoi(env);
  // Clamped: TYCHE_NUM_THREADS=2147483647 would spawn threads until the kernel refuses (the CLI
  // refuses such a value in one line before the pool starts; Python and other hosts get the cap).
  impl_->start(std::clamp(n, 1, max_threads()));
}

ThreadPool::~ThreadPool() {
  impl_->shutdown();
  delete impl_;
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

int ThreadPool::num_threads() const {
  return impl_->num_threads;
}

void ThreadPool::set_num_threads(int n) {
  if (n < 1) n = 1;
  // Not while another host thread's region runs (its workers would be stopped under it).
  std::lock_guard<std::mutex> no_region(impl_->caller_mu);
  if (n == impl_->num_threads) return;
  impl_->shutdown();
  impl_->start(n);
}

int32_t ThreadPool::parallel_for(int64_t n, ParallelBody body, void* env) {
  Impl& p = *impl_;
  if (n <= 0) return 0;
  if (in_parallel_region || p.num_threads == 1 || n == 1) return body(0, n, env);
  std::lock_guard<std::mutex> one_caller(p.caller_mu);
  int parts =
      static_cast<int>(std::min<int64_t>({n, int64_t{p.num_threads.load()}, int64_t{0xffff}}));
  if (parts <= 1) return body(0, n, env);  // the pool shrank to one thread since the check above
  p.body = body;
  p.env = env;
  p.n = n;
  // Four chunks per thread: enough to even out a slow thread, few enough to keep ranges long.
  p.chunk = std::max<int64_t>(1, n / (int64_t{parts} * 4));
  p.next.store(0, std::memory_order_relaxed);
  p.status.store(0, std::memory_order_relaxed);
  p.finished.store(0, std::memory_order_relaxed);
  uint64_t sequence = (p.generation.load(std::memory_order_relaxed) >> 16) + 1;
  p.gate.store((sequence & 0xffffffffu) << 32,
               std::memory_order_relaxed);  // published by the generation's store
  uint64_t next = sequence << 16 | static_cast<uint64_t>(parts);
  // Publishing the job and checking for sleepers must not be reordered (a store then a load, in
  // a Dekker pattern with the worker's `sleeping` increment then generation check): a release
  // store lets x86 read `sleeping` before the store is visible, miss a worker that is falling
  // asleep, and wait forever for its part. Sequentially consistent on both sides.
  p.generation.store(next, std::memory_order_seq_cst);
  if (p.sleeping.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(p.mu);  // pairs with the sleepers' predicate check
    p.cv.notify_all();
  }
  p.run_part();
  int joined =
      static_cast<int>(p.gate.fetch_or(kGateClosed, std::memory_order_acq_rel) & (kGateClosed - 1));
  for (int spin = 0; p.finished.load(std::memory_order_acquire) < joined; ++spin) {
    if (spin < kCallerSpinIterations)
      TYCHE_PAUSE();
    else
      std::this_thread::yield();  // a joined worker preempted on our CPU gets it back
  }
  return p.status.load(std::memory_order_relaxed);
}

}  // namespace tyche::runtime

extern "C" {

int32_t tyche_parallel_for(int64_t n, tyche::runtime::ParallelBody body, void* env) {
  return tyche::runtime::ThreadPool::global().parallel_for(n, body, env);
}

// Generated code allocates and frees a large intermediate once per loop iteration (or call); a
// small per-thread cache of freed blocks keeps that from becoming an mmap/munmap (and page
// faults) per iteration. Each block carries its size in a 64-byte header. A full cache drops its
// least recently freed block, not the one just freed: a process that runs many kernels (the
// tuner's worker, a model's executor) must keep the blocks of the kernel running now, or every
// run of it pays the page faults of a fresh block, and is measured as several times slower.
namespace {
struct BlockCache {
  std::vector<std::pair<size_t, void*>> blocks;
  ~BlockCache() {
    for (auto& b : blocks) std::free(b.second);
  }
};
thread_local BlockCache block_cache;
constexpr size_t kHeader = 64;
constexpr size_t kMaxCachedBlocks = 16;
constexpr size_t kMaxCachedBytes = size_t{1} << 30;
}  // namespace

int32_t tyche_request_tiles() {
#if defined(__linux__) && defined(__x86_64__)
  // Linux keeps the 8 KiB tile data state off until a process asks (kernel 5.16 and later).
  constexpr long kArchRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;                   // XFEATURE_XTILEDATA
  static const int32_t granted =
      syscall(SYS_arch_prctl, kArchRequestPermission, kTileData) == 0 ? 0 : 1;
  return granted;
#else
  return 1;
#endif
}

void* tyche_alloc(int64_t bytes) {
  size_t size = (static_cast<size_t>(bytes < 1 ? 1 : bytes) + 63) / 64 * 64;
  auto& blocks = block_cache.blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].first != size) continue;
    void* base = blocks[i].second;
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
    return static_cast<char*>(base) + kHeader;
  }
  void* base = std::aligned_alloc(64, size + kHeader);
  if (!base) return nullptr;
  *static_cast<size_t*>(base) = size;
  return static_cast<char*>(base) + kHeader;
}

void tyche_free(void* ptr) {
  if (!ptr) return;
  void* base = static_cast<char*>(ptr) - kHeader;
  size_t size = *static_cast<size_t*>(base);
  if (size > kMaxCachedBytes) {
    std::free(base);
    return;
  }
  auto& blocks = block_cache.blocks;
  size_t cached = size;
  for (const auto& b : blocks) cached += b.first;
  while (!blocks.empty() && (blocks.size() >= kMaxCachedBlocks || cached > kMaxCachedBytes)) {
    cached -= blocks.front().first;
    std::free(blocks.front().second);
    blocks.erase(blocks.begin());
  }
  blocks.emplace_back(size, base);
}
}
