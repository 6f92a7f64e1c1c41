// Which outer loops of a block the RewriteParallelVectorizeUnroll postprocessor fuses into its
// parallel loop. Shared with MutateParallel, which must know which meta_schedule.parallel limits
// change that choice.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/state.h"

namespace tyche::tune {

// Extents of the block's outer loops (the first get_loops entries, outermost first) that may join
// its fused parallel loop, ignoring any limit. A loop is eligible when it is serial, of constant
// extent >= 1, unannotated, the only statement of the previous loop's body, with a range
// independent of the previous loops, and safe to run in parallel: only spatial iterators depend
// on it, and every block under it with a reduction (or an init) depends on it.
std::vector<int64_t> parallel_prefix(const schedule::ScheduleState& state,
                                     const schedule::SRef& block);

// How many of the prefix's loops a limit takes: the first, then each next one while the product
// of the loops taken so far is below the limit (TVM's rule). None if the prefix is empty or the
// limit is not positive (no parallel loop).
size_t parallel_plan(const std::vector<int64_t>& extents, int64_t limit);

}  // namespace tyche::tune
