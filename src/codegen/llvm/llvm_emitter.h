// Internal to the LLVM backend: lowered Tyche IR -> an llvm::Module.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>

#include "ir/function.h"

namespace tyche::codegen::detail {

struct EmitOptions {
  int64_t max_stack_bytes = 64 * 1024;
  std::string cpu, features;  // LLVM's CPU name and feature string
  int vector_bits = 128;      // 512: keep 512-bit vectors whole
  bool native_f16 = false;    // F16C: half <-> float in hardware (else integer IR)
  // Also `void <name>_set_num_threads(i32)`, forwarding to <runtime_prefix>set_num_threads (an
  // exported library's runtime has it; Tyche's own does not), or doing nothing when `parallel`
  // is off.
  bool set_num_threads_entry = false;
  bool parallel = true;  // false: parallel loops run serially (an export with --threads 1)
  std::string runtime_prefix = "tyche_";  // of the runtime functions called (runtime_symbols.h)
};

// Emits `i32 <name>(ptr, ...)` and the packed entry `i32 <name>_packed(ptr args)` that the host
// calls; both return a runtime::KernelStatus.
std::unique_ptr<llvm::Module> emit_module(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx,
                                          const EmitOptions& options);

// The packed entry's symbol name for a function name.
std::string packed_name(const std::string& func_name);

// `mod` (already emitted, optimized or not) verified and compiled to a position-independent object
// file for `cpu` (cpu.h; "" is the default), as export writes objects (llvm_jit.cc).
std::string export_object(llvm::Module& mod, const std::string& cpu);

}  // namespace tyche::codegen::detail
