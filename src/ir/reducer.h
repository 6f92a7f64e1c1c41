// Reducers: a block that initializes an element with an identity and combines values into it
// (B[i] = 0; B[i] = B[i] + A[i, k]). rfactor and the GPU back end's cross-thread reductions
// both need the combiner and the identity.
#pragma once

#include <optional>
#include <string>

#include "ir/stmt.h"

namespace tyche::ir {

struct Reducer {
  ExprKind combine;  // kAdd, kMul, kMax or kMin
  const BufferStoreNode* init;
  const BufferStoreNode* update;
  Expr value;  // what is combined into the accumulator
};

// init: B[idx] = identity; body: B[idx] = combine(B[idx], value) (either operand order). When it
// is not, nullopt and `why` says what differs ("does not combine with +, *, max or min").
std::optional<Reducer> match_reducer(const BlockNode* block, std::string* why);

// True when `e` is a constant that is the identity of `combine` (0 for +, -inf or the lowest
// value for max, ...).
bool is_reducer_identity(ExprKind combine, const Expr& e);

}  // namespace tyche::ir
