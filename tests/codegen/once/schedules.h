// A hand schedule that fits any block, for the tests of the C backend and of export: each
// block's outermost loop parallel and innermost vectorized (primitives that refuse are skipped).
#pragma once

#include "schedule/schedule.h"

namespace tyche::codegen::test_schedules {

inline ir::PrimFunc parallel_vectorized(const ir::PrimFunc& f) {
  schedule::Schedule sch(f);
  for (const schedule::BlockRV& b : sch.get_child_blocks(sch.get_block("root").value()).value()) {
    auto loops = sch.get_loops(b).value();
    if (loops.size() >= 2) {
      (void)sch.parallel(loops[0]);
      (void)sch.vectorize(loops.back());
    }
  }
  return sch.func();
}

}  // namespace tyche::codegen::test_schedules
