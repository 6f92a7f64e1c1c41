#include "runtime/module.h"

#include <fmt/format.h>

#include "support/error.h"

namespace tyche::runtime {

std::string kernel_status_text(int32_t status) {
  switch (status) {
    case kKernelOk:
      return "no error";
    case kKernelNullArgument:
      return "a buffer pointer was null";
    case kKernelOutOfMemory:
      return "out of memory for an intermediate buffer";
    case kKernelMisaligned:
      return fmt::format("a buffer pointer was not {}-byte aligned", kKernelAlignment);
    case kKernelNoTileState:
      return "the OS refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)";
  }
  return fmt::format("unknown error code {}", status);
}

void Module::add(const std::string& name, PackedFunc fn, std::shared_ptr<const void> owner) {
  if (!fn) throw Error(fmt::format("module: function '{}' is null", name));
  if (!funcs_.emplace(name, fn).second)
    throw Error(fmt::format("module: a function named '{}' already exists", name));
  if (owner) owners_.push_back(std::move(owner));
}

PackedFunc Module::get_function(const std::string& name) const {
  auto it = funcs_.find(name);
  if (it == funcs_.end())
    throw Error(fmt::format("module: no function '{}' (functions: {})", name,
                            funcs_.empty() ? std::string("none")
                                           : fmt::format("{}", fmt::join(function_names(), ", "))));
  return it->second;
}

std::vector<std::string> Module::function_names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : funcs_) out.push_back(n);
  return out;
}

}  // namespace tyche::runtime
