// Which variables an expression or statement mentions, and which buffers it loads: the questions
// primitives, rules, postprocessors and lowering passes all ask (does this binding use that loop?).
#pragma once

#include <concepts>
#include <unordered_set>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace tyche::ir {

using VarSet = std::unordered_set<const VarNode*>;

namespace detail {
bool uses_var_impl(const Expr& e, const void* ctx, bool (*pred)(const void*, const VarNode*));
}  // namespace detail

// True when `e` mentions a variable (a Let's own included) for which `pred` is true; false for
// an undefined expression.
template <typename Pred>
requires std::predicate<const Pred&, const VarNode*>
bool uses_var(const Expr& e, const Pred& pred) {
  return detail::uses_var_impl(e, &pred, [](const void* ctx, const VarNode* v) {
    return (*static_cast<const Pred*>(ctx))(v);
  });
}
inline bool uses_var(const Expr& e, const VarNode* var) {
  return uses_var(e, [var](const VarNode* v) { return v == var; });
}
inline bool uses_any(const Expr& e, const VarSet& vars) {
  return uses_var(e, [&vars](const VarNode* v) { return vars.count(v) > 0; });
}
// The same for a statement (its expressions, loop ranges and nested statements).
bool stmt_uses_var(const Stmt& s, const VarNode* var);

// True when `e` loads from `buffer` anywhere (from any buffer when `buffer` is null).
bool loads_buffer(const Expr& e, const BufferNode* buffer = nullptr);

}  // namespace tyche::ir
