#include "ir/functor.h"

#include "ir/op.h"

namespace tyche::ir {

void StmtExprVisitor::visit_expr(const Expr& e) {
#define TYCHE_IR_VISIT_CASE(name, Node, kind) \
  case ExprKind::kind:                        \
    return visit_##name(e.as<Node>());
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
      return visit_imm(e.get());
    case ExprKind::kVar:
      return visit_var(static_cast<const VarNode*>(e.get()));
      TYCHE_IR_EXPR_NODES(TYCHE_IR_VISIT_CASE)
    default:
      return visit_binary(static_cast<const BinaryNode*>(e.get()));
  }
#undef TYCHE_IR_VISIT_CASE
}

void StmtExprVisitor::visit_stmt(const Stmt& s) {
#define TYCHE_IR_VISIT_CASE(name, Node, kind) \
  case StmtKind::kind:                        \
    return visit_##name(s.as<Node>());
  switch (s.kind()) { TYCHE_IR_STMT_NODES(TYCHE_IR_VISIT_CASE) }
#undef TYCHE_IR_VISIT_CASE
}

void StmtExprVisitor::visit_region(const BufferRegion& r) {
  for (const Range& rg : r.region) {
    visit_expr(rg.min);
    visit_expr(rg.extent);
  }
}

void StmtExprVisitor::visit_binary(const BinaryNode* n) {
  visit_expr(n->a);
  visit_expr(n->b);
}
void StmtExprVisitor::visit_not(const NotNode* n) {
  visit_expr(n->a);
}
void StmtExprVisitor::visit_select(const SelectNode* n) {
  visit_expr(n->condition);
  visit_expr(n->true_value);
  visit_expr(n->false_value);
}
void StmtExprVisitor::visit_cast(const CastNode* n) {
  visit_expr(n->value);
}
void StmtExprVisitor::visit_buffer_load(const BufferLoadNode* n) {
  for (const Expr& i : n->indices) visit_expr(i);
}
void StmtExprVisitor::visit_call(const CallNode* n) {
  for (const Expr& a : n->args) visit_expr(a);
}
void StmtExprVisitor::visit_ramp(const RampNode* n) {
  visit_expr(n->base);
  visit_expr(n->stride);
}
void StmtExprVisitor::visit_broadcast(const BroadcastNode* n) {
  visit_expr(n->value);
}
void StmtExprVisitor::visit_let(const LetNode* n) {
  visit_expr(n->value);
  visit_expr(n->body);
}

void StmtExprVisitor::visit_buffer_store(const BufferStoreNode* n) {
  visit_expr(n->value);
  for (const Expr& i : n->indices) visit_expr(i);
}
void StmtExprVisitor::visit_seq(const SeqStmtNode* n) {
  for (const Stmt& s : n->seq) visit_stmt(s);
}
void StmtExprVisitor::visit_if(const IfThenElseNode* n) {
  visit_expr(n->condition);
  visit_stmt(n->then_case);
  if (n->else_case.defined()) visit_stmt(n->else_case);
}
void StmtExprVisitor::visit_evaluate(const EvaluateNode* n) {
  visit_expr(n->value);
}
void StmtExprVisitor::visit_for(const ForNode* n) {
  visit_expr(n->min);
  visit_expr(n->extent);
  visit_stmt(n->body);
}
void StmtExprVisitor::visit_block(const BlockNode* n) {
  for (const IterVar& iv : n->iter_vars) {
    visit_expr(iv.dom.min);
    visit_expr(iv.dom.extent);
  }
  for (const BufferRegion& r : n->reads) visit_region(r);
  for (const BufferRegion& r : n->writes) visit_region(r);
  if (n->init.defined()) visit_stmt(n->init);
  visit_stmt(n->body);
}
void StmtExprVisitor::visit_block_realize(const BlockRealizeNode* n) {
  for (const Expr& v : n->iter_values) visit_expr(v);
  visit_expr(n->predicate);
  visit_stmt(n->block);
}
void StmtExprVisitor::visit_allocate(const AllocateNode* n) {
  visit_stmt(n->body);
}

// ---------------------------------------------------------------------------------------------

Expr StmtExprMutator::mutate_expr(const Expr& e) {
#define TYCHE_IR_MUTATE_CASE(name, Node, kind) \
  case ExprKind::kind:                         \
    return mutate_##name(e.as<Node>(), e);
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
      return mutate_imm(e.get(), e);
    case ExprKind::kVar:
      return mutate_var(static_cast<const VarNode*>(e.get()), e);
      TYCHE_IR_EXPR_NODES(TYCHE_IR_MUTATE_CASE)
    default:
      return mutate_binary(static_cast<const BinaryNode*>(e.get()), e);
  }
#undef TYCHE_IR_MUTATE_CASE
}

Stmt StmtExprMutator::mutate_stmt(const Stmt& s) {
#define TYCHE_IR_MUTATE_CASE(name, Node, kind) \
  case StmtKind::kind:                         \
    return mutate_##name(s.as<Node>(), s);
  switch (s.kind()) { TYCHE_IR_STMT_NODES(TYCHE_IR_MUTATE_CASE) }
#undef TYCHE_IR_MUTATE_CASE
  return s;
}

bool StmtExprMutator::mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  out->clear();
  out->reserve(in.size());
  for (const Expr& e : in) {
    out->push_back(mutate_expr(e));
    changed |= !out->back().same_as(e);
  }
  return changed;
}

Range StmtExprMutator::mutate_range(const Range& r) {
  return Range(mutate_expr(r.min), mutate_expr(r.extent));
}

BufferRegion StmtExprMutator::mutate_region(const BufferRegion& r) {
  std::vector<Range> out;
  bool changed = false;
  for (const Range& rg : r.region) {
    out.push_back(mutate_range(rg));
    changed |= !out.back().min.same_as(rg.min) || !out.back().extent.same_as(rg.extent);
  }
  return changed ? BufferRegion(r.buffer, std::move(out)) : r;
}

Expr StmtExprMutator::mutate_binary(const BinaryNode* n, const Expr& self) {
  Expr a = mutate_expr(n->a), b = mutate_expr(n->b);
  if (a.same_as(n->a) && b.same_as(n->b)) return self;
  return make_binary(n->kind, std::move(a), std::move(b));
}
Expr StmtExprMutator::mutate_not(const NotNode* n, const Expr& self) {
  Expr a = mutate_expr(n->a);
  return a.same_as(n->a) ? self : !a;
}
Expr StmtExprMutator::mutate_select(const SelectNode* n, const Expr& self) {
  Expr c = mutate_expr(n->condition), t = mutate_expr(n->true_value),
       f = mutate_expr(n->false_value);
  if (c.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value)) return self;
  return select(c, t, f);
}
Expr StmtExprMutator::mutate_cast(const CastNode* n, const Expr& self) {
  Expr v = mutate_expr(n->value);
  return v.same_as(n->value) ? self : cast(n->dtype, v);
}
Expr StmtExprMutator::mutate_buffer_load(const BufferLoadNode* n, const Expr& self) {
  std::vector<Expr> idx;
  if (!mutate_exprs(n->indices, &idx)) return self;
  return buffer_load(n->buffer, std::move(idx));
}
Expr StmtExprMutator::mutate_call(const CallNode* n, const Expr& self) {
  std::vector<Expr> args;
  if (!mutate_exprs(n->args, &args)) return self;
  return call(n->op, std::move(args));
}
Expr StmtExprMutator::mutate_ramp(const RampNode* n, const Expr& self) {
  Expr b = mutate_expr(n->base), s = mutate_expr(n->stride);
  if (b.same_as(n->base) && s.same_as(n->stride)) return self;
  return ramp(b, s, n->lanes);
}
Expr StmtExprMutator::mutate_broadcast(const BroadcastNode* n, const Expr& self) {
  Expr v = mutate_expr(n->value);
  return v.same_as(n->value) ? self : broadcast(v, n->lanes);
}
Expr StmtExprMutator::mutate_let(const LetNode* n, const Expr& self) {
  Expr v = mutate_expr(n->value), b = mutate_expr(n->body);
  if (v.same_as(n->value) && b.same_as(n->body)) return self;
  return let(n->var, v, b);
}

Stmt StmtExprMutator::mutate_buffer_store(const BufferStoreNode* n, const Stmt& self) {
  Expr v = mutate_expr(n->value);
  std::vector<Expr> idx;
  bool changed = mutate_exprs(n->indices, &idx);
  if (!changed && v.same_as(n->value)) return self;
  return buffer_store(n->buffer, v, std::move(idx));
}
Stmt StmtExprMutator::mutate_seq(const SeqStmtNode* n, const Stmt& self) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& s : n->seq) {
    out.push_back(mutate_stmt(s));
    changed |= !out.back().same_as(s);
  }
  return changed ? seq(std::move(out)) : self;
}
Stmt StmtExprMutator::mutate_if(const IfThenElseNode* n, const Stmt& self) {
  Expr c = mutate_expr(n->condition);
  Stmt t = mutate_stmt(n->then_case);
  Stmt e = n->else_case.defined() ? mutate_stmt(n->else_case) : Stmt();
  if (c.same_as(n->condition) && t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
  return if_then_else(c, t, e);
}
Stmt StmtExprMutator::mutate_evaluate(const EvaluateNode* n, const Stmt& self) {
  Expr v = mutate_expr(n->value);
  return v.same_as(n->value) ? self : evaluate(v);
}
Stmt StmtExprMutator::mutate_for(const ForNode* n, const Stmt& self) {
  Expr mn = mutate_expr(n->min), ext = mutate_expr(n->extent);
  Stmt body = mutate_stmt(n->body);
  if (mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body)) return self;
  return for_loop(n->loop_var, mn, ext, n->for_kind, body, n->thread_tag, n->annotations);
}
Stmt StmtExprMutator::mutate_block(const BlockNode* n, const Stmt& self) {
  bool changed = false;
  std::vector<IterVar> ivs;
  for (const IterVar& iv : n->iter_vars) {
    Range dom = mutate_range(iv.dom);
    changed |= !dom.min.same_as(iv.dom.min) || !dom.extent.same_as(iv.dom.extent);
    ivs.push_back(IterVar{iv.var, dom, iv.kind});
  }
  auto regions = [&](const std::vector<BufferRegion>& in) {
    std::vector<BufferRegion> out;
    for (const BufferRegion& r : in) {
      out.push_back(mutate_region(r));
      changed |= out.back().region.size() != r.region.size() ||
                 !std::equal(out.back().region.begin(), out.back().region.end(), r.region.begin(),
                             [](const Range& x, const Range& y) {
                               return x.min.same_as(y.min) && x.extent.same_as(y.extent);
                             });
    }
    return out;
  };
  auto reads = regions(n->reads);
  auto writes = regions(n->writes);
  Stmt init = n->init.defined() ? mutate_stmt(n->init) : Stmt();
  Stmt body = mutate_stmt(n->body);
  changed |= !init.same_as(n->init) || !body.same_as(n->body);
  if (!changed) return self;
  return make_block(n->name, std::move(ivs), std::move(reads), std::move(writes), init, body,
                    n->alloc_buffers, n->annotations);
}
Stmt StmtExprMutator::mutate_block_realize(const BlockRealizeNode* n, const Stmt& self) {
  std::vector<Expr> vals;
  bool changed = mutate_exprs(n->iter_values, &vals);
  Expr pred = mutate_expr(n->predicate);
  Stmt blk = mutate_stmt(n->block);
  TYCHE_CHECK(blk.kind() == StmtKind::kBlock, "a block must mutate into a block");
  if (!changed && pred.same_as(n->predicate) && blk.same_as(n->block)) return self;
  return block_realize(std::move(vals), pred,
                       Block(std::static_pointer_cast<const BlockNode>(blk.ptr())));
}
Stmt StmtExprMutator::mutate_allocate(const AllocateNode* n, const Stmt& self) {
  Stmt body = mutate_stmt(n->body);
  return body.same_as(n->body) ? self : allocate(n->buffer, body);
}

// ---------------------------------------------------------------------------------------------

namespace {

class PostOrderStmtVisitor : public StmtExprVisitor {
 public:
  explicit PostOrderStmtVisitor(const std::function<void(const Stmt&)>& f) : f_(f) {}
  void visit_stmt(const Stmt& s) override {
    StmtExprVisitor::visit_stmt(s);
    f_(s);
  }
  void visit_expr(const Expr&) override {}

 private:
  const std::function<void(const Stmt&)>& f_;
};

class VarSubstituter : public StmtExprMutator {
 public:
  explicit VarSubstituter(const std::function<Expr(const Var&)>& f) : f_(f) {}

 protected:
  Expr mutate_var(const VarNode* n, const Expr& self) override {
    Expr r = f_(Var(std::static_pointer_cast<const VarNode>(self.ptr())));
    (void)n;
    return r.defined() ? r : self;
  }

 private:
  const std::function<Expr(const Var&)>& f_;
};

}  // namespace

void post_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& on_stmt) {
  PostOrderStmtVisitor(on_stmt).visit_stmt(s);
}
Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& vmap) {
  return VarSubstituter(vmap).mutate_expr(e);
}
Stmt substitute(const Stmt& s, const std::function<Expr(const Var&)>& vmap) {
  return VarSubstituter(vmap).mutate_stmt(s);
}

}  // namespace tyche::ir
