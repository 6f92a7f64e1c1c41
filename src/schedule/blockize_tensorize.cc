// blockize and tensorize (TVM's semantics).
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
//
// tensorize(loop, intrin): plans the blockize, matches the inner loops and block against the
// intrinsic's description (modulo renaming of variables and buffers; desc buffers bind regions
// of the program's buffers), and only then replaces the outer block's body by the intrinsic's
// implementation with its buffers rebound to those regions. Every refusal happens before the
// state is touched.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "ir/var_use.h"
#include "arith/analyzer.h"
#include "arith/linear.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "schedule/analysis.h"
#include "schedule/primitive.h"
#include "schedule/schedule.h"
#include "schedule/tensor_intrin.h"
#include "schedule/instruction_impl.h"

namespace tyche::schedule {

namespace {

using ir::Expr;
using ir::Stmt;
using ir::Var;

// Block names already used in the function, and fresh ones derived from a hint.
class BlockNames {
 public:
  explicit BlockNames(const ir::PrimFunc& f) {
    ir::post_order_visit(f->body, [&](const Stmt& s) {
      if (auto* b = s.as<ir::BlockNode>()) used_.insert(b->name);
    });
  }
  std::string fresh(const std::string& hint) {
    std::string name = hint;
    for (int i = 1; used_.count(name); ++i) name = fmt::format("{}_{}", hint, i);
    used_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

// Substitutes variables; records every rewritten nested block so its sref carries over.
class Rebinder : public ir::StmtExprMutator {
 public:
  Rebinder(const std::unordered_map<const ir::VarNode*, Expr>& vmap, BlockReuse* reuse) : vmap_(vmap), reuse_(reuse) {}

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

// One iterator of the inner block after division: old = outer_part * extent + inner.
struct IterSplit {
  ir::IterVar old;
  bool has_outer = false, has_inner = false;
  ir::IterVar outer_iv, inner_iv;
  Expr outer_value, inner_value;
  int64_t extent = 1;             // of the inner part
  arith::LinearSum inner_sum{kInt32};  // inner part, for the coverage check of a moved init
  Expr replacement;               // what `old.var` becomes inside the outer block
};

struct BlockizePlan {
  std::vector<const ir::ForNode*> loops;  // `loop` and the loops under it, outermost first
  const ir::BlockNode* old_inner = nullptr;
  ir::Block inner;                        // the rewritten inner block
  Stmt inner_realize;
  std::vector<IterSplit> splits;
  ir::Block outer;
  Stmt outer_realize;
  BlockReuse reuse;  // rewritten blocks -> the blocks they continue
};

std::string loop_name(const ir::ForNode* f) { return f->loop_var.name(); }

// Binds, outermost first, the loops and block iterators enclosing `sref`.
void bind_ancestors(const SRefNode* sref, arith::Analyzer* a) {
  for (SRefNode* p : ancestors(sref)) {
    if (auto* f = p->as_for()) a->bind(f->loop_var, ir::Range(f->min, f->extent));
    else if (auto* b = p->as_block())
      for (const ir::IterVar& iv : b->iter_vars) a->bind(iv.var, iv.dom);
  }
}

// The inner part covers [0, extent) exactly once per value of its loops: a mixed-radix sum of
// distinct loop variables (min 0) with positive coefficients 1, e0, e0*e1, ... Records the
// loops it uses in `used`; false if one was already used by another iterator.
bool is_dense(const arith::LinearSum& s, int64_t extent, const std::unordered_map<const ir::VarNode*, int64_t>& loop_extent,
              std::unordered_set<const ir::VarNode*>* used) {
  if (s.constant != 0) return false;
  std::vector<std::pair<int64_t, const ir::VarNode*>> terms;
  for (const arith::LinearTerm& t : s.terms) {
    auto* v = t.atom.as<ir::VarNode>();
    if (!v || !loop_extent.count(v) || t.coeff <= 0) return false;
    terms.emplace_back(t.coeff, v);
  }
  std::sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
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
  DivisionSeparator(const std::unordered_set<const ir::VarNode*>& inner, arith::Analyzer* a) : inner_(inner), a_(a) {}

 protected:
  Expr mutate_binary(const ir::BinaryNode* n, const Expr& self) override {
    Expr e = StmtExprMutator::mutate_binary(n, self);
    auto* b = e.as_binary();
    if (!b || (e.kind() != ir::ExprKind::kFloorDiv && e.kind() != ir::ExprKind::kFloorMod)) return e;
    auto d = ir::as_const_int(b->b);
    if (!d || *d <= 0) return e;
    arith::LinearSum sum = arith::to_linear(a_->simplify(b->a));
    arith::LinearSum in(sum.dtype), out(sum.dtype, sum.constant);
    for (const arith::LinearTerm& t : sum.terms) {
      bool uses_in = ir::uses_any(t.atom, inner_);
      bool uses_out = ir::uses_var(t.atom, [&](const ir::VarNode* v) { return inner_.count(v) == 0; });
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
      return a_->simplify(div ? ir::floordiv(oe, k) : ir::floormod(oe, k) * ir::make_int(g, t) + ie);
    }
    if (g % *d == 0) {
      Expr dd = ir::make_int(*d, t);
      return a_->simplify(div ? oe * ir::make_int(g / *d, t) + ir::floordiv(ie, dd) : ir::floormod(ie, dd));
    }
    return e;
  }

 private:
  const std::unordered_set<const ir::VarNode*>& inner_;
  arith::Analyzer* a_;
};

// Divides the binding of `iv` into parts outside and inside the loops of `inner_loops`.
Result<IterSplit> split_binding(const ir::IterVar& iv, const Expr& binding, const std::unordered_set<const ir::VarNode*>& inner_loops,
                                arith::Analyzer* a, const char* prim, const ir::BlockNode* block, const ir::ForNode* loop) {
  IterSplit s;
  s.old = iv;
  Expr e = a->simplify(DivisionSeparator(inner_loops, a).mutate_expr(a->simplify(binding)));
  arith::LinearSum sum = arith::to_linear(e);
  arith::LinearSum in(sum.dtype), out(sum.dtype, sum.constant);
  for (const arith::LinearTerm& t : sum.terms) {
    bool uses_in = ir::uses_any(t.atom, inner_loops);
    bool uses_out = ir::uses_var(t.atom, [&](const ir::VarNode* v) { return inner_loops.count(v) == 0; });
    if (uses_in && uses_out)
      return ScheduleError(ErrorCode::kNotSeparable,
                           fmt::format("{}: the binding {} of iterator '{}' of block '{}' mixes loops inside and outside loop '{}'",
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
    return ScheduleError(ErrorCode::kNotSeparable,
                         fmt::format("{}: the part of binding {} of iterator '{}' inside loop '{}' is unbounded", prim,
                                     ir::to_string(binding), iv.var.name(), loop_name(loop)),
                         loop);
  s.has_inner = true;
  s.extent = b.max_value - b.min_value + 1;
  in.constant = -b.min_value;
  out.constant += b.min_value;
  s.inner_sum = in;
  s.inner_iv = ir::IterVar{Var(iv.var.name() + "_i", t), ir::Range(ir::make_int(0, t), ir::make_int(s.extent, t)), iv.kind};
  s.inner_value = a->simplify(arith::to_expr(in));
  if (out.is_const()) {  // only loops inside (plus a constant)
    s.replacement = out.constant == 0 ? Expr(s.inner_iv.var) : ir::make_int(out.constant, t) + s.inner_iv.var;
    return s;
  }
  if (out.content() % s.extent != 0)
    return ScheduleError(ErrorCode::kNotSeparable,
                         fmt::format("{}: the binding {} of iterator '{}' of block '{}' does not divide into a part outside loop "
                                     "'{}' and a part of extent {} inside it",
                                     prim, ir::to_string(binding), iv.var.name(), block->name, loop_name(loop), s.extent),
                         loop);
  arith::LinearSum q(out.dtype, out.constant / s.extent);
  for (const arith::LinearTerm& term : out.terms) q.add_term(term.atom, term.coeff / s.extent);
  Expr outer_value = a->simplify(arith::to_expr(q));
  arith::ConstIntBound ob = a->const_int_bound(outer_value);
  if (ob.min_value == arith::ConstIntBound::kNegInf || ob.max_value == arith::ConstIntBound::kPosInf)
    return ScheduleError(ErrorCode::kNotSeparable,
                         fmt::format("{}: the part of binding {} of iterator '{}' outside loop '{}' is unbounded", prim,
                                     ir::to_string(binding), iv.var.name(), loop_name(loop)),
                         loop);
  s.has_outer = true;
  s.outer_iv = ir::IterVar{Var(iv.var.name() + "_o", t),
                           ir::Range(ir::make_int(ob.min_value, t), ir::make_int(ob.max_value - ob.min_value + 1, t)), iv.kind};
  s.outer_value = outer_value;
  s.replacement = s.outer_iv.var * ir::make_int(s.extent, t) + s.inner_iv.var;
  return s;
}

std::vector<ir::BufferRegion> rebind_regions(const std::vector<ir::BufferRegion>& regions, Rebinder* r) {
  std::vector<ir::BufferRegion> out;
  for (const ir::BufferRegion& br : regions) out.push_back(r->mutate_region(br));
  return out;
}

// A block with regions inferred from its body.
ir::Block block_with_regions(const std::string& name, std::vector<ir::IterVar> ivs, Stmt init, Stmt body,
                             std::vector<ir::Buffer> allocs = {}, ir::Annotations ann = {}) {
  ir::Block b = ir::make_block(name, ivs, {}, {}, init, body, allocs, ann);
  arith::Analyzer a;
  arith::AccessRegions regions = arith::infer_access_regions(*b, &a);
  return ir::make_block(name, std::move(ivs), regions.reads, regions.writes, std::move(init), std::move(body),
                        std::move(allocs), std::move(ann));
}

// The init of the outer block: the inner block's init over the inner spatial tile.
Result<Stmt> make_outer_init(const std::vector<IterSplit>& splits, const BlockizePlan& plan, BlockNames* names,
                             const char* prim, const ir::ForNode* loop) {
  const ir::BlockNode* block = plan.old_inner;
  auto refuse = [&](const std::string& why) {
    return ScheduleError(ErrorCode::kNotSeparable,
                         fmt::format("{}: cannot move the init of block '{}' out of loop '{}': {}", prim, block->name,
                                     loop_name(loop), why),
                         loop);
  };
  // The tile the init covers must be exactly what the inner loops compute, each element first
  // reached with the inner reduce iterators at their minimum.
  std::unordered_map<const ir::VarNode*, int64_t> loop_extent;
  for (const ir::ForNode* f : plan.loops) {
    if (!ir::is_const_int(f->min, 0)) return refuse(fmt::format("loop '{}' does not start at 0", loop_name(f)));
    loop_extent[f->loop_var.get()] = *ir::as_const_int(f->extent);
  }
  std::unordered_set<const ir::VarNode*> used;
  for (const IterSplit& s : splits)
    if (s.has_inner && !is_dense(s.inner_sum, s.extent, loop_extent, &used))
      return refuse(fmt::format("the inner binding {} of iterator '{}' does not cover its range exactly once",
                                ir::to_string(s.inner_value), s.old.var.name()));
  for (const ir::ForNode* f : plan.loops)
    if (loop_extent.at(f->loop_var.get()) > 1 && !used.count(f->loop_var.get()))
      return refuse(fmt::format("loop '{}' is not used by any binding", loop_name(f)));

  std::unordered_map<const ir::VarNode*, Expr> vmap;
  std::vector<ir::IterVar> ivs;
  std::vector<Var> loop_vars;
  std::vector<Expr> values;
  for (const IterSplit& s : splits) {
    if (s.old.kind == ir::IterKind::kReduce || !ir::stmt_uses_var(block->init, s.old.var.get())) continue;
    if (!s.has_inner) {
      vmap[s.old.var.get()] = s.replacement;
      continue;
    }
    DataType t = s.old.var.dtype();
    Var v(s.old.var.name() + "_init", t);
    Var l(s.inner_sum.terms.size() == 1 ? s.inner_sum.terms[0].atom.as<ir::VarNode>()->name + "_init"
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
    out = ir::for_loop(loop_vars[i], ir::make_int(0, loop_vars[i].dtype()), ivs[i].dom.extent, ir::ForKind::kSerial, out);
  return out;
}

// Plans blockize(loop) without touching the state.
Result<BlockizePlan> plan_blockize(const ScheduleState& state, const SRefNode* loop_sref, const char* prim) {
  const ir::ForNode* loop = loop_sref->as_for();
  BlockizePlan plan;
  Stmt s = state.stmt_of(loop_sref);
  while (auto* f = s.as<ir::ForNode>()) {
    plan.loops.push_back(f);
    s = f->body;
  }
  auto* realize = s.as<ir::BlockRealizeNode>();
  if (!realize)
    return ScheduleError(ErrorCode::kNotSingleChild,
                         fmt::format("{}: loop '{}' must hold a chain of loops around a single block", prim, loop_name(loop)), loop);
  const ir::BlockNode* block = realize->block.get();
  plan.old_inner = block;
  for (const ir::ForNode* f : plan.loops)
    if (!ir::as_const_int(f->min) || !ir::as_const_int(f->extent))
      return ScheduleError(ErrorCode::kNonConstantExtent,
                           fmt::format("{}: loop '{}' under '{}' has a non-constant range", prim, loop_name(f), loop_name(loop)), f);
  if (!ir::is_true(realize->predicate))
    return ScheduleError(ErrorCode::kUnsupported,
                         fmt::format("{}: block '{}' has a predicate ({}); blockize of predicated blocks is not supported", prim,
                                     block->name, ir::to_string(realize->predicate)),
                         block);
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind == ir::IterKind::kOpaque)
      return ScheduleError(ErrorCode::kOpaqueBlock,
                           fmt::format("{}: block '{}' has opaque iterator '{}'", prim, block->name, iv.var.name()), block);
    if (!is_quasi_affine(realize->iter_values[k]))
      return ScheduleError(ErrorCode::kOpaqueBlock,
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
    TYCHE_TRY_ASSIGN(split, split_binding(iv, realize->iter_values[k], inner_loops, &a, prim, block, loop));
    // An init runs when the reduce iterators are at their minimum; keep that point where it is.
    if (block->init.defined() && iv.kind == ir::IterKind::kReduce) {
      arith::ConstIntBound b = a.const_int_bound(realize->iter_values[k]);
      auto dmin = ir::as_const_int(iv.dom.min);
      if (!dmin || b.min_value != *dmin)
        return ScheduleError(ErrorCode::kNotSeparable,
                             fmt::format("{}: the binding of reduce iterator '{}' of block '{}' does not start at its domain minimum",
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
                             fmt::format("{}: the init of block '{}' uses reduce iterator '{}'", prim, block->name, sp.old.var.name()),
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
  Stmt inner_init = block->init.defined() && !outer_init.defined() ? r.mutate_stmt(block->init) : Stmt();
  Stmt inner_body = r.mutate_stmt(block->body);
  plan.inner = ir::make_block(block->name, inner_ivs, rebind_regions(block->reads, &r), rebind_regions(block->writes, &r),
                              inner_init, inner_body, block->alloc_buffers, block->annotations);
  plan.reuse[plan.inner.get()] = block;
  plan.inner_realize = ir::block_realize(inner_values, ir::make_bool(true), plan.inner);
  Stmt subtree = plan.inner_realize;
  for (size_t i = plan.loops.size(); i-- > 0;) {
    const ir::ForNode* f = plan.loops[i];
    subtree = ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, subtree, f->thread_tag, f->annotations);
  }
  plan.outer = block_with_regions(names.fresh(block->name + "_o"), outer_ivs, outer_init, subtree);
  plan.outer_realize = ir::block_realize(outer_values, ir::make_bool(true), plan.outer);
  return plan;
}

// ---- tensorize ----

// Where a desc (or impl) buffer lies in the program: `buffer` at `offsets`, whose first `lead`
// dimensions have extent 1 and are not dimensions of the intrinsic's buffer.
struct BufferBinding {
  ir::Buffer buffer;
  std::vector<Expr> offsets;
  size_t lead = 0;
};

// Matches the planned inner loops and block against an intrinsic's description.
class IntrinMatcher {
 public:
  explicit IntrinMatcher(const BlockizePlan& plan) : plan_(plan) {
    for (const IterSplit& s : plan.splits)
      if (s.has_outer) a_.bind(s.outer_iv.var, s.outer_iv.dom);
  }

  // Empty on a match, else what differs.
  std::string match(const ir::PrimFunc& desc) {
    auto* droot = desc->body.as<ir::BlockRealizeNode>();
    Stmt ds = droot->block->body;
    std::vector<const ir::ForNode*> dloops;
    while (auto* f = ds.as<ir::ForNode>()) {
      dloops.push_back(f);
      ds = f->body;
    }
    auto* drealize = ds.as<ir::BlockRealizeNode>();
    if (!drealize) return "the intrinsic's description is not a loop nest around one block";
    if (dloops.size() != plan_.loops.size())
      return fmt::format("the loop nest has {} loops, the intrinsic's has {}", plan_.loops.size(), dloops.size());
    for (size_t i = 0; i < dloops.size(); ++i) {
      const ir::ForNode* p = plan_.loops[i];
      const ir::ForNode* d = dloops[i];
      auto dext = ir::as_const_int(d->extent), dmin = ir::as_const_int(d->min);
      if (!dext || !dmin || *dext != *ir::as_const_int(p->extent) || *dmin != *ir::as_const_int(p->min))
        return fmt::format("loop '{}' has range [{}, {}), the intrinsic's loop '{}' has [{}, {} + {})", p->loop_var.name(),
                           ir::to_string(p->min), *ir::as_const_int(p->min) + *ir::as_const_int(p->extent), d->loop_var.name(),
                           ir::to_string(d->min), ir::to_string(d->min), ir::to_string(d->extent));
      vars_[d->loop_var.get()] = p->loop_var;
      a_.bind(p->loop_var, ir::Range(p->min, p->extent));
    }
    const ir::BlockNode* pb = plan_.inner.get();
    const ir::BlockNode* db = drealize->block.get();
    auto* prealize = plan_.inner_realize.as<ir::BlockRealizeNode>();
    if (pb->iter_vars.size() != db->iter_vars.size())
      return fmt::format("block '{}' has {} iterators inside the loop, the intrinsic's block has {}", pb->name,
                         pb->iter_vars.size(), db->iter_vars.size());
    for (size_t k = 0; k < pb->iter_vars.size(); ++k) {
      const ir::IterVar& p = pb->iter_vars[k];
      const ir::IterVar& d = db->iter_vars[k];
      if (p.kind != d.kind)
        return fmt::format("iterator {} of block '{}' is {}, the intrinsic's is {}", k, pb->name, ir::iter_kind_name(p.kind),
                           ir::iter_kind_name(d.kind));
      if (!prove_equal(p.dom.min, d.dom.min) || !prove_equal(p.dom.extent, d.dom.extent))
        return fmt::format("iterator {} of block '{}' has extent {}, the intrinsic's has {}", k, pb->name,
                           ir::to_string(p.dom.extent), ir::to_string(d.dom.extent));
      if (!prove_equal(prealize->iter_values[k], d_translate(drealize->iter_values[k])))
        return fmt::format("iterator {} of block '{}' is bound to {}, the intrinsic's to {}", k, pb->name,
                           ir::to_string(prealize->iter_values[k]), ir::to_string(drealize->iter_values[k]));
      vars_[d.var.get()] = p.var;
      a_.bind(p.var, p.dom);
    }
    if (!ir::is_true(drealize->predicate)) return "the intrinsic's block has a predicate";
    if (pb->init.defined() != db->init.defined())
      return pb->init.defined() ? fmt::format("block '{}' keeps its init inside the loop (the reduction does not extend outside "
                                              "it), the intrinsic's block has none",
                                              pb->name)
                                : "the intrinsic's block has an init, the program's block has none";
    if (pb->init.defined() && !match_stmt(pb->init, db->init)) return why_;
    if (!match_stmt(pb->body, db->body)) return why_;
    for (const ir::Buffer& b : desc->params)
      if (!buffers_.count(b.get())) return fmt::format("the intrinsic's buffer '{}' is not accessed", b->name);
    return "";
  }

  // desc param i -> where it lies in the program (after a successful match).
  const BufferBinding& binding(const ir::Buffer& desc_param) const { return buffers_.at(desc_param.get()); }

 private:
  bool fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return false;
  }
  bool prove_equal(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return false;
    if (a.dtype() != b.dtype()) return a_.can_prove_equal(a_.simplify(ir::cast(kInt64, a)), a_.simplify(ir::cast(kInt64, b)));
    return a_.can_prove_equal(a, b);
  }
  // A desc expression in program variables; undefined if it uses a variable without a match.
  Expr d_translate(const Expr& e) {
    bool unmatched = false;
    Expr out = ir::substitute(e, [&](const Var& v) -> Expr {
      auto it = vars_.find(v.get());
      if (it == vars_.end()) {
        unmatched = true;
        return Expr();
      }
      return it->second;
    });
    return unmatched ? Expr() : out;
  }

  bool bind_buffer(const ir::Buffer& p, const ir::Buffer& d) {
    if (auto it = buffers_.find(d.get()); it != buffers_.end()) {
      if (it->second.buffer.same_as(p)) return true;
      return fail(fmt::format("the intrinsic's buffer '{}' stands for both '{}' and '{}'", d->name, it->second.buffer->name, p->name));
    }
    for (const auto& [dn, b] : buffers_)
      if (b.buffer.same_as(p))
        return fail(fmt::format("buffer '{}' stands for both '{}' and '{}' of the intrinsic", p->name, dn->name, d->name));
    if (p->dtype != d->dtype)
      return fail(fmt::format("buffer '{}' is {}, the intrinsic's '{}' is {}", p->name, p->dtype.str(), d->name, d->dtype.str()));
    const ir::BufferRegion* region = nullptr;
    for (const auto* list : {&plan_.outer->writes, &plan_.outer->reads})
      for (const ir::BufferRegion& r : *list)
        if (!region && r.buffer.same_as(p)) region = &r;
    if (!region) return fail(fmt::format("buffer '{}' has no region in the outer block", p->name));
    std::vector<int64_t> shape = ir::const_shape(d);
    auto describe = [&] {
      std::vector<std::string> dims;
      for (const ir::Range& r : region->region) dims.push_back(fmt::format("{}:+{}", ir::to_string(r.min), ir::to_string(r.extent)));
      return fmt::format("the region {}[{}] does not fit the intrinsic's buffer '{}' of shape ({})", p->name, fmt::join(dims, ", "),
                         d->name, fmt::join(shape, ", "));
    };
    if (region->region.size() < shape.size()) return fail(describe());
    BufferBinding b{p, {}, region->region.size() - shape.size()};
    for (size_t i = 0; i < region->region.size(); ++i) {
      int64_t want = i < b.lead ? 1 : shape[i - b.lead];
      if (!ir::is_const_int(region->region[i].extent, want)) return fail(describe());
      b.offsets.push_back(region->region[i].min);
    }
    buffers_[d.get()] = std::move(b);
    return true;
  }

  bool match_access(const ir::Buffer& p, const std::vector<Expr>& pidx, const ir::Buffer& d, const std::vector<Expr>& didx) {
    if (!bind_buffer(p, d)) return false;
    const BufferBinding& b = buffers_.at(d.get());
    if (pidx.size() != b.offsets.size() || didx.size() + b.lead != pidx.size())
      return fail(fmt::format("buffer '{}' is accessed with {} indices, the intrinsic's '{}' with {}", p->name, pidx.size(), d->name,
                              didx.size()));
    for (size_t i = 0; i < pidx.size(); ++i) {
      Expr want = b.offsets[i];
      if (i >= b.lead) {
        Expr t = d_translate(didx[i - b.lead]);
        if (!t.defined()) return fail(fmt::format("an index of '{}' in the intrinsic uses an unknown variable", d->name));
        want = want + t;
      }
      if (!prove_equal(pidx[i], want))
        return fail(fmt::format("index {} of '{}' is {}, the intrinsic's access to '{}' needs {}", i, p->name,
                                ir::to_string(pidx[i]), d->name, ir::to_string(want)));
    }
    return true;
  }

  bool match_expr(const Expr& p, const Expr& d) {
    auto differ = [&] { return fail(fmt::format("{} does not match the intrinsic's {}", ir::to_string(p), ir::to_string(d))); };
    if (p.kind() != d.kind() || p.dtype() != d.dtype()) return differ();
    switch (p.kind()) {
      case ir::ExprKind::kIntImm: return p.as<ir::IntImmNode>()->value == d.as<ir::IntImmNode>()->value || differ();
      case ir::ExprKind::kFloatImm: return p.as<ir::FloatImmNode>()->value == d.as<ir::FloatImmNode>()->value || differ();
      case ir::ExprKind::kVar: {
        auto it = vars_.find(d.as<ir::VarNode>());
        return (it != vars_.end() && it->second.same_as(p)) || differ();
      }
      case ir::ExprKind::kNot: return match_expr(p.as<ir::NotNode>()->a, d.as<ir::NotNode>()->a);
      case ir::ExprKind::kCast: return match_expr(p.as<ir::CastNode>()->value, d.as<ir::CastNode>()->value);
      case ir::ExprKind::kSelect: {
        auto *x = p.as<ir::SelectNode>(), *y = d.as<ir::SelectNode>();
        return match_expr(x->condition, y->condition) && match_expr(x->true_value, y->true_value) &&
               match_expr(x->false_value, y->false_value);
      }
      case ir::ExprKind::kCall: {
        auto *x = p.as<ir::CallNode>(), *y = d.as<ir::CallNode>();
        if (x->op != y->op || x->args.size() != y->args.size()) return differ();
        for (size_t i = 0; i < x->args.size(); ++i)
          if (!match_expr(x->args[i], y->args[i])) return false;
        return true;
      }
      case ir::ExprKind::kBufferLoad: {
        auto *x = p.as<ir::BufferLoadNode>(), *y = d.as<ir::BufferLoadNode>();
        return match_access(x->buffer, x->indices, y->buffer, y->indices);
      }
      default:
        if (auto* x = p.as_binary()) return match_expr(x->a, d.as_binary()->a) && match_expr(x->b, d.as_binary()->b);
        return fail(fmt::format("{} is not supported in a tensorized computation", ir::to_string(p)));
    }
  }

  bool match_stmt(const Stmt& p, const Stmt& d) {
    if (p.kind() != d.kind())
      return fail(fmt::format("statement '{}' does not match the intrinsic's '{}'", first_line(p), first_line(d)));
    switch (p.kind()) {
      case ir::StmtKind::kBufferStore: {
        auto *x = p.as<ir::BufferStoreNode>(), *y = d.as<ir::BufferStoreNode>();
        return match_access(x->buffer, x->indices, y->buffer, y->indices) && match_expr(x->value, y->value);
      }
      case ir::StmtKind::kSeqStmt: {
        auto *x = p.as<ir::SeqStmtNode>(), *y = d.as<ir::SeqStmtNode>();
        if (x->seq.size() != y->seq.size())
          return fail(fmt::format("{} statements do not match the intrinsic's {}", x->seq.size(), y->seq.size()));
        for (size_t i = 0; i < x->seq.size(); ++i)
          if (!match_stmt(x->seq[i], y->seq[i])) return false;
        return true;
      }
      case ir::StmtKind::kIfThenElse: {
        auto *x = p.as<ir::IfThenElseNode>(), *y = d.as<ir::IfThenElseNode>();
        if (x->else_case.defined() != y->else_case.defined()) return fail("an if/else does not match the intrinsic's");
        return match_expr(x->condition, y->condition) && match_stmt(x->then_case, y->then_case) &&
               (!x->else_case.defined() || match_stmt(x->else_case, y->else_case));
      }
      case ir::StmtKind::kEvaluate: return match_expr(p.as<ir::EvaluateNode>()->value, d.as<ir::EvaluateNode>()->value);
      default: return fail(fmt::format("statement '{}' is not supported in a tensorized computation", first_line(p)));
    }
  }

  static std::string first_line(const Stmt& s) {
    std::string text = ir::to_string(s);
    size_t a = text.find_first_not_of(' ');
    size_t b = text.find('\n', a);
    return text.substr(a == std::string::npos ? 0 : a, b == std::string::npos ? std::string::npos : b - a);
  }

  const BlockizePlan& plan_;
  arith::Analyzer a_;
  std::unordered_map<const ir::VarNode*, Var> vars_;  // desc variable -> program variable
  std::unordered_map<const ir::BufferNode*, BufferBinding> buffers_;
  std::string why_;
};

// The impl body with its params rebound into the program and fresh variables, buffers and block
// names (an intrinsic may be used many times in one program).
class ImplRewriter : public ir::StmtExprMutator {
 public:
  ImplRewriter(std::unordered_map<const ir::BufferNode*, BufferBinding> params, BlockNames* names)
      : params_(std::move(params)), names_(names) {}

  ir::Buffer clone_alloc(const ir::Buffer& b) {
    ir::Buffer c = ir::with_name(b, b->name);
    allocs_[b.get()] = c;
    return c;
  }

 protected:
  Expr mutate_var(const ir::VarNode* n, const Expr& self) override {
    auto it = vars_.find(n);
    return it == vars_.end() ? self : it->second;
  }
  Var fresh(const Var& v) {
    Var f(v.name(), v.dtype());
    vars_[v.get()] = f;
    return f;
  }
  std::vector<Expr> map_indices(const ir::Buffer& b, std::vector<Expr> idx) {
    auto it = params_.find(b.get());
    if (it == params_.end()) return idx;
    const BufferBinding& bb = it->second;
    std::vector<Expr> out;
    for (size_t i = 0; i < bb.offsets.size(); ++i)
      out.push_back(i < bb.lead ? bb.offsets[i] : a_.simplify(bb.offsets[i] + idx[i - bb.lead]));
    return out;
  }
  ir::Buffer map_buffer(const ir::Buffer& b) {
    if (auto it = params_.find(b.get()); it != params_.end()) return it->second.buffer;
    if (auto it = allocs_.find(b.get()); it != allocs_.end()) return it->second;
    return b;
  }
  ir::BufferRegion map_region(const ir::BufferRegion& r) {
    ir::BufferRegion m = mutate_region(r);
    auto it = params_.find(r.buffer.get());
    if (it == params_.end()) return ir::BufferRegion(map_buffer(r.buffer), m.region);
    const BufferBinding& bb = it->second;
    std::vector<ir::Range> out;
    for (size_t i = 0; i < bb.offsets.size(); ++i) {
      if (i < bb.lead) out.emplace_back(bb.offsets[i], ir::make_int(1, bb.offsets[i].dtype()));
      else out.emplace_back(a_.simplify(bb.offsets[i] + m.region[i - bb.lead].min), m.region[i - bb.lead].extent);
    }
    return ir::BufferRegion(bb.buffer, std::move(out));
  }
  Expr mutate_buffer_load(const ir::BufferLoadNode* n, const Expr&) override {
    std::vector<Expr> idx;
    mutate_exprs(n->indices, &idx);
    return ir::buffer_load(map_buffer(n->buffer), map_indices(n->buffer, std::move(idx)));
  }
  Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const Stmt&) override {
    std::vector<Expr> idx;
    mutate_exprs(n->indices, &idx);
    return ir::buffer_store(map_buffer(n->buffer), mutate_expr(n->value), map_indices(n->buffer, std::move(idx)));
  }
  Stmt mutate_for(const ir::ForNode* n, const Stmt&) override {
    Expr mn = mutate_expr(n->min), ext = mutate_expr(n->extent);
    Var v = fresh(n->loop_var);
    return ir::for_loop(v, mn, ext, n->for_kind, mutate_stmt(n->body), n->thread_tag, n->annotations);
  }
  Expr mutate_let(const ir::LetNode* n, const Expr&) override {
    Expr value = mutate_expr(n->value);
    Var v = fresh(n->var);
    return ir::let(v, value, mutate_expr(n->body));
  }
  Stmt mutate_block(const ir::BlockNode* n, const Stmt&) override {
    std::vector<ir::IterVar> ivs;
    for (const ir::IterVar& iv : n->iter_vars) {
      ir::Range dom = mutate_range(iv.dom);
      ivs.push_back(ir::IterVar{fresh(iv.var), dom, iv.kind});
    }
    std::vector<ir::Buffer> allocs;
    for (const ir::Buffer& b : n->alloc_buffers) allocs.push_back(clone_alloc(b));
    std::vector<ir::BufferRegion> reads, writes;
    for (const ir::BufferRegion& r : n->reads) reads.push_back(map_region(r));
    for (const ir::BufferRegion& r : n->writes) writes.push_back(map_region(r));
    Stmt init = n->init.defined() ? mutate_stmt(n->init) : Stmt();
    return ir::make_block(names_->fresh(n->name), std::move(ivs), std::move(reads), std::move(writes), init,
                          mutate_stmt(n->body), std::move(allocs), n->annotations);
  }

 private:
  std::unordered_map<const ir::BufferNode*, BufferBinding> params_;
  BlockNames* names_;
  std::unordered_map<const ir::VarNode*, Expr> vars_;
  std::unordered_map<const ir::BufferNode*, ir::Buffer> allocs_;
  arith::Analyzer a_;
};

Status check_loop(const SRef& loop, const char* prim) {
  if (!loop || !loop->valid()) return ScheduleError(ErrorCode::kStaleHandle, fmt::format("{}: the loop is stale", prim));
  if (!loop->as_for()) return ScheduleError(ErrorCode::kWrongHandleKind, fmt::format("{} needs a loop", prim), loop->stmt);
  return ok_status();
}

}  // namespace

Result<SRef> blockize(ScheduleState& state, const SRef& loop) {
  if (Status st = check_loop(loop, "blockize"); !st) return st.error();
  TYCHE_TRY_ASSIGN(plan, plan_blockize(state, loop.get(), "blockize"));
  const ir::StmtNode* outer = plan.outer.get();
  state.replace(loop, plan.outer_realize, plan.reuse);
  return state.get_sref(outer);
}

Status tensorize(ScheduleState& state, const SRef& loop, const std::string& intrin_name) {
  if (Status st = check_loop(loop, "tensorize"); !st) return st.error();
  const TensorIntrin* intrin = find_tensor_intrin(intrin_name);
  if (!intrin)
    return ScheduleError(ErrorCode::kUnknownName,
                         fmt::format("tensorize: unknown tensor intrinsic '{}' (known: {})", intrin_name,
                                     fmt::join(tensor_intrin_names(), ", ")),
                         loop->stmt);
  TYCHE_TRY_ASSIGN(plan, plan_blockize(state, loop.get(), "tensorize"));
  IntrinMatcher matcher(plan);
  std::string why = matcher.match(intrin->desc);
  if (!why.empty())
    return ScheduleError(ErrorCode::kIntrinsicMismatch,
                         fmt::format("tensorize: the computation under loop '{}' does not match intrinsic '{}': {}",
                                     loop->as_for()->loop_var.name(), intrin_name, why),
                         loop->stmt);
  // impl param i stands for desc param i.
  std::unordered_map<const ir::BufferNode*, BufferBinding> params;
  for (size_t i = 0; i < intrin->impl->params.size(); ++i)
    params[intrin->impl->params[i].get()] = matcher.binding(intrin->desc->params[i]);
  BlockNames names(state.func());
  ImplRewriter rewriter(std::move(params), &names);
  const ir::BlockNode* impl_root = intrin->impl->body.as<ir::BlockRealizeNode>()->block.get();
  std::vector<ir::Buffer> allocs = plan.outer->alloc_buffers;
  for (const ir::Buffer& b : impl_root->alloc_buffers) allocs.push_back(rewriter.clone_alloc(b));
  Stmt body = rewriter.mutate_stmt(impl_root->body);
  const ir::BlockNode* o = plan.outer.get();
  ir::Block outer = ir::make_block(o->name, o->iter_vars, o->reads, o->writes, o->init, body, allocs, o->annotations);
  auto* realize = plan.outer_realize.as<ir::BlockRealizeNode>();
  state.replace(loop, ir::block_realize(realize->iter_values, realize->predicate, outer));
  return ok_status();
}

// ---- instructions ----

namespace {

Result<BlockRV> apply_blockize(InstructionContext& ctx, LoopRV loop) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  TYCHE_TRY_ASSIGN(block, blockize(ctx.state(), sref));
  return ctx.issue(block);
}

Status apply_tensorize(InstructionContext& ctx, LoopRV loop, std::string tensor_intrin) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  return tensorize(ctx.state(), sref, tensor_intrin);
}

}  // namespace

TYCHE_INSTRUCTION(blockize, apply_blockize, {{"loop"}})
TYCHE_INSTRUCTION(tensorize, apply_tensorize, {{"loop"}, {"tensor_intrin"}})

Result<BlockRV> Schedule::blockize(const LoopRV& loop) { return blockize_kind()(*this, loop); }
Status Schedule::tensorize(const LoopRV& loop, const std::string& tensor_intrin) {
  return tensorize_kind()(*this, loop, tensor_intrin);
}

}  // namespace tyche::schedule
