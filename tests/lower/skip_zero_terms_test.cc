// Skipping iterations that only add zeros (padding taps, a transposed convolution's dilation);
// whole programs lowered with it are checked by the interpreter after every pass in lower_test.cc.
#include <gmock/gmock.h>

#include "arith/analyzer.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "lower/lower.h"

namespace tyche::lower {
namespace {

ir::Stmt loop(const ir::Var& v, int64_t n, ir::Stmt body) {
  return ir::for_loop(v, ir::make_int(0), ir::make_int(n), ir::ForKind::kSerial, std::move(body));
}

// for h in 4: for r in 3: { allocate P[8]; for k: P[k] = pad(h + r - 1); for k: C[h] += P[k] *
// W[r*8+k] }
struct Conv1d {
  ir::Buffer x = ir::make_buffer("X", kFloat32, {ir::make_int(32)});
  ir::Buffer w = ir::make_buffer("W", kFloat32, {ir::make_int(24)});
  ir::Buffer c = ir::make_buffer("C", kFloat32, {ir::make_int(4)});
  ir::Buffer p = ir::make_buffer("P", kFloat32, {ir::make_int(8)});
  ir::Var h{"h"}, r{"r"}, k{"k"}, k2{"k2"}, k3{"k3"};
  ir::Expr row() const { return h + r - 1; }
  ir::Expr in_rows() const { return row() >= 0 && row() < 4; }
  ir::Stmt fill(const ir::Expr& guard) const {
    ir::Expr value =
        ir::if_then_else(guard, ir::buffer_load(x, {row() * 8 + k}), ir::make_float(0.0));
    return loop(k, 8, ir::buffer_store(p, value, {k}));
  }
  ir::Stmt accumulate(const ir::Expr& term) const {
    return loop(k2, 8, ir::buffer_store(c, ir::buffer_load(c, {h}) + term, {h}));
  }
  ir::Expr tap() const { return ir::buffer_load(p, {k2}) * ir::buffer_load(w, {r * 8 + k2}); }
  ir::PrimFunc func(ir::Stmt r_body) const {
    return ir::PrimFunc("f", {x, w, c}, 1, loop(h, 4, loop(r, 3, std::move(r_body))));
  }
  ir::PrimFunc padded(const ir::Expr& guard, ir::Stmt extra = {}) const {
    std::vector<ir::Stmt> body = {fill(guard), accumulate(tap())};
    if (extra.defined()) body.push_back(extra);
    return func(ir::allocate(p, ir::seq(body)));
  }
};

// The guard the pass writes for these conjuncts (each in its simplified form).
std::string guard_text(const std::vector<ir::Expr>& conjuncts) {
  arith::Analyzer a;
  ir::Expr all = a.simplify(conjuncts[0]);
  for (size_t i = 1; i < conjuncts.size(); ++i) all = all && a.simplify(conjuncts[i]);
  return ir::to_string(all);
}

// The body of the (only) loop over `var`.
ir::Stmt body_of(const ir::PrimFunc& f, const ir::Var& var) {
  ir::Stmt out;
  ir::post_order_visit(f->body, [&](const ir::Stmt& s) {
    if (const auto* l = s.as<ir::ForNode>(); l && l->loop_var.get() == var.get()) out = l->body;
  });
  return out;
}

TEST(SkipZeroTerms, ARowOfPaddingIsSkipped) {
  Conv1d c;
  ir::PrimFunc out = skip_zero_terms(c.padded(c.in_rows()));
  const auto* guard = body_of(out, c.r).as<ir::IfThenElseNode>();
  ASSERT_NE(guard, nullptr) << ir::to_string(out);
  EXPECT_EQ(ir::to_string(guard->condition), guard_text({c.row() >= 0, c.row() < 4}));
  EXPECT_FALSE(guard->else_case.defined());
  // Not guarded again inside.
  int ifs = 0;
  ir::post_order_visit(out->body,
                       [&](const ir::Stmt& s) { ifs += s.kind() == ir::StmtKind::kIfThenElse; });
  EXPECT_EQ(ifs, 1);
}

TEST(SkipZeroTerms, OnlyTheConditionsEveryStoreSharesGuard) {
  Conv1d c;
  // Columns guarded per element (k) as well: only the rows' part is common and invariant.
  ir::PrimFunc out = skip_zero_terms(c.padded(c.in_rows() && c.k >= 1));
  const auto* guard = body_of(out, c.r).as<ir::IfThenElseNode>();
  ASSERT_NE(guard, nullptr) << ir::to_string(out);
  EXPECT_EQ(ir::to_string(guard->condition), guard_text({c.row() >= 0, c.row() < 4}));
}

TEST(SkipZeroTerms, ATermZeroUnlessAStrideDividesIsSkipped) {
  Conv1d c;
  // C[h] += if_then_else((h + r) % 2 == 0, X[..] * W[..], -0.0), the transposed convolution's form.
  ir::Expr on_pixel = ir::floormod(c.h + c.r, ir::make_int(2)) == 0;
  ir::Expr term = ir::if_then_else(
      on_pixel, ir::buffer_load(c.x, {c.k2}) * ir::buffer_load(c.w, {c.r * 8 + c.k2}),
      ir::make_float(-0.0));
  ir::PrimFunc out = skip_zero_terms(c.func(c.accumulate(term)));
  const auto* guard = body_of(out, c.r).as<ir::IfThenElseNode>();
  ASSERT_NE(guard, nullptr) << ir::to_string(out);
  EXPECT_EQ(ir::to_string(guard->condition), guard_text({on_pixel}));
}

TEST(SkipZeroTerms, IterationsThatDoMoreThanAccumulateStay) {
  Conv1d c;
  auto unchanged = [](const ir::PrimFunc& f) {
    return ir::to_string(skip_zero_terms(f)) == ir::to_string(f);
  };
  // A store that is not an accumulation into a buffer from outside the loop (an epilogue).
  EXPECT_TRUE(unchanged(c.padded(c.in_rows(), ir::buffer_store(c.c, ir::make_float(1.0), {c.h}))));
  // A term with no factor that is zero off the guard.
  EXPECT_TRUE(
      unchanged(c.func(c.accumulate(ir::buffer_load(c.x, {c.k2}) * ir::buffer_load(c.w, {c.k2})))));
  // A local buffer one of whose stores is not guarded.
  ir::Stmt two_fills = ir::seq({c.fill(c.in_rows()),
                                loop(c.k3, 2, ir::buffer_store(c.p, ir::make_float(1.0), {c.k3})),
                                c.accumulate(c.tap())});
  EXPECT_TRUE(unchanged(c.func(ir::allocate(c.p, two_fills))));
  // A guard on a variable the body changes (the inner k): nothing invariant to skip on.
  EXPECT_TRUE(unchanged(c.padded(c.k >= 1)));
  // A guard that reads memory.
  EXPECT_TRUE(unchanged(c.padded(ir::buffer_load(c.w, {c.r}) > ir::make_float(0.0))));
  // A buffer the loop does not allocate may hold what earlier iterations wrote: not a zero source.
  ir::PrimFunc outside = ir::PrimFunc(
      "f", {c.x, c.w, c.c}, 1,
      ir::allocate(
          c.p, loop(c.h, 4, loop(c.r, 3, ir::seq({c.fill(c.in_rows()), c.accumulate(c.tap())})))));
  ir::Stmt r_body = body_of(skip_zero_terms(outside), c.r);
  EXPECT_EQ(r_body.kind(), ir::StmtKind::kSeqStmt);
}

// Before flattening: P[6, 8] allocated at the top, padded once (rows 1..4 are X's rows), then
// for h in 4: for r in 3: for k in 8: C[h] = C[h] + P[h + r, k] * W[r, k]   (or a group_dot).
struct PaddedOnce {
  ir::Buffer x = ir::make_buffer("X", kFloat32, {ir::make_int(4), ir::make_int(8)});
  ir::Buffer w = ir::make_buffer("W", kFloat32, {ir::make_int(3), ir::make_int(8)});
  ir::Buffer c = ir::make_buffer("C", kFloat32, {ir::make_int(4)});
  ir::Buffer p = ir::make_buffer("P", kFloat32, {ir::make_int(6), ir::make_int(8)});
  ir::Var i{"i"}, j{"j"}, h{"h"}, r{"r"}, k{"k"};
  ir::Stmt fill(const ir::Expr& guard) const {
    ir::Expr value = ir::if_then_else(guard, ir::buffer_load(x, {i - 1, j}), ir::make_float(0.0));
    return loop(i, 6, loop(j, 8, ir::buffer_store(p, value, {i, j})));
  }
  ir::Expr in_rows() const { return i >= 1 && i < 5; }
  ir::Stmt taps(const ir::Stmt& body) const { return loop(h, 4, loop(r, 3, body)); }
  ir::Stmt accumulate() const {
    ir::Expr term = ir::buffer_load(p, {h + r, k}) * ir::buffer_load(w, {r, k});
    return loop(k, 8, ir::buffer_store(c, ir::buffer_load(c, {h}) + term, {h}));
  }
  ir::PrimFunc func(const ir::Expr& guard, const ir::Stmt& use) const {
    return ir::PrimFunc("f", {x, w, c}, 1, ir::allocate(p, ir::seq({fill(guard), taps(use)})));
  }
};

TEST(SkipPaddingTaps, RowsOfABufferPaddedOnceAreSkipped) {
  PaddedOnce c;
  ir::PrimFunc out = skip_padding_taps(c.func(c.in_rows(), c.accumulate()));
  const auto* guard = body_of(out, c.r).as<ir::IfThenElseNode>();
  ASSERT_NE(guard, nullptr) << ir::to_string(out);
  EXPECT_EQ(ir::to_string(guard->condition), guard_text({c.h + c.r >= 1, c.h + c.r < 5}))
      << ir::to_string(out);
  // The padding's own loops and the other conditions are left alone; skip_zero_terms (after
  // flattening) does not see this buffer as its own.
  EXPECT_EQ(body_of(out, c.j).kind(), ir::StmtKind::kBufferStore);
  EXPECT_EQ(ir::to_string(skip_zero_terms(c.func(c.in_rows(), c.accumulate()))),
            ir::to_string(c.func(c.in_rows(), c.accumulate())));
}

TEST(SkipPaddingTaps, AGroupDotReadingThePaddingIsSkippedToo) {
  PaddedOnce c;
  ir::Buffer pu = ir::make_buffer("P", DataType::UInt(8), {ir::make_int(6), ir::make_int(8)});
  ir::Buffer xu = ir::make_buffer("X", DataType::UInt(8), {ir::make_int(4), ir::make_int(8)});
  ir::Buffer wi = ir::make_buffer("W", DataType::Int(8), {ir::make_int(3), ir::make_int(64)});
  ir::Buffer ci = ir::make_buffer("C", kInt32, {ir::make_int(4), ir::make_int(16)});
  // Columns 6 and 7 padded too: the dot reads them as lanes of a vector, whose bound is no guard.
  ir::Expr fill_value =
      ir::if_then_else(c.in_rows() && c.j < 6, ir::buffer_load(xu, {c.i - 1, c.j}),
                       ir::make_const(DataType::UInt(8), 0));
  ir::Stmt fill = loop(c.i, 6, loop(c.j, 8, ir::buffer_store(pu, fill_value, {c.i, c.j})));
  // C[h, 0:16] = group_dot(C[h, 0:16], P[h + r, 4k : 4k + 4], W[r, 0:64]) over k in 2.
  ir::Expr acc = ir::buffer_load(ci, {c.h, ir::ramp(ir::make_int(0), ir::make_int(1), 16)});
  ir::Expr a = ir::buffer_load(pu, {c.h + c.r, ir::ramp(c.k * 4, ir::make_int(1), 4)});
  ir::Expr b = ir::buffer_load(wi, {c.r, ir::ramp(ir::make_int(0), ir::make_int(1), 64)});
  ir::Stmt dot = loop(c.k, 2,
                      ir::buffer_store(ci, ir::group_dot(acc, a, b),
                                       {c.h, ir::ramp(ir::make_int(0), ir::make_int(1), 16)}));
  ir::PrimFunc f("f", {xu, wi, ci}, 1, ir::allocate(pu, ir::seq({fill, c.taps(dot)})));
  ir::PrimFunc out = skip_padding_taps(f);
  const auto* guard = body_of(out, c.r).as<ir::IfThenElseNode>();
  ASSERT_NE(guard, nullptr) << ir::to_string(out);
  EXPECT_EQ(ir::to_string(guard->condition), guard_text({c.h + c.r >= 1, c.h + c.r < 5}))
      << ir::to_string(out);
}

TEST(SkipPaddingTaps, BuffersThatAreNotPaddedOnceStay) {
  PaddedOnce c;
  auto unchanged = [](const ir::PrimFunc& f) {
    return ir::to_string(skip_padding_taps(f)) == ir::to_string(f);
  };
  // A second store that is not zero off its bounds.
  ir::Stmt overwrite =
      ir::buffer_store(c.p, ir::make_float(1.0), {ir::make_int(0), ir::make_int(0)});
  EXPECT_TRUE(unchanged(ir::PrimFunc(
      "f", {c.x, c.w, c.c}, 1,
      ir::allocate(c.p, ir::seq({c.fill(c.in_rows()), overwrite, c.taps(c.accumulate())})))));
  // A guard that is not a bound on one index (i + j mixes two).
  EXPECT_TRUE(unchanged(c.func(c.i + c.j >= 3, c.accumulate())));
  // Allocated inside a loop: the local form, skip_zero_terms' after flattening.
  ir::Stmt inside =
      loop(c.h, 4, ir::allocate(c.p, ir::seq({c.fill(c.in_rows()), loop(c.r, 3, c.accumulate())})));
  EXPECT_TRUE(unchanged(ir::PrimFunc("f", {c.x, c.w, c.c}, 1, inside)));
  // An iteration that also stores something else runs; only its accumulating loop is guarded.
  ir::Stmt more = ir::seq({c.accumulate(), ir::buffer_store(c.c, ir::make_float(2.0), {c.h})});
  ir::PrimFunc out = skip_padding_taps(c.func(c.in_rows(), more));
  ASSERT_EQ(body_of(out, c.r).kind(), ir::StmtKind::kSeqStmt) << ir::to_string(out);
  EXPECT_EQ(body_of(out, c.r).as<ir::SeqStmtNode>()->seq[0].kind(), ir::StmtKind::kIfThenElse)
      << ir::to_string(out);
}

}  // namespace
}  // namespace tyche::lower
