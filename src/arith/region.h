// Buffer regions accessed by a block, and relaxation of regions over loop domains.
#pragma once

#include <vector>

#include "arith/analyzer.h"
#include "arith/int_set.h"
#include "ir/stmt.h"

namespace tyche::arith {

struct AccessRegions {
  std::vector<ir::BufferRegion> reads, writes;
};

// The regions `block` reads and writes, inferred from its init and body:
// - the block's iter vars stay symbolic (a matmul update reads X[vb, vi, vk] as extent-1 ranges);
// - variables defined inside the block (inner loop vars, let vars) are relaxed over their
//   ranges;
// - a nested BlockRealize contributes its block's declared reads/writes with that block's iter
//   vars replaced by the realize's iter_values, then relaxed (its body is not scanned);
// - accesses to one buffer merge into their hull (per dimension), buffers listed in order of
//   first access; buffers the block allocates itself are internal and not listed;
// - when the block has an init, reads of buffers it also writes are dropped (the reduction
//   update reads back what it writes, as in TVM's create_prim_func output).
// Extents are simplified (constants where possible). Unbounded dimensions become the whole
// dimension. The analyzer is not modified: iter var domains and inner loop ranges are bound in
// a copy.
AccessRegions infer_access_regions(const ir::BlockNode& block, Analyzer* analyzer);

// The hyper-rectangle covered by `regions` while the variables of `dom_map` range over their
// domains (used e.g. by compute_at to find what a loop nest needs).
std::vector<ir::BufferRegion> relax_regions(const std::vector<ir::BufferRegion>& regions,
                                            const VarRangeMap& dom_map, Analyzer* analyzer);
ir::BufferRegion relax_region(const ir::BufferRegion& region, const VarRangeMap& dom_map,
                              Analyzer* analyzer);

}  // namespace tyche::arith
