// compute_at and reverse_compute_at (TVM semantics): move a producer block under a loop of its
// consumers' nest, or a consumer under a loop of its producers' nest, computing per iteration of
// that loop only the part of the block that the other side needs (or can use).
//
// The moved block is re-realized under fresh loops, one per iterator (extent-1 loops dropped
// unless preserve_unit_loops), bound as `min + loop_var`. An iterator is restricted to a range
// only when it indexes a buffer dimension plainly (`v + c`) in every relevant access; all other
// iterators (and every reduce iterator) keep their whole domain. Over-computation is harmless:
// the moved block is the only writer of what it writes, so recomputing an element gives the
// same value, and each element's last computation sees final inputs:
//  - compute_at: the consumers under `loop` read, per iteration, only elements inside the hull
//    of their read regions (loops inside `loop` relaxed), and the producer computes a superset
//    of that hull before them, from inputs that nothing between its old and new place writes.
//  - reverse_compute_at: an element x of the consumer is computed in every iteration whose
//    produced hull (what the producers under `loop` write, inner loops relaxed) contains x's
//    plain indices; the iteration that writes x's last input also recomputes x.
// Ranges come from interval arithmetic; a region that cannot be bounded is refused (kNotCovered).
// A predicate keeps the iterators inside their domains when a needed range sticks out of them.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/int_set.h"
#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

namespace {

using arith::IntervalSet;

const char* prim_name(bool is_compute_at) {
  return is_compute_at ? "compute_at" : "reverse_compute_at";
}
const std::string& loop_name(const SRefNode* loop) {
  return loop->as_for()->loop_var.name();
}
const std::string& block_name(const SRefNode* block) {
  return block->as_block()->name;
}

bool is_ancestor(const SRefNode* a, const SRefNode* b) {
  for (const SRefNode* p = b->parent; p; p = p->parent)
    if (p == a) return true;
  return false;
}

// Pre-order positions of the loops and blocks of a scope, and the last position inside each loop:
// program order of the scope's statements.
struct ProgramOrder {
  std::unordered_map<const ir::StmtNode*, int> pos, end;
};

ProgramOrder program_order(const ir::BlockNode* scope) {
  ProgramOrder order;
  int next = 0;
  ScopeVisitor v{
      .on_loop =
          [&](const ir::ForNode* f, bool entering) {
            if (entering)
              order.pos[f] = next++;
            else
              order.end[f] = next - 1;
          },
      .on_realize = [&](const ir::BlockRealizeNode* r) { order.pos[r->block.get()] = next++; }};
  if (scope->init.defined()) visit_scope(scope->init, v);
  visit_scope(scope->body, v);
  return order;
}

// The statements of a loop body, in order.
std::vector<ir::Stmt> body_children(const ir::Stmt& body) {
  if (auto* q = body.as<ir::SeqStmtNode>()) return q->seq;
  return {body};
}

// An analyzer that knows the ranges of `loop` and every loop enclosing it.
void bind_loops_from(arith::Analyzer* a, const SRefNode* innermost) {
  std::vector<const ir::ForNode*> loops;
  for (const SRefNode* p = innermost; p; p = p->parent)
    if (auto* f = p->as_for()) loops.push_back(f);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    a->bind((*it)->loop_var, ir::Range((*it)->min, (*it)->extent));
}

bool uses_vars(const ir::Expr& e, const arith::VarRangeMap& vars) {
  return ir::uses_var(e, [&](const ir::VarNode* v) {
    for (const auto& [k, r] : vars)
      if (k.get() == v) return true;
    return false;
  });
}

// Whether a buffer of storage `scope` is shared by all values of the thread axis `tag` (TVM's
// CanRelaxStorageUnderThread): shared memory by threadIdx and vthread, warp memory by
// threadIdx.x; global and local memory by none that matters here.
bool relaxed_under_thread(const std::string& scope, const std::string& tag) {
  if (scope == "warp") return tag == "threadIdx.x";
  if (scope == "shared" || scope == "shared.dyn")
    return tag.starts_with("threadIdx") || tag.starts_with("vthread");
  return false;
}

// Inclusive per-dimension bounds of `region`, accessed by the block at `block`, with its iter vars
// replaced by its bindings and the loops between `loop` (exclusive) and the block relaxed. Ends
// may refer to `loop` and the loops above it. nullopt when some end is unbounded.
std::optional<std::vector<IntervalSet>> relaxed_access(const ScheduleState& state,
                                                       const SRefNode* block,
                                                       const ir::BufferRegion& region,
                                                       const SRefNode* loop, arith::Analyzer* a) {
  const ir::BlockRealizeNode* realize = state.realize_of(block);
  const ir::BlockNode* b = block->as_block();
  std::unordered_map<const ir::VarNode*, ir::Expr> binding;
  for (size_t i = 0; i < b->iter_vars.size() && i < realize->iter_values.size(); ++i)
    binding[b->iter_vars[i].var.get()] = realize->iter_values[i];
  auto bind = [&](const ir::Expr& e) {
    return ir::substitute(e, [&](const ir::Var& v) {
      auto it = binding.find(v.get());
      return it == binding.end() ? ir::Expr() : it->second;
    });
  };
  arith::VarRangeMap dom;
  for (const SRefNode* p = block->parent; p != loop; p = p->parent) {
    if (!p) return std::nullopt;
    if (auto* f = p->as_for()) dom[f->loop_var] = ir::Range(f->min, f->extent);
  }
  // A buffer shared by the threads of a thread block (or a warp) serves all of them: thread
  // loops at or above `loop` whose threads share it are relaxed too, so the moved block computes
  // the whole thread block's region, not one thread's (TVM's LoopDomainOfSRefTreePath with the
  // buffer's storage scope).
  for (const SRefNode* p = loop; p; p = p->parent)
    if (auto* f = p->as_for(); f && f->for_kind == ir::ForKind::kThreadBinding &&
                               relaxed_under_thread(region.buffer->scope, f->thread_tag))
      dom[f->loop_var] = ir::Range(f->min, f->extent);
  std::vector<IntervalSet> out;
  for (const ir::Range& r : region.region) {
    ir::Expr mn = bind(r.min);
    ir::Expr last = bind(r.min + r.extent - ir::make_int(1, r.extent.dtype()));
    IntervalSet lo = arith::eval_interval(mn, dom, a), hi = arith::eval_interval(last, dom, a);
    if (!lo.has_lower_bound() || !hi.has_upper_bound()) return std::nullopt;
    if (uses_vars(lo.min_value, dom) || uses_vars(hi.max_value, dom)) return std::nullopt;
    out.push_back({lo.min_value, hi.max_value});
  }
  return out;
}

// When `r` is `iter_var + c` with extent 1, the iterator's index and c.
std::optional<std::pair<size_t, int64_t>> plain_index(const ir::BlockNode* b, const ir::Range& r) {
  if (!ir::is_const_int(r.extent, 1) || !arith::is_linear_type(r.min.dtype())) return std::nullopt;
  arith::LinearSum s = arith::to_linear(r.min);
  if (s.terms.size() != 1 || s.terms[0].coeff != 1) return std::nullopt;
  const ir::VarNode* v = s.terms[0].atom.as<ir::VarNode>();
  for (size_t i = 0; i < b->iter_vars.size(); ++i)
    if (b->iter_vars[i].var.get() == v) return std::make_pair(i, s.constant);
  return std::nullopt;
}

// One access of the moved block (by dimension) and the per-iteration bounds of the buffer on the
// other side of the dependence.
struct Access {
  const ir::BufferRegion* region;   // the moved block's region, in its iter vars
  std::vector<IntervalSet> bounds;  // needed (compute_at) or produced (reverse) per dimension
};

// The range of each iterator of the moved block: restricted (a defined interval) when it is plain
// in every access, else undefined (whole domain).
std::vector<IntervalSet> iter_ranges(const ir::BlockNode* b, const std::vector<Access>& accesses,
                                     bool check_in_buffer, arith::Analyzer* a) {
  std::vector<IntervalSet> out(b->iter_vars.size());
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    const ir::IterVar& iv = b->iter_vars[i];
    if (iv.kind != ir::IterKind::kSpatial || accesses.empty()) continue;
    std::optional<IntervalSet> range;
    bool plain_everywhere = true;
    for (const Access& acc : accesses) {
      std::optional<IntervalSet> here;
      for (size_t d = 0; d < acc.region->region.size() && !here; ++d) {
        auto p = plain_index(b, acc.region->region[d]);
        if (!p || p->first != i) continue;
        ir::Expr c = ir::make_int(p->second, iv.var.dtype());
        if (check_in_buffer) {
          // Every index the iterator can produce must exist in the buffer, or some elements of
          // the moved block would never be computed.
          const ir::Expr& extent = acc.region->buffer->shape[d];
          ir::Expr last = iv.dom.min + iv.dom.extent - ir::make_int(1, iv.var.dtype());
          if (!a->can_prove(iv.dom.min + c >= ir::make_int(0, iv.var.dtype())) ||
              !a->can_prove(last + c < extent))
            break;
        }
        here = IntervalSet{a->simplify(acc.bounds[d].min_value - c),
                           a->simplify(acc.bounds[d].max_value - c)};
      }
      if (!here) {
        plain_everywhere = false;
        break;
      }
      range = range ? arith::union_interval(*range, *here, a) : *here;
    }
    if (plain_everywhere && range) out[i] = *range;
  }
  return out;
}

void split_conjunction(const ir::Expr& e, std::vector<ir::Expr>* out) {
  if (e.kind() == ir::ExprKind::kAnd) {
    split_conjunction(e.as_binary()->a, out);
    split_conjunction(e.as_binary()->b, out);
  } else {
    out->push_back(e);
  }
}

// The block's old predicate re-expressed on its iterators (each conjunct a comparison of one old
// binding plus a constant), then written with the new bindings. nullopt if some conjunct is not
// of that form (it could exclude iterations the new loops would run).
std::optional<std::vector<ir::Expr>> reexpress_predicate(
    const ScheduleState& state, const SRefNode* block, const std::vector<ir::Expr>& new_bindings) {
  const ir::BlockRealizeNode* realize = state.realize_of(block);
  arith::Analyzer a;
  bind_loops_from(&a, block->parent);
  std::vector<ir::Expr> conjuncts, out;
  split_conjunction(realize->predicate, &conjuncts);
  for (const ir::Expr& c : conjuncts) {
    if (a.can_prove(c)) continue;
    const ir::BinaryNode* cmp = c.as_binary();
    if (!cmp || !ir::is_comparison(c.kind()) || !arith::is_linear_type(cmp->a.dtype()))
      return std::nullopt;
    ir::Expr diff = a.simplify(cmp->a - cmp->b);
    std::optional<ir::Expr> rewritten;
    for (size_t i = 0; i < realize->iter_values.size() && !rewritten; ++i) {
      const ir::Expr& old_b = realize->iter_values[i];
      if (ir::as_const_int(old_b)) continue;
      ir::Expr zero = ir::make_int(0, diff.dtype());
      if (auto r = ir::as_const_int(a.simplify(diff - old_b)))  // c: old_b + r (cmp) 0
        rewritten =
            ir::make_binary(c.kind(), new_bindings[i] + ir::make_int(*r, diff.dtype()), zero);
      else if (auto r2 = ir::as_const_int(a.simplify(diff + old_b)))  // c: r2 - old_b (cmp) 0
        rewritten =
            ir::make_binary(c.kind(), ir::make_int(*r2, diff.dtype()) - new_bindings[i], zero);
    }
    if (!rewritten) return std::nullopt;
    out.push_back(*rewritten);
  }
  return out;
}

// The new loop nest of the moved block: one loop per iterator over its range, the block realized
// with bindings `min + loop_var` under a predicate that keeps it inside its domain.
Result<ir::Stmt> make_nest(const ScheduleState& state, const SRefNode* block, const SRefNode* loop,
                           const std::vector<IntervalSet>& ranges, bool preserve_unit_loops,
                           bool is_compute_at) {
  const ir::BlockNode* b = block->as_block();
  arith::Analyzer a;
  bind_loops_from(&a, loop);
  std::vector<ir::Var> loop_vars;
  std::vector<ir::Expr> loop_extents, bindings, predicate;
  for (size_t i = 0; i < b->iter_vars.size(); ++i) {
    const ir::IterVar& iv = b->iter_vars[i];
    DataType t = iv.var.dtype();
    ir::Expr lo = iv.dom.min, extent = iv.dom.extent;
    auto dom_extent = ir::as_const_int(iv.dom.extent);
    bool clamp = false;
    if (ranges[i].is_bounded() && dom_extent) {
      ir::Expr need = a.simplify(ranges[i].max_value - ranges[i].min_value + ir::make_int(1, t));
      int64_t bound = ir::as_const_int(need).value_or(a.const_int_bound(need).max_value);
      if (bound == arith::ConstIntBound::kPosInf)
        return ScheduleError(
            ErrorCode::kNotCovered,
            fmt::format("{}: the range of iterator '{}' of block '{}' under loop '{}' has no "
                        "constant bound",
                        prim_name(is_compute_at), iv.var.name(), b->name, loop_name(loop)),
            b);
      if (bound < *dom_extent) {
        lo = ranges[i].min_value, extent = ir::make_int(std::max<int64_t>(bound, 1), t),
        clamp = true;
      }
    }
    ir::Expr value = lo;
    if (!preserve_unit_loops && ir::is_const_int(extent, 1)) {
      value = a.simplify(lo);
    } else {
      ir::Var v(fmt::format("ax{}", i), t);
      a.bind(v, ir::Range(ir::make_int(0, t), extent));
      loop_vars.push_back(v);
      loop_extents.push_back(extent);
      value = a.simplify(lo + v);
    }
    if (clamp) {
      ir::Expr above = value >= iv.dom.min, below = value < iv.dom.min + iv.dom.extent;
      if (!a.can_prove(above)) predicate.push_back(above);
      if (!a.can_prove(below)) predicate.push_back(below);
    }
    bindings.push_back(value);
  }
  auto old_pred = reexpress_predicate(state, block, bindings);
  if (!old_pred)
    return ScheduleError(
        ErrorCode::kNotCovered,
        fmt::format("{}: the predicate of block '{}' cannot be expressed on its iterators",
                    prim_name(is_compute_at), b->name),
        b);
  predicate.insert(predicate.end(), old_pred->begin(), old_pred->end());
  ir::Expr pred = ir::make_bool(true);
  for (const ir::Expr& p : predicate) pred = pred && p;
  pred = a.simplify(pred);
  ir::Stmt nest = ir::block_realize(bindings, pred, state.realize_of(block)->block);
  for (size_t i = loop_vars.size(); i-- > 0;)
    nest = ir::for_loop(loop_vars[i], ir::make_int(0, loop_vars[i].dtype()), loop_extents[i],
                        ir::ForKind::kSerial, nest);
  return nest;
}

// Rewrites the scope's body: removes `remove` (an element of some SeqStmt) and rebuilds the
// loop `target` with `new_body`. Stops at nested blocks, which belong to other scopes.
class MoveRewriter : public ir::StmtExprMutator {
 public:
  MoveRewriter(const ir::StmtNode* remove, const ir::StmtNode* target, ir::Stmt new_body)
      : remove_(remove), target_(target), new_body_(std::move(new_body)) {}
  bool removed = false, inserted = false;

  ir::Stmt mutate_stmt(const ir::Stmt& s) override {
    if (s.get() == target_) {
      inserted = true;
      auto* f = s.as<ir::ForNode>();
      return ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, new_body_, f->thread_tag,
                          f->annotations);
    }
    if (s.kind() == ir::StmtKind::kBlockRealize || s.kind() == ir::StmtKind::kBlock) return s;
    return StmtExprMutator::mutate_stmt(s);
  }
  ir::Expr mutate_expr(const ir::Expr& e) override { return e; }

 protected:
  ir::Stmt mutate_seq(const ir::SeqStmtNode* n, const ir::Stmt& self) override {
    std::vector<ir::Stmt> kept;
    bool changed = false;
    for (const ir::Stmt& s : n->seq) {
      if (s.get() == remove_) {
        removed = changed = true;
        continue;
      }
      kept.push_back(mutate_stmt(s));
      changed |= !kept.back().same_as(s);
    }
    return changed ? ir::seq(std::move(kept)) : self;
  }

 private:
  const ir::StmtNode* remove_;
  const ir::StmtNode* target_;
  ir::Stmt new_body_;
};

// The outermost statement that holds only `block` (its realize and the loops around it that
// have nothing else), which leaves the program when the block moves.
const ir::StmtNode* removal_root(const ScheduleState& state, const SRefNode* block) {
  const ir::StmtNode* cur = state.realize_stmt_of(block).get();
  const SRefNode* p = block->parent;
  while (p && p->as_for() && p->as_for()->body.get() == cur) {
    cur = p->stmt;
    p = p->parent;
  }
  return cur;
}

// Checks shared by both primitives: a movable block, a loop of the same scope that is not
// already around it.
Status check_placement(const ScheduleState& state, const SRefNode* block, const SRefNode* loop,
                       bool is_compute_at) {
  const char* prim = prim_name(is_compute_at);
  if (!block->parent)
    return ScheduleError(ErrorCode::kUnsupported,
                         fmt::format("{}: the root block cannot be moved", prim), block->stmt);
  const SRefNode* scope = scope_block(block);
  if (scope_block(loop) != scope)
    return ScheduleError(ErrorCode::kNotAncestor,
                         fmt::format("{}: loop '{}' is not in the scope of block '{}' (scope '{}')",
                                     prim, loop_name(loop), block_name(block), block_name(scope)),
                         loop->stmt);
  if (is_ancestor(loop, block))
    return ScheduleError(ErrorCode::kNotAncestor,
                         fmt::format("{}: block '{}' is already under loop '{}'", prim,
                                     block_name(block), loop_name(loop)),
                         loop->stmt);
  return check_complete_or_reduction_block(state, block);
}

// Relaxed accesses to `buffer` by `blocks` (reads or writes), united per dimension.
Result<std::vector<IntervalSet>> united_access(const ScheduleState& state,
                                               const std::vector<SRef>& blocks,
                                               const ir::BufferNode* buffer, bool reads,
                                               const SRefNode* loop, const SRefNode* moved,
                                               arith::Analyzer* a, bool is_compute_at) {
  std::optional<std::vector<IntervalSet>> hull;
  for (const SRef& s : blocks) {
    const ir::BlockNode* b = s->as_block();
    for (const ir::BufferRegion& r : reads ? b->reads : b->writes) {
      if (r.buffer.get() != buffer) continue;
      auto dims = relaxed_access(state, s.get(), r, loop, a);
      if (!dims)
        return ScheduleError(
            ErrorCode::kNotCovered,
            fmt::format("{}: cannot bound the region of '{}' that block '{}' {} under loop '{}' "
                        "for block '{}'",
                        prim_name(is_compute_at), buffer->name, b->name, reads ? "reads" : "writes",
                        loop_name(loop), block_name(moved)),
            moved->stmt);
      if (!hull) {
        hull = *dims;
      } else {
        for (size_t d = 0; d < hull->size(); ++d)
          (*hull)[d] = arith::union_interval((*hull)[d], (*dims)[d], a);
      }
    }
  }
  return hull.value_or(std::vector<IntervalSet>{});
}

// Program-order positions that the dependence checks compare the scope's other blocks against.
struct MoveSpan {
  ProgramOrder order;
  int block_pos, loop_pos, loop_end;
  std::vector<SRef> siblings;
};

// Gathered once, so that both directions' checks compare against the same positions.
MoveSpan move_span(const ScheduleState& state, const SRef& block, const SRef& loop) {
  const SRefNode* scope = scope_block(block.get());
  ProgramOrder order = program_order(scope->as_block());
  const int block_pos = order.pos.at(block->stmt), loop_pos = order.pos.at(loop->stmt),
            loop_end = order.end.at(loop->stmt);
  return MoveSpan{std::move(order), block_pos, loop_pos, loop_end, child_blocks(state, scope)};
}

// compute_at's side: the producer must precede its consumers, its inputs unchanged meanwhile.
Result<std::vector<SRef>> consumers_under_loop(const ScheduleState& state, const SRef& block,
                                               const SRef& loop, const MoveSpan& span) {
  const char* prim = prim_name(true);
  const ir::BlockNode* b = block->as_block();
  if (span.block_pos > span.loop_pos)
    return ScheduleError(
        ErrorCode::kDependenceViolated,
        fmt::format("{}: block '{}' comes after loop '{}'; it must precede its consumers", prim,
                    b->name, loop_name(loop.get())),
        b);
  for (const ir::BufferRegion& w : b->writes)
    if (is_output_buffer(state, w.buffer.get()))
      return ScheduleError(ErrorCode::kIsOutput,
                           fmt::format("{}: block '{}' writes the function output '{}', which "
                                       "would be computed only in part",
                                       prim, b->name, w.buffer->name),
                           b);
  std::vector<SRef> consumers;
  for (const SRef& c : get_consumers(state, block)) {
    if (!is_ancestor(loop.get(), c.get()))
      return ScheduleError(
          ErrorCode::kNotAncestor,
          fmt::format("{}: loop '{}' is not an ancestor of block '{}', a consumer of block '{}'",
                      prim, loop_name(loop.get()), block_name(c.get()), b->name),
          c->stmt);
    consumers.push_back(c);
  }
  // Nothing from the block's old place to the end of the loop may change what it reads.
  for (const SRef& s : span.siblings) {
    int p = span.order.pos.at(s->stmt);
    if (s != block && p > span.block_pos && p <= span.loop_end &&
        touches_any(b->reads, s->as_block()->writes))
      return ScheduleError(ErrorCode::kDependenceViolated,
                           fmt::format("{}: block '{}' writes what block '{}' reads, between its "
                                       "place and the end of loop '{}'",
                                       prim, block_name(s.get()), b->name, loop_name(loop.get())),
                           s->stmt);
  }
  return consumers;
}

// reverse_compute_at's side: the consumer must follow its producers, its output unread meanwhile.
Result<std::vector<SRef>> producers_under_loop(const ScheduleState& state, const SRef& block,
                                               const SRef& loop, const MoveSpan& span) {
  const char* prim = prim_name(false);
  const ir::BlockNode* b = block->as_block();
  if (span.block_pos < span.loop_end)
    return ScheduleError(
        ErrorCode::kDependenceViolated,
        fmt::format("{}: block '{}' comes before loop '{}'; it must follow its producers", prim,
                    b->name, loop_name(loop.get())),
        b);
  std::vector<SRef> producers;
  for (const SRef& p : get_producers(state, block)) {
    if (!is_ancestor(loop.get(), p.get()))
      return ScheduleError(
          ErrorCode::kNotAncestor,
          fmt::format("{}: loop '{}' is not an ancestor of block '{}', a producer of block '{}'",
                      prim, loop_name(loop.get()), block_name(p.get()), b->name),
          p->stmt);
    producers.push_back(p);
  }
  // Nothing from the loop to the block's old place may read what it writes.
  for (const SRef& s : span.siblings) {
    int p = span.order.pos.at(s->stmt);
    if (s != block && p >= span.loop_pos && p < span.block_pos &&
        touches_any(b->writes, s->as_block()->reads))
      return ScheduleError(
          ErrorCode::kDependenceViolated,
          fmt::format("{}: block '{}' reads what block '{}' writes, before its place", prim,
                      block_name(s.get()), b->name),
          s->stmt);
  }
  return producers;
}

// The blocks under `loop` that decide what the moved block computes; with none, it has no place.
Result<std::vector<SRef>> blocks_across_dependence(const ScheduleState& state, const SRef& block,
                                                   const SRef& loop, bool is_compute_at) {
  const ir::BlockNode* b = block->as_block();
  MoveSpan span = move_span(state, block, loop);
  TYCHE_TRY_ASSIGN(others, is_compute_at ? consumers_under_loop(state, block, loop, span)
                                         : producers_under_loop(state, block, loop, span));
  if (others.empty())
    return ScheduleError(
        ErrorCode::kNotCovered,
        fmt::format("{}: block '{}' has no {} under loop '{}'", prim_name(is_compute_at), b->name,
                    is_compute_at ? "consumer" : "producer", loop_name(loop.get())),
        b);
  return others;
}

// The moved block's accesses that the other side bounds per iteration: what its iterators cover.
Result<std::vector<Access>> accesses_across(const ScheduleState& state, const SRef& block,
                                            const SRef& loop, const std::vector<SRef>& others,
                                            arith::Analyzer* a, bool is_compute_at) {
  const ir::BlockNode* b = block->as_block();
  std::vector<Access> accesses;
  const auto& own = is_compute_at ? b->writes : b->reads;
  for (const ir::BufferRegion& r : own) {
    TYCHE_TRY_ASSIGN(bounds, united_access(state, others, r.buffer.get(), is_compute_at, loop.get(),
                                           block.get(), a, is_compute_at));
    if (bounds.empty()) continue;  // no block on the other side touches this buffer under the loop
    if (bounds.size() != r.region.size())
      return ScheduleError(ErrorCode::kNotCovered,
                           fmt::format("{}: buffer '{}' is accessed with different ranks",
                                       prim_name(is_compute_at), r.buffer->name),
                           b);
    accesses.push_back({&r, std::move(bounds)});
  }
  return accesses;
}

// A consumer whose index into a produced buffer mixes its spatial iterators (a convolution
// window) cannot be restricted to what one iteration produces; TVM refuses it too.
Status check_plain_reads(const ir::BlockNode* b, const std::vector<Access>& accesses,
                         const SRefNode* loop) {
  for (const Access& acc : accesses)
    for (const ir::Range& r : acc.region->region) {
      bool spatial = ir::uses_var(r.min, [&](const ir::VarNode* v) {
        return std::any_of(b->iter_vars.begin(), b->iter_vars.end(), [&](const ir::IterVar& iv) {
          return iv.var.get() == v && iv.kind == ir::IterKind::kSpatial;
        });
      });
      if (spatial && !plain_index(b, r))
        return ScheduleError(
            ErrorCode::kNotCovered,
            fmt::format(
                "{}: block '{}' reads '{}' at index '{}', which does not map to a range of its "
                "iterators under loop '{}'",
                prim_name(false), b->name, acc.region->buffer->name, ir::to_string(r.min),
                loop_name(loop)),
            b);
    }
  return ok_status();
}

// Before the first consumer, which reads the moved block's output, or after the last producer.
size_t insertion_index(const std::vector<ir::Stmt>& children, const std::vector<SRef>& others,
                       bool is_compute_at) {
  std::unordered_set<const ir::StmtNode*> other_blocks;
  for (const SRef& s : others) other_blocks.insert(s->stmt);
  auto holds_other = [&](const ir::Stmt& child) {
    for (const ir::BlockRealizeNode* r : realizes_under(child))
      if (other_blocks.count(r->block.get())) return true;
    return false;
  };
  size_t insert_at = 0;
  if (is_compute_at) {
    while (insert_at < children.size() && !holds_other(children[insert_at])) ++insert_at;
  } else {
    for (size_t i = 0; i < children.size(); ++i)
      if (holds_other(children[i])) insert_at = i + 1;
  }
  return insert_at;
}

// The rewritten scope, built beside the state so that planning a move never changes it.
Result<ir::Block> moved_scope(const ScheduleState& state, const SRef& block, const SRef& loop,
                              const std::vector<SRef>& others, const ir::Stmt& nest,
                              bool is_compute_at) {
  std::vector<ir::Stmt> children = body_children(loop->as_for()->body);
  size_t insert_at = insertion_index(children, others, is_compute_at);
  const ir::StmtNode* remove = removal_root(state, block.get());
  children.insert(children.begin() + static_cast<std::ptrdiff_t>(insert_at), nest);
  MoveRewriter rw(remove, loop->stmt, ir::seq(children));
  const ir::BlockNode* sb = scope_block(block.get())->as_block();
  ir::Stmt body = rw.mutate_stmt(sb->body);
  if (!rw.removed || !rw.inserted) {
    const ir::BlockNode* b = block->as_block();
    return ScheduleError(
        ErrorCode::kUnsupported,
        fmt::format("{}: block '{}' sits under a statement it cannot be moved out of",
                    prim_name(is_compute_at), b->name),
        b);
  }
  return ir::make_block(sb->name, sb->iter_vars, sb->reads, sb->writes, sb->init, body,
                        sb->alloc_buffers, sb->annotations);
}

// The rewritten scope that moving `block` under `loop` gives, or why it is refused; the state
// is not touched, so legality can be asked of many loops cheaply (sample_compute_location).
struct MovePlan {
  const SRefNode* scope = nullptr;
  ir::Block new_scope;
  bool varies_with_loop = true;  // the moved block's region depends on the loop's variable
};

Result<MovePlan> plan_move(const ScheduleState& state, const SRef& block, const SRef& loop,
                           bool preserve_unit_loops, bool is_compute_at) {
  if (auto s = check_placement(state, block.get(), loop.get(), is_compute_at); !s) return s.error();
  TYCHE_TRY_ASSIGN(others, blocks_across_dependence(state, block, loop, is_compute_at));
  // The region each iterator must cover.
  arith::Analyzer a;
  bind_loops_from(&a, loop.get());
  TYCHE_TRY_ASSIGN(accesses, accesses_across(state, block, loop, others, &a, is_compute_at));
  const ir::BlockNode* b = block->as_block();
  if (!is_compute_at)
    if (Status s = check_plain_reads(b, accesses, loop.get()); !s) return s.error();
  std::vector<IntervalSet> ranges = iter_ranges(b, accesses, !is_compute_at, &a);
  TYCHE_TRY_ASSIGN(
      nest, make_nest(state, block.get(), loop.get(), ranges, preserve_unit_loops, is_compute_at));
  TYCHE_TRY_ASSIGN(new_scope, moved_scope(state, block, loop, others, nest, is_compute_at));
  const ir::VarNode* loop_var = loop->as_for()->loop_var.get();
  auto uses_loop_var = [&](const ir::Expr& e) {
    return e.defined() && ir::uses_var(e, [&](const ir::VarNode* v) { return v == loop_var; });
  };
  bool varies = std::any_of(ranges.begin(), ranges.end(), [&](const IntervalSet& r) {
    return uses_loop_var(r.min_value) || uses_loop_var(r.max_value);
  });
  return MovePlan{scope_block(block.get()), std::move(new_scope), varies};
}

Status move_block(ScheduleState& state, const SRef& block, const SRef& loop,
                  bool preserve_unit_loops, bool is_compute_at) {
  TYCHE_TRY_ASSIGN(plan, plan_move(state, block, loop, preserve_unit_loops, is_compute_at));
  state.replace(state.get_sref(plan.scope->stmt), plan.new_scope,
                {{plan.new_scope.get(), plan.scope->as_block()}});
  return ok_status();
}

}  // namespace

Status compute_at(ScheduleState& state, const SRef& block, const SRef& loop,
                  bool preserve_unit_loops) {
  return move_block(state, block, loop, preserve_unit_loops, true);
}

Status check_compute_at(const ScheduleState& state, const SRef& block, const SRef& loop,
                        bool preserve_unit_loops) {
  auto plan = plan_move(state, block, loop, preserve_unit_loops, true);
  if (!plan) return plan.error();
  return ok_status();
}

Result<bool> compute_at_varies_with_loop(const ScheduleState& state, const SRef& block,
                                         const SRef& loop) {
  TYCHE_TRY_ASSIGN(plan, plan_move(state, block, loop, false, true));
  return plan.varies_with_loop;
}

Status reverse_compute_at(ScheduleState& state, const SRef& block, const SRef& loop,
                          bool preserve_unit_loops) {
  return move_block(state, block, loop, preserve_unit_loops, false);
}

// ---- instructions ----

namespace {

// The loop may be a location mark from sample_compute_location: stay, or inline (reverse-inline
// for consumers).
template <bool kReverse>
Status apply_compute_at(InstructionContext& ctx, BlockRV block, LoopRV loop,
                        bool preserve_unit_loops) {
  TYCHE_TRY_ASSIGN(block_sref, ctx.sref(block));
  if (auto mark = ctx.location_mark(loop)) {
    if (*mark == kComputeLocationRoot) return ok_status();
    Status s = kReverse ? reverse_compute_inline(ctx.state(), block_sref)
                        : compute_inline(ctx.state(), block_sref);
    if (s) ctx.consume(block);
    return s;
  }
  TYCHE_TRY_ASSIGN(loop_sref, ctx.sref(loop));
  return kReverse ? reverse_compute_at(ctx.state(), block_sref, loop_sref, preserve_unit_loops)
                  : compute_at(ctx.state(), block_sref, loop_sref, preserve_unit_loops);
}

}  // namespace

TYCHE_INSTRUCTION(compute_at, apply_compute_at<false>,
                  {{"block"}, {"loop"}, {"preserve_unit_loops", false, Value::boolean(false)}})
TYCHE_INSTRUCTION(reverse_compute_at, apply_compute_at<true>,
                  {{"block"}, {"loop"}, {"preserve_unit_loops", false, Value::boolean(false)}})

Status Schedule::compute_at(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops) {
  return compute_at_kind()(*this, block, loop, preserve_unit_loops);
}
Status Schedule::reverse_compute_at(const BlockRV& block, const LoopRV& loop,
                                    bool preserve_unit_loops) {
  return reverse_compute_at_kind()(*this, block, loop, preserve_unit_loops);
}

}  // namespace tyche::schedule
