// Static memory planning for a model's intermediate values: each buffer lives from the call that
// writes it to the last call that reads it (through views too), and buffers whose lifetimes
// overlap never share bytes. Placement is greedy, largest first, at the lowest 64-byte aligned
// offset that is free over the buffer's lifetime; the liveness lower bound (the most bytes live
// at once) says how close it came.
#pragma once

#include <cstdint>
#include <vector>

namespace tyche::executor {

struct BufferLifetime {
  int64_t bytes = 0;
  int first = 0, last = 0;  // calls (inclusive) during which the buffer must hold its value
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per buffer, 64-byte aligned
  int64_t arena_bytes = 0;       // the arena's size
  int64_t naive_bytes = 0;       // every buffer its own allocation
  int64_t lower_bound = 0;       // the most bytes live during any one call
};

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers);

}  // namespace tyche::executor
