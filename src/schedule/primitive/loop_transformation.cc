// split, fuse, reorder and add_unit_loop: loop-nest rewrites that only rename iteration spaces,
// so block bindings are substituted and simplified, and the blocks themselves are untouched.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {

namespace {

// Substitutes loop variables in block bindings and predicates below a loop, simplifying the
// results with the new loops' ranges; optionally conjoins `extra_predicate` onto every realize.
class BindingRewriter : public ir::StmtExprMutator {
 public:
  BindingRewriter(std::function<ir::Expr(const ir::Var&)> vmap, arith::Analyzer* analyzer,
                  ir::Expr extra_predicate)
      : vmap_(std::move(vmap)), analyzer_(analyzer), extra_(std::move(extra_predicate)) {}

 protected:
  ir::Stmt mutate_block_realize(const ir::BlockRealizeNode* n, const ir::Stmt& self) override {
    std::vector<ir::Expr> values;
    bool changed = false;
    for (const ir::Expr& v : n->iter_values) {
      ir::Expr s = analyzer_->simplify(ir::substitute(v, vmap_));
      changed |= !s.same_as(v);
      values.push_back(s);
    }
    ir::Expr pred = ir::substitute(n->predicate, vmap_);
    if (extra_.defined()) pred = pred && extra_;
    pred = analyzer_->simplify(pred);
    changed |= !pred.same_as(n->predicate);
    if (!changed) return self;
    return ir::block_realize(std::move(values), pred, n->block);
  }
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    analyzer_->bind(n->loop_var, ir::Range(n->min, n->extent));
    return StmtExprMutator::mutate_for(n, self);
  }
  ir::Expr mutate_expr(const ir::Expr& e) override { return ir::substitute(e, vmap_); }

 private:
  std::function<ir::Expr(const ir::Var&)> vmap_;
  arith::Analyzer* analyzer_;
  ir::Expr extra_;
};

std::optional<ScheduleError> check_blocks_not_opaque(const ir::Stmt& body,
                                                     const ir::Var& loop_var) {
  for (const ir::BlockRealizeNode* r : realizes_under(body)) {
    for (size_t i = 0; i < r->iter_values.size(); ++i) {
      if (r->block->iter_vars[i].kind != ir::IterKind::kOpaque) continue;
      if (ir::uses_var(r->iter_values[i], loop_var.get()))
        return ScheduleError(
            ErrorCode::kOpaqueBlock,
            fmt::format("block '{}' binds opaque iterator '{}' to loop '{}'", r->block->name,
                        r->block->iter_vars[i].var.name(), loop_var.name()),
            r->block.get());
    }
  }
  return std::nullopt;
}

// A loop driving both spatial and reduce iterators of one block: for a fixed output element its
// iterations do not form a product set, so the init-at-first-iteration rule needs these loops
// to keep their relative order.
bool is_mixed_loop(const ir::ForNode* loop) {
  for (const ir::BlockRealizeNode* r : realizes_under(loop->body)) {
    bool spatial = false, reduce = false;
    for (size_t i = 0; i < r->iter_values.size(); ++i) {
      if (!ir::uses_var(r->iter_values[i], loop->loop_var.get())) continue;
      (r->block->iter_vars[i].kind == ir::IterKind::kSpatial ? spatial : reduce) = true;
    }
    if (spatial && reduce) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<SRef>> split(ScheduleState& state, const SRef& loop_sref,
                                const std::vector<std::optional<int64_t>>& factors) {
  const ir::ForNode* loop = loop_sref->as_for();
  auto extent = ir::as_const_int(loop->extent);
  if (!extent)
    return ScheduleError(
        ErrorCode::kNonConstantExtent,
        fmt::format("cannot split loop '{}' of non-constant extent", loop->loop_var.name()), loop);
  if (factors.size() < 2)
    return ScheduleError(ErrorCode::kInvalidFactors,
                         fmt::format("split of '{}' needs at least 2 factors, got {}",
                                     loop->loop_var.name(), factors.size()),
                         loop);
  int64_t known = 1;
  int missing = -1;
  for (size_t i = 0; i < factors.size(); ++i) {
    if (!factors[i]) {
      if (missing >= 0)
        return ScheduleError(ErrorCode::kInvalidFactors,
                             "split: at most one factor may be inferred (None)", loop);
      missing = static_cast<int>(i);
    } else if (*factors[i] <= 0) {
      return ScheduleError(ErrorCode::kInvalidFactors,
                           fmt::format("split: factor {} is not positive", *factors[i]), loop);
    } else {
      known *= *factors[i];
      if (known > (int64_t{1} << 40))
        return ScheduleError(ErrorCode::kInvalidFactors, "split: factors are too large", loop);
    }
  }
  std::vector<int64_t> f;
  for (const auto& x : factors) f.push_back(x.value_or((*extent + known - 1) / known));
  int64_t product = std::accumulate(f.begin(), f.end(), int64_t{1}, std::multiplies<>());
  if (product < *extent)
    return ScheduleError(
        ErrorCode::kInvalidFactors,
        fmt::format("split factors [{}] (product {}) do not cover the extent {} of loop '{}'",
                    fmt::join(f, ", "), product, *extent, loop->loop_var.name()),
        loop);

  arith::Analyzer analyzer;
  std::vector<ir::Var> vars;
  ir::Expr fused = ir::make_int(0, loop->loop_var.dtype());
  for (size_t i = 0; i < f.size(); ++i) {
    vars.emplace_back(fmt::format("{}_{}", loop->loop_var.name(), i), loop->loop_var.dtype());
    analyzer.bind(vars.back(), ir::Range(ir::make_int(0, loop->loop_var.dtype()),
                                         ir::make_int(f[i], loop->loop_var.dtype())));
    fused = fused * ir::make_int(f[i], loop->loop_var.dtype()) + vars.back();
  }
  ir::Expr replacement = analyzer.simplify(fused + loop->min);
  ir::Expr predicate =
      product == *extent ? ir::Expr() : (fused < ir::make_int(*extent, loop->loop_var.dtype()));
  BindingRewriter rw(
      [&](const ir::Var& v) { return v.same_as(loop->loop_var) ? replacement : ir::Expr(); },
      &analyzer, predicate);
  ir::Stmt body = rw.mutate_stmt(loop->body);
  for (size_t i = f.size(); i-- > 0;) {
    body = ir::for_loop(vars[i], ir::make_int(0, loop->loop_var.dtype()),
                        ir::make_int(f[i], loop->loop_var.dtype()), ir::ForKind::kSerial, body);
  }
  const ir::StmtNode* outer = body.get();
  state.replace(loop_sref, body);
  std::vector<SRef> out;
  SRef s = state.get_sref(outer);
  for (size_t i = 0; i < f.size(); ++i) {
    out.push_back(s);
    if (i + 1 < f.size()) s = state.get_sref(s->as_for()->body.get());
  }
  return out;
}

Result<SRef> fuse(ScheduleState& state, const std::vector<SRef>& loops) {
  if (loops.empty())
    return ScheduleError(ErrorCode::kInvalidArgument, "fuse needs at least one loop");
  std::vector<const ir::ForNode*> fs;
  std::unordered_set<const ir::VarNode*> vars;
  for (size_t i = 0; i < loops.size(); ++i) {
    const ir::ForNode* l = loops[i]->as_for();
    if (i > 0 && fs.back()->body.get() != l)
      return ScheduleError(ErrorCode::kNotAdjacent,
                           fmt::format("fuse: loop '{}' is not the only child of loop '{}'",
                                       l->loop_var.name(), fs.back()->loop_var.name()),
                           l);
    if (!ir::as_const_int(l->extent))
      return ScheduleError(
          ErrorCode::kNonConstantExtent,
          fmt::format("fuse: loop '{}' has a non-constant extent", l->loop_var.name()), l);
    if (ir::uses_any(l->min, vars) || ir::uses_any(l->extent, vars))
      return ScheduleError(
          ErrorCode::kDependentLoop,
          fmt::format("fuse: the range of '{}' depends on an outer fused loop", l->loop_var.name()),
          l);
    if (auto e = check_blocks_not_opaque(l->body, l->loop_var)) return *e;
    vars.insert(l->loop_var.get());
    fs.push_back(l);
  }
  DataType t = fs[0]->loop_var.dtype();
  int64_t total = 1;
  std::string name;
  for (const ir::ForNode* l : fs) {
    total *= *ir::as_const_int(l->extent);
    name += l->loop_var.name() + "_";
  }
  ir::Var fused(name + "fused", t);
  arith::Analyzer analyzer;
  analyzer.bind(fused, ir::Range(ir::make_int(0, t), ir::make_int(total, t)));
  std::unordered_map<const ir::VarNode*, ir::Expr> repl;
  int64_t stride = 1;
  for (size_t i = fs.size(); i-- > 0;) {
    int64_t e = *ir::as_const_int(fs[i]->extent);
    ir::Expr v = ir::floordiv(fused, ir::make_int(stride, t));
    if (i > 0) v = ir::floormod(v, ir::make_int(e, t));
    repl[fs[i]->loop_var.get()] = analyzer.simplify(v + fs[i]->min);
    stride *= e;
  }
  BindingRewriter rw(
      [&](const ir::Var& v) {
        auto it = repl.find(v.get());
        return it == repl.end() ? ir::Expr() : it->second;
      },
      &analyzer, ir::Expr());
  ir::Stmt body = rw.mutate_stmt(fs.back()->body);
  ir::Stmt new_loop =
      ir::for_loop(fused, ir::make_int(0, t), ir::make_int(total, t), ir::ForKind::kSerial, body);
  state.replace(loops[0], new_loop);
  return state.get_sref(new_loop.get());
}

Status reorder(ScheduleState& state, const std::vector<SRef>& ordered) {
  if (ordered.empty()) return ok_status();
  std::unordered_set<const SRefNode*> given;
  for (const SRef& s : ordered)
    if (!given.insert(s.get()).second)
      return ScheduleError(
          ErrorCode::kDuplicateLoop,
          fmt::format("reorder: loop '{}' is given twice", s->as_for()->loop_var.name()), s->stmt);
  // The outermost and innermost given loops delimit the chain.
  const SRefNode* top = nullptr;
  const SRefNode* bottom = nullptr;
  for (const SRef& s : ordered) {
    int depth = static_cast<int>(ancestors(s.get()).size());
    if (!top || depth < static_cast<int>(ancestors(top).size())) top = s.get();
    if (!bottom || depth > static_cast<int>(ancestors(bottom).size())) bottom = s.get();
  }
  std::vector<SRefNode*> path = loop_path(top, bottom);
  if (path.empty())
    return ScheduleError(ErrorCode::kNotAChain, "reorder: the loops are not nested in one another",
                         bottom->stmt);
  for (const SRef& s : ordered)
    if (std::find(path.begin(), path.end(), s.get()) == path.end())
      return ScheduleError(ErrorCode::kNotAChain,
                           fmt::format("reorder: loop '{}' is not on the chain from '{}' to '{}'",
                                       s->as_for()->loop_var.name(), top->as_for()->loop_var.name(),
                                       bottom->as_for()->loop_var.name()),
                           s->stmt);
  for (size_t i = 0; i + 1 < path.size(); ++i)
    if (path[i]->as_for()->body.get() != path[i + 1]->stmt)
      return ScheduleError(
          ErrorCode::kNotAChain,
          fmt::format("reorder: loop '{}' has statements beside loop '{}'",
                      path[i]->as_for()->loop_var.name(), path[i + 1]->as_for()->loop_var.name()),
          path[i]->stmt);
  std::unordered_set<const ir::VarNode*> moving;
  for (const SRef& s : ordered) moving.insert(s->as_for()->loop_var.get());
  for (SRefNode* p : path) {
    const ir::ForNode* l = p->as_for();
    if (ir::uses_any(l->min, moving) || ir::uses_any(l->extent, moving))
      return ScheduleError(
          ErrorCode::kDependentLoop,
          fmt::format("reorder: the range of loop '{}' depends on a reordered loop",
                      l->loop_var.name()),
          l);
    if (moving.count(l->loop_var.get()))
      if (auto e = check_blocks_not_opaque(l->body, l->loop_var)) return *e;
  }
  // Positions of given loops along the chain receive the given loops in the requested order.
  std::vector<const ir::ForNode*> order;
  size_t next = 0;
  for (SRefNode* p : path)
    order.push_back(given.count(p) ? ordered[next++]->as_for() : p->as_for());
  std::vector<const ir::ForNode*> mixed_before, mixed_after;
  for (SRefNode* p : path)
    if (is_mixed_loop(p->as_for())) mixed_before.push_back(p->as_for());
  for (const ir::ForNode* l : order)
    if (std::find(mixed_before.begin(), mixed_before.end(), l) != mixed_before.end())
      mixed_after.push_back(l);
  if (mixed_before != mixed_after)
    return ScheduleError(
        ErrorCode::kInvalidLoopKind,
        fmt::format("reorder: loops '{}' and '{}' both drive spatial and reduction iterators; "
                    "swapping them "
                    "would run a reduction's init after some of its updates",
                    mixed_before[0]->loop_var.name(), mixed_before[1]->loop_var.name()),
        mixed_before[0]);
  ir::Stmt body = path.back()->as_for()->body;
  for (size_t i = order.size(); i-- > 0;) {
    const ir::ForNode* l = order[i];
    body = ir::for_loop(l->loop_var, l->min, l->extent, l->for_kind, body, l->thread_tag,
                        l->annotations);
  }
  state.replace(state.get_sref(path.front()->stmt), body);
  return ok_status();
}

Result<SRef> add_unit_loop(ScheduleState& state, const SRef& sref) {
  ir::Var u("u");
  if (sref->as_for()) {
    ir::Stmt loop = ir::for_loop(u, 0, 1, ir::ForKind::kSerial, state.stmt_of(sref.get()));
    state.replace(sref, loop);
    return state.get_sref(loop.get());
  }
  if (!sref->parent)
    return ScheduleError(ErrorCode::kUnsupported,
                         "add_unit_loop: the root block has no loop to add", sref->stmt);
  ir::Stmt realize = outer_stmt(state, sref.get());
  ir::Stmt loop = ir::for_loop(u, 0, 1, ir::ForKind::kSerial, realize);
  SRef parent = state.get_sref(sref->parent->stmt);
  state.replace(parent, replace_child(state.stmt_of(parent.get()), realize.get(), loop));
  return state.get_sref(loop.get());
}

// ---- instructions ----

namespace {

Result<std::vector<LoopRV>> apply_split(InstructionContext& ctx, LoopRV loop,
                                        std::vector<std::optional<ExprArg>> factors) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  std::vector<std::optional<int64_t>> values;
  for (const std::optional<ExprArg>& f : factors) {
    if (!f) {
      values.push_back(std::nullopt);
      continue;
    }
    TYCHE_TRY_ASSIGN(x, ctx.value(*f));
    values.push_back(x);
  }
  TYCHE_TRY_ASSIGN(loops, split(ctx.state(), sref, values));
  ctx.consume(loop);
  return ctx.issue_loops(loops);
}

Result<LoopRV> apply_fuse(InstructionContext& ctx, std::vector<LoopRV> loops) {
  TYCHE_TRY_ASSIGN(srefs, ctx.srefs(loops));
  TYCHE_TRY_ASSIGN(fused, fuse(ctx.state(), srefs));
  for (const LoopRV& l : loops) ctx.consume(l);
  return ctx.issue_loop(fused);
}

Result<Unit> apply_reorder(InstructionContext& ctx, std::vector<LoopRV> ordered_loops) {
  TYCHE_TRY_ASSIGN(srefs, ctx.srefs(ordered_loops));
  return reorder(ctx.state(), srefs);
}

Result<LoopRV> apply_add_unit_loop(InstructionContext& ctx, BlockOrLoopRV block_or_loop) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block_or_loop));
  TYCHE_TRY_ASSIGN(loop, add_unit_loop(ctx.state(), sref));
  return ctx.issue_loop(loop);
}

}  // namespace

TYCHE_INSTRUCTION(split, apply_split, {{"loop"}, {"factors"}})
TYCHE_INSTRUCTION(fuse, apply_fuse, {{"loops", true}})
TYCHE_INSTRUCTION(reorder, apply_reorder, {{"ordered_loops", true}})
TYCHE_INSTRUCTION(add_unit_loop, apply_add_unit_loop, {{"block_or_loop"}})

Result<std::vector<LoopRV>> Schedule::split(const LoopRV& loop,
                                            const std::vector<std::optional<ExprArg>>& factors) {
  return split_kind()(*this, loop, factors);
}
Result<LoopRV> Schedule::fuse(const std::vector<LoopRV>& loops) {
  return fuse_kind()(*this, loops);
}
Status Schedule::reorder(const std::vector<LoopRV>& ordered_loops) {
  return reorder_kind()(*this, ordered_loops);
}
Result<LoopRV> Schedule::add_unit_loop(const BlockRV& block) {
  return add_unit_loop_kind()(*this, block);
}
Result<LoopRV> Schedule::add_unit_loop(const LoopRV& loop) {
  return add_unit_loop_kind()(*this, loop);
}

}  // namespace tyche::schedule
