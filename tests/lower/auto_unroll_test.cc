// Auto-unroll: under pragma_auto_unroll_max_step = N (explicit), serial loops of constant extent
// whose step count (extent x steps of the body; a sequence sums; a vector store counts 1) is at
// most N are unrolled, inner loops first, never around a loop that stays a loop.
#include <gmock/gmock.h>

#include <cstring>

#include "interp/interpreter.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "te/tensor.h"
#include "workloads/workloads.h"

namespace tyche::lower {
namespace {

constexpr const char* kMaxStep = "pragma_auto_unroll_max_step";
constexpr const char* kExplicit = "pragma_unroll_explicit";

// C = (A * 2) + 1 over 4 x 4 x 8, with B = A * 2 a separate stage.
ir::PrimFunc two_stage() {
  using namespace te;
  Tensor a = placeholder({4, 4, 8}, kFloat32, "A");
  Tensor b = compute(
      {4, 4, 8}, [&](Var i, Var j, Var k) { return a(i, j, k) * 2.0f; }, "B");
  Tensor c = compute(
      {4, 4, 8}, [&](Var i, Var j, Var k) { return b(i, j, k) + 1.0f; }, "C");
  return create_prim_func({a, c});
}

ir::PrimFunc one_stage() {
  using namespace te;
  Tensor a = placeholder({4, 4, 8}, kFloat32, "A");
  Tensor c = compute(
      {4, 4, 8}, [&](Var i, Var j, Var k) { return a(i, j, k) * 2.0f + 1.0f; }, "C");
  return create_prim_func({a, c});
}

struct Counts {
  int loops = 0, stores = 0;
};

Counts count(const ir::PrimFunc& f) {
  Counts c;
  ir::post_order_visit(f->body, [&](const ir::Stmt& s) {
    c.loops += s.kind() == ir::StmtKind::kFor;
    c.stores += s.kind() == ir::StmtKind::kBufferStore;
  });
  return c;
}

// Lowers; checks the lowered function computes what the interpreter computes on the input.
Counts lower_checked(const ir::PrimFunc& f) {
  Lowered l = lower(f);
  auto inputs = workloads::make_inputs(f, 3);
  auto expected = interp::run_on_inputs(f, inputs);
  std::vector<runtime::NDArray> args;
  for (const auto& in : inputs) {
    runtime::NDArray flat({in.numel()}, in.dtype());
    std::memcpy(flat.data(), in.data(), in.nbytes());
    args.push_back(flat);
  }
  for (const auto& e : expected) args.push_back(runtime::NDArray({e.numel()}, e.dtype()));
  interp::run(l.func, args);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(std::memcmp(args[inputs.size() + i].data(), expected[i].data(), expected[i].nbytes()),
              0)
        << ir::to_string(l.func);
  }
  return count(l.func);
}

// Annotates the outermost loop of `block` with the pragma.
void pragma(schedule::Schedule& sch, const std::string& block, int64_t max_step,
            int64_t explicit_unroll = 1) {
  auto l = sch.get_loops(sch.get_block(block).value()).value();
  sch.annotate(l[0], kMaxStep, max_step).value();
  sch.annotate(l[0], kExplicit, explicit_unroll).value();
}

TEST(AutoUnroll, UnrollsInnerLoopsWhileTheStepCountFits) {
  struct Case {
    int64_t max_step;
    int loops, stores;
  };
  // i(4) j(4) k(8): k has 8 steps, j 32, i 128.
  for (Case c : {Case{0, 3, 1}, Case{7, 3, 1}, Case{8, 2, 8}, Case{31, 2, 8}, Case{32, 1, 32},
                 Case{128, 0, 128}}) {
    SCOPED_TRACE(c.max_step);
    schedule::Schedule sch(one_stage());
    pragma(sch, "C", c.max_step);
    Counts n = lower_checked(sch.func());
    EXPECT_EQ(n.loops, c.loops);
    EXPECT_EQ(n.stores, c.stores);
  }
}

TEST(AutoUnroll, ImplicitLeavesLoopsToTheCompiler) {
  schedule::Schedule sch(one_stage());
  pragma(sch, "C", 512, /*explicit_unroll=*/0);
  Counts n = lower_checked(sch.func());
  EXPECT_EQ(n.loops, 3);
  EXPECT_EQ(n.stores, 1);
}

TEST(AutoUnroll, SequencesSumTheirSteps) {
  // B computed under C's j: j's body is B's k loop then C's k loop, 16 steps.
  schedule::Schedule sch(two_stage());
  auto c = sch.get_loops(sch.get_block("C").value()).value();
  sch.compute_at(sch.get_block("B").value(), c[1]).value();
  schedule::Schedule wide(sch.func());
  pragma(sch, "C", 16);
  Counts n = lower_checked(sch.func());
  EXPECT_EQ(n.loops, 2);  // i, j: 4 x 16 = 64 > 16
  EXPECT_EQ(n.stores, 16);
  pragma(wide, "C", 64);
  n = lower_checked(wide.func());
  EXPECT_EQ(n.loops, 1);  // i: 4 x 64 > 64
  EXPECT_EQ(n.stores, 64);
}

TEST(AutoUnroll, AVectorizedLoopCountsOneStep) {
  schedule::Schedule sch(one_stage());
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  sch.vectorize(l[2]).value();
  pragma(sch, "C", 4);
  Counts n = lower_checked(sch.func());
  EXPECT_EQ(n.loops, 1);  // j (4 vector stores) unrolled, i (16) kept
  EXPECT_EQ(n.stores, 4);
}

TEST(AutoUnroll, NeverAroundALoopThatStays) {
  // The inner k is parallel: it stays a loop, so j and i stay loops whatever the limit.
  schedule::Schedule sch(one_stage());
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  sch.parallel(l[2]).value();
  pragma(sch, "C", 100000);
  Counts n = lower_checked(sch.func());
  EXPECT_EQ(n.loops, 3);
  // A pragma on an inner loop leaves the loops outside it alone.
  schedule::Schedule inner(one_stage());
  auto il = inner.get_loops(inner.get_block("C").value()).value();
  inner.annotate(il[1], kMaxStep, int64_t{100000}).value();
  n = lower_checked(inner.func());
  EXPECT_EQ(n.loops, 1);
  EXPECT_EQ(n.stores, 32);
}

TEST(AutoUnroll, ExplicitUnrollKeepsItsLimit) {
  // unroll() still unrolls up to kMaxUnrollExtent whatever the pragma says.
  schedule::Schedule sch(one_stage());
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  sch.unroll(l[2]).value();
  Counts n = lower_checked(sch.func());
  EXPECT_EQ(n.loops, 2);
  EXPECT_EQ(n.stores, 8);
}

}  // namespace
}  // namespace tyche::lower
