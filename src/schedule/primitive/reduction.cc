// decompose_reduction and rfactor (TVM semantics). Both rebuild the scope block once: the new
// statements (the init nest, the write-back nest) are inserted beside a loop of the reduction's
// nest and the reduction block itself is replaced in the same pass.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

namespace {

using ir::VarSet;

// Variables of `e` in order of first appearance (left to right).
class VarCollector : public ir::StmtExprVisitor {
 public:
  std::vector<const ir::VarNode*> vars;

 protected:
  void visit_var(const ir::VarNode* v) override {
    if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  }
};

std::vector<const ir::VarNode*> vars_of(const ir::Expr& e) {
  VarCollector c;
  if (e.defined()) c.visit_expr(e);
  return c.vars;
}

// The conjuncts of a predicate (an undefined predicate has none).
void split_conjuncts(const ir::Expr& e, std::vector<ir::Expr>* out) {
  if (!e.defined() || ir::is_const_int(e, 1)) return;
  if (e.kind() == ir::ExprKind::kAnd) {
    split_conjuncts(e.as_binary()->a, out);
    split_conjuncts(e.as_binary()->b, out);
    return;
  }
  out->push_back(e);
}

std::function<ir::Expr(const ir::Var&)> var_map(
    const std::unordered_map<const ir::VarNode*, ir::Expr>& m) {
  return [&m](const ir::Var& v) -> ir::Expr {
    auto it = m.find(v.get());
    return it == m.end() ? ir::Expr() : it->second;
  };
}

// A block name not used anywhere in the function: `base`, else base_1, base_2, ...
std::string unique_block_name(const ScheduleState& state, const std::string& base) {
  std::unordered_set<std::string> names;
  ir::post_order_visit(state.func()->body, [&](const ir::Stmt& s) {
    if (auto* b = s.as<ir::BlockNode>()) names.insert(b->name);
  });
  if (!names.count(base)) return base;
  for (int i = 1;; ++i)
    if (std::string n = fmt::format("{}_{}", base, i); !names.count(n)) return n;
}

// Fills reads/writes of a block from its body, as create_prim_func does.
ir::Block with_inferred_regions(const ir::Block& b) {
  arith::Analyzer analyzer;
  arith::AccessRegions r = arith::infer_access_regions(*b, &analyzer);
  return ir::make_block(b->name, b->iter_vars, r.reads, r.writes, b->init, b->body,
                        b->alloc_buffers, b->annotations);
}

// Rebuilds a scope block's body: replaces one BlockRealize and puts statements right before or
// after one loop. Other blocks are not entered.
class ScopeRewriter : public ir::StmtExprMutator {
 public:
  const ir::StmtNode* old_realize = nullptr;
  ir::Stmt new_realize;
  const ir::StmtNode* anchor = nullptr;
  ir::Stmt before, after;

  ir::Stmt mutate_stmt(const ir::Stmt& s) override {
    if (s.get() == old_realize) return new_realize;
    if (s.kind() == ir::StmtKind::kBlockRealize) return s;
    ir::Stmt out = StmtExprMutator::mutate_stmt(s);  // sequences are rebuilt (flattened) by ir::seq
    if (s.get() != anchor) return out;
    std::vector<ir::Stmt> parts;
    if (before.defined()) parts.push_back(before);
    parts.push_back(out);
    if (after.defined()) parts.push_back(after);
    return ir::seq(std::move(parts));
  }
  ir::Expr mutate_expr(const ir::Expr& e) override { return e; }
};

// Applies `rw` to the scope block of `block_sref` (optionally adding an allocation) and commits
// it, keeping the scope's sref and mapping `reuse` blocks.
void commit_scope(ScheduleState& state, const SRefNode* block_sref, ScopeRewriter& rw,
                  BlockReuse reuse, const ir::Buffer& extra_alloc = ir::Buffer()) {
  SRef scope = state.get_sref(scope_block(block_sref)->stmt);
  const ir::BlockNode* s = scope->as_block();
  ir::Stmt body = rw.mutate_stmt(s->body);
  std::vector<ir::Buffer> allocs = s->alloc_buffers;
  if (extra_alloc.defined()) allocs.push_back(extra_alloc);
  ir::Block new_scope = ir::make_block(s->name, s->iter_vars, s->reads, s->writes, s->init, body,
                                       allocs, s->annotations);
  reuse[new_scope.get()] = s;
  state.replace(scope, new_scope, reuse);
}

// Which iterators of the block each of its loops binds.
struct LoopUse {
  std::vector<bool> spatial, reduce;
};

LoopUse classify_loops(const std::vector<SRef>& loops, const ir::BlockNode* block,
                       const ir::BlockRealizeNode* realize) {
  LoopUse u{std::vector<bool>(loops.size()), std::vector<bool>(loops.size())};
  for (size_t i = 0; i < loops.size(); ++i) {
    const ir::VarNode* v = loops[i]->as_for()->loop_var.get();
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (!ir::uses_var(realize->iter_values[k], v)) continue;
      if (block->iter_vars[k].kind == ir::IterKind::kReduce)
        u.reduce[i] = true;
      else
        u.spatial[i] = true;
    }
  }
  return u;
}

// A loop that repeats the block without changing any of its iterators would re-run the init;
// both primitives would change what such a nest computes, so they refuse it (as TVM does).
std::optional<ScheduleError> check_no_unbound_loop(const std::vector<SRef>& loops,
                                                   const LoopUse& use, size_t from,
                                                   const ir::BlockNode* block,
                                                   const char* primitive) {
  for (size_t i = from; i < loops.size(); ++i) {
    const ir::ForNode* l = loops[i]->as_for();
    if (use.spatial[i] || use.reduce[i] || ir::is_const_int(l->extent, 1)) continue;
    return ScheduleError(
        ErrorCode::kUnsupported,
        fmt::format("{}: loop '{}' repeats block '{}' without binding any of its iterators",
                    primitive, l->loop_var.name(), block->name),
        l);
  }
  return std::nullopt;
}

// Replicates `loops[i]` as a fresh loop (same range, kind and annotations) around `body`.
ir::Stmt wrap_loop(const ir::ForNode* l, const ir::Var& v, const ir::Expr& min,
                   const ir::Expr& extent, ir::Stmt body) {
  return ir::for_loop(v, min, extent, l->for_kind, std::move(body), l->thread_tag, l->annotations);
}

}  // namespace

Result<SRef> decompose_reduction(ScheduleState& state, const SRef& block_sref,
                                 const SRef& loop_sref) {
  const ir::BlockNode* block = block_sref->as_block();
  const ir::ForNode* loop = loop_sref->as_for();
  if (Status s = check_reduction_block(state, block_sref.get()); !s) return s.error();
  std::vector<SRef> loops = get_loops(state, block_sref);
  auto pos_it = std::find_if(loops.begin(), loops.end(),
                             [&](const SRef& l) { return l.get() == loop_sref.get(); });
  if (pos_it == loops.end())
    return ScheduleError(
        ErrorCode::kNotAncestor,
        fmt::format("decompose_reduction: loop '{}' is not an ancestor of block '{}'",
                    loop->loop_var.name(), block->name),
        loop);
  size_t pos = static_cast<size_t>(pos_it - loops.begin());
  const ir::BlockRealizeNode* realize = state.realize_of(block_sref.get());
  LoopUse use = classify_loops(loops, block, realize);
  // The init must run before every update: `loop` may not sit below a loop of the reduction.
  for (size_t i = 0; i < pos; ++i)
    if (use.reduce[i])
      return ScheduleError(
          ErrorCode::kNotAncestor,
          fmt::format("decompose_reduction: loop '{}' is below loop '{}', which binds a reduce "
                      "iterator of block '{}'",
                      loop->loop_var.name(), loops[i]->as_for()->loop_var.name(), block->name),
          loop);
  if (auto e = check_no_unbound_loop(loops, use, pos, block, "decompose_reduction")) return *e;

  // Loops from `loop` down that bind spatial iterators are replicated (fresh variables); the
  // others are dropped, and stand for their minimum where a range or the predicate uses them:
  // the original init ran exactly when the reduce loops were at their minimum (TVM instead drops
  // every predicate conjunct that mentions a dropped loop).
  std::unordered_map<const ir::VarNode*, ir::Expr> remap;
  std::vector<std::pair<size_t, ir::Var>> kept;
  for (size_t i = pos; i < loops.size(); ++i) {
    const ir::ForNode* l = loops[i]->as_for();
    if (use.spatial[i]) {
      ir::Var v(l->loop_var.name() + "_init", l->loop_var.dtype());
      kept.emplace_back(i, v);
      remap[l->loop_var.get()] = v;
    } else {
      remap[l->loop_var.get()] = ir::substitute(l->min, var_map(remap));
    }
  }
  arith::Analyzer analyzer;
  std::unordered_map<const ir::VarNode*, ir::Expr> iter_map;
  std::vector<ir::IterVar> iters;
  std::vector<ir::Expr> values;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind != ir::IterKind::kSpatial) continue;
    ir::Var nv(iv.var.name(), iv.var.dtype());
    iters.push_back(ir::IterVar{nv, iv.dom, ir::IterKind::kSpatial});
    values.push_back(analyzer.simplify(ir::substitute(realize->iter_values[k], var_map(remap))));
    iter_map[iv.var.get()] = nv;
  }
  ir::Expr pred = realize->predicate.defined()
                      ? analyzer.simplify(ir::substitute(realize->predicate, var_map(remap)))
                      : ir::make_bool(true);
  ir::Block init_block = with_inferred_regions(
      ir::make_block(unique_block_name(state, block->name + "_init"), iters, {}, {}, ir::Stmt(),
                     ir::substitute(block->init, var_map(iter_map)), {}, block->annotations));
  ir::Stmt nest = ir::block_realize(values, pred, init_block);
  for (size_t j = kept.size(); j-- > 0;) {
    const ir::ForNode* l = loops[kept[j].first]->as_for();
    nest = wrap_loop(l, kept[j].second, ir::substitute(l->min, var_map(remap)),
                     ir::substitute(l->extent, var_map(remap)), nest);
  }

  ir::Block updated =
      ir::make_block(block->name, block->iter_vars, block->reads, block->writes, ir::Stmt(),
                     block->body, block->alloc_buffers, block->annotations);
  ScopeRewriter rw;
  rw.old_realize = realize;
  rw.new_realize = ir::block_realize(realize->iter_values, realize->predicate, updated);
  rw.anchor = loop;
  rw.before = nest;
  commit_scope(state, block_sref.get(), rw, {{updated.get(), block}});
  return state.get_sref(init_block.get());
}

namespace {

// One wording for a loop that is not a reduce-only loop, wherever rfactor finds one.
ScheduleError not_reduction_loop(const ir::ForNode* rf_loop, const std::string& detail) {
  return ScheduleError(
      ErrorCode::kSpatialLoop,
      fmt::format("rfactor: loop '{}' is not a reduction loop{}", rf_loop->loop_var.name(), detail),
      rf_loop);
}

// rfactor splits one reduction: the block whose reduce iterators the loop binds.
Result<SRef> reducing_block(const ScheduleState& state, const SRef& loop_sref) {
  const ir::ForNode* rf_loop = loop_sref->as_for();
  const ir::VarNode* rf_var = rf_loop->loop_var.get();
  std::vector<SRef> users, reducing;  // other blocks may use the loop spatially
  for (const SRef& b : child_blocks(state, loop_sref.get())) {
    const ir::BlockRealizeNode* r = state.realize_of(b.get());
    bool uses = ir::uses_var(r->predicate, rf_var), reduces = false;
    for (size_t k = 0; k < r->iter_values.size(); ++k) {
      if (!ir::uses_var(r->iter_values[k], rf_var)) continue;
      uses = true;
      reduces |= b->as_block()->iter_vars[k].kind == ir::IterKind::kReduce;
    }
    if (uses) users.push_back(b);
    if (reduces) reducing.push_back(b);
  }
  if (reducing.empty()) {
    if (users.size() == 1)
      if (Status s = check_reduction_block(state, users[0].get()); !s) return s.error();
    return not_reduction_loop(rf_loop, "");
  }
  if (reducing.size() > 1)
    return ScheduleError(ErrorCode::kNotSingleChild,
                         fmt::format("rfactor: loop '{}' binds reduce iterators of {} blocks "
                                     "('{}', '{}', ...); rfactor needs exactly one",
                                     rf_loop->loop_var.name(), reducing.size(),
                                     reducing[0]->as_block()->name, reducing[1]->as_block()->name),
                         rf_loop);
  return reducing[0];
}

// The reduction rfactor splits, as its checks found it; the new blocks are built from it.
struct RfactorTarget {
  const ir::ForNode* rf_loop = nullptr;
  SRef block_sref;
  const ir::BlockNode* block = nullptr;
  const ir::BlockRealizeNode* realize = nullptr;
  std::vector<SRef> loops;  // the block's loops, outermost first
  size_t rf = 0;            // the rfactor loop's position in `loops`
  LoopUse use;
  ir::Reducer reducer{};
  size_t axis = 0;  // where the rfactor dimension goes in the partial-result buffer
};

// rfactor needs a serial reduce-only loop of constant range, in a nest of spatial or reduce loops.
Status check_rfactor_loops(const RfactorTarget& t) {
  const ir::ForNode* rf_loop = t.rf_loop;
  const std::string& rf_name = rf_loop->loop_var.name();
  if (t.use.spatial[t.rf])
    return not_reduction_loop(rf_loop, " (it also binds a spatial iterator)");
  for (size_t i = 0; i < t.loops.size(); ++i)
    if (t.use.spatial[i] && t.use.reduce[i])
      return ScheduleError(
          ErrorCode::kSpatialLoop,
          fmt::format("rfactor: loop '{}' binds both spatial and reduce iterators of block '{}'",
                      t.loops[i]->as_for()->loop_var.name(), t.block->name),
          t.loops[i]->stmt);
  if (auto e = check_no_unbound_loop(t.loops, t.use, 0, t.block, "rfactor")) return *e;
  if (rf_loop->for_kind != ir::ForKind::kSerial)
    return ScheduleError(ErrorCode::kInvalidLoopKind,
                         fmt::format("rfactor: loop '{}' is {}, not serial", rf_name,
                                     ir::for_kind_name(rf_loop->for_kind)),
                         rf_loop);
  if (!ir::as_const_int(rf_loop->min) || !ir::as_const_int(rf_loop->extent))
    return ScheduleError(ErrorCode::kNonConstantExtent,
                         fmt::format("rfactor: loop '{}' has a non-constant range", rf_name),
                         rf_loop);
  return ok_status();
}

// Where the rfactor dimension goes among the dimensions of `buffer` (negative counts from the end).
Result<size_t> factor_axis_position(const ir::Buffer& buffer, int factor_axis,
                                    const ir::ForNode* rf_loop) {
  int ndim = static_cast<int>(buffer->shape.size());
  if (factor_axis < -ndim - 1 || factor_axis > ndim)
    return ScheduleError(
        ErrorCode::kOutOfRange,
        fmt::format("rfactor: factor_axis {} is out of range [{}, {}] for the {}-d buffer '{}'",
                    factor_axis, -ndim - 1, ndim, ndim, buffer->name),
        rf_loop);
  return static_cast<size_t>(factor_axis < 0 ? factor_axis + ndim + 1 : factor_axis);
}

// A partial result per reduced element needs the element to depend on spatial iterators only.
Status check_spatial_store(const RfactorTarget& t) {
  for (const ir::Expr& idx : t.reducer.update->indices)
    for (const ir::IterVar& iv : t.block->iter_vars)
      if (iv.kind == ir::IterKind::kReduce && ir::uses_var(idx, iv.var.get()))
        return ScheduleError(
            ErrorCode::kNotReduction,
            fmt::format("rfactor: block '{}' stores at an index chosen by reduce iterator '{}'",
                        t.block->name, iv.var.name()),
            t.block);
  return ok_status();
}

// The write-back nest goes after the outermost loop of the block; nothing else in that nest
// may touch the reduced buffer, which is complete only after the write-back.
Status check_untouched_until_write_back(const ScheduleState& state, const RfactorTarget& t) {
  const ir::Buffer& buffer = t.reducer.update->buffer;
  const ir::ForNode* top = t.loops[0]->as_for();
  for (const SRef& other : child_blocks(state, t.loops[0].get())) {
    if (other.get() == t.block_sref.get()) continue;
    const ir::BlockNode* o = other->as_block();
    auto touches = [&](const std::vector<ir::BufferRegion>& rs) {
      return std::any_of(rs.begin(), rs.end(),
                         [&](const ir::BufferRegion& r) { return r.buffer.same_as(buffer); });
    };
    if (touches(o->reads) || touches(o->writes))
      return ScheduleError(
          ErrorCode::kDependenceViolated,
          fmt::format(
              "rfactor: block '{}' under loop '{}' accesses '{}' before the reduction completes",
              o->name, top->loop_var.name(), buffer->name),
          o);
  }
  return ok_status();
}

// The reduction under `loop_sref` and its nest, or why rfactor cannot split it there.
Result<RfactorTarget> rfactor_target(const ScheduleState& state, const SRef& loop_sref,
                                     int factor_axis) {
  RfactorTarget t;
  t.rf_loop = loop_sref->as_for();
  TYCHE_TRY_ASSIGN(block_sref, reducing_block(state, loop_sref));
  t.block_sref = block_sref;
  t.block = block_sref->as_block();
  if (Status s = check_reduction_block(state, block_sref.get()); !s) return s.error();
  t.realize = state.realize_of(block_sref.get());
  t.loops = get_loops(state, block_sref);
  t.rf =
      static_cast<size_t>(std::find_if(t.loops.begin(), t.loops.end(),
                                       [&](const SRef& l) { return l.get() == loop_sref.get(); }) -
                          t.loops.begin());
  t.use = classify_loops(t.loops, t.block, t.realize);
  if (Status s = check_rfactor_loops(t); !s) return s.error();
  std::string why;
  std::optional<ir::Reducer> reducer = ir::match_reducer(t.block, &why);
  if (!reducer)
    return ScheduleError(ErrorCode::kNotReduction,
                         fmt::format("rfactor: block '{}' {}", t.block->name, why), t.block);
  t.reducer = *reducer;
  TYCHE_TRY_ASSIGN(axis, factor_axis_position(reducer->update->buffer, factor_axis, t.rf_loop));
  t.axis = axis;
  if (Status s = check_spatial_store(t); !s) return s.error();
  if (Status s = check_untouched_until_write_back(state, t); !s) return s.error();
  return t;
}

// The rfactor block's iterators and bindings, and what each old iterator becomes in its body.
struct RfactorIters {
  ir::Var rf_iter;  // the rfactor loop's own iterator, spatial in the rfactor block
  std::vector<ir::IterVar> iters;
  std::vector<ir::Expr> values;
  std::unordered_map<const ir::VarNode*, ir::Expr> iter_map;  // old iter var -> its replacement
};

// Loops of reduce iterators that the rfactor loop touches become reduce iterators of their own.
// So do the loops of any reduce iterator sharing a loop with those: after split(fuse(i, j), [1,
// 49]) the binding of j, (o*49 + r) % 7, simplifies to r % 7 and no longer names the rfactor
// loop o; kept as an iterator of its own beside the new one of loop r, it would make r drive two
// iterators, and a later compute_at would give each a loop of its own (summing 7 times over).
Result<RfactorIters> rfactor_iters(const RfactorTarget& t) {
  const ir::ForNode* rf_loop = t.rf_loop;
  const ir::VarNode* rf_var = rf_loop->loop_var.get();
  std::unordered_map<const ir::VarNode*, size_t> loop_index;
  for (size_t i = 0; i < t.loops.size(); ++i) loop_index[t.loops[i]->as_for()->loop_var.get()] = i;
  std::unordered_map<const ir::VarNode*, ir::Expr> loop_iter;  // loop var -> new iter var
  std::vector<bool> expand(t.block->iter_vars.size(), false);
  std::unordered_set<const ir::VarNode*> expanded_loops = {rf_var};
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < t.block->iter_vars.size(); ++k) {
      if (expand[k] || t.block->iter_vars[k].kind == ir::IterKind::kSpatial) continue;
      std::vector<const ir::VarNode*> vars = vars_of(t.realize->iter_values[k]);
      if (std::none_of(vars.begin(), vars.end(),
                       [&](const ir::VarNode* v) { return expanded_loops.count(v) > 0; }))
        continue;
      expand[k] = changed = true;
      expanded_loops.insert(vars.begin(), vars.end());
    }
  }
  RfactorIters out{ir::Var("v" + rf_loop->loop_var.name(), rf_loop->loop_var.dtype()), {}, {}, {}};
  out.iters.push_back(
      ir::IterVar{out.rf_iter, ir::Range(rf_loop->min, rf_loop->extent), ir::IterKind::kSpatial});
  out.values.push_back(rf_loop->loop_var);
  loop_iter[rf_var] = out.rf_iter;
  for (size_t k = 0; k < t.block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = t.block->iter_vars[k];
    const ir::Expr& binding = t.realize->iter_values[k];
    if (!expand[k]) {
      ir::Var nv(iv.var.name(), iv.var.dtype());
      out.iters.push_back(ir::IterVar{nv, iv.dom, iv.kind});
      out.values.push_back(binding);
      out.iter_map[iv.var.get()] = nv;
      continue;
    }
    for (const ir::VarNode* v : vars_of(binding)) {
      auto li = loop_index.find(v);
      if (li == loop_index.end())
        return ScheduleError(
            ErrorCode::kUnsupported,
            fmt::format("rfactor: the binding of '{}' uses '{}', which is not a loop of block '{}'",
                        iv.var.name(), v->name, t.block->name),
            t.block);
      if (loop_iter.count(v)) continue;
      const ir::ForNode* l = t.loops[li->second]->as_for();
      if (!ir::as_const_int(l->min) || !ir::as_const_int(l->extent))
        return ScheduleError(
            ErrorCode::kNonConstantExtent,
            fmt::format("rfactor: loop '{}' has a non-constant range", l->loop_var.name()), l);
      ir::Var nv("v" + l->loop_var.name(), l->loop_var.dtype());
      out.iters.push_back(ir::IterVar{nv, ir::Range(l->min, l->extent), ir::IterKind::kReduce});
      out.values.push_back(l->loop_var);
      loop_iter[v] = nv;
    }
    out.iter_map[iv.var.get()] = ir::substitute(binding, var_map(loop_iter));
  }
  return out;
}

// Every partial result the write-back reads must be initialized: where the reduce loops of
// the rfactor block are at their minimum, the predicate must hold for every rfactor index.
Status check_partials_initialized(const RfactorTarget& t) {
  arith::Analyzer analyzer;
  for (const SRef& l : t.loops)
    analyzer.bind(l->as_for()->loop_var, ir::Range(l->as_for()->min, l->as_for()->extent));
  std::unordered_map<const ir::VarNode*, ir::Expr> at_min;
  VarSet reduce_side = {t.rf_loop->loop_var.get()};
  for (size_t i = 0; i < t.loops.size(); ++i) {
    if (!t.use.reduce[i] || i == t.rf) continue;
    at_min[t.loops[i]->as_for()->loop_var.get()] = t.loops[i]->as_for()->min;
    reduce_side.insert(t.loops[i]->as_for()->loop_var.get());
  }
  std::vector<ir::Expr> conjuncts;
  split_conjuncts(t.realize->predicate, &conjuncts);
  for (const ir::Expr& c : conjuncts) {
    if (!ir::uses_any(c, reduce_side)) continue;
    if (!analyzer.can_prove(ir::substitute(c, var_map(at_min))))
      return ScheduleError(ErrorCode::kUnsupported,
                           fmt::format("rfactor: predicate '{}' of block '{}' may leave partial "
                                       "results of loop '{}' uninitialized",
                                       ir::to_string(c), t.block->name, t.rf_loop->loop_var.name()),
                           t.block);
  }
  return ok_status();
}

// The partial-result buffer: the reduced buffer with the rfactor dimension inserted at `axis`.
ir::Buffer make_rf_buffer(const RfactorTarget& t) {
  const ir::Buffer& buffer = t.reducer.update->buffer;
  std::vector<ir::Expr> rf_shape = buffer->shape;
  rf_shape.insert(rf_shape.begin() + static_cast<std::ptrdiff_t>(t.axis), t.rf_loop->extent);
  return ir::make_buffer(buffer->name + "_rf", buffer->dtype, rf_shape, buffer->scope);
}

// The original reduction, accumulating one partial result per value of the rfactor loop.
ir::Block make_rf_block(const ScheduleState& state, const RfactorTarget& t, const RfactorIters& its,
                        const ir::Buffer& rf_buffer, arith::Analyzer* simp) {
  const ir::Reducer& reducer = t.reducer;
  std::vector<ir::Expr> out_index;
  for (const ir::Expr& e : reducer.update->indices)
    out_index.push_back(ir::substitute(e, var_map(its.iter_map)));
  std::vector<ir::Expr> rf_index = out_index;
  rf_index.insert(rf_index.begin() + static_cast<std::ptrdiff_t>(t.axis),
                  simp->simplify(its.rf_iter - t.rf_loop->min));
  ir::Expr rf_value = ir::substitute(reducer.value, var_map(its.iter_map));
  ir::Stmt rf_init = ir::buffer_store(rf_buffer, reducer.init->value, rf_index);
  ir::Stmt rf_update = ir::buffer_store(
      rf_buffer, ir::make_binary(reducer.combine, ir::buffer_load(rf_buffer, rf_index), rf_value),
      rf_index);
  return with_inferred_regions(ir::make_block(unique_block_name(state, t.block->name + "_rf"),
                                              its.iters, {}, {}, rf_init, rf_update, {},
                                              t.block->annotations));
}

// The write-back: the original block's name and output, reducing the partial results.
struct WriteBack {
  ir::Block block;
  ir::Stmt nest;
};

// The write-back block: a fresh nest over the spatial iterators, then the rfactor axis.
WriteBack make_write_back(const RfactorTarget& t, const ir::Buffer& rf_buffer,
                          arith::Analyzer* simp) {
  const ir::BlockNode* block = t.block;
  const ir::ForNode* rf_loop = t.rf_loop;
  const ir::Reducer& reducer = t.reducer;
  const ir::Buffer& buffer = reducer.update->buffer;
  std::vector<ir::IterVar> wb_iters;
  std::vector<ir::Expr> wb_values;
  std::vector<ir::Var> wb_loops;
  std::vector<ir::Range> wb_ranges;
  std::unordered_map<const ir::VarNode*, ir::Expr> wb_map;
  for (const ir::IterVar& iv : block->iter_vars) {
    if (iv.kind != ir::IterKind::kSpatial) continue;
    ir::Var nv(iv.var.name(), iv.var.dtype());
    std::string loop_name = iv.var.name().size() > 1 && iv.var.name()[0] == 'v'
                                ? iv.var.name().substr(1)
                                : iv.var.name();
    ir::Var lv(loop_name, iv.var.dtype());
    wb_iters.push_back(ir::IterVar{nv, iv.dom, ir::IterKind::kSpatial});
    wb_values.push_back(simp->simplify(lv + iv.dom.min));
    wb_loops.push_back(lv);
    wb_ranges.emplace_back(ir::make_int(0, iv.dom.extent.dtype()), iv.dom.extent);
    wb_map[iv.var.get()] = nv;
  }
  ir::Var wb_rf_iter("v" + rf_loop->loop_var.name(), rf_loop->loop_var.dtype());
  ir::Var wb_rf_loop(rf_loop->loop_var.name(), rf_loop->loop_var.dtype());
  ir::Expr zero = ir::make_int(0, rf_loop->loop_var.dtype());
  wb_iters.push_back(
      ir::IterVar{wb_rf_iter, ir::Range(zero, rf_loop->extent), ir::IterKind::kReduce});
  wb_values.push_back(wb_rf_loop);
  wb_loops.push_back(wb_rf_loop);
  wb_ranges.emplace_back(zero, rf_loop->extent);
  std::vector<ir::Expr> wb_index;
  for (const ir::Expr& e : reducer.update->indices)
    wb_index.push_back(ir::substitute(e, var_map(wb_map)));
  std::vector<ir::Expr> wb_rf_index = wb_index;
  wb_rf_index.insert(wb_rf_index.begin() + static_cast<std::ptrdiff_t>(t.axis), wb_rf_iter);
  ir::Stmt wb_init = ir::buffer_store(buffer, reducer.init->value, wb_index);
  ir::Stmt wb_update =
      ir::buffer_store(buffer,
                       ir::make_binary(reducer.combine, ir::buffer_load(buffer, wb_index),
                                       ir::buffer_load(rf_buffer, wb_rf_index)),
                       wb_index);
  ir::Block wb_block = with_inferred_regions(
      ir::make_block(block->name, wb_iters, {}, {}, wb_init, wb_update, {}, block->annotations));
  ir::Stmt wb_nest = ir::block_realize(wb_values, ir::make_bool(true), wb_block);
  for (size_t j = wb_loops.size(); j-- > 0;)
    wb_nest = ir::for_loop(wb_loops[j], wb_ranges[j].min, wb_ranges[j].extent, ir::ForKind::kSerial,
                           wb_nest);
  return WriteBack{wb_block, wb_nest};
}

}  // namespace

Result<SRef> rfactor(ScheduleState& state, const SRef& loop_sref, int factor_axis) {
  TYCHE_TRY_ASSIGN(t, rfactor_target(state, loop_sref, factor_axis));
  TYCHE_TRY_ASSIGN(its, rfactor_iters(t));
  if (Status s = check_partials_initialized(t); !s) return s.error();

  ir::Buffer rf_buffer = make_rf_buffer(t);
  arith::Analyzer simp;
  ir::Block rf_block = make_rf_block(state, t, its, rf_buffer, &simp);
  WriteBack wb = make_write_back(t, rf_buffer, &simp);
  ScopeRewriter rw;
  rw.old_realize = t.realize;
  rw.new_realize = ir::block_realize(its.values, t.realize->predicate, rf_block);
  rw.anchor = t.loops[0]->as_for();
  rw.after = wb.nest;
  commit_scope(state, t.block_sref.get(), rw, {{wb.block.get(), t.block}}, rf_buffer);
  return state.get_sref(rf_block.get());
}

// ---- instructions ----

namespace {

Result<BlockRV> apply_decompose_reduction(InstructionContext& ctx, BlockRV block, LoopRV loop) {
  TYCHE_TRY_ASSIGN(block_sref, ctx.sref(block));
  TYCHE_TRY_ASSIGN(loop_sref, ctx.sref(loop));
  TYCHE_TRY_ASSIGN(init, decompose_reduction(ctx.state(), block_sref, loop_sref));
  return ctx.issue_block(init);
}

Result<BlockRV> apply_rfactor(InstructionContext& ctx, LoopRV loop, int factor_axis) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  TYCHE_TRY_ASSIGN(rf_block, rfactor(ctx.state(), sref, factor_axis));
  return ctx.issue_block(rf_block);
}

}  // namespace

TYCHE_INSTRUCTION(decompose_reduction, apply_decompose_reduction, {{"block"}, {"loop"}})
TYCHE_INSTRUCTION(rfactor, apply_rfactor, {{"loop"}, {"factor_axis"}})

Result<BlockRV> Schedule::decompose_reduction(const BlockRV& block, const LoopRV& loop) {
  return decompose_reduction_kind()(*this, block, loop);
}
Result<BlockRV> Schedule::rfactor(const LoopRV& loop, int factor_axis) {
  return rfactor_kind()(*this, loop, factor_axis);
}

}  // namespace tyche::schedule
