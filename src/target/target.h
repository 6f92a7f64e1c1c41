// What code is generated for: a CPU through LLVM, a CUDA GPU described by its architecture and
// limits, or an OpenCL device described by its limits. One value travels from the command line
// (`--target`) through the rules, postprocessors, mutators, builder and records, so every layer
// asks the same description.
//
// Text form (TVM's): a kind, then options as `-key=value` (or `-key value`):
//   llvm [-mcpu=NAME] [-num-cores=N]        NAME: host, x86-64-v2..v4 or an LLVM CPU (target/cpu.h)
//   cuda [-arch=sm_XY] [-max-threads-per-block=N] [-max-shared-memory-per-block=BYTES]
//   opencl [-max-threads-per-block=N] [-max-shared-memory-per-block=BYTES]   (work-group size,
//   local memory)
// str() prints the `=` form, which parse() reads back to an equal Target.
#pragma once

#include <cstdint>
#include <string>

#include "target/cpu.h"

namespace tyche::target {

struct Target {
  std::string kind = "llvm";  // "llvm" (a CPU), "cuda" or "opencl"
  int num_cores = 1;          // llvm: threads that run parallel loops
  std::string cpu;            // llvm: the CPU code is generated for (target/cpu.h); "" = default
  std::string arch;           // cuda: the compute capability ("sm_90"); "" = not given
  // GPU limits (cuda, opencl): VerifyGPUCode checks them all; AutoBind and CrossThreadReduction
  // draw thread counts up to max_threads_per_block.
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_memory_per_block = 49152;  // bytes; the default without the opt-in
  int64_t max_local_memory_per_block = 2147483647;
  int64_t max_vector_bytes = 16;  // widest vector load/store

  // cuda and opencl share the GPU design space (thread bindings, shared/local scopes); they differ
  // in the code printed for them.
  bool is_gpu() const { return kind == "cuda" || kind == "opencl"; }
  // cuda: the compute capability -arch names ("sm_90a": 90); 80 (sm_80, the default) if none.
  int compute_capability() const;
  // cuda: the architecture code is compiled for and records name: `arch`, else "sm_80".
  std::string cuda_arch() const { return arch.empty() ? "sm_80" : arch; }
  // llvm: the CPU `cpu` names, resolved (its features, vector width). Throws tyche::Error for an
  // unknown CPU or a GPU target.
  const Cpu& cpu_info() const;
  // The text form above. Throws InputError naming the accepted forms otherwise (a CPU name is
  // checked by cpu_info(), where code is generated).
  static Target parse(const std::string& text);
  // llvm with one core per hardware thread of this machine, the default CPU.
  static Target host();
  std::string str() const;
};

}  // namespace tyche::target
