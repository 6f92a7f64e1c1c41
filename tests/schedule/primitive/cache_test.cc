// cache_read, cache_write, set_scope, storage_align and transform_layout: golden IR, numerics
// against the reference,
// the refusals, and a seeded random mix of them.
#include <gmock/gmock.h>

#include <random>

#include "../schedule_test_util.h"
#include "ir/op.h"
#include "runtime/compare.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {
namespace {

using testing::block_name;
using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;
using testing::small;

std::vector<std::string> root_children(Schedule& sch) {
  std::vector<std::string> out;
  for (const BlockRV& b : sch.get_child_blocks(sch.get_block("root").value()).value())
    out.push_back(block_name(sch, b));
  return out;
}

// for i in range(8): B[i] = A[i] * 2 (block "P"); C[i] = B[i] + 1 (block "Q"), one loop for both:
// the shape compute_at produces, where a cache stage cannot go between producer and consumer.
ir::PrimFunc shared_nest_func() {
  ir::Buffer a = ir::make_buffer("A", kFloat32, {8});
  ir::Buffer b = ir::make_buffer("B", kFloat32, {8});
  ir::Buffer c = ir::make_buffer("C", kFloat32, {8});
  ir::Var i("i");
  auto block = [&](const std::string& name, const ir::Buffer& src, const ir::Buffer& dst,
                   ir::Expr (*f)(ir::Expr)) {
    ir::Var v("v" + name);
    ir::Block blk = ir::make_block(name, {ir::IterVar{v, ir::Range(0, 8), ir::IterKind::kSpatial}},
                                   {ir::BufferRegion(src, {ir::Range(v, 1)})},
                                   {ir::BufferRegion(dst, {ir::Range(v, 1)})}, ir::Stmt(),
                                   ir::buffer_store(dst, f(ir::buffer_load(src, {v})), {v}));
    return ir::block_realize({i}, ir::make_bool(true), blk);
  };
  ir::Stmt loop =
      ir::for_loop(i, 0, 8, ir::ForKind::kSerial,
                   ir::seq({block("P", a, b, [](ir::Expr x) { return x * ir::make_float(2.0); }),
                            block("Q", b, c, [](ir::Expr x) { return x + ir::make_float(1.0); })}));
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), loop, {b});
  return ir::PrimFunc("nest", {a, c}, 1, ir::block_realize({}, ir::make_bool(true), root));
}

// for io in range(2): block "outer" (a blockized tile) around
//   for ii in range(4): block "inner": C[vio * 4 + ii] = A[vio * 4 + ii] * 2
ir::PrimFunc nested_scope_func() {
  ir::Buffer a = ir::make_buffer("A", kFloat32, {8});
  ir::Buffer c = ir::make_buffer("C", kFloat32, {8});
  ir::Var io("io"), ii("ii"), vio("vio"), vi("vi");
  ir::Block inner = ir::make_block(
      "inner", {ir::IterVar{vi, ir::Range(0, 8), ir::IterKind::kSpatial}},
      {ir::BufferRegion(a, {ir::Range(vi, 1)})}, {ir::BufferRegion(c, {ir::Range(vi, 1)})},
      ir::Stmt(), ir::buffer_store(c, ir::buffer_load(a, {vi}) * ir::make_float(2.0), {vi}));
  ir::Stmt inner_loop = ir::for_loop(ii, 0, 4, ir::ForKind::kSerial,
                                     ir::block_realize({vio * 4 + ii}, ir::make_bool(true), inner));
  ir::Block outer =
      ir::make_block("outer", {ir::IterVar{vio, ir::Range(0, 2), ir::IterKind::kSpatial}},
                     {ir::BufferRegion(a, {ir::Range(vio * 4, 4)})},
                     {ir::BufferRegion(c, {ir::Range(vio * 4, 4)})}, ir::Stmt(), inner_loop);
  ir::Stmt loop = ir::for_loop(io, 0, 2, ir::ForKind::kSerial,
                               ir::block_realize({io}, ir::make_bool(true), outer));
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), loop);
  return ir::PrimFunc("nested", {a, c}, 1, ir::block_realize({}, ir::make_bool(true), root));
}

// The scheduled function computes what the unscheduled one does (for hand-built functions).
::testing::AssertionResult same_results(const ir::PrimFunc& original,
                                        const ir::PrimFunc& scheduled) {
  auto inputs = workloads::make_inputs(original, 5);
  auto expected = interp::run_on_inputs(original, inputs);
  std::vector<runtime::NDArray> actual;
  try {
    actual = interp::run_on_inputs(scheduled, inputs);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "interpreter: " << e.what() << "\n"
                                         << ir::to_string(scheduled);
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    runtime::Comparison c = runtime::compare(actual[i], expected[i]);
    if (!c.ok)
      return ::testing::AssertionFailure() << c.message << "\n" << ir::to_string(scheduled);
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------------------------
// cache_read

TEST(CacheRead, GmmSharedInputs) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  BlockRV xs = sch.cache_read(z, 0, "shared").value();
  BlockRV ys = sch.cache_read(z, 1, "shared").value();
  EXPECT_EQ(block_name(sch, xs), "X_shared");
  EXPECT_EQ(block_name(sch, ys), "Y_shared");
  expect_golden("cache_read_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The block and its loops keep their handles; the new block is usable.
  EXPECT_THAT(root_children(sch), ::testing::ElementsAre("X_shared", "Y_shared", "Z"));
  EXPECT_EQ(sch.get_loops(z).value().size(), 4u);
  EXPECT_TRUE(sch.split(loops[1], {4, 8}).ok());
  EXPECT_EQ(sch.get_loops(xs).value().size(), 3u);
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheRead, C2DPadAfterItsProducer) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  BlockRV conv = sch.get_block("conv2d").value();
  BlockRV ps = sch.cache_read(conv, 0, "shared").value();
  EXPECT_EQ(block_name(sch, ps), "pad_shared");
  EXPECT_THAT(root_children(sch), ::testing::ElementsAre("pad", "pad_shared", "conv2d"));
  expect_golden("cache_read_c2d", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The weights too, and the padding block's input (its guarded reads stay in bounds).
  EXPECT_TRUE(sch.cache_read(conv, 1, "local").ok());
  EXPECT_TRUE(sch.cache_read(sch.get_block("pad").value(), 0, "global").ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheRead, OnlyTheGivenConsumerIsRedirected) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  BlockRV mx = sch.get_block("row_max").value();
  BlockRV ex = sch.get_block("row_exp").value();
  EXPECT_EQ(block_name(sch, sch.cache_read(mx, 0, "local").value()), "A_local");
  EXPECT_EQ(block_name(sch, sch.cache_read(ex, 0, "local").value()), "A_local_1");  // a fresh name
  BlockRV sm = sch.cache_read(sch.get_block("softmax").value(), 1, "shared.dyn").value();
  EXPECT_EQ(block_name(sch, sm), "row_sum_shared_dyn");
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("scope=\"shared.dyn\""));
  EXPECT_THAT(text, HasSubstr("row_exp[vi_1, vj] = exp(A_local_1[vi_1, vj] - row_max[vi_1])"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheRead, AfterTilingCopiesWhatTheNestReads) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = sch.get_loops(z).value();
  sch.split(loops[1], {std::nullopt, 5}).value();  // imperfect: the relaxed read region is clipped
  sch.split(loops[3], {4, 8}).value();
  EXPECT_TRUE(sch.cache_read(z, 0, "shared").ok());
  EXPECT_TRUE(sch.cache_read(z, 1, "local").ok());
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("for ax1 in range(32):"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheRead, Refusals) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  std::string before = ir::to_string(sch.func());
  auto bad = sch.cache_read(z, 2, "shared");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kOutOfRange);
  EXPECT_THAT(bad.error().reason(),
              HasSubstr("block 'Z' reads 2 buffer(s); index 2 is out of range"));
  EXPECT_EQ(sch.cache_read(z, -1, "shared").error().code(), ErrorCode::kOutOfRange);
  auto scope = sch.cache_read(z, 0, "texture");
  ASSERT_FALSE(scope.ok());
  EXPECT_EQ(scope.error().code(), ErrorCode::kUnknownName);
  EXPECT_THAT(scope.error().reason(), HasSubstr("unknown storage scope 'texture'"));
  EXPECT_EQ(sch.cache_read(sch.get_block("root").value(), 0, "shared").error().code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(sch.cache_read(BlockRV{9999}, 0, "shared").error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(ir::to_string(sch.func()), before);
  EXPECT_THAT(bad.error().render(sch.func()), HasSubstr("with block(\"Z\"):  # <-- here"));
}

TEST(CacheRead, RefusesAProducerInTheSameNest) {
  Schedule sch(shared_nest_func(), true);
  auto r = sch.cache_read(sch.get_block("Q").value(), 0, "local");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDependenceViolated);
  EXPECT_THAT(r.error().reason(),
              HasSubstr("block 'P' writes 'B' inside the loop nest of block 'Q'"));
  // Reading a function input is fine there.
  EXPECT_TRUE(sch.cache_read(sch.get_block("P").value(), 0, "local").ok());
  EXPECT_THAT(root_children(sch), ::testing::ElementsAre("A_local", "P", "Q"));
  EXPECT_TRUE(same_results(shared_nest_func(), sch.func()));
}

TEST(CacheRead, InsideANestedScope) {
  ir::PrimFunc f = nested_scope_func();
  Schedule sch(f, true);
  BlockRV inner = sch.get_block("inner").value();
  BlockRV stage = sch.cache_read(inner, 0, "local").value();
  std::string text = ir::to_string(sch.func());
  // The copy sits in the tile's block, allocated there, and covers only the tile.
  EXPECT_THAT(text, HasSubstr("A_local = alloc_buffer((8,), \"float32\", scope=\"local\")\n        "
                              "for ax0 in range(4):"));
  EXPECT_THAT(text, HasSubstr("v0 = axis.spatial((vio * 4, vio * 4 + 4), vio * 4 + ax0)"));
  EXPECT_EQ(block_name(sch, sch.get_child_blocks(sch.get_block("outer").value()).value()[0]),
            "A_local");
  EXPECT_TRUE(sch.block_sref(stage).ok());
  EXPECT_TRUE(same_results(f, sch.func()));
  // cache_write keeps to the root scope.
  auto w = sch.cache_write(inner, 0, "local");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.error().reason(), HasSubstr("block 'inner' is nested in block 'outer'"));
  EXPECT_TRUE(sch.cache_write(sch.get_block("outer").value(), 0, "local").ok());
  EXPECT_TRUE(same_results(f, sch.func()));
}

// ---------------------------------------------------------------------------------------------
// cache_write

TEST(CacheWrite, GmmLocalAccumulator) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  BlockRV zl = sch.cache_write(z, 0, "local").value();
  EXPECT_EQ(block_name(sch, zl), "Z_local");
  EXPECT_THAT(root_children(sch), ::testing::ElementsAre("Z", "Z_local"));
  expect_golden("cache_write_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheWrite, GmmReadAndWriteCaches) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  sch.cache_read(z, 0, "shared").value();
  sch.cache_read(z, 1, "shared").value();
  sch.cache_write(z, 0, "local").value();
  auto loops = sch.get_loops(z).value();
  sch.split(loops[2], {std::nullopt, 3}).value();
  EXPECT_THAT(root_children(sch), ::testing::ElementsAre("X_shared", "Y_shared", "Z", "Z_local"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheWrite, SoftmaxRowSum) {
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  BlockRV rs = sch.get_block("row_sum").value();
  BlockRV c = sch.cache_write(rs, 0, "local").value();
  EXPECT_EQ(block_name(sch, c), "row_sum_local");
  EXPECT_THAT(root_children(sch),
              ::testing::ElementsAre("row_max", "row_exp", "row_sum", "row_sum_local", "softmax"));
  expect_golden("cache_write_sfm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The consumer can then read through a cache of its own.
  EXPECT_TRUE(sch.cache_read(sch.get_block("softmax").value(), 1, "shared").ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheWrite, C2DCompleteAndReductionBlocks) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  EXPECT_TRUE(sch.cache_write(sch.get_block("pad").value(), 0, "shared").ok());
  BlockRV conv = sch.get_block("conv2d").value();
  auto loops = sch.get_loops(conv).value();
  sch.split(loops[2], {std::nullopt, 4}).value();  // 6 = 2 * 4 - 2: clipped copy-back region
  EXPECT_TRUE(sch.cache_write(conv, 0, "local").ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(CacheWrite, Refusals) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  std::string before = ir::to_string(sch.func());
  auto bad = sch.cache_write(z, 1, "local");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kOutOfRange);
  EXPECT_THAT(bad.error().reason(),
              HasSubstr("block 'Z' writes 1 buffer(s); index 1 is out of range"));
  EXPECT_EQ(sch.cache_write(z, 0, "registers").error().code(), ErrorCode::kUnknownName);
  EXPECT_EQ(sch.cache_write(sch.get_block("root").value(), 0, "local").error().code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(sch.cache_write(BlockRV{-3}, 0, "local").error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(ir::to_string(sch.func()), before);

  Schedule nest(shared_nest_func(), true);
  auto r = nest.cache_write(nest.get_block("P").value(), 0, "local");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().reason(),
              HasSubstr("block 'Q' uses 'B' inside the loop nest of block 'P'"));
  EXPECT_TRUE(nest.cache_write(nest.get_block("Q").value(), 0, "local").ok());
  EXPECT_TRUE(same_results(shared_nest_func(), nest.func()));
}

// ---------------------------------------------------------------------------------------------
// set_scope and storage_align

TEST(SetScope, CbrConvToLocal) {
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  BlockRV conv = sch.get_block("conv2d").value();
  BlockRV bias = sch.get_block("bias_add").value();
  ASSERT_TRUE(sch.set_scope(conv, 0, "local").ok());
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("conv2d = alloc_buffer((1, 6, 6, 8), \"float32\", scope=\"local\")"));
  expect_golden("set_scope_cbr", text);
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // Every user sees the new buffer: the consumer's producer is still conv2d, handles continue.
  auto producers = sch.get_producers(bias).value();
  ASSERT_EQ(producers.size(), 1u);
  EXPECT_EQ(block_name(sch, producers[0]), "conv2d");
  EXPECT_TRUE(sch.get_loops(conv).ok());
  EXPECT_TRUE(sch.set_scope(conv, 0, "local").ok());  // the same scope again: nothing to do
  EXPECT_EQ(ir::to_string(sch.func()), text);
}

TEST(SetScope, Refusals) {
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  std::string before = ir::to_string(sch.func());
  auto param = sch.set_scope(sch.get_block("relu").value(), 0, "shared");
  ASSERT_FALSE(param.ok());
  EXPECT_EQ(param.error().code(), ErrorCode::kParameterBuffer);
  EXPECT_THAT(param.error().reason(),
              HasSubstr("cannot change the scope of function parameter 'relu'"));
  EXPECT_EQ(sch.set_scope(sch.get_block("pad").value(), 1, "shared").error().code(),
            ErrorCode::kOutOfRange);
  EXPECT_EQ(sch.set_scope(sch.get_block("pad").value(), 0, "L2").error().code(),
            ErrorCode::kUnknownName);
  EXPECT_EQ(sch.set_scope(BlockRV{777}, 0, "shared").error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(StorageAlign, CbrPadStrides) {
  auto w = small("CBR-1");  // pad is (1, 18, 18, 3): compact strides (972, 54, 3, 1)
  Schedule sch(w.func, true);
  BlockRV pad = sch.get_block("pad").value();
  ASSERT_TRUE(sch.storage_align(pad, 0, 2, 8, 1).ok());  // 3 -> 9, then 18 * 9 = 162, 162 * 18
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(
      text,
      HasSubstr("pad = alloc_buffer((1, 18, 18, 3), \"float32\", strides=(2916, 162, 9, 1))"));
  expect_golden("storage_align_cbr", text);
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // A second alignment on an outer axis keeps the inner one.
  ASSERT_TRUE(sch.storage_align(pad, 0, 1, 32, 0).ok());  // 18 * 9 = 162 -> 192
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("strides=(3456, 192, 9, 1)"));
  EXPECT_TRUE(sch.set_scope(pad, 0, "shared").ok());
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("scope=\"shared\", strides=(3456, 192, 9, 1)"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(StorageAlign, OnACacheAndOnConvolution) {
  auto w = small("C2D-1");
  Schedule sch(w.func, true);
  BlockRV conv = sch.get_block("conv2d").value();
  BlockRV ps = sch.cache_read(conv, 0, "shared").value();
  ASSERT_TRUE(sch.storage_align(ps, 0, 3, 4, 3).ok());  // innermost stride 1 -> 3
  ASSERT_TRUE(sch.storage_align(sch.get_block("pad").value(), 0, 0, 7, 0).ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(StorageAlign, Refusals) {
  auto w = small("CBR-1");
  Schedule sch(w.func, true);
  BlockRV pad = sch.get_block("pad").value();
  std::string before = ir::to_string(sch.func());
  auto code = [&](int axis, int factor, int offset) {
    return sch.storage_align(pad, 0, axis, factor, offset).error().code();
  };
  EXPECT_EQ(code(4, 8, 0), ErrorCode::kOutOfRange);
  EXPECT_EQ(code(-1, 8, 0), ErrorCode::kOutOfRange);
  EXPECT_EQ(code(1, 0, 0), ErrorCode::kInvalidFactors);
  EXPECT_EQ(code(1, -4, 0), ErrorCode::kInvalidFactors);
  EXPECT_EQ(code(1, 8, 8), ErrorCode::kInvalidFactors);
  EXPECT_EQ(code(1, 8, -1), ErrorCode::kInvalidFactors);
  EXPECT_THAT(sch.storage_align(pad, 0, 4, 8, 0).error().reason(),
              HasSubstr("axis 4 is out of range for the 4-d buffer 'pad'"));
  EXPECT_THAT(sch.storage_align(pad, 0, 1, 8, 9).error().reason(),
              HasSubstr("offset 9 is not in [0, factor 8)"));
  auto param = sch.storage_align(sch.get_block("relu").value(), 0, 1, 8, 0);
  ASSERT_FALSE(param.ok());
  EXPECT_THAT(param.error().reason(), HasSubstr("function parameter 'relu'"));
  EXPECT_EQ(sch.storage_align(pad, 1, 1, 8, 0).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(sch.storage_align(BlockRV{4242}, 0, 1, 8, 0).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

// ---------------------------------------------------------------------------------------------
// transform_layout

// GMM-1 scaled down with Y packed per 8-column panel: Y_global[b, k, j] -> [j // 8, b, k, j % 8].
TEST(TransformLayout, PacksACachedPanel) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  BlockRV yc = sch.cache_read(z, 1, "global").value();
  auto loops = sch.get_loops(z).value();
  ASSERT_TRUE(sch.compute_at(yc, loops[1], true).ok());  // per row of Z: the whole of Y
  ASSERT_TRUE(sch.transform_layout(yc, 0, "lambda b, k, j: (j // 8, b, k, j % 8)").ok());
  std::string text = ir::to_string(sch.func());
  const ir::BufferNode* y = sch.block_sref(yc).value()->as_block()->writes[0].buffer.get();
  int64_t k = *ir::as_const_int(y->shape[2]);
  ASSERT_EQ(y->shape.size(), 4u);
  EXPECT_EQ(*ir::as_const_int(y->shape[0]) * 8, *ir::as_const_int(w.func->params[1]->shape[2]));
  EXPECT_EQ(*ir::as_const_int(y->shape[3]), 8);
  EXPECT_GT(k, 1);
  EXPECT_THAT(text, HasSubstr("// 8"));
  expect_golden("transform_layout_gmm", text);
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_TRUE(sch.get_loops(yc).ok());  // handles continue
  // A permutation of an intermediate buffer, then an alignment of the new layout.
  auto c = small("CBR-1");
  Schedule s2(c.func, true);
  BlockRV pad = s2.get_block("pad").value();
  ASSERT_TRUE(s2.transform_layout(pad, 0, "lambda n, h, w, ci: (n, ci, w // 2, h, w % 2,)").ok());
  EXPECT_THAT(ir::to_string(s2.func()),
              HasSubstr("pad = alloc_buffer((1, 3, 9, 18, 2), \"float32\")"));
  ASSERT_TRUE(s2.storage_align(pad, 0, 2, 8, 1).ok());
  EXPECT_TRUE(computes_reference(c, s2.func()));
}

TEST(TransformLayout, Refusals) {
  auto w = small("CBR-1");  // pad is (1, 18, 18, 3)
  Schedule sch(w.func, true);
  BlockRV pad = sch.get_block("pad").value();
  std::string before = ir::to_string(sch.func());
  // A malformed map is an invalid argument; one that does not fit the buffer, an extent mismatch.
  auto reason = [&](const std::string& map, ErrorCode code = ErrorCode::kInvalidArgument) {
    auto st = sch.transform_layout(pad, 0, map);
    EXPECT_FALSE(st.ok()) << map;
    if (st.ok()) return std::string();
    EXPECT_EQ(st.error().code(), code) << map;
    return st.error().reason();
  };
  EXPECT_THAT(reason("n, h, w, c: (n, h, w, c)"), HasSubstr("expected 'lambda'"));
  EXPECT_THAT(reason("lambda n, h, w: (n, h, w)", ErrorCode::kExtentMismatch),
              HasSubstr("takes 3 indices but the buffer has 4"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w, x)"), HasSubstr("'x' is not an input"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w)"), HasSubstr("'c' must appear once"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w, c, c)"), HasSubstr("'c' must appear once"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w // 2, w % 3, c)"),
              HasSubstr("'w' must appear once"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w // 2, w, c)"), HasSubstr("'w' must appear once"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w // 0, w % 0, c)"),
              HasSubstr("factor 0 is not positive"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w // k, w % k, c)"),
              HasSubstr("expected an integer factor"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w // 4, w % 4, c)", ErrorCode::kExtentMismatch),
              HasSubstr("factor 4 does not divide extent 18 of 'w'"));
  EXPECT_THAT(reason("lambda n, n, w, c: (n, w, c)"), HasSubstr("input 'n' is named twice"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w, c"), HasSubstr("expected ')'"));
  EXPECT_THAT(reason("lambda n, h, w, c: (n, h, w, c) + 1"), HasSubstr("unexpected '+ 1'"));
  EXPECT_THAT(reason("lambda n, h, w, c (n, h, w, c)"), HasSubstr("expected ':'"));
  EXPECT_THAT(reason(""), HasSubstr("expected 'lambda'"));
  auto param =
      sch.transform_layout(sch.get_block("relu").value(), 0, "lambda n, h, w, c: (n, h, w, c)");
  ASSERT_FALSE(param.ok());
  EXPECT_THAT(param.error().reason(), HasSubstr("function parameter 'relu'"));
  EXPECT_EQ(sch.transform_layout(pad, 1, "lambda n, h, w, c: (c, n, h, w)").error().code(),
            ErrorCode::kOutOfRange);
  EXPECT_EQ(
      sch.transform_layout(BlockRV{4242}, 0, "lambda n, h, w, c: (c, n, h, w)").error().code(),
      ErrorCode::kStaleHandle);
  EXPECT_EQ(ir::to_string(sch.func()), before);
  ASSERT_TRUE(sch.storage_align(pad, 0, 2, 8, 1).ok());
  std::string aligned = ir::to_string(sch.func());
  EXPECT_THAT(reason("lambda n, h, w, c: (c, n, h, w)", ErrorCode::kUnsupported),
              HasSubstr("has strides from storage_align"));
  EXPECT_EQ(ir::to_string(sch.func()), aligned);
}

// ---------------------------------------------------------------------------------------------
// Random sequences: each step is refused with the program unchanged or keeps the results exact.

std::vector<BlockRV> all_blocks(Schedule& sch) {
  std::vector<BlockRV> out, stack = {sch.get_block("root").value()};
  while (!stack.empty()) {
    BlockRV b = stack.back();
    stack.pop_back();
    for (const BlockRV& c : sch.get_child_blocks(b).value()) {
      out.push_back(c);
      stack.push_back(c);
    }
  }
  return out;
}

TEST(CacheRandom, SequencesKeepTheReference) {
  const std::vector<std::string> scopes = {"global", "shared",           "local", "shared.dyn",
                                           "warp",   "wmma.accumulator", "bogus", ""};
  std::mt19937_64 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int accepted = 0, refused = 0;
  for (const char* preset : {"GMM-1", "C2D-1", "SFM-1", "CBR-1"}) {
    auto w = small(preset);
    for (int trial = 0; trial < 6; ++trial) {
      Schedule sch(w.func, true);
      for (int step = 0; step < 6; ++step) {
        auto blocks = all_blocks(sch);
        BlockRV b = blocks[static_cast<size_t>(uniform(0, static_cast<int>(blocks.size()) - 1))];
        const std::string& scope =
            scopes[static_cast<size_t>(uniform(0, static_cast<int>(scopes.size()) - 1))];
        std::string before = ir::to_string(sch.func());
        bool ok = false;
        std::string what;
        switch (uniform(0, 4)) {
          case 0:
            what = "cache_read";
            ok = sch.cache_read(b, uniform(-1, 2), scope).ok();
            break;
          case 1:
            what = "cache_write";
            ok = sch.cache_write(b, uniform(-1, 1), scope).ok();
            break;
          case 2:
            what = "set_scope";
            ok = sch.set_scope(b, uniform(-1, 1), scope).ok();
            break;
          case 3:
            what = "storage_align";
            ok = sch.storage_align(b, uniform(-1, 1), uniform(-1, 4), uniform(-1, 16),
                                   uniform(-1, 16))
                     .ok();
            break;
          default: {
            auto loops = sch.get_loops(b).value();
            if (loops.empty()) continue;
            what = "split";
            LoopRV l = loops[static_cast<size_t>(uniform(0, static_cast<int>(loops.size()) - 1))];
            ok = sch.split(l, {std::nullopt, uniform(1, 5)}).ok();
          }
        }
        if (ok) {
          ++accepted;
          ASSERT_TRUE(computes_reference(w, sch.func())) << preset << " after " << what;
        } else {
          ++refused;
          ASSERT_EQ(ir::to_string(sch.func()), before)
              << preset << ": a refused " << what << " changed the program";
        }
      }
    }
  }
  EXPECT_GT(accepted, 20);
  EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace tyche::schedule
