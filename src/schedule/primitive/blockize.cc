// blockize (TVM's semantics).
//
// blockize(loop): the loops from `loop` down to the single block under it become the body of a
// new outer block "<block>_o". Each binding of the inner block is divided into a part over the
// loops outside `loop` and a part over the loops inside it (TVM's subspace division, restricted
// to quasi-affine bindings that are linear across the boundary):
//     v = outer + inner,  inner in [0, e),  outer a multiple of e  =>  v = vo * e + vi
// vo becomes an iterator of the outer block (same kind as v), vi an iterator of the rewritten
// inner block; a binding without an inner part keeps only vo, one without an outer part only vi.
// The outer block's regions are the inner block's relaxed over the inner loops. As in TVM, when
// the outer block has reduce iterators the inner block's init moves to the outer block, as a
// block "<block>_init" looping over the inner spatial tile (which must be covered exactly).
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/linear.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/blockize.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

namespace {

using ir::Expr;
using ir::Stmt;
using ir::Var;

// Substitutes variables; records every rewritten nested block so its sref carries over.
class Rebinder : public ir::StmtExprMutator {
 public:
  Rebinder(const std::unordered_map<const ir::VarNode*, Expr>& vmap, BlockReuse* reuse)
      : vmap_(vmap), reuse_(reuse) {}

 protected:
  Expr mutate_var(const ir::VarNode* n, const Expr& self) override {
    auto it = vmap_.find(n);
    return it == vmap_.end() ? self : it->second;
  }
  Stmt mutate_block(const ir::BlockNode* n, const Stmt& self) override {
    Stmt out = StmtExprMutator::mutate_block(n, self);
    if (reuse_ && !out.same_as(self)) (*reuse_)[static_cast<const ir::BlockNode*>(out.get())] = n;
    return out;
  }

 private:
  const std::unordered_map<const ir::VarNode*, Expr>& vmap_;
  BlockReuse* reuse_;
};
std::string loop_name(const ir::ForNode* f) {
  return f->loop_var.name();
}

// Binds, outermost first, the loops and block iterators enclosing `sref`.
void bind_ancestors(const SRefNode* sref, arith::Analyzer* a) {
  for (SRefNode* p : ancestors(sref)) {
    if (auto* f = p->as_for())
      a->bind(f->loop_var, ir::Range(f->min, f->extent));
    else if (auto* b = p->as_block())
      for (const ir::IterVar& iv : b->iter_vars) a->bind(iv.var, iv.dom);
  }
}

// The inner part covers [0, extent) exactly once per value of its loops: a mixed-radix sum of
// distinct loop variables (min 0) with positive coefficients 1, e0, e0*e1, ... Records the
// loops it uses in `used`; false if one was already used by another iterator.
bool is_dense(const arith::LinearSum& s, int64_t extent,
              const std::unordered_map<const ir::VarNode*, int64_t>& loop_extent,
              std::unordered_set<const ir::VarNode*>* used) {
  if (s.constant != 0) return false;
  std::vector<std::pair<int64_t, const ir::VarNode*>> terms;
  for (const arith::LinearTerm& t : s.terms) {
    auto* v = t.atom.as<ir::VarNode>();
    if (!v || !loop_extent.count(v) || t.coeff <= 0) return false;
    terms.emplace_back(t.coeff, v);
  }
  std::sort(terms.begin(), terms.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  int64_t expected = 1;
  for (const auto& [coeff, v] : terms) {
    if (coeff != expected || !used->insert(v).second) return false;
    expected *= loop_extent.at(v);
  }
  return expected == extent;
}

// Rewrites floordiv/floormod of (outer + inner) where 0 <= inner < g and g divides every
// coefficient of the outer part, so that each division sees only one side of the boundary:
//   g | d:  (g*o + i) // d = o // (d/g),   (g*o + i) % d = (o % (d/g)) * g + i
//   d | g:  (g*o + i) // d = o * (g/d) + i // d,   (g*o + i) % d = i % d
// (what fuse followed by split produces, as TVM's iter-map subspace division handles).
class DivisionSeparator : public ir::StmtExprMutator {
 public:
  DivisionSeparator(const std::unordered_set<const ir::VarNode*>& inner, arith::Analyzer* a)
      : inner_(inner), a_(a) {}

 protected:
  Expr mutate_binary(const ir::BinaryNode* n, const Expr& self) override {
    Expr e = StmtExprMutator::mutate_binary(n, self);
    auto* b = e.as_binary();
    if (!b || (e.kind() != ir::ExprKind::kFloorDiv && e.kind() != ir::ExprKind::kFloorMod))
      return e;
    auto d = ir::as_const_int(b->b);
    if (!d || *d <= 0) return e;
    arith::LinearSum sum = arith::to_linear(a_->simplify(b->a));
    arith::LinearSum in(sum.dtype), out(sum.dtype, sum.constant);
    for (const arith::LinearTerm& t : sum.terms) {
      bool uses_in = ir::uses_any(t.atom, inner_);
      bool uses_out =
          ir::uses_var(t.atom, [&](const ir::VarNode* v) { return inner_.count(v) == 0; });
      if (uses_in && uses_out) return e;
      (uses_in ? in : out).add_term(t.atom, t.coeff);
    }
    if (in.is_const() || out.is_const()) return e;
    int64_t g = out.content();
    arith::ConstIntBound ib = a_->const_int_bound(arith::to_expr(in));
    if (g <= 0 || ib.min_value < 0 || ib.max_value >= g) return e;
    DataType t = e.dtype();
    arith::LinearSum o(out.dtype, out.constant / g);
    for (const arith::LinearTerm& term : out.terms) o.add_term(term.atom, term.coeff / g);
    Expr oe = arith::to_expr(o), ie = arith::to_expr(in);
    bool div = e.kind() == ir::ExprKind::kFloorDiv;
    if (*d % g == 0) {
      Expr k = ir::make_int(*d / g, t);
      return a_->simplify(div ? ir::floordiv(oe, k)
                              : ir::floormod(oe, k) * ir::make_int(g, t) + ie);
    }
    if (g % *d == 0) {
      Expr dd = ir::make_int(*d, t);
      return a_->simplify(div ? oe * ir::make_int(g / *d, t) + ir::floordiv(ie, dd)
                              : ir::floormod(ie, dd));
    }
    return e;
  }

 private:
  const std::unordered_set<const ir::VarNode*>& inner_;
  arith::Analyzer* a_;
};

// Divides the binding of `iv` into parts outside and inside the loops of `inner_loops`.
Result<IterSplit> split_binding(const ir::IterVar& iv, const Expr& binding,
                                const std::unordered_set<const ir::VarNode*>& inner_loops,
                                arith::Analyzer* a, const char* prim, const ir::BlockNode* block,
                                const ir::ForNode* loop) {
  IterSplit s;
  s.old = iv;
  Expr e = a->simplify(DivisionSeparator(inner_loops, a).mutate_expr(a->simplify(binding)));
  arith::LinearSum sum = arith::to_linear(e);
  arith::LinearSum in(sum.dtype), out(sum.dtype, sum.constant);
  for (const arith::LinearTerm& t : sum.terms) {
    bool uses_in = ir::uses_any(t.atom, inner_loops);
    bool uses_out =
        ir::uses_var(t.atom, [&](const ir::VarNode* v) { return inner_loops.count(v) == 0; });
    if (uses_in && uses_out)
      return ScheduleError(
          ErrorCode::kNotSeparable,
          fmt::format("{}: the binding {} of iterator '{}' of block '{}' mixes loops inside and "
                      "outside loop '{}'",
                      prim, ir::to_string(binding), iv.var.name(), block->name, loop_name(loop)),
          loop);
    (uses_in ? in : out).add_term(t.atom, t.coeff);
  }
  DataType t = iv.var.dtype();
  if (in.is_const()) {  // only loops outside: the iterator moves to the outer block unchanged
    s.has_outer = true;
    s.outer_iv = ir::IterVar{Var(iv.var.name() + "_o", t), iv.dom, iv.kind};
    s.outer_value = e;
    s.replacement = s.outer_iv.var;
    return s;
  }
  arith::ConstIntBound b = a->const_int_bound(arith::to_expr(in));
  if (b.min_value == arith::ConstIntBound::kNegInf || b.max_value == arith::ConstIntBound::kPosInf)
    return ScheduleError(
        ErrorCode::kNotSeparable,
        fmt::format("{}: the part of binding {} of iterator '{}' inside loop '{}' is unbounded",
                    prim, ir::to_string(binding), iv.var.name(), loop_name(loop)),
        loop);
  s.has_inner = true;
  s.extent = b.max_value - b.min_value + 1;
  in.constant = -b.min_value;
  out.constant += b.min_value;
  s.inner_sum = in;
  s.inner_iv = ir::IterVar{Var(iv.var.name() + "_i", t),
                           ir::Range(ir::make_int(0, t), ir::make_int(s.extent, t)), iv.kind};
  s.inner_value = a->simplify(arith::to_expr(in));
  if (out.is_const()) {  // only loops inside (plus a constant)
    s.replacement =
        out.constant == 0 ? Expr(s.inner_iv.var) : ir::make_int(out.constant, t) + s.inner_iv.var;
    return s;
  }
  if (out.content() % s.extent != 0)
    return ScheduleError(ErrorCode::kNotSeparable,
                         fmt::format("{}: the binding {} of iterator '{}' of block '{}' does not "
                                     "divide into a part outside loop "
                                     "'{}' and a part of extent {} inside it",
                                     prim, ir::to_string(binding), iv.var.name(), block->name,
                                     loop_name(loop), s.extent),
                         loop);
  arith::LinearSum q(out.dtype, out.constant / s.extent);
  for (const arith::LinearTerm& term : out.terms) q.add_term(term.atom, term.coeff / s.extent);
  Expr outer_value = a->simplify(arith::to_expr(q));
  arith::ConstIntBound ob = a->const_int_bound(outer_value);
  if (ob.min_value == arith::ConstIntBound::kNegInf ||
      ob.max_value == arith::ConstIntBound::kPosInf)
    return ScheduleError(
        ErrorCode::kNotSeparable,
        fmt::format("{}: the part of binding {} of iterator '{}' outside loop '{}' is unbounded",
                    prim, ir::to_string(binding), iv.var.name(), loop_name(loop)),
        loop);
  s.has_outer = true;
  s.outer_iv = ir::IterVar{
      Var(iv.var.name() + "_o", t),
      ir::Range(ir::make_int(ob.min_value, t), ir::make_int(ob.max_value - ob.min_value + 1, t)),
      iv.kind};
  s.outer_value = outer_value;
  s.replacement = s.outer_iv.var * ir::make_int(s.extent, t) + s.inner_iv.var;
  return s;
}

std::vector<ir::BufferRegion> rebind_regions(const std::vector<ir::BufferRegion>& regions,
                                             Rebinder* r) {
  std::vector<ir::BufferRegion> out;
  for (const ir::BufferRegion& br : regions) out.push_back(r->mutate_region(br));
  return out;
}

// A block with regions inferred from its body.
ir::Block block_with_regions(const std::string& name, std::vector<ir::IterVar> ivs, Stmt init,
                             Stmt body, std::vector<ir::Buffer> allocs = {},
                             ir::Annotations ann = {}) {
  ir::Block b = ir::make_block(name, ivs, {}, {}, init, body, allocs, ann);
  arith::Analyzer a;
  arith::AccessRegions regions = arith::infer_access_regions(*b, &a);
  return ir::make_block(name, std::move(ivs), regions.reads, regions.writes, std::move(init),
                        std::move(body), std::move(allocs), std::move(ann));
}

// The init of the outer block: the inner block's init over the inner spatial tile.
Result<Stmt> make_outer_init(const std::vector<IterSplit>& splits, const BlockizePlan& plan,
                             BlockNames* names, const char* prim, const ir::ForNode* loop) {
  const ir::BlockNode* block = plan.old_inner;
  auto refuse = [&](const std::string& why) {
    return ScheduleError(ErrorCode::kNotSeparable,
                         fmt::format("{}: cannot move the init of block '{}' out of loop '{}': {}",
                                     prim, block->name, loop_name(loop), why),
                         loop);
  };
  // The tile the init covers must be exactly what the inner loops compute, each element first
  // reached with the inner reduce iterators at their minimum.
  std::unordered_map<const ir::VarNode*, int64_t> loop_extent;
  for (const ir::ForNode* f : plan.loops) {
    if (!ir::is_const_int(f->min, 0))
      return refuse(fmt::format("loop '{}' does not start at 0", loop_name(f)));
    loop_extent[f->loop_var.get()] = *ir::as_const_int(f->extent);
  }
  std::unordered_set<const ir::VarNode*> used;
  for (const IterSplit& s : splits)
    if (s.has_inner && !is_dense(s.inner_sum, s.extent, loop_extent, &used))
      return refuse(
          fmt::format("the inner binding {} of iterator '{}' does not cover its range exactly once",
                      ir::to_string(s.inner_value), s.old.var.name()));
  for (const ir::ForNode* f : plan.loops)
    if (loop_extent.at(f->loop_var.get()) > 1 && !used.count(f->loop_var.get()))
      return refuse(fmt::format("loop '{}' is not used by any binding", loop_name(f)));

  std::unordered_map<const ir::VarNode*, Expr> vmap;
  std::vector<ir::IterVar> ivs;
  std::vector<Var> loop_vars;
  std::vector<Expr> values;
  for (const IterSplit& s : splits) {
    if (s.old.kind == ir::IterKind::kReduce || !ir::stmt_uses_var(block->init, s.old.var.get()))
      continue;
    if (!s.has_inner) {
      vmap[s.old.var.get()] = s.replacement;
      continue;
    }
    DataType t = s.old.var.dtype();
    Var v(s.old.var.name() + "_init", t);
    Var l(s.inner_sum.terms.size() == 1
              ? s.inner_sum.terms[0].atom.as<ir::VarNode>()->name + "_init"
              : fmt::format("ax{}_init", ivs.size()),
          t);
    ivs.push_back(ir::IterVar{v, s.inner_iv.dom, ir::IterKind::kSpatial});
    loop_vars.push_back(l);
    values.push_back(l);
    Expr base = s.has_outer ? s.outer_iv.var * ir::make_int(s.extent, t) + v : Expr(v);
    vmap[s.old.var.get()] = base;
  }
  Rebinder r(vmap, nullptr);
  Stmt body = r.mutate_stmt(block->init);
  ir::Block init_block = block_with_regions(names->fresh(block->name + "_init"), ivs, Stmt(), body);
  Stmt out = ir::block_realize(values, ir::make_bool(true), init_block);
  for (size_t i = ivs.size(); i-- > 0;)
    out = ir::for_loop(loop_vars[i], ir::make_int(0, loop_vars[i].dtype()), ivs[i].dom.extent,
                       ir::ForKind::kSerial, out);
  return out;
}

}  // namespace

// Plans blockize(loop) without touching the state.
Result<BlockizePlan> plan_blockize(const ScheduleState& state, const SRefNode* loop_sref,
                                   const char* prim) {
  const ir::ForNode* loop = loop_sref->as_for();
  BlockizePlan plan;
  Stmt s = state.stmt_of(loop_sref);
  while (auto* f = s.as<ir::ForNode>()) {
    plan.loops.push_back(f);
    s = f->body;
  }
  auto* realize = s.as<ir::BlockRealizeNode>();
  if (!realize)
    return ScheduleError(
        ErrorCode::kNotSingleChild,
        fmt::format("{}: loop '{}' must hold a chain of loops around a single block", prim,
                    loop_name(loop)),
        loop);
  const ir::BlockNode* block = realize->block.get();
  plan.old_inner = block;
  for (const ir::ForNode* f : plan.loops)
    if (!ir::as_const_int(f->min) || !ir::as_const_int(f->extent))
      return ScheduleError(ErrorCode::kNonConstantExtent,
                           fmt::format("{}: loop '{}' under '{}' has a non-constant range", prim,
                                       loop_name(f), loop_name(loop)),
                           f);
  if (!ir::is_true(realize->predicate))
    return ScheduleError(
        ErrorCode::kUnsupported,
        fmt::format(
            "{}: block '{}' has a predicate ({}); blockize of predicated blocks is not supported",
            prim, block->name, ir::to_string(realize->predicate)),
        block);
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind == ir::IterKind::kOpaque)
      return ScheduleError(
          ErrorCode::kOpaqueBlock,
          fmt::format("{}: block '{}' has opaque iterator '{}'", prim, block->name, iv.var.name()),
          block);
    if (!is_quasi_affine(realize->iter_values[k]))
      return ScheduleError(
          ErrorCode::kOpaqueBlock,
          fmt::format("{}: the binding {} of iterator '{}' of block '{}' is not quasi-affine", prim,
                      ir::to_string(realize->iter_values[k]), iv.var.name(), block->name),
          block);
  }

  arith::Analyzer a;
  bind_ancestors(loop_sref, &a);
  std::unordered_set<const ir::VarNode*> inner_loops;
  for (const ir::ForNode* f : plan.loops) {
    a.bind(f->loop_var, ir::Range(f->min, f->extent));
    inner_loops.insert(f->loop_var.get());
  }
  bool outer_reduces = false;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    TYCHE_TRY_ASSIGN(
        split, split_binding(iv, realize->iter_values[k], inner_loops, &a, prim, block, loop));
    // An init runs when the reduce iterators are at their minimum; keep that point where it is.
    if (block->init.defined() && iv.kind == ir::IterKind::kReduce) {
      arith::ConstIntBound b = a.const_int_bound(realize->iter_values[k]);
      auto dmin = ir::as_const_int(iv.dom.min);
      if (!dmin || b.min_value != *dmin)
        return ScheduleError(ErrorCode::kNotSeparable,
                             fmt::format("{}: the binding of reduce iterator '{}' of block '{}' "
                                         "does not start at its domain minimum",
                                         prim, iv.var.name(), block->name),
                             block);
    }
    outer_reduces |= split.has_outer && iv.kind == ir::IterKind::kReduce;
    plan.splits.push_back(std::move(split));
  }

  BlockNames names(state.func());
  Stmt outer_init;
  if (block->init.defined() && outer_reduces) {
    for (const IterSplit& sp : plan.splits) {
      if (sp.old.kind == ir::IterKind::kReduce && ir::stmt_uses_var(block->init, sp.old.var.get()))
        return ScheduleError(ErrorCode::kNotSeparable,
                             fmt::format("{}: the init of block '{}' uses reduce iterator '{}'",
                                         prim, block->name, sp.old.var.name()),
                             block);
    }
    TYCHE_TRY_ASSIGN(init, make_outer_init(plan.splits, plan, &names, prim, loop));
    outer_init = init;
  }

  // The rewritten inner block: its iterators are the inner parts.
  std::unordered_map<const ir::VarNode*, Expr> vmap;
  std::vector<ir::IterVar> inner_ivs, outer_ivs;
  std::vector<Expr> inner_values, outer_values;
  for (const IterSplit& sp : plan.splits) {
    vmap[sp.old.var.get()] = sp.replacement;
    if (sp.has_inner) {
      inner_ivs.push_back(sp.inner_iv);
      inner_values.push_back(sp.inner_value);
    }
    if (sp.has_outer) {
      outer_ivs.push_back(sp.outer_iv);
      outer_values.push_back(sp.outer_value);
    }
  }
  Rebinder r(vmap, &plan.reuse);
  Stmt inner_init =
      block->init.defined() && !outer_init.defined() ? r.mutate_stmt(block->init) : Stmt();
  Stmt inner_body = r.mutate_stmt(block->body);
  plan.inner = ir::make_block(block->name, inner_ivs, rebind_regions(block->reads, &r),
                              rebind_regions(block->writes, &r), inner_init, inner_body,
                              block->alloc_buffers, block->annotations);
  plan.reuse[plan.inner.get()] = block;
  plan.inner_realize = ir::block_realize(inner_values, ir::make_bool(true), plan.inner);
  Stmt subtree = plan.inner_realize;
  for (size_t i = plan.loops.size(); i-- > 0;) {
    const ir::ForNode* f = plan.loops[i];
    subtree = ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, subtree, f->thread_tag,
                           f->annotations);
  }
  plan.outer = block_with_regions(names.fresh(block->name + "_o"), outer_ivs, outer_init, subtree);
  plan.outer_realize = ir::block_realize(outer_values, ir::make_bool(true), plan.outer);
  return plan;
}

Status check_loop(const SRef& loop, const char* prim) {
  if (!loop || !loop->valid())
    return ScheduleError(ErrorCode::kStaleHandle, fmt::format("{}: the loop is stale", prim));
  if (!loop->as_for())
    return ScheduleError(ErrorCode::kWrongHandleKind, fmt::format("{} needs a loop", prim),
                         loop->stmt);
  return ok_status();
}

Result<SRef> blockize(ScheduleState& state, const SRef& loop) {
  if (Status st = check_loop(loop, "blockize"); !st) return st.error();
  TYCHE_TRY_ASSIGN(plan, plan_blockize(state, loop.get(), "blockize"));
  const ir::StmtNode* outer = plan.outer.get();
  state.replace(loop, plan.outer_realize, plan.reuse);
  return state.get_sref(outer);
}

// ---- instructions ----

namespace {

Result<BlockRV> apply_blockize(InstructionContext& ctx, LoopRV loop) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  TYCHE_TRY_ASSIGN(block, blockize(ctx.state(), sref));
  return ctx.issue_block(block);
}

}  // namespace

TYCHE_INSTRUCTION(blockize, apply_blockize, {{"loop"}})

Result<BlockRV> Schedule::blockize(const LoopRV& loop) {
  return blockize_kind()(*this, loop);
}

}  // namespace tyche::schedule
