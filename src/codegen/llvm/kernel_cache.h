// The on-disk kernel cache (TYCHE_KERNEL_CACHE=DIR, off when unset), as Triton keeps one: a
// kernel's object file keyed by its unoptimized LLVM module, the CPU it is compiled for and
// LLVM's version, so that a process compiling a kernel another process already compiled (a model
// run a second time, the tests) loads the object instead of optimizing and generating code again.
// Entries are written whole under a temporary name and renamed into place, so concurrent
// processes share one folder; an entry that does not read back whole is compiled again.
#pragma once

#include <optional>
#include <string>

namespace llvm {
class Module;
}

namespace tyche::codegen::detail {

// The entry's path for `module` compiled for the CPU `cpu` with `features`, or nothing when the
// cache is off.
std::optional<std::string> kernel_cache_path(const llvm::Module& module, const std::string& cpu,
                                             const std::string& features);
// The object stored at `path`, or "" when there is none (or it is damaged).
std::string read_cached_object(const std::string& path);
// Stores `object` at `path`; a folder that cannot be written is reported once on stderr and
// the kernel is simply not cached.
void write_cached_object(const std::string& path, const std::string& object);

}  // namespace tyche::codegen::detail
