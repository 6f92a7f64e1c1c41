#include "executor/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "support/error.h"

namespace tyche::executor {

namespace {

// Sizes are each within the tensor limit (Value::bytes), but a model of many of them must not
// wrap the sums either.
int64_t add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw_input_error("the model's buffers need more bytes than 64 bits count");
  return r;
}

int64_t aligned(int64_t bytes) {
  return add(bytes, 63) / 64 * 64;
}

bool overlap_in_time(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  int calls = 0;
  for (const BufferLifetime& b : buffers) {
    plan.naive_bytes = add(plan.naive_bytes, aligned(b.bytes));
    calls = std::max(calls, b.last + 1);
  }
  std::vector<int64_t> live(static_cast<size_t>(calls), 0);
  for (const BufferLifetime& b : buffers)
    for (int c = b.first; c <= b.last; ++c)
      live[static_cast<size_t>(c)] = add(live[static_cast<size_t>(c)], aligned(b.bytes));
  plan.lower_bound = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    // Intervals taken by the placed buffers that are live at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (overlap_in_time(buffers[i], buffers[j]))
        taken.emplace_back(plan.offsets[j], add(plan.offsets[j], aligned(buffers[j].bytes)));
    std::sort(taken.begin(), taken.end());
    int64_t size = aligned(buffers[i].bytes), offset = 0;
    for (const auto& [lo, hi] : taken) {
      if (add(offset, size) <= lo) break;
      offset = std::max(offset, hi);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, add(offset, size));
    placed.push_back(i);
  }
  return plan;
}

}  // namespace tyche::executor
