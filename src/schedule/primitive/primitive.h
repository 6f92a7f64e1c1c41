// Schedule primitives as functions of the state and srefs; Schedule forwards its handles here.
// Each either applies a semantics-preserving change through ScheduleState::replace or returns
// the ScheduleError that explains why not, leaving the state untouched.
//
// Private to src/schedule/: a change made here would not be traced, so everything else reaches
// the primitives through Schedule (schedule.h) and asks its questions through analysis.h.
#pragma once

#ifndef TYCHE_SCHEDULE_INTERNAL
#error \
    "schedule/primitive/primitive.h is private to src/schedule/: transform through Schedule (schedule/schedule.h), query through schedule/analysis.h"
#endif

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "schedule/analysis.h"
#include "schedule/error.h"
#include "schedule/state.h"

namespace tyche::schedule {

// ---- loop transformations (loop_transformation.cc) ----
Result<std::vector<SRef>> split(ScheduleState& state, const SRef& loop,
                                const std::vector<std::optional<int64_t>>& factors);
Result<SRef> fuse(ScheduleState& state, const std::vector<SRef>& loops);
Status reorder(ScheduleState& state, const std::vector<SRef>& ordered_loops);
// Wraps a block (or loop) in a new loop of extent 1 and returns it.
Result<SRef> add_unit_loop(ScheduleState& state, const SRef& block_or_loop);

// ---- loop kinds (for_kind.cc) ----
Status parallel(ScheduleState& state, const SRef& loop);
Status vectorize(ScheduleState& state, const SRef& loop);
Status unroll(ScheduleState& state, const SRef& loop);
Status bind(ScheduleState& state, const SRef& loop, const std::string& thread_axis);

// ---- annotations (annotate.cc) ----
Status annotate(ScheduleState& state, const SRef& sref, const std::string& key,
                const ir::AnnotationValue& value);
Status unannotate(ScheduleState& state, const SRef& sref, const std::string& key);

// ---- compute location (compute_at.cc, compute_inline.cc) ----
Status compute_at(ScheduleState& state, const SRef& block, const SRef& loop,
                  bool preserve_unit_loops);
// Whether compute_at would succeed, without changing the state.
Status check_compute_at(const ScheduleState& state, const SRef& block, const SRef& loop,
                        bool preserve_unit_loops);
// Whether the region compute_at(block, loop) would compute changes from one iteration of `loop`
// to the next; compute_at's refusal as the error. A region that does not is the same on every
// iteration: the block would recompute identical values extent(loop) times, where the enclosing
// loop (or staying at the root) computes them once and keeps them as close.
Result<bool> compute_at_varies_with_loop(const ScheduleState& state, const SRef& block,
                                         const SRef& loop);
Status reverse_compute_at(ScheduleState& state, const SRef& block, const SRef& loop,
                          bool preserve_unit_loops);
Status compute_inline(ScheduleState& state, const SRef& block);
Status reverse_compute_inline(ScheduleState& state, const SRef& block);

// ---- caches (cache.cc) ----
Result<SRef> cache_read(ScheduleState& state, const SRef& block, int read_buffer_index,
                        const std::string& storage_scope);
Result<SRef> cache_write(ScheduleState& state, const SRef& block, int write_buffer_index,
                         const std::string& storage_scope);
Status set_scope(ScheduleState& state, const SRef& block, int buffer_index,
                 const std::string& storage_scope);
Status storage_align(ScheduleState& state, const SRef& block, int buffer_index, int axis,
                     int factor, int offset);
Status transform_layout(ScheduleState& state, const SRef& block, int buffer_index,
                        const std::string& index_map);

// ---- padding (pad_einsum.cc) ----
Status pad_einsum(ScheduleState& state, const SRef& block, const std::vector<int64_t>& padding);

// ---- reductions (reduction.cc) ----
Result<SRef> decompose_reduction(ScheduleState& state, const SRef& block, const SRef& loop);
Result<SRef> rfactor(ScheduleState& state, const SRef& loop, int factor_axis);

// ---- blocks (blockize.cc, tensorize.cc) ----
Result<SRef> blockize(ScheduleState& state, const SRef& loop);
Status tensorize(ScheduleState& state, const SRef& loop, const std::string& intrin_name);

// ---- names (cache.cc) ----
// The names of the function's params, blocks and allocated buffers: a new block or buffer takes
// none of them.
std::unordered_set<std::string> names_in_use(const ScheduleState& state);

// ---- rewriting (state.cc) ----
// The statement whose srefs are `sref`: the For itself, or the BlockRealize of a block.
ir::Stmt outer_stmt(const ScheduleState& state, const SRefNode* sref);
// `stmt` with `old_child` (by identity) replaced by `new_child`, searching through sequences,
// conditions and allocations (and loops when `through_loops`) but never into a nested block;
// `stmt` itself is entered whatever it is. Undefined when `old_child` is not found.
ir::Stmt replace_child(const ir::Stmt& stmt, const ir::StmtNode* old_child, ir::Stmt new_child,
                       bool through_loops = false);

}  // namespace tyche::schedule
