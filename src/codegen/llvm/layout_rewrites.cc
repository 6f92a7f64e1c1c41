#include "codegen/llvm/layout_rewrites.h"

#include "lower/lower.h"

namespace tyche::codegen {

std::vector<CompiledRewrite> compile_rewrites(const std::vector<lower::LayoutRewrite>& rewrites,
                                              const CompileOptions& options) {
  std::vector<CompiledRewrite> out;
  for (const lower::LayoutRewrite& rw : rewrites)
    out.push_back({rw.param, compile(lower::lower(rw.preproc).func, options),
                   ir::const_shape(rw.preproc->params[1])});
  return out;
}

void apply_rewrites(const std::vector<CompiledRewrite>& rewrites, const ir::PrimFunc& func,
                    std::vector<void*>& ptrs, std::vector<runtime::NDArray>& packed) {
  for (const CompiledRewrite& rw : rewrites) {
    const ir::Buffer& weight = func->params[rw.param];
    runtime::NDArray out(rw.shape, weight->dtype);
    void* args[] = {ptrs[rw.param], out.data()};
    rw.preproc->run(args);
    ptrs[rw.param] = out.data();  // an NDArray's elements stay where they are when it moves
    packed.push_back(std::move(out));
  }
}

}  // namespace tyche::codegen
