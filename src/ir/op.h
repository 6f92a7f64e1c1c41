// Constructors for IR nodes. Expression builders fold constants and reconcile literal types
// (so `i * 2 + 1` stays int32 and `x + 1.0` matches x's float type), as TVM's operators do.
#pragma once

#include <vector>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tyche::ir {

Expr make_int(int64_t value, DataType dtype = kInt32);
Expr make_float(double value, DataType dtype = kFloat32);
Expr make_bool(bool value);
Expr make_const(DataType dtype, double value);  // int, float or bool of `dtype`

// Constant value if `e` is an IntImm.
std::optional<int64_t> as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t value);
// An absent or constant-true condition (a block realize's predicate that never filters).
inline bool is_true(const Expr& e) {
  return !e.defined() || is_const_int(e, 1);
}

// Builds a binary node after reconciling operand types; folds two constants.
Expr make_binary(ExprKind kind, Expr a, Expr b);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // float division, or truncating integer division
Expr operator-(Expr a);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DataType dtype, Expr value);
Expr call(CallOp op, std::vector<Expr> args);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr tanh(Expr x);
Expr sigmoid(Expr x);
Expr abs(Expr x);
// Lazily evaluated conditional (see CallOp::kIfThenElse).
Expr if_then_else(Expr cond, Expr t, Expr f);
// acc + the group dot products of a and b (see CallOp::kGroupDot). Throws tyche::Error unless acc
// is a vector of int32 with a and b integers of at most 16 bits, or of float32 with a and b
// float16, bfloat16 or float32, and b has a.lanes * acc.lanes lanes.
Expr group_dot(Expr acc, Expr a, Expr b);
// acc + the tile product of a and b over `rows` rows (see CallOp::kTileDot). Throws tyche::Error
// unless the types are group_dot's, rows is a positive constant dividing acc's and a's lanes, K
// (a's lanes per row) is a multiple of G and b has K * N lanes.
Expr tile_dot(Expr acc, Expr a, Expr b, Expr rows);
// tile_dot's shape: M, N, K and G, from its operands' lanes (which tile_dot checked).
struct TileDotShape {
  int m, n, k, g;
};
TileDotShape tile_dot_shape(const CallNode* tile_dot);
Expr buffer_load(const Buffer& buffer, std::vector<Expr> indices);
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr value, int lanes);
Expr let(Var var, Expr value, Expr body);

// Smallest/largest value of a type (the identities of max/min reductions).
Expr min_value(DataType dtype);
Expr max_value(DataType dtype);

Stmt buffer_store(const Buffer& buffer, Expr value, std::vector<Expr> indices);
// Flattens nested sequences; a one-element sequence is that element.
Stmt seq(std::vector<Stmt> stmts);
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = Stmt());
Stmt evaluate(Expr value);
Stmt for_loop(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = {},
              Annotations annotations = {});
Block make_block(std::string name, std::vector<IterVar> iter_vars, std::vector<BufferRegion> reads,
                 std::vector<BufferRegion> writes, Stmt init, Stmt body,
                 std::vector<Buffer> alloc_buffers = {}, Annotations annotations = {});
Stmt block_realize(std::vector<Expr> iter_values, Expr predicate, Block block);
Stmt allocate(Buffer buffer, Stmt body);

}  // namespace tyche::ir
