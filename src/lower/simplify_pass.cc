// Simplifies scalar integer expressions (indices, conditions, extents) under the enclosing loop
// ranges, and drops ifs whose condition is decided.
#include "arith/analyzer.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

class SimplifyPass : public ir::StmtExprMutator {
 public:
  ir::Expr mutate_expr(const ir::Expr& e) override {
    if (e.dtype().lanes() == 1 && e.dtype().is_int_like() && !has_load(e))
      return analyzer_.simplify(e);
    return StmtExprMutator::mutate_expr(e);
  }

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    ir::Expr mn = mutate_expr(n->min), ext = mutate_expr(n->extent);
    analyzer_.bind(n->loop_var, ir::Range(mn, ext));
    ir::Stmt body = mutate_stmt(n->body);
    if (ir::is_const_int(ext, 0)) return ir::seq({});
    if (mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body)) return self;
    return ir::for_loop(n->loop_var, mn, ext, n->for_kind, body, n->thread_tag, n->annotations);
  }

  ir::Stmt mutate_if(const ir::IfThenElseNode* n, const ir::Stmt& self) override {
    ir::Expr cond = mutate_expr(n->condition);
    if (auto c = ir::as_const_int(cond)) {
      if (*c) return mutate_stmt(n->then_case);
      return n->else_case.defined() ? mutate_stmt(n->else_case) : ir::seq({});
    }
    ir::Stmt t = mutate_stmt(n->then_case);
    ir::Stmt f = n->else_case.defined() ? mutate_stmt(n->else_case) : ir::Stmt();
    if (cond.same_as(n->condition) && t.same_as(n->then_case) && f.same_as(n->else_case))
      return self;
    return ir::if_then_else(cond, t, f);
  }

 private:
  // Integer loads (an index read from a tensor) are left alone: the simplifier reasons about
  // pure arithmetic.
  static bool has_load(const ir::Expr& e) { return ir::loads_buffer(e); }

  arith::Analyzer analyzer_;
};

}  // namespace

ir::PrimFunc simplify(const ir::PrimFunc& func) {
  return func.with_body(SimplifyPass().mutate_stmt(func->body));
}

}  // namespace tyche::lower
