// Unswitching ifs whose conditions a loop does not change (a padded register tile lowered whole
// is in lower_test.cc).
#include <gmock/gmock.h>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "lower/lower.h"

namespace tyche::lower {
namespace {

ir::Stmt unswitch_loop(const ir::Var& v, int64_t n, ir::Stmt body) {
  return ir::for_loop(v, ir::make_int(0), ir::make_int(n), ir::ForKind::kSerial, std::move(body));
}

int count_ifs(const ir::Stmt& s) {
  int n = 0;
  ir::post_order_visit(s, [&](const ir::Stmt& x) { n += x.kind() == ir::StmtKind::kIfThenElse; });
  return n;
}

struct Fixture {
  ir::Buffer a = ir::make_buffer("A", kFloat32, {ir::make_int(64)});
  ir::Buffer c = ir::make_buffer("C", kFloat32, {ir::make_int(64)});
  ir::Buffer n = ir::make_buffer("N", kInt32, {ir::make_int(1)});
  ir::Var i{"i"}, j{"j"};
  ir::Stmt store(const ir::Expr& index) {
    return ir::buffer_store(c, ir::buffer_load(a, {index}) + ir::make_float(1.0, kFloat32),
                            {index});
  }
  ir::PrimFunc func(ir::Stmt body) { return ir::PrimFunc("f", {a, n, c}, 1, std::move(body)); }
};

TEST(Unswitch, AConditionTheLoopDoesNotChangeMovesOutOfIt) {
  Fixture f;
  // for i: for j: { C[i*8+j] = ...; if (i < 5) C[...] = ...; if (i < 7) ... }
  ir::Stmt body =
      ir::seq({f.store(f.i * 8 + f.j), ir::if_then_else(f.i < 5, f.store(f.i * 8 + f.j + 1)),
               ir::if_then_else(f.i < 7, f.store(f.i * 8 + f.j + 2))});
  ir::PrimFunc out =
      unswitch_invariant_ifs(f.func(unswitch_loop(f.i, 7, unswitch_loop(f.j, 6, body))));
  const auto* outer = out->body.as<ir::ForNode>();
  ASSERT_NE(outer, nullptr);
  const auto* version = outer->body.as<ir::IfThenElseNode>();  // inside i, around the j loop
  ASSERT_NE(version, nullptr) << ir::to_string(out);
  EXPECT_EQ(ir::to_string(version->condition), "i < 5 and i < 7");
  EXPECT_EQ(count_ifs(version->then_case), 0) << ir::to_string(out);
  EXPECT_EQ(count_ifs(version->else_case), 2);  // the tail keeps its guards
}

TEST(Unswitch, ConditionsOnTheLoopOrOnMemoryStay) {
  Fixture f;
  // Uses the inner loop's variable.
  ir::Stmt on_j = unswitch_loop(
      f.i, 4, unswitch_loop(f.j, 4, ir::if_then_else(f.j < 2, f.store(f.i * 8 + f.j))));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(on_j))), ir::to_string(f.func(on_j)));
  // Reads memory (a store in the loop may change it).
  ir::Expr loaded = ir::buffer_load(f.n, {ir::make_int(0)});
  ir::Stmt on_load = unswitch_loop(f.j, 4, ir::if_then_else(loaded < 3, f.store(f.j)));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(on_load))), ir::to_string(f.func(on_load)));
  // Divides by a variable: an outer guard may be what keeps the divisor nonzero.
  ir::Stmt on_division = unswitch_loop(
      f.i, 4,
      unswitch_loop(
          f.j, 4,
          ir::if_then_else(ir::floordiv(ir::make_int(8), f.i) < 3, f.store(f.i * 8 + f.j))));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(on_division))),
            ir::to_string(f.func(on_division)));
  // Not inside a loop: nothing to unswitch.
  ir::Stmt bare = ir::if_then_else(f.i < 3, f.store(f.i));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(unswitch_loop(f.i, 4, bare)))),
            ir::to_string(f.func(unswitch_loop(f.i, 4, bare))));
}

}  // namespace
}  // namespace tyche::lower
