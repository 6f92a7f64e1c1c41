// What code is generated for: the host CPU through LLVM, or a CUDA GPU described by its limits.
// Rules, postprocessors and mutators read it through the TuneContext of one tuning task.
#pragma once

#include <cstdint>
#include <string>

#include "ir/function.h"

namespace tyche::tune {

struct Target {
  std::string kind = "llvm";  // "llvm" (the host CPU) or "cuda"
  int num_cores = 1;          // llvm: threads that run parallel loops
  std::string cpu;            // llvm: the CPU code is generated for (codegen/cpu.h); "" = default
  // cuda limits: VerifyGPUCode checks them all; AutoBind and CrossThreadReduction draw thread
  // counts up to max_threads_per_block.
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_memory_per_block = 49152;  // bytes
  int64_t max_local_memory_per_block = 2147483647;
  int64_t max_vector_bytes = 16;  // widest vector load/store

  bool is_gpu() const { return kind == "cuda"; }
  // "llvm" (cores = the host's), "llvm -num-cores N" (at most 4096), "llvm -mcpu x86-64-v3",
  // "cuda", "cuda -max-threads-per-block N -max-shared-memory-per-block B". Throws InputError
  // otherwise (a CPU name is checked where code is generated).
  static Target parse(const std::string& text);
  static Target host();
  std::string str() const;
};

// One tuning task: the function being scheduled and the target.
struct TuneContext {
  ir::PrimFunc func;
  Target target;
};

}  // namespace tyche::tune
