#include "lower/invariant.h"

#include "ir/functor.h"
#include "ir/op.h"

namespace tyche::lower {

namespace {

class BoundVarsVisitor : public ir::StmtExprVisitor {
 public:
  BoundVars out;

 protected:
  void visit_for(const ir::ForNode* n) override {
    out.vars.insert(n->loop_var.get());
    StmtExprVisitor::visit_for(n);
  }
  void visit_let(const ir::LetNode* n) override {
    out.vars.insert(n->var.get());
    StmtExprVisitor::visit_let(n);
  }
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    ++out.statements;
    StmtExprVisitor::visit_buffer_store(n);
  }
  void visit_evaluate(const ir::EvaluateNode* n) override {
    ++out.statements;
    StmtExprVisitor::visit_evaluate(n);
  }
};

}  // namespace

BoundVars bound_vars(const ir::Stmt& s) {
  BoundVarsVisitor v;
  v.visit_stmt(s);
  return std::move(v.out);
}

bool unsafe_to_hoist(const ir::Expr& e) {
  struct Finder : ir::StmtExprVisitor {
    bool found = false;
    void visit_buffer_load(const ir::BufferLoadNode*) override { found = true; }
    void visit_call(const ir::CallNode*) override { found = true; }
    void visit_binary(const ir::BinaryNode* n) override {
      bool division = n->kind == ir::ExprKind::kDiv || n->kind == ir::ExprKind::kFloorDiv ||
                      n->kind == ir::ExprKind::kFloorMod;
      if (division && !ir::as_const_int(n->b)) found = true;
      StmtExprVisitor::visit_binary(n);
    }
  } f;
  f.visit_expr(e);
  return f.found;
}

}  // namespace tyche::lower
