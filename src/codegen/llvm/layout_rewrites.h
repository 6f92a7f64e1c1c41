// A program's layout rewrites (lower/layout_rewrite.h), JIT-compiled, and their run on a call's
// arguments: what every caller that runs a tuned kernel on its own weights does once, at load,
// before the main part runs (tyche run, the Python kernel, the graph executor).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "codegen/llvm/llvm_codegen.h"
#include "ir/function.h"
#include "lower/layout_rewrite.h"
#include "runtime/ndarray.h"

namespace tyche::codegen {

struct CompiledRewrite {
  size_t param;                             // the weight it lays out anew
  std::shared_ptr<CompiledKernel> preproc;  // (W) -> (P)
  std::vector<int64_t> shape;               // P's (padding may make it larger than W)
};

std::vector<CompiledRewrite> compile_rewrites(const std::vector<lower::LayoutRewrite>& rewrites,
                                              const CompileOptions& options = {});

// Runs each rewrite on the weight `ptrs[param]` points at, a parameter of `func` (the scheduled
// program); `ptrs[param]` then points at the laid-out copy, which is appended to `packed`.
void apply_rewrites(const std::vector<CompiledRewrite>& rewrites, const ir::PrimFunc& func,
                    std::vector<void*>& ptrs, std::vector<runtime::NDArray>& packed);

}  // namespace tyche::codegen
