#include <gmock/gmock.h>

#include <random>
#include <set>

#include "../schedule_test_util.h"
#include "arith/region.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "runtime/compare.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::small;

TEST(ComputeInline, PadIntoConv2d) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  BlockRV pad = sch.get_block("pad").value();
  BlockRV conv = sch.get_block("conv2d").value();
  sch.compute_inline(pad).value();
  std::string text = ir::to_string(sch.func());
  expect_golden("compute_inline_c2d", text);
  // The padding guard stays lazy so out-of-bounds input elements are never loaded.
  EXPECT_THAT(text, HasSubstr("if_then_else("));
  EXPECT_THAT(text, Not(HasSubstr("pad")));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The inlined block's handle is stale; the consumer's continues.
  EXPECT_EQ(sch.get_loops(pad).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.compute_inline(pad).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.get_loops(conv).value().size(), 7u);
  EXPECT_EQ(sch.get_block("pad").error().code(), ErrorCode::kUnknownBlock);
}

TEST(ComputeInline, BatchNormChain) {
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  BlockRV relu = sch.get_block("relu").value();
  for (const char* name : {"bias_add", "bn_mul", "bn_add"}) {
    sch.compute_inline(sch.get_block(name).value()).value();
    EXPECT_TRUE(computes_reference(w, sch.func())) << "after inlining " << name;
  }
  std::string text = ir::to_string(sch.func());
  expect_golden("compute_inline_cbr", text);
  EXPECT_THAT(
      text,
      HasSubstr(
          "relu[vn_1, vh_1, vw_1, vco_1] = max((conv2d[vn_1, vh_1, vw_1, vco_1] + bias[vco_1]) * "
          "scale[vco_1] + offset[vco_1], 0.0f)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "reads(conv2d[vn_1, vh_1, vw_1, vco_1], bias[vco_1], scale[vco_1], offset[vco_1])"));
  // relu now reads the reduction output: it cannot be folded into the conv.
  EXPECT_EQ(sch.reverse_compute_inline(relu).error().code(), ErrorCode::kIsReduction);
  // The pad can still go into the conv.
  sch.compute_inline(sch.get_block("pad").value()).value();
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_EQ(sch.get_loops(relu).value().size(), 4u);
}

TEST(ReverseComputeInline, ReluIntoBatchNorm) {
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  BlockRV bn_add = sch.get_block("bn_add").value();
  BlockRV relu = sch.get_block("relu").value();
  sch.compute_inline(sch.get_block("bias_add").value()).value();
  sch.compute_inline(sch.get_block("bn_mul").value()).value();
  sch.reverse_compute_inline(relu).value();
  std::string text = ir::to_string(sch.func());
  expect_golden("compute_inline_cbr_reverse", text);
  EXPECT_THAT(text, HasSubstr("writes(relu[vn_1, vh_1, vw_1, vco_1])"));
  EXPECT_THAT(text, Not(HasSubstr("bn_add = alloc_buffer")));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_EQ(sch.get_loops(relu).error().code(), ErrorCode::kStaleHandle);
  // bn_add keeps its handle and now writes the output, so it cannot be inlined any more.
  auto r = sch.compute_inline(bn_add);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIsOutput);
  EXPECT_EQ(r.error().reason(), "cannot inline block 'bn_add': it writes the output 'relu'");
}

TEST(ComputeInline, ExpIntoBothConsumers) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  BlockRV row_sum = sch.get_block("row_sum").value();
  sch.compute_inline(sch.get_block("row_exp").value()).value();
  std::string text = ir::to_string(sch.func());
  expect_golden("compute_inline_sfm", text);
  EXPECT_THAT(text,
              HasSubstr("row_sum[vi_1] = row_sum[vi_1] + exp(A[vi_1, vk_1] - row_max[vi_1])"));
  EXPECT_THAT(text,
              HasSubstr("softmax[vi_2, vj] = exp(A[vi_2, vj] - row_max[vi_2]) / row_sum[vi_2]"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // row_sum is a reduction; softmax reads two produced buffers.
  EXPECT_EQ(sch.compute_inline(row_sum).error().code(), ErrorCode::kIsReduction);
  auto two = sch.reverse_compute_inline(sch.get_block("softmax").value());
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().code(), ErrorCode::kNotComplete);
  EXPECT_THAT(two.error().reason(), HasSubstr("exactly one producer"));
}

TEST(ComputeInline, TransposesIntoBatchMatmul) {
  auto w = small("TBG-1");
  Schedule sch(w.func, true);
  sch.compute_inline(sch.get_block("Q_t").value()).value();
  sch.compute_inline(sch.get_block("K_t").value()).value();
  std::string text = ir::to_string(sch.func());
  expect_golden("compute_inline_tbg", text);
  EXPECT_THAT(text, HasSubstr("Q[vb, vi, vh, vrd] * K[vb, vj, vh, vrd]"));
  EXPECT_THAT(text, Not(HasSubstr("alloc_buffer")));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(ReverseComputeInline, RefusesReductionOrUnproducedConsumers) {
  // The batch matmul reads two produced buffers and is a reduction; conv2d is a reduction; pad
  // reads only a function input.
  auto w = small("TBG-1");
  Schedule sch(w.func, true);
  auto r = sch.reverse_compute_inline(sch.get_block("C").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotComplete);
  auto c2d = small("C2D-1");
  Schedule sch2(c2d.func, true);
  EXPECT_EQ(sch2.reverse_compute_inline(sch2.get_block("conv2d").value()).error().code(),
            ErrorCode::kNotComplete);
  // pad reads only the input: nothing to fold it into.
  EXPECT_EQ(sch2.reverse_compute_inline(sch2.get_block("pad").value()).error().code(),
            ErrorCode::kNotInlinable);
}

TEST(ReverseComputeInline, RefusesReductionProducer) {
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  std::string before = ir::to_string(sch.func());
  auto r = sch.reverse_compute_inline(sch.get_block("C").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIsReduction);
  EXPECT_EQ(r.error().reason(), "cannot reverse-inline block 'C' into reduction block 'dense'");
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(ComputeInline, RefusesReductionOutputAndStaleHandles) {
  auto gmm = small("GMM-1");
  Schedule sch(gmm.func, true);
  auto r = sch.compute_inline(sch.get_block("Z").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIsReduction);
  EXPECT_EQ(r.error().reason(), "cannot inline reduction block 'Z'");
  EXPECT_THAT(r.error().render(sch.func()), HasSubstr("# <-- here"));

  auto c2d = small("C2D-1");
  Schedule conv(c2d.func, true);
  EXPECT_EQ(conv.compute_inline(conv.get_block("conv2d").value()).error().reason(),
            "cannot inline reduction block 'conv2d'");

  auto dr = small("DENSE_RELU-1");
  Schedule sch2(dr.func, true);
  std::string before = ir::to_string(sch2.func());
  auto out = sch2.compute_inline(sch2.get_block("C").value());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kIsOutput);
  EXPECT_EQ(out.error().reason(), "cannot inline block 'C': it writes the output 'C'");
  EXPECT_EQ(ir::to_string(sch2.func()), before);

  EXPECT_EQ(sch2.compute_inline(BlockRV{999}).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch2.reverse_compute_inline(BlockRV{999}).error().code(), ErrorCode::kStaleHandle);
  auto root = sch2.get_block("root").value();
  EXPECT_EQ(sch2.compute_inline(root).error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(sch2.reverse_compute_inline(root).error().code(), ErrorCode::kUnsupported);
}

TEST(ComputeInline, AfterLoopTransformations) {
  // Inlining into a consumer whose loops were split and reordered; reverse-inlining into a
  // producer whose loops were fused.
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  BlockRV bn_mul = sch.get_block("bn_mul").value();
  auto loops = sch.get_loops(bn_mul).value();
  auto hs = sch.split(loops[1], {std::nullopt, 4}).value();
  sch.reorder({loops[3], hs[1]}).value();
  sch.compute_inline(sch.get_block("bias_add").value()).value();
  EXPECT_TRUE(computes_reference(w, sch.func()));
  BlockRV bn_add = sch.get_block("bn_add").value();
  auto add_loops = sch.get_loops(bn_add).value();
  sch.fuse({add_loops[2], add_loops[3]}).value();
  sch.reverse_compute_inline(sch.get_block("relu").value()).value();
  EXPECT_TRUE(computes_reference(w, sch.func()));
  sch.compute_inline(bn_mul).value();
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_EQ(sch.get_child_blocks(sch.get_block("root").value()).value().size(), 3u);
}

// ---- hand-built programs for cases the presets do not reach ----

// `body` (and `init`) in a block over `ivs`, with regions inferred, under one serial loop per
// iterator bound directly to it.
ir::Stmt nest(const std::string& name, const std::vector<ir::IterVar>& ivs, const ir::Stmt& body,
              const ir::Stmt& init = {}) {
  ir::Block draft = ir::make_block(name, ivs, {}, {}, init, body);
  arith::Analyzer analyzer;
  arith::AccessRegions r = arith::infer_access_regions(*draft, &analyzer);
  ir::Block block = ir::make_block(name, ivs, r.reads, r.writes, init, body);
  std::vector<ir::Var> loops;
  for (const ir::IterVar& iv : ivs) loops.emplace_back("l" + iv.var.name());
  ir::Stmt s = ir::block_realize(std::vector<ir::Expr>(loops.begin(), loops.end()),
                                 ir::make_bool(true), block);
  for (size_t i = ivs.size(); i-- > 0;)
    s = ir::for_loop(loops[i], ivs[i].dom.min, ivs[i].dom.extent, ir::ForKind::kSerial, s);
  return s;
}

ir::IterVar iv(const ir::Var& v, int extent, ir::IterKind kind = ir::IterKind::kSpatial) {
  return ir::IterVar{v, ir::Range(0, extent), kind};
}

ir::PrimFunc func(std::vector<ir::Buffer> params, int outputs, std::vector<ir::Stmt> nests,
                  std::vector<ir::Buffer> allocs) {
  ir::Stmt root = ir::block_realize(
      {}, ir::make_bool(true),
      ir::make_block("root", {}, {}, {}, ir::Stmt(), ir::seq(std::move(nests)), std::move(allocs)));
  return ir::PrimFunc("f", std::move(params), outputs, root);
}

// `after` computes what `before` computes, on random inputs.
::testing::AssertionResult same_outputs(const ir::PrimFunc& before, const ir::PrimFunc& after) {
  auto inputs = workloads::make_inputs(before, 5);
  auto expected = interp::run_on_inputs(before, inputs);
  std::vector<runtime::NDArray> actual;
  try {
    actual = interp::run_on_inputs(after, inputs);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << e.what() << "\n" << ir::to_string(after);
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    runtime::Comparison c = runtime::compare(actual[i], expected[i]);
    if (!c.ok) return ::testing::AssertionFailure() << c.message << "\n" << ir::to_string(after);
  }
  return ::testing::AssertionSuccess();
}

struct Bufs {
  ir::Buffer a = ir::make_buffer("A", kFloat32, {8, 4});
  ir::Buffer x = ir::make_buffer("X", kFloat32, {8});
  ir::Buffer b = ir::make_buffer("B", kFloat32, {8});
  ir::Buffer y = ir::make_buffer("Y", kFloat32, {8});
  ir::Buffer z = ir::make_buffer("Z", kFloat32, {8});
  ir::Buffer t = ir::make_buffer("T", kFloat32, {8});
};

TEST(ComputeInline, IntoTheInitOfAReduction) {
  // B[i] = X[i] * 2;  Y[i] = B[i] (init), Y[i] += A[i, k]
  Bufs f;
  ir::Var i("i"), j("j"), k("k");
  ir::Stmt producer =
      nest("B", {iv(i, 8)}, ir::buffer_store(f.b, ir::buffer_load(f.x, {i}) * 2.0, {i}));
  ir::Stmt consumer =
      nest("Y", {iv(j, 8), iv(k, 4, ir::IterKind::kReduce)},
           ir::buffer_store(f.y, ir::buffer_load(f.y, {j}) + ir::buffer_load(f.a, {j, k}), {j}),
           ir::buffer_store(f.y, ir::buffer_load(f.b, {j}), {j}));
  ir::PrimFunc fn = func({f.a, f.x, f.y}, 1, {producer, consumer}, {f.b});
  Schedule sch(fn, true);
  BlockRV y = sch.get_block("Y").value();
  sch.compute_inline(sch.get_block("B").value()).value();
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("Y[j] = X[j] * 2.0f"));
  EXPECT_THAT(text, HasSubstr("reads(X[j], A[j, k])"));
  EXPECT_THAT(text, Not(HasSubstr("B[")));
  EXPECT_TRUE(same_outputs(fn, sch.func()));
  EXPECT_EQ(sch.get_loops(y).value().size(), 2u);
}

TEST(ComputeInline, LoadsAtSeveralIndices) {
  // B[i] = X[i] + 1;  Y[j] = B[j] + B[7 - j]: inlinable, but not reverse-inlinable.
  Bufs f;
  ir::Var i("i"), j("j");
  ir::Stmt producer =
      nest("B", {iv(i, 8)}, ir::buffer_store(f.b, ir::buffer_load(f.x, {i}) + 1.0, {i}));
  ir::Stmt consumer =
      nest("Y", {iv(j, 8)},
           ir::buffer_store(f.y, ir::buffer_load(f.b, {j}) + ir::buffer_load(f.b, {7 - j}), {j}));
  ir::PrimFunc fn = func({f.x, f.y}, 1, {producer, consumer}, {f.b});
  Schedule sch(fn, true);
  auto r = sch.reverse_compute_inline(sch.get_block("Y").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotInlinable);
  EXPECT_THAT(r.error().reason(), HasSubstr("at different indices"));
  sch.compute_inline(sch.get_block("B").value()).value();
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("Y[j] = X[j] + 1.0f + (X[7 - j] + 1.0f)"));
  EXPECT_TRUE(same_outputs(fn, sch.func()));
}

TEST(ComputeInline, RefusesWhenAnInputIsOverwrittenBeforeTheConsumer) {
  // T[i] = X[i];  B[i] = T[i] * 2;  T[i] = X[i] + 5;  Y[i] = B[i] + T[i]
  Bufs f;
  ir::Var i0("i0"), i1("i1"), i2("i2"), i3("i3");
  ir::Stmt w1 = nest("T1", {iv(i0, 8)}, ir::buffer_store(f.t, ir::buffer_load(f.x, {i0}), {i0}));
  ir::Stmt p =
      nest("B", {iv(i1, 8)}, ir::buffer_store(f.b, ir::buffer_load(f.t, {i1}) * 2.0, {i1}));
  ir::Stmt w2 =
      nest("T2", {iv(i2, 8)}, ir::buffer_store(f.t, ir::buffer_load(f.x, {i2}) + 5.0, {i2}));
  ir::Stmt c =
      nest("Y", {iv(i3, 8)},
           ir::buffer_store(f.y, ir::buffer_load(f.b, {i3}) + ir::buffer_load(f.t, {i3}), {i3}));
  ir::PrimFunc fn = func({f.x, f.y}, 1, {w1, p, w2, c}, {f.t, f.b});
  Schedule sch(fn, true);
  auto r = sch.compute_inline(sch.get_block("B").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDependenceViolated);
  EXPECT_EQ(r.error().reason(),
            "cannot inline block 'B': block 'T2' overwrites 'T', which it reads, after it");
  // Y reads two produced buffers.
  EXPECT_EQ(sch.reverse_compute_inline(sch.get_block("Y").value()).error().code(),
            ErrorCode::kNotComplete);
}

TEST(ReverseComputeInline, PredicateWhereTheConsumerCoversLess) {
  // B[i] = X[i] + 1 for i < 8;  Z[j] = B[j] * 3 for j < 6: the producer must skip i >= 6.
  Bufs f;
  ir::Buffer z6 = ir::make_buffer("Z", kFloat32, {6});
  ir::Var i("i"), j("j");
  ir::Stmt producer =
      nest("B", {iv(i, 8)}, ir::buffer_store(f.b, ir::buffer_load(f.x, {i}) + 1.0, {i}));
  ir::Stmt consumer =
      nest("Z", {iv(j, 6)}, ir::buffer_store(z6, ir::buffer_load(f.b, {j}) * 3.0, {j}));
  ir::PrimFunc fn = func({f.x, z6}, 1, {producer, consumer}, {f.b});
  Schedule sch(fn, true);
  BlockRV b = sch.get_block("B").value();
  sch.reverse_compute_inline(sch.get_block("Z").value()).value();
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("where(li < 6)"));
  EXPECT_THAT(text, HasSubstr("Z[i] = (X[i] + 1.0f) * 3.0f"));
  EXPECT_TRUE(same_outputs(fn, sch.func()));
  EXPECT_EQ(sch.get_loops(b).value().size(), 1u);
}

TEST(ReverseComputeInline, RefusesUncoveredReadsAndOtherReaders) {
  Bufs f;
  ir::Var i("i"), j("j"), k("k");
  // B is computed for i < 6 only but Y reads all 8 elements.
  ir::Buffer b8 = ir::make_buffer("B", kFloat32, {8});
  ir::Stmt producer =
      nest("B", {iv(i, 6)}, ir::buffer_store(b8, ir::buffer_load(f.x, {i}) + 1.0, {i}));
  ir::Stmt consumer =
      nest("Y", {iv(j, 8)}, ir::buffer_store(f.y, ir::buffer_load(b8, {j}) * 3.0, {j}));
  Schedule sch(func({f.x, f.y}, 1, {producer, consumer}, {b8}), true);
  EXPECT_EQ(sch.reverse_compute_inline(sch.get_block("Y").value()).error().code(),
            ErrorCode::kNotCovered);
  EXPECT_EQ(sch.compute_inline(sch.get_block("B").value()).error().code(), ErrorCode::kNotCovered);

  // B feeds both Y and Z: Y cannot take B's place.
  ir::Var i2("i2"), j2("j2"), k2("k2");
  ir::Stmt p2 =
      nest("B", {iv(i2, 8)}, ir::buffer_store(f.b, ir::buffer_load(f.x, {i2}) + 1.0, {i2}));
  ir::Stmt c1 =
      nest("Y", {iv(j2, 8)}, ir::buffer_store(f.y, ir::buffer_load(f.b, {j2}) * 3.0, {j2}));
  ir::Stmt c2 =
      nest("Z", {iv(k2, 8)}, ir::buffer_store(f.z, ir::buffer_load(f.b, {k2}) - 1.0, {k2}));
  ir::PrimFunc fn = func({f.x, f.y, f.z}, 2, {p2, c1, c2}, {f.b});
  Schedule sch2(fn, true);
  auto r = sch2.reverse_compute_inline(sch2.get_block("Y").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDependenceViolated);
  EXPECT_EQ(r.error().reason(), "cannot reverse-inline block 'Y': block 'Z' also reads 'B'");
  sch2.compute_inline(sch2.get_block("B").value()).value();
  EXPECT_TRUE(same_outputs(fn, sch2.func()));
}

// Random sequences of inline / reverse-inline on random blocks, with random (possibly
// imperfect) splits in between: each step either computes the reference or is refused with the
// program unchanged.
TEST(ComputeInline, RandomSequences) {
  const std::set<ErrorCode> expected_refusals = {
      ErrorCode::kIsReduction,        ErrorCode::kIsOutput,        ErrorCode::kNotComplete,
      ErrorCode::kNotInlinable,       ErrorCode::kParameterBuffer, ErrorCode::kStaleHandle,
      ErrorCode::kDependenceViolated, ErrorCode::kNotCovered,      ErrorCode::kUnsupported};
  int accepted = 0, refused = 0, reverse_accepted = 0;
  for (const char* preset : {"CBR-1", "C2D-1", "SFM-1", "TBG-1"}) {
    auto w = small(preset);
    for (uint32_t seed = 0; seed < 16; ++seed) {
      std::mt19937 rng(seed);
      Schedule sch(w.func, true);
      std::vector<BlockRV> blocks = sch.get_child_blocks(sch.get_block("root").value()).value();
      for (int step = 0; step < 6; ++step) {
        BlockRV b = blocks[rng() % blocks.size()];
        int op = static_cast<int>(rng() % 5);
        if (op == 4) {  // reshape some loop nest; skipped when the block is gone
          auto loops = sch.get_loops(b);
          if (!loops.ok()) continue;
          LoopRV l = loops.value()[rng() % loops.value().size()];
          sch.split(l, {std::nullopt, static_cast<int64_t>(2 + rng() % 3)}).value();
          continue;
        }
        bool reverse = op >= 2;
        std::string before = ir::to_string(sch.func());
        Status s = reverse ? sch.reverse_compute_inline(b) : sch.compute_inline(b);
        if (s.ok()) {
          ++accepted;
          reverse_accepted += reverse ? 1 : 0;
          ASSERT_TRUE(computes_reference(w, sch.func()))
              << preset << " seed " << seed << " step " << step;
        } else {
          ++refused;
          EXPECT_TRUE(expected_refusals.count(s.error().code())) << s.error().reason();
          EXPECT_EQ(ir::to_string(sch.func()), before) << s.error().reason();
        }
      }
      EXPECT_TRUE(computes_reference(w, sch.func())) << preset << " seed " << seed;
    }
  }
  EXPECT_GT(accepted, 20);
  EXPECT_GT(reverse_accepted, 5);
  EXPECT_GT(refused, 20);
}

}  // namespace
}  // namespace tyche::schedule
