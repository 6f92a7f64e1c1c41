#include "support/random.h"

#include <random>

#include "support/error.h"

namespace tyche {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

RandomEngine::RandomEngine(int64_t seed) {
  if (seed < 0) {
    std::random_device rd;
    seed = static_cast<int64_t>(((uint64_t{rd()} << 32) | rd()) >> 1);
  }
  seed_ = seed;
  uint64_t x = static_cast<uint64_t>(seed);
  for (uint64_t& s : s_) s = splitmix64(x);
}

uint64_t RandomEngine::next() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t RandomEngine::uniform_below(uint64_t n) {
  TYCHE_CHECK(n > 0, "uniform_below(0)");
  // Reject the top partial block so every residue is equally likely.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

int64_t RandomEngine::uniform_int(int64_t lo, int64_t hi) {
  TYCHE_CHECK(lo < hi, "uniform_int over an empty range [{}, {})", lo, hi);
  uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + uniform_below(span));
}

double RandomEngine::uniform_real() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

int64_t RandomEngine::weighted_index(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) {
    TYCHE_CHECK(w >= 0, "negative weight {}", w);
    total += w;
  }
  TYCHE_CHECK(total > 0, "weights sum to zero");
  double x = uniform_real() * total;
  int64_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    last_positive = static_cast<int64_t>(i);
    if (x < weights[i]) return last_positive;
    x -= weights[i];
  }
  return last_positive;  // rounding left x just above the last bucket
}

RandomEngine RandomEngine::fork() {
  return RandomEngine(static_cast<int64_t>(next() >> 1));
}

std::vector<RandomEngine> RandomEngine::fork(int n) {
  std::vector<RandomEngine> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back(fork());
  return out;
}

}  // namespace tyche
