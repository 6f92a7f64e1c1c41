// fold_vector_index: a 2-d tile's row and column vectors, flattened, fold back into one ramp; what
// is not an arithmetic progression (or cannot be shown one) is left alone.
#include "arith/vector_index.h"

#include <gtest/gtest.h>

#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::arith {
namespace {

using ir::Expr;

Expr bc(int64_t v, int lanes) {
  return ir::broadcast(ir::make_int(v), lanes);
}
Expr r(Expr base, int lanes) {
  return ir::ramp(std::move(base), ir::make_int(1), lanes);
}

TEST(VectorIndex, RowMajorTileFoldsIntoOneRamp) {
  ir::Var jo("jo"), ko("ko");
  Expr flat = r(ir::make_int(0), 64);
  // P[jo, ko, flat // 4, flat % 4] on a [.., .., 16, 4] buffer: (jo * 5 + ko) * 64 + row * 4 + col.
  Expr index = ir::broadcast((jo * 5 + ko) * 64, 64) + ir::floordiv(flat, bc(4, 64)) * bc(4, 64) +
               ir::floormod(flat, bc(4, 64));
  Expr folded = fold_vector_index(index);
  auto* ramp = folded.as<ir::RampNode>();
  ASSERT_NE(ramp, nullptr) << ir::to_string(folded);
  EXPECT_TRUE(ir::is_const_int(ramp->stride, 1));
  EXPECT_EQ(ramp->lanes, 64);
}

TEST(VectorIndex, OtherLayoutsAreLeftAlone) {
  Expr flat = r(ir::make_int(0), 64);
  // The tile transposed in memory (column * 16 + row): lanes jump by 16, not one progression.
  Expr transposed = ir::floordiv(flat, bc(4, 64)) + ir::floormod(flat, bc(4, 64)) * bc(16, 64);
  EXPECT_EQ(fold_vector_index(transposed).get(), transposed.get());
  // A base that 4 may not divide: floordiv does not distribute.
  ir::Var x("x");
  Expr unknown = ir::floordiv(r(x, 8), bc(4, 8)) * bc(4, 8) + ir::floormod(r(x, 8), bc(4, 8));
  EXPECT_EQ(fold_vector_index(unknown).get(), unknown.get());
  // Every lane the same: a broadcast.
  Expr same = ir::floordiv(r(ir::make_int(0), 4), bc(4, 4)) + bc(7, 4);
  auto* b = fold_vector_index(same).as<ir::BroadcastNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(ir::is_const_int(b->value, 7));
}

}  // namespace
}  // namespace tyche::arith
