// The reference interpreter: the correctness oracle of the project. It executes any PrimFunc,
// scheduled or not, on host tensors. A PrimFunc is first compiled into a tree of small executable
// nodes with every variable and buffer resolved to a slot, then run; nothing is looked up by name
// or hashed while executing.
//
// Semantics worth knowing (the tests of generated code rely on them):
//  - every ForKind runs as a serial loop; thread bindings are ordinary loops;
//  - a block runs when its predicate holds; its `init` runs when every reduce iter var is at its
//    domain minimum; an iter value outside its domain is an error (a broken schedule);
//  - integer arithmetic is exact in int64; float arithmetic is done in double and rounded to the
//    element type only on store or cast, so the oracle is more accurate than any real kernel;
//  - intermediate buffers (block alloc_buffers, Allocate) start as NaN (floats) or 0xA5 bytes
//    (integers), so reading memory nobody wrote shows up in compare();
//  - if_then_else evaluates only the chosen side (per lane for vectors), so a guarded
//    out-of-bounds load (padding) is legal; Select evaluates both sides, as generated code may,
//    so an out-of-bounds load on its discarded side is an error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/function.h"
#include "runtime/ndarray.h"

namespace tyche::interp {

// Runs `func` with `args` bound to func->params in order (inputs, then outputs). Throws
// tyche::Error (one line) on: wrong number of args, shape or dtype mismatch with a param,
// out-of-bounds access (message names the buffer and the index), integer division by zero,
// non-constant allocation shape, an iter value outside its block's domain, unbound variables.
void run(const ir::PrimFunc& func, std::vector<runtime::NDArray>& args);

// Allocates zero-filled outputs from the output params' shapes, runs, returns the outputs.
std::vector<runtime::NDArray> run_on_inputs(const ir::PrimFunc& func,
                                            const std::vector<runtime::NDArray>& inputs);

namespace detail {
class Program;
}

// A PrimFunc compiled once and run many times. Not thread-safe: running mutates the compiled
// program's slots, so use one instance per thread (compiling is cheap).
class CompiledFunc {
 public:
  explicit CompiledFunc(const ir::PrimFunc& func);
  ~CompiledFunc();
  CompiledFunc(CompiledFunc&&) noexcept;
  CompiledFunc& operator=(CompiledFunc&&) noexcept;

  void run(std::vector<runtime::NDArray>& args);
  std::vector<runtime::NDArray> run_on_inputs(const std::vector<runtime::NDArray>& inputs);

 private:
  std::unique_ptr<detail::Program> program_;
};

}  // namespace tyche::interp
