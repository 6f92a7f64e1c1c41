#include <gtest/gtest.h>

#include <random>

#include "executor/memory_plan.h"

namespace tyche::executor {
namespace {

void expect_no_overlap(const std::vector<BufferLifetime>& b, const MemoryPlan& p) {
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % 64, 0);
    EXPECT_LE(p.offsets[i] + b[i].bytes, p.arena_bytes);
    for (size_t j = i + 1; j < b.size(); ++j) {
      bool together = b[i].first <= b[j].last && b[j].first <= b[i].last;
      bool share =
          p.offsets[i] < p.offsets[j] + b[j].bytes && p.offsets[j] < p.offsets[i] + b[i].bytes;
      EXPECT_FALSE(together && share) << "buffers " << i << " and " << j;
    }
  }
}

TEST(MemoryPlan, AChainReusesTwoSlots) {
  // x0 -> x1 -> x2 -> ...: each buffer lives for the call that writes it and the next.
  std::vector<BufferLifetime> b;
  for (int c = 0; c < 10; ++c) b.push_back({1000, c, c + 1});
  MemoryPlan p = plan_memory(b);
  expect_no_overlap(b, p);
  EXPECT_EQ(p.lower_bound, 2 * 1024);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
  EXPECT_EQ(p.naive_bytes, 10 * 1024);
}

TEST(MemoryPlan, RandomLifetimesNeverShareLiveBytesAndStayNearTheBound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLifetime> b;
    int calls = 40;
    for (int c = 0; c < calls; ++c) {
      int64_t bytes = 64 * (1 + static_cast<int64_t>(rng() % 100));
      int last = std::min(calls, c + 1 + static_cast<int>(rng() % 6));
      b.push_back({bytes, c, last});
    }
    MemoryPlan p = plan_memory(b);
    expect_no_overlap(b, p);
    EXPECT_GE(p.arena_bytes, p.lower_bound);
    EXPECT_LE(p.arena_bytes, p.naive_bytes);
  }
}

}  // namespace
}  // namespace tyche::executor
