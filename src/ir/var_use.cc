#include "ir/var_use.h"

#include "ir/functor.h"

namespace tyche::ir {

namespace {

class VarFinder : public StmtExprVisitor {
 public:
  VarFinder(const void* ctx, bool (*pred)(const void*, const VarNode*)) : ctx_(ctx), pred_(pred) {}
  bool found = false;
  void visit_expr(const Expr& e) override {
    if (!found) StmtExprVisitor::visit_expr(e);
  }

 protected:
  void visit_var(const VarNode* v) override { found = found || pred_(ctx_, v); }
  void visit_let(const LetNode* n) override {
    visit_var(n->var.get());
    StmtExprVisitor::visit_let(n);
  }

 private:
  const void* ctx_;
  bool (*pred_)(const void*, const VarNode*);
};

}  // namespace

namespace detail {
bool uses_var_impl(const Expr& e, const void* ctx, bool (*pred)(const void*, const VarNode*)) {
  if (!e.defined()) return false;
  VarFinder f(ctx, pred);
  f.visit_expr(e);
  return f.found;
}
}  // namespace detail

bool stmt_uses_var(const Stmt& s, const VarNode* var) {
  VarFinder f(&var, [](const void* ctx, const VarNode* v) {
    return v == *static_cast<const VarNode* const*>(ctx);
  });
  f.visit_stmt(s);
  return f.found;
}

bool loads_buffer(const Expr& e, const BufferNode* buffer) {
  struct Finder : StmtExprVisitor {
    const BufferNode* target = nullptr;
    bool found = false;
    void visit_buffer_load(const BufferLoadNode* n) override {
      found |= !target || n->buffer.get() == target;
      StmtExprVisitor::visit_buffer_load(n);
    }
  } f;
  f.target = buffer;
  f.visit_expr(e);
  return f.found;
}

}  // namespace tyche::ir
