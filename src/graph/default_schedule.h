// The default schedule of an untuned task: what runs before any record exists, and the reference
// the tuner checks a task's candidates against. Cheap to make and never wrong, fast enough not
// to dominate an untuned model: stages without a reduction are inlined into their readers; a
// reduction stage runs its outer spatial loops fused and parallel, then the reduction loops,
// then its last spatial axis (contiguous in the output and, for matmul and channels-last conv,
// in the weights) split by the vector width and vectorized; other stages run their spatial loops
// fused and parallel.
#pragma once

#include "ir/function.h"

namespace tyche::graph {

// `func` (a task's unscheduled program) with the default schedule applied.
ir::PrimFunc default_schedule(const ir::PrimFunc& func);

}  // namespace tyche::graph
