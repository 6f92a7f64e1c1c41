// What this machine says about itself through Linux sysfs: its caches. Code and tests size
// things from these numbers instead of assuming a machine (these hosts have been a Xeon with
// 2 MiB of L2 one day and an EPYC with 512 KiB the next).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tyche::target {

struct CacheInfo {
  int level = 0;
  std::string type;  // "Data", "Instruction" or "Unified"
  size_t bytes = 0;
};

// CPU 0's caches as sysfs lists them; empty where it lists none.
std::vector<CacheInfo> cpu_caches();
// The data (or unified) cache of `level` on CPU 0; `fallback` if sysfs does not report it.
size_t data_cache_bytes(int level, size_t fallback);
// The largest cache sysfs reports for CPU 0; `fallback` if it reports none.
size_t last_level_cache_bytes(size_t fallback);
// The CPU's model name as /proc/cpuinfo gives it ("Intel(R) Xeon(R) Processor"); "" if unknown.
std::string cpu_model_name();

}  // namespace tyche::target
