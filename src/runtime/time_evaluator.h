// Times a function the way TVM's time_evaluator does: warm-up runs, then `repeat` measurements,
// each the mean of `number` calls, where `number` grows until one measurement lasts at least
// min_repeat_ms (a first call that already lasts that long counts as the first repeat).
// Optionally evicts the caches before each measurement so every repeat starts cold: the given
// memory ranges (the kernel's arguments, as TVM does) line by line, or else everything, by
// touching a buffer larger than the last-level cache; or only the cores' private caches, leaving
// the data in the last-level cache. Reports every measurement with its median, min, mean and
// coefficient of variation.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace tyche::runtime {

struct TimeOptions {
  int warmup = 1;
  int number = 1;
  int repeat = 5;
  int min_repeat_ms = 0;
  bool flush_cache = false;
  std::vector<std::pair<const void*, size_t>> flush_ranges;  // with flush_cache: evict only these
  // With flush_cache: instead, every pool thread evicts its core's private caches (L1, L2), so
  // the arguments wait in the shared last-level cache, as a model's activations do between its
  // calls; then flush_ranges (if any) are evicted from every cache.
  bool keep_in_llc = false;
  // Not read here: that the caller fills flush_ranges with the constant arguments only (the
  // measuring worker does, for the "mixed" timing).
  bool flush_constants = false;
};

struct TimeResult {
  std::vector<double> seconds;                   // per call, one entry per repeat
  int number = 1;                                // calls per repeat after growing for min_repeat_ms
  double median = 0, min = 0, mean = 0, cv = 0;  // cv: stddev / mean
};

TimeResult time_function(const std::function<void()>& f, const TimeOptions& options = {});

// Evicts the last-level cache by touching a buffer larger than it (its size read from sysfs).
void flush_cpu_cache();
// Writes back and evicts the cache lines of [data, data + bytes) from every level.
void flush_cpu_cache(const void* data, size_t bytes);
// Every thread of the pool evicts its core's L1 and L2 by reading a private buffer twice their
// size (read from sysfs): what they held moves to the last-level cache, if there is one.
void evict_private_caches();

}  // namespace tyche::runtime
