// The LLVM backend: a lowered PrimFunc (lower::lower) -> machine code, JIT-compiled in-process
// with ORC, for the host or another x86-64 CPU or level (cpu.h; code JIT-compiled here must run
// here). 512-bit vectors are kept whole when the CPU has AVX-512. The module is optimized with
// the O3 pipeline before code generation; assembly and object files can be emitted from it.
// Generated code needs no compiler-rt helpers, so objects link and load on any x86-64 CPU
// they were made for.
//
// Calling convention: the kernel takes one data pointer per parameter buffer, in order
// (inputs, then outputs); buffers must not overlap. It returns a runtime::KernelStatus: 0, or
// why it stopped (a null pointer, no memory for an intermediate). Parallel loops are outlined
// into functions run by the runtime's thread pool (tyche_parallel_for); large intermediate
// buffers come from tyche_alloc, small ones live on the stack.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/function.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"

namespace tyche::codegen {

struct CompileOptions {
  // The CPU to generate code for (cpu.h): "" is the default (TYCHE_CPU, else the host).
  std::string cpu;
  // Keep a copy of the optimized module so llvm_ir()/assembly()/save_object() work.
  bool keep_module = false;
  // Allocations up to this many bytes go on the stack.
  int64_t max_stack_bytes = 64 * 1024;
  // false: parallel loops run serially, with no call of the thread pool.
  bool parallel = true;
};

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  const std::string& name() const { return name_; }
  // Runs the kernel on raw data pointers, one per parameter; throws tyche::Error when it
  // returns an error status.
  void run(void* const* args) const {
    if (int32_t status = entry_(args)) fail(status);
  }
  runtime::PackedFunc packed() const { return entry_; }
  // Runs on NDArrays, checking their number, shapes (element counts) and dtypes first (a kernel
  // loaded from an object file has no signature to check against).
  void run(std::vector<runtime::NDArray>& args) const;
  double compile_seconds() const { return compile_seconds_; }

  // Need CompileOptions::keep_module; throw tyche::Error otherwise.
  virtual std::string llvm_ir() const = 0;
  virtual std::string assembly() const = 0;
  virtual void save_object(const std::string& path) const = 0;

 protected:
  [[noreturn]] void fail(int32_t status) const;

  std::string name_;
  runtime::PackedFunc entry_ = nullptr;
  double compile_seconds_ = 0;
  bool has_signature_ = false;  // param_elems_/param_dtypes_ known (not for a loaded object)
  std::vector<int64_t> param_elems_;
  std::vector<DataType> param_dtypes_;
};

// Compiles a lowered function. Throws tyche::Error if the function is not lowered (blocks left),
// uses something the backend cannot emit, or options.cpu is unknown or cannot run here.
std::unique_ptr<CompiledKernel> compile(const ir::PrimFunc& lowered,
                                        const CompileOptions& options = {});

// Lowers nothing: compiles a lowered function straight to a relocatable object file for
// options.cpu (what the isolated runner loads), without JIT-compiling it here; the CPU need not
// be one this host can run.
void compile_to_object(const ir::PrimFunc& lowered, const std::string& path,
                       const CompileOptions& options = {});

// The object file `tyche export` puts in a library: the kernel under lowered->name, its packed
// entry, and `<name>_set_num_threads(int)` (which sizes the thread pool of the library's
// runtime), as position-independent code for options.cpu, which need not run here.
std::string compile_export_object(const ir::PrimFunc& lowered, const CompileOptions& options);

// Loads an object file made by compile_to_object (or save_object) and returns its kernel
// (`name` is the function's name); llvm_ir/assembly/save_object are not available on it.
std::unique_ptr<CompiledKernel> load_object(const std::string& path, const std::string& name);

// Compiles several lowered functions into one runtime module, each under its function name.
runtime::Module build_module(const std::vector<ir::PrimFunc>& lowered,
                             const CompileOptions& options = {});

}  // namespace tyche::codegen
