// A module: named kernels with the packed calling convention (one data pointer per parameter,
// a status returned), looked up by name as in TVM's runtime.Module.get_function. Whatever owns a
// kernel's code (a JIT, a loaded library) is kept alive by the module.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tyche::runtime {

// What a generated kernel returns (exported kernels too: tyche export writes these codes into
// every header it makes, so this is their one home).
enum KernelStatus : int32_t {
  kKernelOk = 0,
  kKernelNullArgument = 1,  // a buffer pointer was null; nothing was computed
  kKernelOutOfMemory = 2,   // an intermediate buffer could not be allocated; outputs are partial
  // No longer returned: a misaligned buffer is now copied (below). Kept so that the codes of
  // headers exported earlier keep their meaning.
  kKernelMisaligned = 3,
  // The OS did not let the process use AMX's tile registers (Linux: arch_prctl
  // ARCH_REQ_XCOMP_PERM); nothing was computed.
  kKernelNoTileState = 4,
};
// The alignment generated code is fastest with: the kernel's body assumes every parameter this
// aligned (as TVM's does); the entry checks, and copies a buffer that is not into an aligned
// temporary (inputs before, outputs after the body). Any alignment works.
inline constexpr int kKernelAlignment = 64;
// "a buffer pointer was null", "out of memory", or "unknown error code N".
std::string kernel_status_text(int32_t status);

using PackedFunc = int32_t (*)(void* const* args);

class Module {
 public:
  // Adds `fn` under `name`; `owner` keeps its code alive. Replacing a name is an error.
  void add(const std::string& name, PackedFunc fn, std::shared_ptr<const void> owner = nullptr);
  bool has(const std::string& name) const { return funcs_.count(name) > 0; }
  // Throws tyche::Error naming the module's functions when `name` is not one of them.
  PackedFunc get_function(const std::string& name) const;
  std::vector<std::string> function_names() const;

 private:
  std::map<std::string, PackedFunc> funcs_;
  std::vector<std::shared_ptr<const void>> owners_;
};

}  // namespace tyche::runtime
