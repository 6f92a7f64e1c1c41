// Lowering: every pass keeps the program's meaning (the interpreter runs the IR after each pass
// and compares with the reference), and the passes do what they promise to the backend.
#include <gmock/gmock.h>

#include <cstring>
#include <functional>

#include "interp/interpreter.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "workloads/workloads.h"

namespace tyche::lower {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

runtime::NDArray flat_copy(const runtime::NDArray& a, int64_t size) {
  runtime::NDArray out({size}, a.dtype());
  std::memcpy(out.data(), a.data(), std::min(a.nbytes(), out.nbytes()));
  return out;
}

// Runs a lowered function (1-d params) on the workload's inputs and compares with the reference.
::testing::AssertionResult lowered_computes_reference(const workloads::Workload& w,
                                                      const ir::PrimFunc& lowered) {
  auto inputs = workloads::make_inputs(w.func, 3);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args;
  for (size_t i = 0; i < lowered->params.size(); ++i) {
    int64_t size = ir::const_shape(lowered->params[i])[0];
    args.push_back(i < inputs.size()
                       ? flat_copy(inputs[i], size)
                       : runtime::NDArray({size}, expected[i - inputs.size()].dtype()));
  }
  try {
    interp::run(lowered, args);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << e.what() << "\n" << ir::to_string(lowered);
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    runtime::NDArray got = flat_copy(args[inputs.size() + i], expected[i].numel());
    runtime::NDArray want = flat_copy(expected[i], expected[i].numel());
    runtime::Comparison c = runtime::compare(got, want);
    if (!c.ok) return ::testing::AssertionFailure() << c.message << "\n" << ir::to_string(lowered);
  }
  return ::testing::AssertionSuccess();
}

// Lowers with a log and checks the IR after every pass.
void expect_every_pass_correct(const workloads::Workload& w, const ir::PrimFunc& scheduled,
                               Lowered* out = nullptr) {
  std::vector<std::string> passes;
  LowerOptions opts;
  opts.log = [&](const std::string& pass, const ir::PrimFunc& f) {
    passes.push_back(pass);
    if (pass == "lower_blocks" || pass == "compact_buffers" || pass == "skip_padding_taps")
      return;  // still N-d: checked by later passes
    EXPECT_TRUE(lowered_computes_reference(w, f)) << "after " << pass;
  };
  Lowered l = lower(scheduled, opts);
  EXPECT_EQ(passes.size(), 11u);
  if (out) *out = l;
}

schedule::Schedule tiled_gmm(const workloads::Workload& w) {
  schedule::Schedule sch(w.func);
  auto z = sch.get_block("Z").value();
  auto l = sch.get_loops(z).value();
  auto i = sch.split(l[1], {std::nullopt, 4}).value();
  auto j = sch.split(l[2], {std::nullopt, 8}).value();
  auto k = sch.split(l[3], {std::nullopt, 2}).value();
  sch.reorder({i[0], j[0], k[0], k[1], i[1], j[1]}).value();
  sch.parallel(i[0]).value();
  sch.unroll(i[1]).value();
  sch.vectorize(j[1]).value();
  return sch;
}

bool contains_kind(const ir::Stmt& s, ir::ForKind kind) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Stmt& x) {
    if (auto* f = x.as<ir::ForNode>()) found = found || f->for_kind == kind;
  });
  return found;
}

TEST(Lower, EveryPresetFamilyUnscheduled) {
  for (const std::string& op : workloads::op_names()) {
    SCOPED_TRACE(op);
    auto w = workloads::scaled_down(workloads::get_preset(op + "-1"));
    expect_every_pass_correct(w, w.func);
  }
}

TEST(Lower, AConvolutionSkipsTheKernelRowsThatReadOnlyPadding) {
  auto w = workloads::scaled_down(workloads::get_preset("C2D-3"));
  schedule::Schedule sch(w.func);
  auto conv = sch.get_block("conv2d").value();
  auto l = sch.get_loops(conv).value();  // n h w co rh rw rc
  ASSERT_EQ(l.size(), 7u);
  ASSERT_TRUE(sch.compute_at(sch.get_block("pad").value(), l[4], true)
                  .ok());  // the padded rows per kernel row
  ASSERT_TRUE(sch.decompose_reduction(conv, l[4]).ok());
  Lowered out;
  expect_every_pass_correct(w, sch.func(), &out);
  int guarded = 0;
  ir::post_order_visit(out.func->body, [&](const ir::Stmt& s) {
    if (const auto* f = s.as<ir::ForNode>();
        f && f->loop_var.name() == "rh" && f->body.as<ir::IfThenElseNode>())
      ++guarded;
  });
  EXPECT_EQ(guarded, 1) << ir::to_string(out.func);
}

TEST(Lower, TiledParallelUnrolledVectorizedGmm) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  auto sch = tiled_gmm(w);
  Lowered l;
  expect_every_pass_correct(w, sch.func(), &l);
  EXPECT_TRUE(l.notes.empty()) << l.notes[0];
  std::string text = ir::to_string(l.func);
  EXPECT_THAT(text, HasSubstr("ramp("));  // the vectorized j loop
  EXPECT_FALSE(contains_kind(l.func->body, ir::ForKind::kVectorized));
  EXPECT_FALSE(contains_kind(l.func->body, ir::ForKind::kUnrolled));
  EXPECT_TRUE(contains_kind(l.func->body, ir::ForKind::kParallel));
  for (const ir::Buffer& p : l.func->params) EXPECT_EQ(p->shape.size(), 1u);
}

TEST(Lower, UnvectorizableLoopsBecomeScalarWithANote) {
  auto w = workloads::scaled_down(workloads::get_preset("C2D-1"));
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("pad").value()).value();  // n, h, w, c
  sch.vectorize(l[2]).value();  // the padding condition differs between lanes
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  ASSERT_EQ(lowered.notes.size(), 1u);
  EXPECT_THAT(
      lowered.notes[0],
      HasSubstr("runs as a scalar loop: an if_then_else whose condition differs between lanes"));
  // Over channels the condition is the same in every lane: vectorized.
  schedule::Schedule sch2(w.func);
  auto l2 = sch2.get_loops(sch2.get_block("pad").value()).value();
  sch2.vectorize(l2[3]).value();
  expect_every_pass_correct(w, sch2.func(), &lowered);
  EXPECT_TRUE(lowered.notes.empty());
}

TEST(Lower, AVectorizedLoopAroundAnotherRunsAsAScalarLoop) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("Z").value()).value();  // b, i, j, k
  sch.vectorize(l[1]).value();
  sch.vectorize(l[2]).value();
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  ASSERT_EQ(lowered.notes.size(), 1u);
  EXPECT_THAT(
      lowered.notes[0],
      HasSubstr("vectorized loop 'i' runs as a scalar loop: it contains a vectorized loop"));
  EXPECT_THAT(ir::to_string(lowered.func), HasSubstr("ramp("));  // j still is
}

TEST(Lower, ImperfectSplitsAndNonDivisibleVectors) {
  auto w = workloads::from_index_notation("C[i,j] = A[i,j] * 2.0 + B[j,i]", "i=10,j=30");
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  auto j = sch.split(l[1], {std::nullopt, 10}).value();  // 3 x 10: lanes = 10, not a power of two
  sch.vectorize(j[1]).value();
  auto i = sch.split(l[0], {std::nullopt, 4}).value();  // 3 x 4 = 12 > 10: a predicate
  sch.unroll(i[1]).value();
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  EXPECT_TRUE(lowered.notes.empty());
  // A predicate that depends on the vectorized variable keeps the loop scalar.
  schedule::Schedule sch2(w.func);
  auto l2 = sch2.get_loops(sch2.get_block("C").value()).value();
  auto j2 = sch2.split(l2[1], {std::nullopt, 8}).value();  // 4 x 8 = 32 > 30
  sch2.vectorize(j2[1]).value();
  expect_every_pass_correct(w, sch2.func(), &lowered);
  ASSERT_EQ(lowered.notes.size(), 1u);
  EXPECT_THAT(lowered.notes[0], HasSubstr("an if whose condition differs between lanes"));
}

// A panel layout (Y_global[b, k, j] -> [j // 8, b, k, j % 8]) read and written by vectors: 8
// lanes lie in one panel, so the indices stay ramps (contiguous) with no vector division left;
// 16 or 32 lanes cross panels, and the loop is strip-mined into vectors of 8 that do not.
TEST(Lower, APackedPanelIsAccessedByRamps) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));  // 32 x 32 x 32
  for (int lanes : {8, 16, 32}) {
    SCOPED_TRACE(lanes);
    schedule::Schedule sch(w.func);
    auto z = sch.get_block("Z").value();
    auto yc = sch.cache_read(z, 1, "global").value();
    sch.transform_layout(yc, 0, "lambda b, k, j: (j // 8, b, k, j % 8)").value();
    auto cl = sch.get_loops(yc).value();  // b, k, j
    sch.vectorize(sch.split(cl[2], {std::nullopt, lanes}).value()[1]).value();
    auto l = sch.get_loops(z).value();  // b, i, j, k
    auto j = sch.split(l[2], {std::nullopt, lanes}).value();
    sch.reorder({l[3], j[1]}).value();
    sch.vectorize(j[1]).value();
    Lowered lowered;
    expect_every_pass_correct(w, sch.func(), &lowered);
    EXPECT_TRUE(lowered.notes.empty()) << lowered.notes[0];
    std::string text = ir::to_string(lowered.func);
    EXPECT_THAT(text, HasSubstr("Y_global[ramp("));
    EXPECT_THAT(text, HasSubstr(", 1, 8)]"));
    EXPECT_THAT(text, Not(HasSubstr("// broadcast(")));
    EXPECT_THAT(text, Not(HasSubstr("% broadcast(")));
    EXPECT_EQ(text.find("_vo") != std::string::npos, lanes > 8);
  }
  // Blocks of 6 under vectors of 8: the lanes straddle blocks at varying offsets; gathered, exact.
  auto f = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=4,j=24,k=4");
  schedule::Schedule sch(f.func);
  auto c = sch.get_block("C").value();
  auto bc = sch.cache_read(c, 1, "global").value();
  sch.transform_layout(bc, 0, "lambda k, j: (j // 6, k, j % 6)").value();
  auto l = sch.get_loops(c).value();  // i, j, k
  auto j = sch.split(l[1], {std::nullopt, 8}).value();
  sch.reorder({l[2], j[1]}).value();
  sch.vectorize(j[1]).value();
  Lowered lowered;
  expect_every_pass_correct(f, sch.func(), &lowered);
  EXPECT_TRUE(lowered.notes.empty()) << lowered.notes[0];
  EXPECT_THAT(ir::to_string(lowered.func), HasSubstr("% broadcast(6, 8)"));
}

TEST(Lower, StorageAlignStridesAndIntermediateAllocations) {
  auto w = workloads::scaled_down(workloads::get_preset("CBR-1"));
  schedule::Schedule sch(w.func);
  auto pad = sch.get_block("pad").value();
  sch.storage_align(pad, 0, 2, 8, 1).value();
  sch.cache_write(sch.get_block("conv2d").value(), 0, "local").value();
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  EXPECT_THAT(ir::to_string(lowered.func), HasSubstr("allocate"));
}

TEST(Lower, LongVectorsAreStripMinedAndNestedParallelSerialized) {
  auto w = workloads::from_index_notation("B[i,j] = A[i,j] + 1.0", "i=4,j=128");
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("B").value()).value();
  sch.parallel(l[0]).value();
  sch.vectorize(l[1]).value();
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  EXPECT_THAT(ir::to_string(lowered.func), HasSubstr("ramp("));
  EXPECT_TRUE(lowered.notes.empty());
  schedule::Schedule sch2(w.func);
  auto l2 = sch2.get_loops(sch2.get_block("B").value()).value();
  sch2.parallel(l2[0]).value();
  sch2.parallel(l2[1]).value();
  expect_every_pass_correct(w, sch2.func(), &lowered);
  ASSERT_EQ(lowered.notes.size(), 1u);
  EXPECT_THAT(lowered.notes[0], HasSubstr("inside another parallel loop"));
}

// The size of the allocation of `name` and the loop variables around it, outermost first.
std::pair<int64_t, std::vector<std::string>> allocation_of(const ir::Stmt& s,
                                                           const std::string& name) {
  std::pair<int64_t, std::vector<std::string>> found{-1, {}};
  std::vector<std::string> loops;
  std::function<void(const ir::Stmt&)> walk = [&](const ir::Stmt& x) {
    if (auto* f = x.as<ir::ForNode>()) {
      loops.push_back(f->loop_var->name);
      walk(f->body);
      loops.pop_back();
    } else if (auto* a = x.as<ir::AllocateNode>()) {
      if (a->buffer->name == name) found = {*ir::as_const_int(a->buffer->shape[0]), loops};
      walk(a->body);
    } else if (auto* q = x.as<ir::SeqStmtNode>()) {
      for (const ir::Stmt& c : q->seq) walk(c);
    } else if (auto* i = x.as<ir::IfThenElseNode>()) {
      walk(i->then_case);
      if (i->else_case.defined()) walk(i->else_case);
    }
  };
  walk(s);
  return found;
}

TEST(Lower, ACacheReadUnderAParallelLoopIsPerIterationEvenWhenIterationsCopyTheSameElements) {
  // X's rows of an i-tile are copied under i0, inside the parallel j0 loop: every j0 iteration
  // copies the same elements, but writes them all before reading them, so the copy belongs to
  // one iteration of i0 (one thread), shrunk to the tile, not to a buffer the threads share.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=16,j=32,k=8");
  schedule::Schedule sch(w.func);
  auto c = sch.get_block("C").value();
  auto cached = sch.cache_read(c, 0, "global").value();
  auto l = sch.get_loops(c).value();  // i, j, k
  auto i = sch.split(l[0], {std::nullopt, 4}).value();
  auto j = sch.split(l[1], {std::nullopt, 8}).value();
  sch.reorder({j[0], i[0], i[1], j[1]}).value();
  sch.compute_at(cached, i[0]).value();
  sch.parallel(j[0]).value();
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  auto [size, loops] = allocation_of(lowered.func->body, "A_global");
  EXPECT_EQ(size, 4 * 8) << ir::to_string(lowered.func);
  EXPECT_THAT(loops, ::testing::ElementsAre("j_0", "i_0"));
}

TEST(Lower, AWriteCacheUnderAFusedParallelLoopIsPerIteration) {
  // C's tiles accumulate in a write cache placed under the j-tile loop; the outer tile loops are
  // fused into one parallel loop, whose iteration f drives both i (f // 4) and j (f % 4): no
  // single dimension moves by a whole tile each iteration, yet no two iterations share a tile,
  // so the cache is one tile per iteration (per thread), not a buffer of all of C the threads
  // share.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=16,j=32,k=8");
  schedule::Schedule sch(w.func);
  auto c = sch.get_block("C").value();
  auto cache = sch.cache_write(c, 0, "global").value();
  auto l = sch.get_loops(c).value();  // i, j, k
  auto i = sch.split(l[0], {std::nullopt, 4}).value();
  auto j = sch.split(l[1], {std::nullopt, 8}).value();
  sch.reorder({i[0], j[0], i[1], l[2], j[1]}).value();
  sch.reverse_compute_at(cache, j[0]).value();
  auto fused = sch.fuse({i[0], j[0]}).value();
  sch.parallel(fused).value();
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  auto [size, loops] = allocation_of(lowered.func->body, "C_global");
  EXPECT_EQ(size, 4 * 8) << ir::to_string(lowered.func);
  EXPECT_THAT(loops, ::testing::ElementsAre("i_0_j_0_fused"));
}

// Loops only (as after lower_blocks): T[4] at the root; per iteration of i, `fill` stores to T
// and `use` reads it into C.
ir::PrimFunc staged(const ir::Var& i, const ir::Stmt& fill, const ir::Stmt& use,
                    const ir::Buffer& t, const ir::Buffer& a, const ir::Buffer& c) {
  return ir::PrimFunc("f", {a, c}, 1,
                      ir::allocate(t, ir::for_loop(i, ir::make_int(0), ir::make_int(4),
                                                   ir::ForKind::kParallel, ir::seq({fill, use}))));
}

TEST(Lower, AnAllocationStaysAboveALoopWhoseIterationsReadWhatOthersWrote) {
  ir::Buffer t = ir::make_buffer("T", kFloat32, {ir::make_int(4)}),
             a = ir::make_buffer("A", kFloat32, {ir::make_int(16)});
  ir::Buffer c = ir::make_buffer("C", kFloat32, {ir::make_int(16)});
  ir::Var i("i"), j("j"), k("k");
  auto loop = [](const ir::Var& v, int64_t n, ir::Stmt body) {
    return ir::for_loop(v, ir::make_int(0), ir::make_int(n), ir::ForKind::kSerial, std::move(body));
  };
  ir::Stmt use = loop(k, 4, ir::buffer_store(c, ir::buffer_load(t, {k}), {i * 4 + k}));
  // Covering copies: the allocation moves into the parallel loop.
  ir::Stmt full = loop(j, 4, ir::buffer_store(t, ir::buffer_load(a, {i * 4 + j}), {j}));
  EXPECT_EQ(allocation_of(compact_buffers(staged(i, full, use, t, a, c))->body, "T").second,
            std::vector<std::string>{"i"});
  // Iteration i writes T[0, 2) only; T[2, 4) is what an earlier iteration left.
  ir::Stmt half = loop(j, 2, ir::buffer_store(t, ir::buffer_load(a, {i * 4 + j}), {j}));
  EXPECT_TRUE(
      allocation_of(compact_buffers(staged(i, half, use, t, a, c))->body, "T").second.empty());
  // A copy that may not run (under an if) covers nothing.
  ir::Stmt maybe = ir::if_then_else(i < 2, full);
  EXPECT_TRUE(
      allocation_of(compact_buffers(staged(i, maybe, use, t, a, c))->body, "T").second.empty());
  // A store guarded by "its index is in bounds" (the padding rows of a tile that does not divide
  // its loop) stores every element that exists: it covers the reads. Any other guard does not.
  ir::Stmt in_bounds = loop(
      j, 4, ir::if_then_else(j < 4, ir::buffer_store(t, ir::buffer_load(a, {i * 4 + j}), {j})));
  EXPECT_EQ(allocation_of(compact_buffers(staged(i, in_bounds, use, t, a, c))->body, "T").second,
            std::vector<std::string>{"i"});
  ir::Stmt partial = loop(
      j, 4, ir::if_then_else(j < 3, ir::buffer_store(t, ir::buffer_load(a, {i * 4 + j}), {j})));
  EXPECT_TRUE(
      allocation_of(compact_buffers(staged(i, partial, use, t, a, c))->body, "T").second.empty());
  // Stores in the same loop as the reads: iteration k = 0 reads T[3] before it is written.
  ir::Stmt interleaved =
      loop(k, 4,
           ir::seq({ir::buffer_store(t, ir::buffer_load(a, {i * 4 + k}), {k}),
                    ir::buffer_store(c, ir::buffer_load(t, {ir::make_int(3) - k}), {i * 4 + k})}));
  ir::PrimFunc f("f", {a, c}, 1,
                 ir::allocate(t, ir::for_loop(i, ir::make_int(0), ir::make_int(4),
                                              ir::ForKind::kParallel, interleaved)));
  EXPECT_TRUE(allocation_of(compact_buffers(f)->body, "T").second.empty());
}

// A padded register tile (rows split by a non-divisor): the k loop comes once without guards
// (the full tiles) and once with them (the last), and the accumulator is one tile, the guarded
// stores of its padding rows notwithstanding.
TEST(Lower, APaddedRegisterTileLowersToAnUnguardedKernelAndACompactAccumulator) {
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]",
                                          "i=20,j=16,k=8");  // 20 rows in tiles of 6
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
  Lowered lowered;
  expect_every_pass_correct(w, sch.func(), &lowered);
  int unguarded_k = 0, guarded_k = 0;
  ir::post_order_visit(lowered.func->body, [&](const ir::Stmt& x) {
    auto* f = x.as<ir::ForNode>();
    if (!f || f->loop_var->name != "k") return;
    bool guarded = false;
    ir::post_order_visit(f->body, [&](const ir::Stmt& y) {
      guarded = guarded || y.kind() == ir::StmtKind::kIfThenElse;
    });
    (guarded ? guarded_k : unguarded_k)++;
  });
  EXPECT_EQ(unguarded_k, 1) << ir::to_string(lowered.func);
  EXPECT_EQ(guarded_k, 1);
  EXPECT_EQ(allocation_of(lowered.func->body, "C_global"),
            std::make_pair(int64_t{6 * 8}, std::vector<std::string>{"i_0", "j_0"}))
      << ir::to_string(lowered.func);
}

}  // namespace
}  // namespace tyche::lower
