#include "schedule/analysis.h"

#include "schedule/primitive/primitive.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "arith/linear.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::schedule {

std::vector<SRef> child_blocks(const ScheduleState& state, const SRefNode* under) {
  std::vector<SRef> out;
  auto add = [&](const ir::Stmt& s) {
    for (const ir::BlockRealizeNode* r : realizes_under(s))
      out.push_back(state.get_sref(r->block.get()));
  };
  if (auto* b = under->as_block()) {
    if (b->init.defined()) add(b->init);
    add(b->body);
  } else {
    add(under->as_for()->body);
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

std::vector<SRef> other_writers(const ScheduleState& state, const SRefNode* block,
                                const ir::BufferNode* buffer) {
  std::vector<SRef> out;
  for (const SRef& s : child_blocks(state, scope_block(block))) {
    if (s.get() == block) continue;
    const auto& writes = s->as_block()->writes;
    if (std::any_of(writes.begin(), writes.end(),
                    [&](const ir::BufferRegion& w) { return w.buffer.get() == buffer; }))
      out.push_back(s);
  }
  return out;
}

bool is_quasi_affine(const ir::Expr& e) {
  switch (e.kind()) {
    case ir::ExprKind::kIntImm:
    case ir::ExprKind::kVar:
      return e.dtype().is_int_like();
    case ir::ExprKind::kAdd:
    case ir::ExprKind::kSub: {
      auto* b = e.as_binary();
      return is_quasi_affine(b->a) && is_quasi_affine(b->b);
    }
    case ir::ExprKind::kMul: {
      auto* b = e.as_binary();
      return (ir::as_const_int(b->b) && is_quasi_affine(b->a)) ||
             (ir::as_const_int(b->a) && is_quasi_affine(b->b));
    }
    case ir::ExprKind::kFloorDiv:
    case ir::ExprKind::kFloorMod: {
      auto* b = e.as_binary();
      auto c = ir::as_const_int(b->b);
      return c && *c > 0 && is_quasi_affine(b->a);
    }
    default:
      return false;
  }
}

namespace {

// Binds the ranges of all loops above `sref` and the domains of enclosing blocks' iter vars;
// collects the loops between its scope block and it into `inner` when given.
void bind_context(const SRefNode* sref, arith::Analyzer* a, arith::VarRangeMap* inner) {
  const SRefNode* scope = scope_block(sref);
  bool inside = false;
  for (const SRefNode* anc : ancestors(sref)) {
    if (anc == scope) inside = true;
    if (const ir::ForNode* f = anc->as_for()) {
      ir::Range r(f->min, f->extent);
      a->bind(f->loop_var, r);
      if (inside && inner) (*inner)[f->loop_var] = r;
    } else if (const ir::BlockNode* b = anc->as_block()) {
      for (const ir::IterVar& iv : b->iter_vars) a->bind(iv.var, iv.dom);
    }
  }
}

}  // namespace

arith::IterMapResult detect_block_iter_map(const ScheduleState& state, const SRefNode* block) {
  arith::IterMapResult res;
  if (!block->parent) {  // the root block has no bindings
    res.ok = true;
    return res;
  }
  const ir::BlockRealizeNode* r = state.realize_of(block);
  arith::Analyzer a;
  arith::VarRangeMap loops;
  bind_context(block, &a, &loops);
  std::vector<ir::Range> doms;
  for (const ir::IterVar& iv : block->as_block()->iter_vars) doms.push_back(iv.dom);
  return arith::detect_iter_map(r->iter_values, loops, doms, &a, !ir::is_true(r->predicate),
                                r->predicate);
}

bool has_affine_bindings(const ScheduleState& state, const SRefNode* block) {
  return detect_block_iter_map(state, block).ok;
}

bool has_quasi_affine_bindings(const ScheduleState& state, const SRefNode* block) {
  if (!block->parent) return true;
  const ir::BlockRealizeNode* r = state.realize_of(block);
  return std::all_of(r->iter_values.begin(), r->iter_values.end(), is_quasi_affine);
}

namespace {

Status check_single_writer(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockNode* b = block->as_block();
  for (const ir::BufferRegion& w : b->writes) {
    auto others = other_writers(state, block, w.buffer.get());
    if (!others.empty())
      return ScheduleError(
          ErrorCode::kNotComplete,
          fmt::format("block '{}' is not the only writer of '{}' (block '{}' writes it too)",
                      b->name, w.buffer->name, others[0]->as_block()->name),
          b);
  }
  return ok_status();
}

}  // namespace

Status check_complete_block(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockNode* b = block->as_block();
  if (!block->parent)
    return ScheduleError(ErrorCode::kNotComplete, "the root block is not a complete block", b);
  for (const ir::IterVar& iv : b->iter_vars)
    if (iv.kind != ir::IterKind::kSpatial)
      return ScheduleError(ErrorCode::kNotComplete,
                           fmt::format("block '{}' is not complete: iterator '{}' is {}", b->name,
                                       iv.var.name(), ir::iter_kind_name(iv.kind)),
                           b);
  if (b->init.defined())
    return ScheduleError(ErrorCode::kNotComplete, fmt::format("block '{}' has an init", b->name),
                         b);
  for (const ir::BufferRegion& w : b->writes)
    if (reads_buffer(b, w.buffer.get()))
      return ScheduleError(
          ErrorCode::kNotComplete,
          fmt::format("block '{}' reads '{}', which it writes", b->name, w.buffer->name), b);
  return check_single_writer(state, block);
}

Status check_reduction_block(const ScheduleState& state, const SRefNode* block) {
  const ir::BlockNode* b = block->as_block();
  if (!block->parent)
    return ScheduleError(ErrorCode::kNotReduction, "the root block is not a reduction block", b);
  if (!b->init.defined())
    return ScheduleError(ErrorCode::kNotReduction,
                         fmt::format("block '{}' has no init: it is not a reduction", b->name), b);
  bool any_reduce = false;
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kOpaque)
      return ScheduleError(
          ErrorCode::kNotReduction,
          fmt::format("block '{}' has opaque iterator '{}'", b->name, iv.var.name()), b);
    any_reduce |= iv.kind == ir::IterKind::kReduce;
  }
  if (!any_reduce)
    return ScheduleError(ErrorCode::kNotReduction,
                         fmt::format("block '{}' has no reduce iterator", b->name), b);
  if (b->writes.size() != 1)
    return ScheduleError(ErrorCode::kNotReduction,
                         fmt::format("block '{}' writes {} buffers, a reduction writes one",
                                     b->name, b->writes.size()),
                         b);
  // Quasi-affine, not bijective: a reduction narrowed by compute_at still reduces correctly.
  if (!has_quasi_affine_bindings(state, block))
    return ScheduleError(ErrorCode::kNotReduction,
                         fmt::format("block '{}' has non-affine bindings", b->name), b);
  // The written element may depend only on spatial iterators.
  for (const ir::Range& r : b->writes[0].region) {
    bool uses_reduce = false;
    ir::substitute(r.min, [&](const ir::Var& v) -> ir::Expr {
      for (const ir::IterVar& iv : b->iter_vars)
        if (iv.kind == ir::IterKind::kReduce && iv.var.same_as(v)) uses_reduce = true;
      return ir::Expr();
    });
    if (uses_reduce)
      return ScheduleError(
          ErrorCode::kNotReduction,
          fmt::format("block '{}' writes an element chosen by a reduce iterator", b->name), b);
  }
  return check_single_writer(state, block);
}

Status check_complete_or_reduction_block(const ScheduleState& state, const SRefNode* block) {
  Status complete = check_complete_block(state, block);
  if (complete.ok()) return complete;
  Status reduction = check_reduction_block(state, block);
  if (reduction.ok()) return reduction;
  return ScheduleError(ErrorCode::kNotComplete,
                       fmt::format("{}; and not a reduction: {}", complete.error().reason(),
                                   reduction.error().reason()),
                       block->stmt);
}

Status check_injective_block(const ScheduleState& state, const SRefNode* block) {
  (void)state;
  const ir::BlockNode* b = block->as_block();
  auto refuse = [&](const std::string& why) {
    return ScheduleError(ErrorCode::kNotComplete,
                         fmt::format("block '{}' is not injective: {}", b->name, why), b);
  };
  if (!block->parent) return refuse("it is the root block");
  for (const ir::BufferRegion& w : b->writes) {
    std::vector<const ir::VarNode*> used;
    for (const ir::Range& r : w.region) {
      if (!ir::is_const_int(r.extent, 1))
        return refuse(fmt::format("an iteration writes a range of '{}'", w.buffer->name));
      const auto* v = r.min.as<ir::VarNode>();
      auto iv = std::find_if(b->iter_vars.begin(), b->iter_vars.end(),
                             [&](const ir::IterVar& x) { return x.var.get() == v; });
      if (!v || iv == b->iter_vars.end() || iv->kind != ir::IterKind::kSpatial)
        return refuse(fmt::format("the index {} of '{}' is not a spatial iterator",
                                  ir::to_string(r.min), w.buffer->name));
      if (std::find(used.begin(), used.end(), v) != used.end())
        return refuse(fmt::format("iterator '{}' indexes '{}' twice", v->name, w.buffer->name));
      used.push_back(v);
    }
    for (const ir::IterVar& iv : b->iter_vars)
      if (iv.kind == ir::IterKind::kSpatial && !ir::is_const_int(iv.dom.extent, 1) &&
          std::find(used.begin(), used.end(), iv.var.get()) == used.end())
        return refuse(fmt::format(
            "spatial iterator '{}' does not index '{}', so iterations overwrite each other",
            iv.var.name(), w.buffer->name));
  }
  return ok_status();
}

bool is_stage_pipeline(const ScheduleState& state, const SRefNode* scope_block) {
  std::unordered_set<const ir::BufferNode*> written;
  for (const SRef& child : child_blocks(state, scope_block)) {
    if (!check_complete_or_reduction_block(state, child.get()).ok()) return false;
    for (const ir::BufferRegion& w : child->as_block()->writes)
      if (!written.insert(w.buffer.get()).second) return false;
  }
  return true;
}

namespace {

// True when `block`'s realize lies under an IfThenElse inside `s` (so it may not run).
bool under_condition(const ir::Stmt& s, const ir::BlockNode* block, bool guarded) {
  switch (s.kind()) {
    case ir::StmtKind::kBlockRealize:
      return s.as<ir::BlockRealizeNode>()->block.get() == block && guarded;
    case ir::StmtKind::kFor:
      return under_condition(s.as<ir::ForNode>()->body, block, guarded);
    case ir::StmtKind::kAllocate:
      return under_condition(s.as<ir::AllocateNode>()->body, block, guarded);
    case ir::StmtKind::kSeqStmt:
      for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq)
        if (under_condition(c, block, guarded)) return true;
      return false;
    case ir::StmtKind::kIfThenElse: {
      auto* n = s.as<ir::IfThenElseNode>();
      return under_condition(n->then_case, block, true) ||
             (n->else_case.defined() && under_condition(n->else_case, block, true));
    }
    default:
      return false;
  }
}

// What `producer` certainly writes of `buffer` over all its iterations, as inclusive [lo, hi]
// per dimension; nullopt unless that set is exactly a box: the producer runs unconditionally,
// its bindings cover its whole domain once, and each written index is a constant or
// +-(one iter var) + constant with distinct iter vars across dimensions.
std::optional<std::vector<arith::IntervalSet>> exact_written_box(const ScheduleState& state,
                                                                 const SRefNode* producer,
                                                                 const ir::BufferNode* buffer,
                                                                 arith::Analyzer* a) {
  const ir::BlockNode* b = producer->as_block();
  const ir::BlockRealizeNode* realize = state.realize_of(producer);
  if (!ir::is_true(realize->predicate) || !has_affine_bindings(state, producer))
    return std::nullopt;
  const SRefNode* scope = scope_block(producer);
  const ir::Stmt scope_body = scope->as_block()->body;
  if (under_condition(scope_body, b, false)) return std::nullopt;
  arith::VarRangeMap doms;
  for (const ir::IterVar& iv : b->iter_vars) doms[iv.var] = iv.dom;
  for (const ir::BufferRegion& w : b->writes) {
    if (w.buffer.get() != buffer) continue;
    std::vector<arith::IntervalSet> box;
    std::vector<const ir::ExprNode*> used;
    for (const ir::Range& r : w.region) {
      if (!ir::is_const_int(a->simplify(r.extent), 1)) return std::nullopt;
      arith::LinearSum lin = arith::to_linear(a->simplify(r.min));
      if (lin.terms.size() > 1) return std::nullopt;
      if (lin.terms.size() == 1) {
        const arith::LinearTerm& t = lin.terms[0];
        const auto* v = t.atom.as<ir::VarNode>();
        bool is_iter = v && std::any_of(b->iter_vars.begin(), b->iter_vars.end(),
                                        [&](const ir::IterVar& iv) { return iv.var.get() == v; });
        if (!is_iter || (t.coeff != 1 && t.coeff != -1)) return std::nullopt;
        if (std::find(used.begin(), used.end(), t.atom.get()) != used.end()) return std::nullopt;
        used.push_back(t.atom.get());
      }
      arith::IntervalSet s = arith::eval_interval(r.min, doms, a);
      if (!s.is_bounded()) return std::nullopt;
      box.push_back(s);
    }
    return box;
  }
  return std::nullopt;
}

}  // namespace

bool region_covered(const ScheduleState& state, const SRefNode* consumer_block) {
  if (!consumer_block->parent) return false;
  const ir::BlockNode* cb = consumer_block->as_block();
  std::vector<SRef> siblings = child_blocks(state, scope_block(consumer_block));
  auto pos = std::find_if(siblings.begin(), siblings.end(),
                          [&](const SRef& s) { return s.get() == consumer_block; });
  if (pos == siblings.end()) return false;
  arith::Analyzer a;
  arith::VarRangeMap loops;
  bind_context(consumer_block, &a, &loops);
  const ir::BlockRealizeNode* realize = state.realize_of(consumer_block);
  auto binding_of = [&](const ir::Var& v) -> ir::Expr {
    for (size_t k = 0; k < cb->iter_vars.size(); ++k)
      if (cb->iter_vars[k].var.same_as(v)) return realize->iter_values[k];
    return ir::Expr();
  };
  for (const ir::BufferRegion& read : cb->reads) {
    std::vector<const SRefNode*> before;
    for (auto it = siblings.begin(); it != siblings.end(); ++it) {
      if (it == pos) continue;
      const auto& writes = (*it)->as_block()->writes;
      bool writes_it = std::any_of(writes.begin(), writes.end(), [&](const ir::BufferRegion& w) {
        return w.buffer.same_as(read.buffer);
      });
      if (!writes_it) continue;
      if (it > pos) return false;  // a later writer: what the consumer reads is not settled
      before.push_back(it->get());
    }
    if (before.empty()) continue;
    if (before.size() != 1) return false;
    auto box = exact_written_box(state, before[0], read.buffer.get(), &a);
    if (!box || box->size() != read.region.size()) return false;
    std::vector<ir::Range> bound;
    for (const ir::Range& r : read.region)
      bound.emplace_back(ir::substitute(r.min, binding_of), ir::substitute(r.extent, binding_of));
    ir::BufferRegion relaxed = arith::relax_region(ir::BufferRegion(read.buffer, bound), loops, &a);
    for (size_t d = 0; d < box->size(); ++d) {
      const ir::Range& r = relaxed.region[d];
      if (!a.can_prove((*box)[d].min_value <= r.min) ||
          !a.can_prove(r.min + r.extent - 1 <= (*box)[d].max_value))
        return false;
    }
  }
  return true;
}

}  // namespace tyche::schedule
