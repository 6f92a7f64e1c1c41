// Facts about blocks within their scope (the nearest enclosing block) that primitives check
// before they move or rewrite a block: dependences, complete/reduction block properties,
// whether a buffer is a function output, and whether bindings are quasi-affine.
#pragma once

#include <vector>

#include "schedule/error.h"
#include "schedule/state.h"

namespace tyche::schedule {

// Blocks directly under `sref` (a block or loop), not nested in other blocks, in program order.
std::vector<SRef> child_blocks(const ScheduleState& state, const SRefNode* sref);

// True when `buffer` is one of the function's parameters that it writes (an output).
bool is_output_buffer(const ScheduleState& state, const ir::BufferNode* buffer);
// True when `buffer` is any function parameter (input or output).
bool is_param_buffer(const ScheduleState& state, const ir::BufferNode* buffer);

// Blocks of `block`'s scope, other than `block`, that write `buffer`.
std::vector<SRef> other_writers(const ScheduleState& state, const SRefNode* block, const ir::BufferNode* buffer);

// A binding is quasi-affine when built from loop variables and constants with +, -, * by a
// constant, and floordiv/floormod by a positive constant (what split and fuse produce).
bool is_quasi_affine(const ir::Expr& e);
// Every iter value of the block's realize is quasi-affine in the loop variables.
bool has_affine_bindings(const ScheduleState& state, const SRefNode* block);

// Complete block: only spatial iterators, no init, the only writer of what it writes in its
// scope, and it does not read what it writes. (The shape compute_inline and compute_at need.)
Status check_complete_block(const ScheduleState& state, const SRefNode* block);
// Reduction block: an init, spatial and reduce iterators only (at least one reduce), affine
// bindings, a single written buffer of which it is the only writer, and the written region is
// indexed by the spatial iterators alone.
Status check_reduction_block(const ScheduleState& state, const SRefNode* block);
// Complete or reduction block.
Status check_complete_or_reduction_block(const ScheduleState& state, const SRefNode* block);

}  // namespace tyche::schedule
