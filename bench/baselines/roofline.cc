// The roofline's two limits, measured: peak f32 FMA throughput with independent FMA chains kept in
// registers (enough chains to cover the FMA latency on every pipe), and STREAM-triad bandwidth.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/baselines/baselines.h"

namespace {

constexpr int kChains = 12;  // >= latency (4-5 cycles) x FMA pipes (2) on current x86 cores

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One function per vector width (each compiled for its ISA): kChains accumulators, each an FMA
// chain.
#define TYCHE_FMA_CHAINS(name, isa, Vec, set1, fma)                                          \
  __attribute__((target(isa))) float name(int64_t iterations) {                              \
    Vec acc[kChains];                                                                        \
    for (int j = 0; j < kChains; ++j) acc[j] = set1(static_cast<float>(j) * 1e-3f);          \
    const Vec a = set1(0.999999f), b = set1(1e-7f);                                          \
    for (int64_t i = 0; i < iterations; ++i) {                                               \
      _Pragma("GCC unroll 16") for (int j = 0; j < kChains; ++j) acc[j] = fma(acc[j], a, b); \
    }                                                                                        \
    Vec s = acc[0];                                                                          \
    for (int j = 1; j < kChains; ++j) s = fma(s, a, acc[j]);                                 \
    float out;                                                                               \
    std::memcpy(&out, &s, sizeof(float));                                                    \
    return out;                                                                              \
  }

#define TYCHE_MUL_ADD128(x, a, b) _mm_add_ps(_mm_mul_ps(x, a), b)
TYCHE_FMA_CHAINS(chains512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps)
TYCHE_FMA_CHAINS(chains256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps)
TYCHE_FMA_CHAINS(chains128, "sse2", __m128, _mm_set1_ps, TYCHE_MUL_ADD128)

int vector_bits() {
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 256;
  return 128;
}

float run_chains(int64_t n) {
  switch (vector_bits()) {
    case 512:
      return chains512(n);
    case 256:
      return chains256(n);
    default:
      return chains128(n);
  }
}

// Runs `body(thread_index)` on `threads` threads started together; returns the wall time.
template <typename F>
double on_threads(int threads, F body) {
  std::vector<std::thread> pool;
  double t0 = now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
  return now() - t0;
}

}  // namespace

extern "C" {

int tyche_peak_vector_bits() {
  return vector_bits();
}

double tyche_peak_gflops(int threads, double seconds) {
  threads = std::max(threads, 1);
  volatile float sink = 0;
  int64_t n = 1 << 16;  // calibrate on one thread to about 1/20 of the requested time
  for (double t = 0; t < seconds / 20;) {
    n *= 2;
    double t0 = now();
    sink = sink + run_chains(n);
    t = now() - t0;
    if (t >= seconds / 20) n = static_cast<int64_t>(static_cast<double>(n) * (seconds / 3) / t);
  }
  double best = 0;
  int lanes = vector_bits() / 32;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<float> out(static_cast<size_t>(threads));
    double wall = on_threads(threads, [&](int t) { out[static_cast<size_t>(t)] = run_chains(n); });
    for (float v : out) sink = sink + v;
    best = std::max(best, 2.0 * kChains * lanes * static_cast<double>(n) * threads / wall / 1e9);
  }
  return best;
}

double tyche_memory_bandwidth(int threads, int64_t array_bytes, int repeats) {
  threads = std::max(threads, 1);
  size_t count = static_cast<size_t>(std::max<int64_t>(array_bytes, 4096) / 4);
  auto* a = static_cast<float*>(std::aligned_alloc(64, (count * 4 + 63) / 64 * 64));
  auto* b = static_cast<float*>(std::aligned_alloc(64, (count * 4 + 63) / 64 * 64));
  auto* c = static_cast<float*>(std::aligned_alloc(64, (count * 4 + 63) / 64 * 64));
  if (!a || !b || !c) return std::free(a), std::free(b), std::free(c), -1.0;
  auto slice = [&](int t) {
    return std::pair<size_t, size_t>(count * t / threads, count * (t + 1) / threads);
  };
  on_threads(threads, [&](int t) {  // first touch by the thread that will stream the slice
    auto [lo, hi] = slice(t);
    for (size_t i = lo; i < hi; ++i) a[i] = 0.0f, b[i] = 1.0f, c[i] = 2.0f;
  });
  double best = 0;
  for (int rep = 0; rep < std::max(repeats, 1); ++rep) {
    double wall = on_threads(threads, [&](int t) {
      auto [lo, hi] = slice(t);
      for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
    });
    best = std::max(best, 12.0 * static_cast<double>(count) / wall / 1e9);
  }
  volatile float sink = a[count / 2];
  (void)sink;
  std::free(a), std::free(b), std::free(c);
  return best;
}
}
