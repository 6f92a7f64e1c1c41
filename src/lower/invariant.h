// What the loop passes that move conditions out of loops (unswitch_invariant_ifs,
// skip_zero_terms) share: which variables a statement binds and whether a condition can be
// evaluated earlier than where it stands.
#pragma once

#include <cstdint>

#include "ir/expr.h"
#include "ir/stmt.h"
#include "ir/var_use.h"

namespace tyche::lower {

// Variables bound inside a statement (loop variables, lets) and its number of leaf statements.
struct BoundVars {
  ir::VarSet vars;
  int64_t statements = 0;
};
BoundVars bound_vars(const ir::Stmt& s);

// Whether evaluating `e` ahead of the code it guards could differ or fault: a load (the code may
// store), a call, or a division by a non-constant (an outer guard may be what keeps it nonzero).
bool unsafe_to_hoist(const ir::Expr& e);

}  // namespace tyche::lower
