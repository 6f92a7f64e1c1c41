// Visitor and mutator bases. Override the visit_*/mutate_* of the nodes you care about and
// call the base for the rest. A mutator returns the very same node when none of its children
// changed, so passes that change nothing allocate nothing.
#pragma once

#include <functional>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tyche::ir {

// The nodes the functors dispatch on, as X(method suffix, node type, kind): one list, so that a
// new node is added to the visitor, the mutator and their dispatch at once. Variables, constants
// and the binary nodes (many kinds, one node type) are dispatched by hand.
// clang-format off
#define TYCHE_IR_EXPR_NODES(X)                                                                  \
  X(not, NotNode, kNot) X(select, SelectNode, kSelect) X(cast, CastNode, kCast)                 \
  X(buffer_load, BufferLoadNode, kBufferLoad) X(call, CallNode, kCall)                          \
  X(ramp, RampNode, kRamp) X(broadcast, BroadcastNode, kBroadcast) X(let, LetNode, kLet)
#define TYCHE_IR_STMT_NODES(X)                                                                  \
  X(buffer_store, BufferStoreNode, kBufferStore) X(seq, SeqStmtNode, kSeqStmt)                  \
  X(if, IfThenElseNode, kIfThenElse) X(evaluate, EvaluateNode, kEvaluate) X(for, ForNode, kFor) \
  X(block, BlockNode, kBlock) X(block_realize, BlockRealizeNode, kBlockRealize)                 \
  X(allocate, AllocateNode, kAllocate)
// clang-format on

#define TYCHE_IR_DECLARE_VISIT(name, Node, kind) virtual void visit_##name(const Node* n);
#define TYCHE_IR_DECLARE_MUTATE_EXPR(name, Node, kind) \
  virtual Expr mutate_##name(const Node* n, const Expr& self);
#define TYCHE_IR_DECLARE_MUTATE_STMT(name, Node, kind) \
  virtual Stmt mutate_##name(const Node* n, const Stmt& self);

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
  TYCHE_IR_EXPR_NODES(TYCHE_IR_DECLARE_VISIT)
  TYCHE_IR_STMT_NODES(TYCHE_IR_DECLARE_VISIT)
};

class StmtExprMutator {
 public:
  virtual ~StmtExprMutator() = default;
  BufferRegion mutate_region(const BufferRegion& r);
  Range mutate_range(const Range& r);
  virtual Expr mutate_expr(const Expr& e);
  virtual Stmt mutate_stmt(const Stmt& s);

 protected:
  // `self` is the handle of `n`, returned when nothing changes.
  virtual Expr mutate_var(const VarNode*, const Expr& self) { return self; }
  virtual Expr mutate_imm(const ExprNode*, const Expr& self) { return self; }
  virtual Expr mutate_binary(const BinaryNode* n, const Expr& self);
  TYCHE_IR_EXPR_NODES(TYCHE_IR_DECLARE_MUTATE_EXPR)
  TYCHE_IR_STMT_NODES(TYCHE_IR_DECLARE_MUTATE_STMT)

  // Mutates each element; returns true if any changed.
  bool mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out);
};

// Calls `on_stmt` on every statement, children before their parent.
void post_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& on_stmt);
// Replaces variables by expressions (identity keys).
Expr substitute(const Expr& e, const std::function<Expr(const Var&)>& vmap);
Stmt substitute(const Stmt& s, const std::function<Expr(const Var&)>& vmap);

}  // namespace tyche::ir
