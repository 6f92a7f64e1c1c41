#include <gmock/gmock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "../common/sanitizers.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "support/error.h"
#include "target/cpu.h"
#include "target/host.h"

namespace tyche::runtime {
namespace {

using ::testing::HasSubstr;

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(size_t n) : hits(n) {}
};

int32_t count_body(int64_t begin, int64_t end, void* env) {
  auto* c = static_cast<Counts*>(env);
  for (int64_t i = begin; i < end; ++i) c->hits[static_cast<size_t>(i)].fetch_add(1);
  return 0;
}

TEST(ThreadPool, EveryIterationRunsExactlyOnce) {
  ThreadPool& pool = ThreadPool::global();
  for (int threads : {1, 2, 3, 8}) {
    pool.set_num_threads(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      Counts c(static_cast<size_t>(n));
      for (int rep = 0; rep < 50; ++rep) pool.parallel_for(n, count_body, &c);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(c.hits[static_cast<size_t>(i)].load(), 50) << threads << " threads, n " << n;
    }
  }
  pool.set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

int32_t nested_body(int64_t begin, int64_t end, void* env) {
  for (int64_t i = begin; i < end; ++i)
    if (int32_t s = tyche_parallel_for(4, count_body, env)) return s;  // runs serially
  return 0;
}

TEST(ThreadPool, NestedRegionsRunSeriallyAndConcurrentCallersAreSafe) {
  Counts c(4);
  ThreadPool::global().parallel_for(6, nested_body, &c);
  for (auto& h : c.hits) EXPECT_EQ(h.load(), 6);
  Counts d(100);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 100; ++r) ThreadPool::global().parallel_for(100, count_body, &d);
    });
  for (auto& t : callers) t.join();
  for (auto& h : d.hits) EXPECT_EQ(h.load(), 400);
}

// Resizing the pool (the Python package's set_num_threads) while another host thread runs
// regions waits for the region in flight instead of stopping its workers under it.
TEST(ThreadPool, ResizingWhileAnotherThreadRunsRegionsIsSafe) {
  int before = ThreadPool::global().num_threads();
  Counts d(64);
  std::atomic<bool> done{false};
  std::thread caller([&] {
    for (int r = 0; r < 2000; ++r) ThreadPool::global().parallel_for(64, count_body, &d);
    done = true;
  });
  for (int i = 0; !done; ++i) ThreadPool::global().set_num_threads(1 + i % 3);
  caller.join();
  for (auto& h : d.hits) EXPECT_EQ(h.load(), 2000);
  ThreadPool::global().set_num_threads(before);
}

TEST(ThreadPool, RegionsStartedAsWorkersFallAsleepAreNotLost) {
  // Between regions the caller waits about as long as a worker spins before it sleeps, so
  // workers keep going to sleep just as the next region is published. A wake-up lost there
  // leaves the caller waiting for a part nobody runs: the watchdog turns that hang into a failure.
  std::atomic<int64_t> done{0};
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    int64_t last = -1;
    for (int idle = 0; !finished.load();
         std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
      int64_t now = done.load();
      idle = now == last ? idle + 1 : 0;
      last = now;
      if (idle >= 50) {  // 5 s without a finished region
        std::fprintf(stderr, "thread pool hung after %lld regions: a wake-up was lost\n",
                     static_cast<long long>(now));
        std::abort();
      }
    }
  });
  auto body = [](int64_t, int64_t, void* env) -> int32_t {
    static_cast<std::atomic<int64_t>*>(env)->fetch_add(0);
    return 0;
  };
  std::mt19937 rng(3);
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 4000 && std::chrono::steady_clock::now() - start < std::chrono::seconds(8);
       ++r) {
    ThreadPool::global().parallel_for(2, body, &done);
    done.fetch_add(1);
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::microseconds(std::uniform_int_distribution<int>(20, 1500)(rng));
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  finished = true;
  watchdog.join();
  EXPECT_GT(done.load(), 0);
}

// A body that fails (a generated kernel out of memory) stops the loop: its status reaches the
// caller, whichever thread ran it, and no thread starts another range after its own failed.
int32_t always_fails(int64_t, int64_t, void* env) {
  static_cast<std::atomic<int>*>(env)->fetch_add(1);
  return kKernelOutOfMemory;
}

TEST(ThreadPool, AFailingBodyStopsTheLoopAndItsStatusIsReturned) {
  ThreadPool& pool = ThreadPool::global();
  int before = pool.num_threads();
  for (int threads : {1, 2, 4}) {
    pool.set_num_threads(threads);
    std::atomic<int> calls{0};
    EXPECT_EQ(pool.parallel_for(4000, always_fails, &calls), kKernelOutOfMemory)
        << threads << " threads";
    EXPECT_LE(calls.load(), threads)
        << "ranges after a failure were started (" << threads << " threads, 16 chunks)";
    Counts c(100);
    EXPECT_EQ(pool.parallel_for(100, count_body, &c), 0) << "the next loop starts clean";
  }
  pool.set_num_threads(before);
}

// AMX's tile state is the OS's to grant (Linux 5.16 and later, on request): granted where the CPU
// has AMX, refused where it has not, the answer the same every time.
TEST(ThreadPool, TileStateIsGrantedWhereTheCpuHasAmx) {
  const bool amx = target::resolve_cpu("host").has("amx-tile");
  EXPECT_EQ(tyche_request_tiles() == 0, amx);
  EXPECT_EQ(tyche_request_tiles() == 0, amx);
  EXPECT_THAT(runtime::kernel_status_text(runtime::kKernelNoTileState),
              ::testing::HasSubstr("AMX tile state"));
}

TEST(ThreadPool, AlignedAllocationAndExhaustion) {
  void* p = tyche_alloc(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  tyche_free(p);
#if !TYCHE_ASAN  // AddressSanitizer aborts on such a request by default
  EXPECT_EQ(tyche_alloc(int64_t{1} << 62), nullptr)
      << "no process has 4 EiB: the kernel reports it";
#endif
}

TEST(ThreadPool, AFullBlockCacheKeepsTheBlockJustFreed) {
  // Sixteen other kernels' intermediates fill the cache first, as in a worker that has run them.
  std::vector<void*> others;
  for (int i = 1; i <= 16; ++i) others.push_back(tyche_alloc(int64_t{4096} * 64 + i * 64));
  for (void* p : others) tyche_free(p);
  constexpr int64_t kBytes = int64_t{8} << 20;  // large enough to be mmapped when not cached
  auto* first = static_cast<unsigned char*>(tyche_alloc(kBytes));
  ASSERT_NE(first, nullptr);
  first[kBytes / 2] = 0xAB;
  tyche_free(first);
  auto* again = static_cast<unsigned char*>(tyche_alloc(kBytes));
  EXPECT_EQ(again, first) << "the block of the kernel running now is reused, not mapped afresh";
  EXPECT_EQ(again[kBytes / 2], 0xAB);
  tyche_free(again);
}

// The VmFlags of the mapping of this process that holds `p` ("" when none does).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (line.find('-') != std::string::npos && (range >> std::hex >> lo >> dash >> hi) &&
        dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(NDArray, BuffersOfAPageOrMoreStartAPageAndOfTwoMebibytesAskForHugePages) {
  runtime::NDArray small({1000}, DataType::Float(32));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data_as<float>()) % 64, 0u);
  runtime::NDArray paged({1 << 14}, DataType::Float(32));  // 64 KiB: starts a page
  EXPECT_EQ(reinterpret_cast<uintptr_t>(paged.data_as<float>()) % 4096, 0u);
  runtime::NDArray weights({1 << 20}, DataType::Float(32));  // 4 MiB
  const float* p = weights.data_as<float>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (uintptr_t{2} << 20), 0u);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[(1 << 20) - 1], 0.0f);
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "no transparent huge pages in this kernel";
  // "hg": the mapping was advised MADV_HUGEPAGE (whether the kernel found huge pages is its call).
  std::string flags = vm_flags_of(p);
  ASSERT_FALSE(flags.empty());
  EXPECT_THAT(flags, HasSubstr(" hg"));
}

TEST(Module, KernelStatusesHaveTexts) {
  EXPECT_EQ(kernel_status_text(kKernelNullArgument), "a buffer pointer was null");
  EXPECT_THAT(kernel_status_text(kKernelOutOfMemory), HasSubstr("out of memory"));
  EXPECT_EQ(kernel_status_text(77), "unknown error code 77");
}

TEST(TimeEvaluator, RepeatsGrowToMinRepeatTimeAndReportStatistics) {
  int calls = 0;
  TimeResult r = time_function(
      [&] {
        ++calls;
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
        while (std::chrono::steady_clock::now() < until) {
        }
      },
      TimeOptions{.warmup = 2,
                  .number = 1,
                  .repeat = 4,
                  .min_repeat_ms = 5,
                  .flush_cache = true,
                  .flush_ranges = {}});
  EXPECT_EQ(r.seconds.size(), 4u);
  EXPECT_GE(r.number, 50);  // 5 ms of 50 us calls
  EXPECT_GE(r.min, 45e-6);
  EXPECT_LE(r.min, r.median);
  EXPECT_GE(r.cv, 0.0);
  EXPECT_GE(calls, 2 + 4 * r.number);
}

TEST(TimeEvaluator, ASlowFirstCallIsTheFirstRepeat) {
  int calls = 0;
  auto slow = [&] {
    ++calls;
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  TimeResult r = time_function(slow, TimeOptions{.warmup = 0,
                                                 .number = 1,
                                                 .repeat = 3,
                                                 .min_repeat_ms = 2,
                                                 .flush_cache = false,
                                                 .flush_ranges = {}});
  EXPECT_EQ(r.number, 1);
  EXPECT_EQ(r.seconds.size(), 3u);
  EXPECT_EQ(calls, 3);  // not a calibration call and then three
  for (double s : r.seconds) EXPECT_GE(s, 3e-3);
  calls = 0;  // with cold caches every repeat flushes first, so the calibration call is not one
  r = time_function(slow, TimeOptions{.warmup = 0,
                                      .number = 1,
                                      .repeat = 3,
                                      .min_repeat_ms = 2,
                                      .flush_cache = true,
                                      .flush_ranges = {{&calls, sizeof(calls)}}});
  EXPECT_EQ(calls, 4);
}

// A walk over half of this host's L2 (as sysfs reports it). The reads chase a random cycle through
// its cache lines, so each waits for the one before and the time is the latency of where the
// data is, whatever the build does to the loop around it.
class PointerChase {
 public:
  explicit PointerChase(unsigned seed)
      : bytes_(
            std::max<size_t>(target::data_cache_bytes(2, size_t{256} << 10) / 2, size_t{64} << 10)),
        data_(bytes_ / sizeof(uint32_t)),
        lines_(data_.size() / kLine) {
    std::vector<uint32_t> order(lines_);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin() + 1, order.end(), std::mt19937(seed));
    for (size_t i = 0; i < order.size(); ++i)
      data_[order[i] * kLine] = order[(i + 1) % order.size()];
  }
  void operator()() {
    uint32_t line = 0;
    for (size_t i = 0; i < lines_; ++i) line = data_[line * kLine];
    sink_ = line;
  }
  size_t bytes() const { return bytes_; }
  std::pair<const void*, size_t> range() const {
    return {data_.data(), data_.size() * sizeof(uint32_t)};
  }

 private:
  static constexpr size_t kLine = 16;  // 4-byte words per 64-byte line
  size_t bytes_;
  std::vector<uint32_t> data_;
  size_t lines_;
  volatile uint32_t sink_ = 0;
};

TEST(TimeEvaluator, FlushingTheArgumentsMakesEveryRepeatCold) {
  // The walk stays in L2 between warm calls; flushed, every repeat reads it from memory. L2
  // against memory is an order of magnitude on every host; the bound is twice the warm median.
  PointerChase chase(7);
  TimeOptions options;
  options.warmup = 2;
  options.repeat = 9;
  TimeResult warm = time_function([&] { chase(); }, options);
  options.flush_cache = true;
  options.flush_ranges = {chase.range()};
  TimeResult cold = time_function([&] { chase(); }, options);
  EXPECT_GT(cold.min, 2 * warm.median) << chase.bytes() / 1024 << " KiB: cold " << cold.min * 1e6
                                       << " us, warm " << warm.median * 1e6 << " us";
}

TEST(TimeEvaluator, EvictingThePrivateCachesLeavesTheArgumentsInTheLastLevelCache) {
  // With only L1 and L2 evicted before each repeat the walk reads from the last-level cache:
  // slower than L2 (1.7x on Zen 5 for this walk, TLB misses included) and faster than memory.
  // Medians against the fastest warm repeat: another process on the other core (ctest -j) slows
  // the warm repeats too.
  PointerChase chase(11);
  bool has_llc = target::data_cache_bytes(3, 0) > 4 * chase.bytes();
  TimeResult warm, llc, mixed, cold;
  // A timing test on a shared 2-core host: up to three tries, since ctest -j runs another test
  // beside this one; broken eviction fails all three.
  for (int attempt = 0; attempt < 3; ++attempt) {
    TimeOptions options;
    options.warmup = 2;
    options.repeat = 9;
    warm = time_function([&] { chase(); }, options);
    options.flush_cache = true;
    options.keep_in_llc = true;
    llc = time_function([&] { chase(); }, options);
    options.flush_ranges = {chase.range()};  // and these from every cache
    mixed = time_function([&] { chase(); }, options);
    options.keep_in_llc = false;
    cold = time_function([&] { chase(); }, options);
    if (mixed.min > 2 * warm.median && llc.median > 1.25 * warm.min &&
        (!has_llc || llc.median < cold.median))
      break;
  }
  EXPECT_GT(mixed.min, 2 * warm.median)
      << "mixed " << mixed.min * 1e6 << " us, warm " << warm.median * 1e6 << " us";
  EXPECT_GT(llc.median, 1.25 * warm.min)
      << "llc " << llc.median * 1e6 << " us, warm " << warm.min * 1e6 << " us";
  if (has_llc) {
    EXPECT_LT(llc.median, cold.median)
        << "llc " << llc.median * 1e6 << " us, cold " << cold.median * 1e6 << " us";
  }
}

int32_t add_one(void* const* args) {
  *static_cast<int*>(args[0]) += 1;
  return 0;
}

TEST(Module, LooksUpFunctionsByName) {
  Module m;
  auto owner = std::make_shared<int>(5);
  m.add("add_one", add_one, owner);
  EXPECT_TRUE(m.has("add_one"));
  int x = 1;
  void* args[] = {&x};
  EXPECT_EQ(m.get_function("add_one")(args), 0);
  EXPECT_EQ(x, 2);
  EXPECT_THAT([&] { m.get_function("nope"); }, ::testing::Throws<Error>());
  try {
    m.get_function("nope");
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no function 'nope' (functions: add_one)"));
  }
  EXPECT_THROW(m.add("add_one", add_one), Error);
  EXPECT_THROW(m.add("null", nullptr), Error);
  EXPECT_EQ(owner.use_count(), 2);
}

}  // namespace
}  // namespace tyche::runtime
