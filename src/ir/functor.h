// Visitor and mutator bases. Override the visit_*/mutate_* of the nodes you care about and
// call the base for the rest. A mutator returns the very same node when none of its children
// changed, so passes that change nothing allocate nothing.
#pragma once

#include <functional>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tyche::ir {

class StmtExprVisitor {
 public:
  virtual ~StmtExprVisitor() = default;
  virtual void visit_expr(const Expr& e);
  virtual void visit_stmt(const Stmt& s);
  void visit_region(const BufferRegion& r);

 protected:
  virtual void visit_var(const VarNode*) {}
  virtual void visit_imm(const ExprNode*) {}
  virtual void visit_binary(const BinaryNode* n);
  virtual void visit_not(const NotNode* n);
  virtual void visit_select(const SelectNode* n);
  virtual void visit_cast(const CastNode* n);
  virtual void visit_buffer_load(const BufferLoadNode* n);
  virtual void visit_call(const CallNode* n);
  virtual void visit_ramp(const RampNode* n);
  virtual void visit_broadcast(const BroadcastNode* n);
  virtual void visit_let(const LetNode* n);

  virtual void visit_buffer_store(const BufferStoreNode* n);
  virtual void visit_seq(const SeqStmtNode* n);
  virtual void visit_if(const IfThenElseNode* n);
  virtual void visit_evaluate(const EvaluateNode* n);
  virtual void visit_for(const ForNode* n);
  virtual void visit_block(const BlockNode* n);
  virtual void visit_block_realize(const BlockRealizeNode* n);
  virtual void visit_allocate(const AllocateNode* n);
};

class StmtExprMutator {
 public:
  virtual ~StmtExprMutator() = default;
  virtual Expr mutate_expr(const Expr& e);
  virtual Stmt mutate_stmt(const Stmt& s);
  BufferRegion mutate_region(const BufferRegion& r);
  Range mutate_range(const Range& r);

 protected:
  // `self` is the handle of `n`, returned when nothing changes.
  virtual Expr mutate_var(const VarNode*, const Expr& self) { return self; }
  virtual Expr mutate_imm(const ExprNode*, const Expr& self) { return self; }
  virtual Expr mutate_binary(const BinaryNode* n, const Expr& self);
  virtual Expr mutate_not(const NotNode* n, const Expr& self);
  virtual Expr mutate_select(const SelectNode* n, const Expr& self);
  virtual Expr mutate_cast(const CastNode* n, const Expr& self);
  virtual Expr mutate_buffer_load(const BufferLoadNode* n, const Expr& self);
  virtual Expr mutate_call(const CallNode* n, const Expr& self);
  virtual Expr mutate_ramp(const RampNode* n, const Expr& self);
  virtual Expr mutate_broadcast(const BroadcastNode* n, const Expr& self);
  virtual Expr mutate_let(const LetNode* n, const Expr& self);

  virtual Stmt mutate_buffer_store(const BufferStoreNode* n, const Stmt& self);
  virtual Stmt mutate_seq(const SeqStmtNode* n, const Stmt& self);
  virtual Stmt mutate_if(const IfThenElseNode* n, const Stmt& self);
  virtual Stmt mutate_evaluate(const EvaluateNode* n, const Stmt& self);
  virtual Stmt mutate_for(const ForNode* n, const Stmt& self);
  virtual Stmt mutate_block(const BlockNode* n, const Stmt& self);
  virtual Stmt mutate_block_realize(const BlockRealizeNode* n, const Stmt& self);
  virtual Stmt mutate_allocate(const AllocateNode* n, const Stmt& self);

  // Mutates each element; returns true if any changed.
  bool mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out);
};

// Calls `on_stmt` on every statement, children before their parent.
void post_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& on_stmt);
// Replaces variables by expressions (identity keys).
Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& vmap);
Stmt substitute(const Stmt& s, const std::function<Expr(const Var&)>& vmap);

}  // namespace tyche::ir
