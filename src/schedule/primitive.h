// Schedule primitives as functions of the state and srefs; Schedule forwards its handles here.
// Each either applies a semantics-preserving change through ScheduleState::replace or returns
// the ScheduleError that explains why not, leaving the state untouched.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "schedule/error.h"
#include "schedule/state.h"

namespace tyche::schedule {

// ---- lookup (get_block_loop.cc) ----
Result<SRef> get_block(const ScheduleState& state, const std::string& name);
std::vector<SRef> get_loops(const ScheduleState& state, const SRef& block);
// Blocks directly under `sref` (a block or a loop), not inside another nested block, in order.
std::vector<SRef> get_child_blocks(const ScheduleState& state, const SRef& sref);
// Blocks of the same scope that write what `block` reads, before it (producers), or read what it
// writes, after it (consumers).
std::vector<SRef> get_producers(const ScheduleState& state, const SRef& block);
std::vector<SRef> get_consumers(const ScheduleState& state, const SRef& block);

// ---- loop transformations (loop_transformation.cc) ----
Result<std::vector<SRef>> split(ScheduleState& state, const SRef& loop, const std::vector<std::optional<int64_t>>& factors);
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
Status annotate(ScheduleState& state, const SRef& sref, const std::string& key, const ir::AnnotationValue& value);
Status unannotate(ScheduleState& state, const SRef& sref, const std::string& key);

// ---- compute location (compute_at.cc, compute_inline.cc) ----
Status compute_at(ScheduleState& state, const SRef& block, const SRef& loop, bool preserve_unit_loops);
// Whether compute_at would succeed, without changing the state.
Status check_compute_at(const ScheduleState& state, const SRef& block, const SRef& loop, bool preserve_unit_loops);
Status reverse_compute_at(ScheduleState& state, const SRef& block, const SRef& loop, bool preserve_unit_loops);
Status compute_inline(ScheduleState& state, const SRef& block);
Status reverse_compute_inline(ScheduleState& state, const SRef& block);

// ---- caches (cache.cc) ----
Result<SRef> cache_read(ScheduleState& state, const SRef& block, int read_buffer_index, const std::string& storage_scope);
Result<SRef> cache_write(ScheduleState& state, const SRef& block, int write_buffer_index, const std::string& storage_scope);
Status set_scope(ScheduleState& state, const SRef& block, int buffer_index, const std::string& storage_scope);
Status storage_align(ScheduleState& state, const SRef& block, int buffer_index, int axis, int factor, int offset);
Status transform_layout(ScheduleState& state, const SRef& block, int buffer_index, const std::string& index_map);

// ---- reductions (reduction.cc) ----
Result<SRef> decompose_reduction(ScheduleState& state, const SRef& block, const SRef& loop);
Result<SRef> rfactor(ScheduleState& state, const SRef& loop, int factor_axis);

// ---- blocks (blockize_tensorize.cc) ----
Result<SRef> blockize(ScheduleState& state, const SRef& loop);
Status tensorize(ScheduleState& state, const SRef& loop, const std::string& intrin_name);

// ---- shared helpers (primitive_utils.cc) ----
// Walks the loops and block realizes under `stmt` in program order without entering nested
// blocks: on_loop(loop, true) before a loop's body and on_loop(loop, false) after it.
struct ScopeVisitor {
  std::function<void(const ir::ForNode*, bool entering)> on_loop;
  std::function<void(const ir::BlockRealizeNode*)> on_realize;
};
void visit_scope(const ir::Stmt& stmt, const ScopeVisitor& visitor);
// Every loop under `stmt`, in pre-order, not entering nested blocks.
std::vector<const ir::ForNode*> loops_under(const ir::Stmt& stmt);
// Every block realized under `stmt`, not entering nested blocks' bodies.
std::vector<const ir::BlockRealizeNode*> realizes_under(const ir::Stmt& stmt);
// The For nodes on the path from `top` (inclusive) down to `bottom` (inclusive), or empty if
// `bottom` is not under `top`.
std::vector<SRefNode*> loop_path(const SRefNode* top, const SRefNode* bottom);

}  // namespace tyche::schedule
