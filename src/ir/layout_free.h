// Layout-free parameters: inputs that hold constants (a model's weights), named on the root block
// (ann::kLayoutFreeBuffers). A schedule may read such a parameter in a layout of its own: the
// tuner's RewriteLayout postprocessor copies it into that layout in a root-level stage block
// annotated ann::kLayoutRewritePreproc, and lower/layout_rewrite.h splits that stage off, to run
// once when the weights are loaded rather than at every call (TVM's layout_free_buffers).
#pragma once

#include <cstddef>
#include <vector>

#include "ir/function.h"

namespace tyche::ir {

// The indices of the layout-free params, ascending (none when the annotation is absent).
std::vector<size_t> layout_free_params(const PrimFunc& func);
// `func` with the root block naming `params` (input indices) as layout-free; an empty list
// removes the annotation.
PrimFunc with_layout_free_params(const PrimFunc& func, const std::vector<size_t>& params);

}  // namespace tyche::ir
