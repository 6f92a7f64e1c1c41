// Unswitching ifs whose conditions a loop does not change, and what a padded register tile
// (a split that does not divide its loop) lowers to: one copy of the inner loops without guards,
// its accumulator compacted to the tile.
#include <gmock/gmock.h>

#include <functional>

#include "interp/interpreter.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "workloads/workloads.h"

namespace tyche::lower {
namespace {

using ::testing::HasSubstr;

ir::Stmt loop(const ir::Var& v, int64_t n, ir::Stmt body) {
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
  ir::Stmt store(const ir::Expr& index) { return ir::buffer_store(c, ir::buffer_load(a, {index}) + ir::make_float(1.0, kFloat32), {index}); }
  ir::PrimFunc func(ir::Stmt body) { return ir::PrimFunc("f", {a, n, c}, 1, std::move(body)); }
};

TEST(Unswitch, AConditionTheLoopDoesNotChangeMovesOutOfIt) {
  Fixture f;
  // for i: for j: { C[i*8+j] = ...; if (i < 5) C[...] = ...; if (i < 7) ... }
  ir::Stmt body = ir::seq({f.store(f.i * 8 + f.j), ir::if_then_else(f.i < 5, f.store(f.i * 8 + f.j + 1)),
                           ir::if_then_else(f.i < 7, f.store(f.i * 8 + f.j + 2))});
  ir::PrimFunc out = unswitch_invariant_ifs(f.func(loop(f.i, 7, loop(f.j, 6, body))));
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
  ir::Stmt on_j = loop(f.i, 4, loop(f.j, 4, ir::if_then_else(f.j < 2, f.store(f.i * 8 + f.j))));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(on_j))), ir::to_string(f.func(on_j)));
  // Reads memory (a store in the loop may change it).
  ir::Expr loaded = ir::buffer_load(f.n, {ir::make_int(0)});
  ir::Stmt on_load = loop(f.j, 4, ir::if_then_else(loaded < 3, f.store(f.j)));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(on_load))), ir::to_string(f.func(on_load)));
  // Divides by a variable: an outer guard may be what keeps the divisor nonzero.
  ir::Stmt on_division = loop(f.i, 4, loop(f.j, 4, ir::if_then_else(ir::floordiv(ir::make_int(8), f.i) < 3, f.store(f.i * 8 + f.j))));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(on_division))), ir::to_string(f.func(on_division)));
  // Not inside a loop: nothing to unswitch.
  ir::Stmt bare = ir::if_then_else(f.i < 3, f.store(f.i));
  EXPECT_EQ(ir::to_string(unswitch_invariant_ifs(f.func(loop(f.i, 4, bare)))), ir::to_string(f.func(loop(f.i, 4, bare))));
}

// The size of the allocation of `name` and whether one is found.
int64_t allocation_size(const ir::Stmt& s, const std::string& name) {
  int64_t size = -1;
  ir::post_order_visit(s, [&](const ir::Stmt& x) {
    if (auto* a = x.as<ir::AllocateNode>(); a && a->buffer->name == name) size = *ir::as_const_int(a->buffer->shape[0]);
  });
  return size;
}

// The innermost loop over `name` without an if in its body, if any.
bool has_unguarded_loop(const ir::Stmt& s, const std::string& name) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Stmt& x) {
    if (auto* f = x.as<ir::ForNode>(); f && f->loop_var->name == name) found = found || count_ifs(f->body) == 0;
  });
  return found;
}

TEST(Unswitch, APaddedRegisterTileLowersToAnUnguardedKernelAndACompactAccumulator) {
  // 20 rows in tiles of 6 (24: 4 padding rows, guarded), an accumulator tile per row tile.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=20,j=16,k=8");
  schedule::Schedule sch(w.func);
  auto c = sch.get_block("C").value();
  auto acc = sch.cache_write(c, 0, "global").value();
  auto l = sch.get_loops(c).value();
  auto i = sch.split(l[0], {std::nullopt, 6}).value();
  auto j = sch.split(l[1], {std::nullopt, 8}).value();
  sch.reorder({i[0], j[0], l[2], i[1], j[1]}).value();
  sch.reverse_compute_at(acc, j[0]).value();
  sch.decompose_reduction(c, l[2]).value();
  sch.unroll(i[1]).value();
  sch.vectorize(j[1]).value();
  Lowered lowered = lower(sch.func());
  // The k loop comes once without guards (the full tiles) and once with them (the last).
  EXPECT_TRUE(has_unguarded_loop(lowered.func->body, "k")) << ir::to_string(lowered.func);
  EXPECT_THAT(ir::to_string(lowered.func), HasSubstr("if "));
  // The accumulator is one 6 x 8 tile: the guarded stores of the padding rows do not keep it
  // from being private to the tile.
  EXPECT_EQ(allocation_size(lowered.func->body, "C_global"), 6 * 8) << ir::to_string(lowered.func);
  // And it computes the product.
  auto inputs = workloads::make_inputs(w.func, 3);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args;
  for (size_t p = 0; p < lowered.func->params.size(); ++p) {
    int64_t size = ir::const_shape(lowered.func->params[p])[0];
    runtime::NDArray a({size}, kFloat32);
    if (p < inputs.size()) std::memcpy(a.data(), inputs[p].data(), a.nbytes());
    args.push_back(a);
  }
  interp::run(lowered.func, args);
  runtime::NDArray got({20, 16}, kFloat32);
  std::memcpy(got.data(), args.back().data(), got.nbytes());
  EXPECT_TRUE(interp::compare(got, expected[0]).ok);
}

}  // namespace
}  // namespace tyche::lower
