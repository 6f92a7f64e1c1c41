// A seedable, forkable random engine whose streams are the same on every platform and compiler:
// xoshiro256** seeded through splitmix64, with its own integer and real draws (the std
// distributions are implementation-defined, so same seed would not mean same trace).
#pragma once

#include <cstdint>
#include <vector>

namespace tyche {

class RandomEngine {
 public:
  // seed < 0 draws a seed from std::random_device (a nondeterministic run, as in TVM).
  explicit RandomEngine(int64_t seed = 0);

  uint64_t next();
  // Uniform over [lo, hi); requires lo < hi. Unbiased (rejection sampling).
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Uniform over [0, n) for 64-bit weights totals.
  uint64_t uniform_below(uint64_t n);
  // Uniform over [0, 1) with 53 random bits.
  double uniform_real();
  // An index drawn with probability proportional to weights[i] (non-negative, positive sum).
  int64_t weighted_index(const std::vector<double>& weights);

  // A new, independent engine; the parent advances, so successive forks differ. Forking the
  // same parent state gives the same children (per-thread engines are deterministic).
  RandomEngine fork();
  std::vector<RandomEngine> fork(int n);

  // The seed this engine was created from (after resolving seed < 0).
  int64_t seed() const { return seed_; }

 private:
  uint64_t s_[4];
  int64_t seed_;
};

}  // namespace tyche
