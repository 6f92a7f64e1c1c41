#include "schedule/block_scope.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "ir/functor.h"
#include "ir/op.h"

namespace tyche::schedule {

std::vector<SRef> child_blocks(const ScheduleState& state, const SRefNode* under) {
  std::vector<SRef> out;
  std::function<void(const ir::Stmt&)> walk = [&](const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kBlockRealize: out.push_back(state.get_sref(s.as<ir::BlockRealizeNode>()->block.get())); return;
      case ir::StmtKind::kFor: walk(s.as<ir::ForNode>()->body); return;
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) walk(c);
        return;
      case ir::StmtKind::kIfThenElse: {
        auto* n = s.as<ir::IfThenElseNode>();
        walk(n->then_case);
        if (n->else_case.defined()) walk(n->else_case);
        return;
      }
      case ir::StmtKind::kAllocate: walk(s.as<ir::AllocateNode>()->body); return;
      default: return;
    }
  };
  if (auto* b = under->as_block()) {
    if (b->init.defined()) walk(b->init);
    walk(b->body);
  } else {
    walk(under->as_for()->body);
  }
  return out;
}

bool is_output_buffer(const ScheduleState& state, const ir::BufferNode* buffer) {
  for (const ir::Buffer& b : state.func().outputs())
    if (b.get() == buffer) return true;
  return false;
}

bool is_param_buffer(const ScheduleState& state, const ir::BufferNode* buffer) {
  for (const ir::Buffer& b : state.func()->params)
    if (b.get() == buffer) return true;
  return false;
}

std::vector<SRef> other_writers(const ScheduleState& state, const SRefNode* block, const ir::BufferNode* buffer) {
  std::vector<SRef> out;
  for (const SRef& s : child_blocks(state, scope_block(block))) {
    if (s.get() == block) continue;
    const auto& writes = s->as_block()->writes;
    if (std::any_of(writes.begin(), writes.end(), [&](const ir::BufferRegion& w) { return w.buffer.get() == buffer; }))
      out.push_back(s);
  }
  return out;
}

bool is_quasi_affine(const ir::Expr& e) {
  switch (e.kind()) {
    case ir::ExprKind::kIntImm:
    case ir::ExprKind::kVar: return e.dtype().is_int_like();
    case ir::ExprKind::kAdd:
    case ir::ExprKind::kSub: {
      auto* b = e.as_binary();
      return is_quasi_affine(b->a) && is_quasi_affine(b->b);
    }
    case ir::ExprKind::kMul: {
      auto* b = e.as_binary();
      return (ir::as_const_int(b->b) && is_quasi_affine(b->a)) || (ir::as_const_int(b->a) && is_quasi_affine(b->b));
    }
    case ir::ExprKind::kFloorDiv:
    case ir::ExprKind::kFloorMod: {
      auto* b = e.as_binary();
      auto c = ir::as_const_int(b->b);
      return c && *c > 0 && is_quasi_affine(b->a);
    }
    default: return false;
  }
}

bool has_affine_bindings(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockRealizeNode* r = state.realize_of(block);
  return std::all_of(r->iter_values.begin(), r->iter_values.end(), is_quasi_affine);
}

namespace {

bool reads_buffer(const ir::BlockNode* b, const ir::BufferNode* buffer) {
  return std::any_of(b->reads.begin(), b->reads.end(), [&](const ir::BufferRegion& r) { return r.buffer.get() == buffer; });
}

Status check_single_writer(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockNode* b = block->as_block();
  for (const ir::BufferRegion& w : b->writes) {
    auto others = other_writers(state, block, w.buffer.get());
    if (!others.empty())
      return ScheduleError(ErrorCode::kNotComplete,
                           fmt::format("block '{}' is not the only writer of '{}' (block '{}' writes it too)", b->name,
                                       w.buffer->name, others[0]->as_block()->name),
                           b);
  }
  return ok_status();
}

}  // namespace

Status check_complete_block(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockNode* b = block->as_block();
  if (!block->parent) return ScheduleError(ErrorCode::kNotComplete, "the root block is not a complete block", b);
  for (const ir::IterVar& iv : b->iter_vars)
    if (iv.kind != ir::IterKind::kSpatial)
      return ScheduleError(ErrorCode::kNotComplete,
                           fmt::format("block '{}' is not complete: iterator '{}' is {}", b->name, iv.var.name(),
                                       ir::iter_kind_name(iv.kind)),
                           b);
  if (b->init.defined()) return ScheduleError(ErrorCode::kNotComplete, fmt::format("block '{}' has an init", b->name), b);
  for (const ir::BufferRegion& w : b->writes)
    if (reads_buffer(b, w.buffer.get()))
      return ScheduleError(ErrorCode::kNotComplete, fmt::format("block '{}' reads '{}', which it writes", b->name, w.buffer->name), b);
  return check_single_writer(state, block);
}

Status check_reduction_block(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockNode* b = block->as_block();
  if (!block->parent) return ScheduleError(ErrorCode::kNotReduction, "the root block is not a reduction block", b);
  if (!b->init.defined()) return ScheduleError(ErrorCode::kNotReduction, fmt::format("block '{}' has no init: it is not a reduction", b->name), b);
  bool any_reduce = false;
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kOpaque)
      return ScheduleError(ErrorCode::kNotReduction, fmt::format("block '{}' has opaque iterator '{}'", b->name, iv.var.name()), b);
    any_reduce |= iv.kind == ir::IterKind::kReduce;
  }
  if (!any_reduce) return ScheduleError(ErrorCode::kNotReduction, fmt::format("block '{}' has no reduce iterator", b->name), b);
  if (b->writes.size() != 1)
    return ScheduleError(ErrorCode::kNotReduction, fmt::format("block '{}' writes {} buffers, a reduction writes one", b->name, b->writes.size()), b);
  if (!has_affine_bindings(state, block))
    return ScheduleError(ErrorCode::kNotReduction, fmt::format("block '{}' has non-affine bindings", b->name), b);
  // The written element may depend only on spatial iterators.
  for (const ir::Range& r : b->writes[0].region) {
    bool uses_reduce = false;
    ir::substitute(r.min, [&](const ir::Var& v) -> ir::Expr {
      for (const ir::IterVar& iv : b->iter_vars)
        if (iv.kind == ir::IterKind::kReduce && iv.var.same_as(v)) uses_reduce = true;
      return ir::Expr();
    });
    if (uses_reduce)
      return ScheduleError(ErrorCode::kNotReduction, fmt::format("block '{}' writes an element chosen by a reduce iterator", b->name), b);
  }
  return check_single_writer(state, block);
}

Status check_complete_or_reduction_block(const ScheduleState& state, const SRefNode* block) {
  Status complete = check_complete_block(state, block);
  if (complete.ok()) return complete;
  Status reduction = check_reduction_block(state, block);
  if (reduction.ok()) return reduction;
  return ScheduleError(ErrorCode::kNotComplete,
                       fmt::format("{}; and not a reduction: {}", complete.error().reason(), reduction.error().reason()),
                       block->stmt);
}

}  // namespace tyche::schedule
