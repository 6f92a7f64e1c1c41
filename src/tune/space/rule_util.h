// Block and loop facts the schedule rules share.
#pragma once

#include <optional>
#include <vector>

#include "ir/op.h"
#include "schedule/schedule.h"

namespace tyche::tune {

enum class LoopIterType { kSpatial, kReduce, kMixed };

// How `loop` drives `block`'s iterators: only spatial ones (or none), only reduce ones, or both
// (or an opaque one).
LoopIterType loop_iter_type(const schedule::ScheduleState& state, const schedule::SRefNode* block,
                            const schedule::SRefNode* loop);
// The block has no enclosing block (the function's root block).
bool is_root_block(const schedule::Schedule& sch, const schedule::BlockRV& block);
// The block's scope is the root block (it is not nested in another block).
bool is_subroot_block(const schedule::Schedule& sch, const schedule::BlockRV& block);
// The block writes one of the function's parameters.
bool writes_output(const schedule::Schedule& sch, const schedule::BlockRV& block);
// The block's body (or init) has a call to if_then_else or an IfThenElse statement.
bool has_if_then_else(const ir::BlockNode* block);
// Constant extents of the loops, nullopt if one is not constant.
std::optional<std::vector<int64_t>> const_extents(const schedule::Schedule& sch,
                                                  const std::vector<schedule::LoopRV>& loops);
// The block of a valid handle (nullptr if stale).
const ir::BlockNode* block_node(const schedule::Schedule& sch, const schedule::BlockRV& block);
// The block's iterator a region dimension reads at a single point (extent 1), or nullptr.
const ir::VarNode* point_var(const ir::Range& r);
// The block's iterator whose variable is `v`, or nullptr.
const ir::IterVar* iter_of(const ir::BlockNode* b, const ir::VarNode* v);
// TVM's condition for MultiLevelTiling: a block not yet tiled that is not purely spatial, writes
// one buffer, binds its iterators affinely, and has an input that does not depend on some
// spatial iterator (so a tile of the output reuses it).
bool needs_multi_level_tiling(const schedule::Schedule& sch, const schedule::BlockRV& block);
// Some block of the function has a reduce (or opaque) iterator.
bool has_reduction_block(const ir::PrimFunc& func);

// A reduction block's loops split by kind, for the rules that restructure reductions.
struct ReductionLoops {
  std::vector<schedule::LoopRV> spatial, reduce;  // in nest order
  int64_t spatial_extent = 1, reduce_extent = 1;  // products of constant extents
  bool reduce_innermost = true;                   // no spatial loop below a reduction loop
};
// Nullopt unless `block` is a reduction block (one written buffer, affine bindings) whose loops
// all have constant extents and each drive spatial or reduction iterators only, with at least
// one reduction loop.
std::optional<ReductionLoops> reduction_loops(schedule::Schedule& sch,
                                              const schedule::BlockRV& block);
// Moves the reduction loops innermost (if needed) and fuses them; the fused loop.
std::optional<schedule::LoopRV> fuse_reduction_loops(schedule::Schedule& sch,
                                                     const ReductionLoops& loops);

// Uniform probabilities for n candidates.
std::vector<double> uniform_probs(size_t n);

}  // namespace tyche::tune
