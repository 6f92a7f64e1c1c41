// Loop unswitching of invariant conditions: a serial loop whose body holds ifs whose conditions
// do not change while the loop runs (they use only variables bound outside it, and no loads)
// becomes
//     if (c1 && c2 ...) { the loop, those ifs replaced by their then-branches } else { the loop }
// A tile that does not divide its loop (split by a factor that is not a divisor) leaves such
// guards in the innermost loops, one per unrolled row, and LLVM unswitches at most one or two
// of them: the accumulators of a register tile then stay in memory. Done top-down, at the
// outermost loop where the conditions are invariant; the else-copy, the rare tail, is kept as it
// was. Bodies larger than kMaxStatements are not copied (their inner loops may be).
#include <unordered_set>

#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "lower/invariant.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

constexpr int64_t kMaxStatements = 1024;

using ir::VarSet;

// The distinct conditions of ifs in `body` that use none of `bound` and are safe to hoist.
class InvariantConditions : public ir::StmtExprVisitor {
 public:
  explicit InvariantConditions(const VarSet& bound) : bound_(bound) {}
  std::vector<ir::Expr> conditions;

 protected:
  void visit_if(const ir::IfThenElseNode* n) override {
    const ir::Expr& c = n->condition;
    bool invariant = c.dtype().lanes() == 1 && !unsafe_to_hoist(c) && !ir::uses_any(c, bound_);
    if (invariant && std::none_of(conditions.begin(), conditions.end(),
                                  [&](const ir::Expr& x) { return arith::expr_equal(x, c); }))
      conditions.push_back(c);
    StmtExprVisitor::visit_if(n);
  }

 private:
  const VarSet& bound_;
};

// Replaces every if whose condition is one of `conditions` by its then-branch.
class AssumeTrue : public ir::StmtExprMutator {
 public:
  explicit AssumeTrue(const std::vector<ir::Expr>& conditions) : conditions_(conditions) {}

 protected:
  ir::Stmt mutate_if(const ir::IfThenElseNode* n, const ir::Stmt& self) override {
    for (const ir::Expr& c : conditions_)
      if (arith::expr_equal(c, n->condition)) return mutate_stmt(n->then_case);
    return StmtExprMutator::mutate_if(n, self);
  }

 private:
  const std::vector<ir::Expr>& conditions_;
};

class Unswitcher : public ir::StmtExprMutator {
 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (n->for_kind == ir::ForKind::kSerial) {
      BoundVars bound = bound_vars(self);
      InvariantConditions found(bound.vars);
      found.visit_stmt(n->body);
      if (!found.conditions.empty() && bound.statements <= kMaxStatements) {
        ir::Stmt fast_body = mutate_stmt(AssumeTrue(found.conditions).mutate_stmt(n->body));
        ir::Expr all = found.conditions[0];
        for (size_t i = 1; i < found.conditions.size(); ++i) all = all && found.conditions[i];
        ir::Stmt fast = ir::for_loop(n->loop_var, n->min, n->extent, n->for_kind, fast_body,
                                     n->thread_tag, n->annotations);
        return ir::if_then_else(all, fast, self);
      }
    }
    return StmtExprMutator::mutate_for(n, self);
  }
};

}  // namespace

ir::PrimFunc unswitch_invariant_ifs(const ir::PrimFunc& func) {
  return func.with_body(Unswitcher().mutate_stmt(func->body));
}

}  // namespace tyche::lower
