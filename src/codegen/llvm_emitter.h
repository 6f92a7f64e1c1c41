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
};

// Emits `<name>(ptr, ...)` and the packed entry `<name>_packed(ptr args)` that the host calls.
std::unique_ptr<llvm::Module> emit_module(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx, const EmitOptions& options);

// The packed entry's symbol name for a function name.
std::string packed_name(const std::string& func_name);

}  // namespace tyche::codegen::detail
