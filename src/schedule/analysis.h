// The read-only questions about a schedule's IR that primitives, rules, postprocessors and
// mutators ask: where blocks and loops are, who produces and consumes what, which properties a
// block has in its scope. Nothing here changes the IR; the transformations themselves are
// reached only through Schedule (schedule.h), which traces them. Questions about expressions
// (does a binding use a loop variable, is a predicate trivially true) are the IR's: ir/var_use.h
// and ir/op.h (is_true), since lowering asks them too.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "arith/iter_map.h"
#include "schedule/error.h"
#include "schedule/state.h"

namespace tyche::schedule {

// ---- where things are (get_block_loop.cc) ----
Result<SRef> get_block(const ScheduleState& state, const std::string& name);
// The loops above `block` up to its scope block, outermost first.
std::vector<SRef> get_loops(const ScheduleState& state, const SRef& block);
// Blocks directly under `sref` (a block or a loop), not nested in other blocks, in program order.
std::vector<SRef> child_blocks(const ScheduleState& state, const SRefNode* sref);
// Blocks of the same scope that write what `block` reads, before it (producers), or read what it
// writes, after it (consumers).
std::vector<SRef> get_producers(const ScheduleState& state, const SRef& block);
std::vector<SRef> get_consumers(const ScheduleState& state, const SRef& block);

// ---- walking a scope (analysis.cc) ----
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

// ---- what blocks access (analysis.cc) ----
// Whether `regions` name `buffer`, or any buffer that `others` name.
bool touches(const std::vector<ir::BufferRegion>& regions, const ir::BufferNode* buffer);
bool touches_any(const std::vector<ir::BufferRegion>& regions,
                 const std::vector<ir::BufferRegion>& others);
inline bool reads_buffer(const ir::BlockNode* block, const ir::BufferNode* buffer) {
  return touches(block->reads, buffer);
}
inline bool writes_buffer(const ir::BlockNode* block, const ir::BufferNode* buffer) {
  return touches(block->writes, buffer);
}

// ---- blocks in their scope (block_scope.cc) ----
// Facts primitives check before they move or rewrite a block: dependences, complete/reduction
// block properties, whether a buffer is a function output, whether bindings are quasi-affine.

// True when `buffer` is one of the function's parameters that it writes (an output).
bool is_output_buffer(const ScheduleState& state, const ir::BufferNode* buffer);
// True when `buffer` is any function parameter (input or output).
bool is_param_buffer(const ScheduleState& state, const ir::BufferNode* buffer);

// Blocks of `block`'s scope, other than `block`, that write `buffer`.
std::vector<SRef> other_writers(const ScheduleState& state, const SRefNode* block,
                                const ir::BufferNode* buffer);

// A binding is quasi-affine when built from loop variables and constants with +, -, * by a
// constant, and floordiv/floormod by a positive constant (what split and fuse produce).
bool is_quasi_affine(const ir::Expr& e);
// The block's bindings map the loops between it and its scope block one-to-one onto its
// iteration domain (arith::detect_iter_map; loops the block does not use are allowed, and a
// non-true predicate allows an image larger than the domain, as after an imperfect split).
bool has_affine_bindings(const ScheduleState& state, const SRefNode* block);
// Every binding is quasi-affine (see is_quasi_affine), whatever part of the domain it covers:
// what primitives need after compute_at narrowed a block to part of its domain.
bool has_quasi_affine_bindings(const ScheduleState& state, const SRefNode* block);
// The same as has_affine_bindings, with the reason when the bindings are not affine.
arith::IterMapResult detect_block_iter_map(const ScheduleState& state, const SRefNode* block);

// Complete block: only spatial iterators, no init, the only writer of what it writes in its
// scope, and it does not read what it writes. (The shape compute_inline and compute_at need.)
Status check_complete_block(const ScheduleState& state, const SRefNode* block);
// Reduction block: an init, spatial and reduce iterators only (at least one reduce), affine
// bindings, a single written buffer of which it is the only writer, and the written region is
// indexed by the spatial iterators alone.
Status check_reduction_block(const ScheduleState& state, const SRefNode* block);
// Complete or reduction block.
Status check_complete_or_reduction_block(const ScheduleState& state, const SRefNode* block);

// Injective block: distinct iterations of its spatial iterators write distinct elements. Every
// written index is a spatial iter var, each written index list uses distinct iter vars, and
// each spatial iter var of extent > 1 is among them. Only writes count, so a reduction such as
// GMM's Z (writes Z[vb, vi, vj], reduce var vk) is injective. Refuses with kNotComplete.
Status check_injective_block(const ScheduleState& state, const SRefNode* block);

// Stage pipeline: every child block of `scope_block` is a complete or reduction block and
// each buffer is written by at most one child block.
bool is_stage_pipeline(const ScheduleState& state, const SRefNode* scope_block);

// For every buffer `consumer_block` reads that earlier blocks of its scope write, one of those
// producers writes (all iterations of its loops inside the scope) a region that contains what
// the consumer reads over all of its loops inside the scope. Conservative: false when
// containment cannot be proven (a predicated or non-affine producer, a written index that is
// not a single iter var plus a constant, a later writer, or several producers).
bool region_covered(const ScheduleState& state, const SRefNode* consumer_block);

}  // namespace tyche::schedule
