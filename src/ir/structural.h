// Structural equality and hashing modulo variable and buffer renaming: two programs are equal
// when a one-to-one renaming of their variables and buffers makes them identical. Block names,
// constants, types, loop kinds and annotations all count. The hash agrees with the equality.
#pragma once

#include <cstdint>

#include "ir/function.h"

namespace tyche::ir {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const PrimFunc& a, const PrimFunc& b);

uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const PrimFunc& f);

}  // namespace tyche::ir
