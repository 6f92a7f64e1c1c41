#include <gmock/gmock.h>

#include <atomic>
#include <thread>

#include "../schedule_test_util.h"
#include "interp/interpreter.h"
#include "ir/op.h"
#include "runtime/compare.h"
#include "schedule/primitive/primitive.h"
#include "schedule/tensor_intrin.h"

namespace tyche::schedule {
namespace {

using testing::block_name;
using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;
using testing::small;

// Like computes_reference, but the outputs start as garbage, so a lost or misplaced reduction
// init shows up (computes_reference starts from zeros).
::testing::AssertionResult computes_reference_dirty(const workloads::Workload& w,
                                                    const ir::PrimFunc& f) {
  auto inputs = workloads::make_inputs(w.func, 5);
  std::vector<runtime::NDArray> args = inputs;
  for (const ir::Buffer& b : f.outputs()) {
    runtime::NDArray out(ir::const_shape(b), b->dtype);
    out.fill_uniform(99, 5.0, 9.0);
    args.push_back(out);
  }
  try {
    interp::run(f, args);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "interpreter: " << e.what();
  }
  auto expected = w.reference(inputs);
  for (size_t i = 0; i < expected.size(); ++i) {
    runtime::Comparison c = runtime::compare(args[inputs.size() + i], expected[i]);
    if (!c.ok) return ::testing::AssertionFailure() << c.message << "\n" << ir::to_string(f);
  }
  return ::testing::AssertionSuccess();
}

// Splits the last three loops of `block` by 4 and puts the 4s innermost:
// (outer loops...), i_0, j_0, k_0, i_1, j_1, k_1.
std::vector<LoopRV> tile_matmul(Schedule& sch, const std::string& block) {
  auto loops = sch.get_loops(sch.get_block(block).value()).value();
  size_t first = loops.size() - 3;
  auto i = sch.split(loops[first], {std::nullopt, 4}).value();
  auto j = sch.split(loops[first + 1], {std::nullopt, 4}).value();
  auto k = sch.split(loops[first + 2], {std::nullopt, 4}).value();
  sch.reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).value();
  std::vector<LoopRV> out(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(first));
  for (const LoopRV& l : {i[0], j[0], k[0], i[1], j[1], k[1]}) out.push_back(l);
  return out;
}

// ---- blockize ----

TEST(Blockize, TiledMatmulMovesInitOut) {
  auto w = small("GMM-1");  // 1x32x32x32
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = tile_matmul(sch, "Z");  // b, i_0, j_0, k_0, i_1, j_1, k_1
  BlockRV outer = sch.blockize(loops[4]).value();
  EXPECT_EQ(block_name(sch, outer), "Z_o");
  // The inner block keeps its handle; the loops keep theirs.
  EXPECT_EQ(block_name(sch, z), "Z");
  EXPECT_TRUE(sch.loop_sref(loops[5]).ok());
  EXPECT_EQ(sch.get_child_blocks(outer).value().size(), 2u);  // Z_init, Z
  expect_golden("blockize_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_TRUE(computes_reference_dirty(w, sch.func()));
}

TEST(Blockize, ReductionInsideKeepsInit) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();  // b, i, j, k
  BlockRV outer = sch.blockize(loops[2]).value();
  const ir::BlockNode* o = sch.block_sref(outer).value()->as_block();
  EXPECT_FALSE(o->init.defined());
  ASSERT_EQ(o->iter_vars.size(), 2u);  // vb_o, vi_o: all of j and k is inside
  EXPECT_TRUE(sch.block_sref(sch.get_block("Z").value()).value()->as_block()->init.defined());
  EXPECT_TRUE(computes_reference_dirty(w, sch.func()));

  // The reduction entirely outside: the init moves out and covers the row tile.
  Schedule s2(w.func, true);
  auto l = s2.get_loops(s2.get_block("Z").value()).value();
  s2.reorder({l[3], l[2]}).value();  // b, i, k, j
  BlockRV o2 = s2.blockize(l[2]).value();
  EXPECT_TRUE(s2.block_sref(o2).value()->as_block()->init.defined());
  EXPECT_FALSE(s2.block_sref(s2.get_block("Z").value()).value()->as_block()->init.defined());
  EXPECT_TRUE(computes_reference_dirty(w, s2.func()));
}

TEST(Blockize, WholeNestAndNested) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = tile_matmul(sch, "Z");
  BlockRV inner_o = sch.blockize(loops[4]).value();
  // Blockize the blockized block again, over j_0 and k_0: Z_o's reduce iterator is now inside.
  BlockRV outer_o = sch.blockize(loops[2]).value();
  EXPECT_EQ(block_name(sch, outer_o), "Z_o_o");
  EXPECT_EQ(block_name(sch, inner_o), "Z_o");
  EXPECT_TRUE(computes_reference_dirty(w, sch.func()));
  // And the whole nest: a block without iterators.
  BlockRV all = sch.blockize(loops[0]).value();
  EXPECT_TRUE(sch.block_sref(all).value()->as_block()->iter_vars.empty());
  EXPECT_TRUE(computes_reference_dirty(w, sch.func()));
}

TEST(Blockize, ElementwiseAndDense) {
  auto sfm = small("SFM-1");
  Schedule s1(sfm.func, true);
  auto loops = s1.get_loops(s1.get_block("row_exp").value()).value();
  auto j = s1.split(loops[1], {std::nullopt, 4}).value();
  BlockRV o = s1.blockize(j[1]).value();
  EXPECT_EQ(block_name(s1, o), "row_exp_o");
  expect_golden("blockize_sfm_row_exp", ir::to_string(s1.func()));
  EXPECT_TRUE(computes_reference(sfm, s1.func()));

  auto dense = small("DENSE_RELU-1");
  Schedule s2(dense.func, true);
  auto l = tile_matmul(s2, "dense");
  s2.blockize(l[3]).value();
  EXPECT_TRUE(computes_reference_dirty(dense, s2.func()));
}

TEST(Blockize, FusedThenSplit) {
  // vi = (f_0 * 8 + f_1) // 64 and vj = (f_0 * 8 + f_1) % 64 divide as TVM's subspace division
  // does.
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("row_exp").value()).value();
  LoopRV f = sch.fuse({loops[0], loops[1]}).value();
  auto parts = sch.split(f, {std::nullopt, 8}).value();
  sch.blockize(parts[1]).value();
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("vi_o = axis.spatial(32, i_j_fused_0 // 8)"));
  EXPECT_THAT(text, HasSubstr("vj_o = axis.spatial(8, i_j_fused_0 % 8)"));
  EXPECT_THAT(text, HasSubstr("vj_i = axis.spatial(8, i_j_fused_1)"));
  EXPECT_TRUE(computes_reference(w, sch.func()));

  // A reduction under fused spatial loops: the init moves out over the fused tile.
  auto g = small("GMM-1");
  Schedule s2(g.func, true);
  auto l = s2.get_loops(s2.get_block("Z").value()).value();  // b, i, j, k
  LoopRV ij = s2.fuse({l[1], l[2]}).value();
  auto fp = s2.split(ij, {std::nullopt, 16}).value();
  auto k = s2.split(l[3], {std::nullopt, 4}).value();
  s2.reorder({k[0], fp[1]}).value();  // b, f_0, k_0, f_1, k_1
  BlockRV o = s2.blockize(fp[1]).value();
  EXPECT_TRUE(s2.block_sref(o).value()->as_block()->init.defined());
  EXPECT_TRUE(computes_reference_dirty(g, s2.func()));
}

TEST(Blockize, RefusesIndivisibleBindings) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto i = sch.split(loops[1], {8, 4}).value();
  sch.reorder({i[1], loops[2], loops[3], i[0]}).value();  // vi = i_0 * 4 + i_1, i_0 innermost
  std::string before = ir::to_string(sch.func());
  auto r = sch.blockize(i[0]);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotSeparable);
  EXPECT_THAT(r.error().reason(), HasSubstr("does not divide"));
  EXPECT_THAT(r.error().reason(), HasSubstr("'vi'"));
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(Blockize, RefusesPredicates) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  auto j = sch.split(loops[2], {std::nullopt, 5}).value();
  std::string before = ir::to_string(sch.func());
  auto r = sch.blockize(j[1]);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(r.error().reason(), HasSubstr("predicate"));
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(Blockize, StaleAndWrongHandles) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  sch.split(loops[1], {8, 4}).value();
  EXPECT_EQ(sch.blockize(loops[1]).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.blockize(LoopRV{4242}).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.tensorize(loops[1], "dot_4x4x4_f32").error().code(), ErrorCode::kStaleHandle);
}

// ---- tensorize ----

TEST(Tensorize, TiledMatmul) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  BlockRV z = sch.get_block("Z").value();
  auto loops = tile_matmul(sch, "Z");
  auto st = sch.tensorize(loops[4], "dot_4x4x4_f32");
  ASSERT_TRUE(st.ok()) << st.error().reason();
  expect_golden("tensorize_gmm", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_TRUE(computes_reference_dirty(w, sch.func()));
  // The computation under the loop is gone: its block and loops are stale; outer ones live.
  EXPECT_EQ(sch.get_loops(z).error().code(), ErrorCode::kStaleHandle);
  EXPECT_EQ(sch.blockize(loops[4]).error().code(), ErrorCode::kStaleHandle);
  EXPECT_TRUE(sch.loop_sref(loops[3]).ok());
  EXPECT_EQ(block_name(sch, sch.get_block("Z_o").value()), "Z_o");
}

// u8 x s8 -> s32 with the weights packed as VNNI wants them ([N/16][K/4][16][4]): the 16 x 4 tile
// becomes one group_dot, reading its 64 weights as one contiguous vector.
TEST(Tensorize, PackedU8S8MatmulWithVnni) {
  auto w = workloads::from_index_notation("C[i, jo, ji] += A[i, ko*4 + ki] * P[jo, ko, ji, ki]",
                                          "i=3,jo=2,ji=16,ko=5,ki=4", "A=uint8,P=int8,C=int32");
  for (const char* name :
       {"x86_avx512_vnni_dot_16x4_u8s8", "x86_avx_vnni_dot_8x4_u8s8", "x86_avx2_dot_8x4_u8s8"}) {
    Schedule sch(w.func, true);
    auto l = sch.get_loops(sch.get_block("C").value()).value();  // i, jo, ji, ko, ki
    bool eight = std::string(name).find("8x4") != std::string::npos;
    LoopRV lanes = l[2];
    if (eight) {
      auto ji = sch.split(l[2], {std::nullopt, 8}).value();
      sch.reorder({ji[0], l[3], ji[1], l[4]}).value();
      lanes = ji[1];
    } else {
      sch.reorder({l[3], l[2], l[4]}).value();
    }
    auto st = sch.tensorize(lanes, name);
    ASSERT_TRUE(st.ok()) << name << ": " << st.error().reason();
    if (!eight) expect_golden("tensorize_vnni_u8s8", ir::to_string(sch.func()));
    EXPECT_TRUE(computes_reference_dirty(w, sch.func())) << name;
  }
}

// AMX's tile: a 16 x 16 x 64 block of a matmul whose weights are packed as for VNNI becomes one
// tile_dot of the activations' rows, the packed weights' 16 consecutive rows and the output's
// rows.
TEST(Tensorize, PackedU8S8MatmulWithAmx) {
  auto w = workloads::from_index_notation(
      "C[i, jo, ji] += A[i, ko*64 + kk*4 + ki] * P[jo, ko*16 + kk, ji, ki]",
      "i=32,jo=2,ji=16,ko=2,kk=16,ki=4", "A=uint8,P=int8,C=int32");
  Schedule sch(w.func, true);
  auto l = sch.get_loops(sch.get_block("C").value()).value();  // i, jo, ji, ko, kk, ki
  auto rows = sch.split(l[0], {std::nullopt, 16}).value();
  ASSERT_TRUE(sch.reorder({rows[0], l[1], l[3], rows[1], l[2], l[4], l[5]}).ok());
  // The intrinsic's k is one iterator: kk and ki are two, and refused.
  auto st = sch.tensorize(rows[1], "x86_amx_tile_16x16x64_u8s8");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(), HasSubstr("the loop nest has 4 loops, the intrinsic's has 3"));
  auto single = workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", "i=32,j=32,k=128",
                                               "A=uint8,B=int8,C=int32");
  Schedule s2(single.func, true);
  BlockRV c = s2.get_block("C").value();
  BlockRV pack = s2.cache_read(c, 1, "global").value();
  ASSERT_TRUE(s2.transform_layout(pack, 0, "lambda k, j: (j // 16, k // 4, j % 16, k % 4)").ok());
  auto loops = s2.get_loops(c).value();
  auto i = s2.split(loops[0], {std::nullopt, 16}).value();
  auto j = s2.split(loops[1], {std::nullopt, 16}).value();
  auto k = s2.split(loops[2], {std::nullopt, 64}).value();
  ASSERT_TRUE(s2.reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  st = s2.tensorize(i[1], "x86_amx_tile_16x16x64_u8s8");
  ASSERT_TRUE(st.ok()) << st.error().reason();
  expect_golden("tensorize_amx_u8s8", ir::to_string(s2.func()));
  EXPECT_TRUE(computes_reference_dirty(single, s2.func()));
  // The weights unpacked: their 16 x 64 tile is no slice of K/4 x 16 x 4.
  Schedule s3(single.func, true);
  c = s3.get_block("C").value();
  loops = s3.get_loops(c).value();
  i = s3.split(loops[0], {std::nullopt, 16}).value();
  j = s3.split(loops[1], {std::nullopt, 16}).value();
  k = s3.split(loops[2], {std::nullopt, 64}).value();
  ASSERT_TRUE(s3.reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  st = s3.tensorize(i[1], "x86_amx_tile_16x16x64_u8s8");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(),
              HasSubstr("does not match intrinsic 'x86_amx_tile_16x16x64_u8s8'"));
}

TEST(Tensorize, CpuIntrinsicsRefuseOtherTypes) {
  auto f32 = workloads::from_index_notation("C[i, jo, ji] += A[i, ko*4 + ki] * P[jo, ko, ji, ki]",
                                            "i=3,jo=2,ji=16,ko=5,ki=4");
  auto s8s8 = workloads::from_index_notation("C[i, jo, ji] += A[i, ko*4 + ki] * P[jo, ko, ji, ki]",
                                             "i=3,jo=2,ji=16,ko=5,ki=4", "A=int8,P=int8,C=int32");
  for (const auto& w : {f32, s8s8}) {
    Schedule sch(w.func, true);
    auto l = sch.get_loops(sch.get_block("C").value()).value();
    sch.reorder({l[3], l[2], l[4]}).value();
    std::string before = ir::to_string(sch.func());
    auto st = sch.tensorize(l[2], "x86_avx512_vnni_dot_16x4_u8s8");
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code(), ErrorCode::kIntrinsicMismatch);
    EXPECT_THAT(st.error().reason(),
                HasSubstr("does not match intrinsic 'x86_avx512_vnni_dot_16x4_u8s8'"));
    EXPECT_EQ(ir::to_string(sch.func()), before);
  }
}

TEST(Tensorize, DenseWithoutBatchDimension) {
  auto w = small("DENSE_RELU-1");
  Schedule sch(w.func, true);
  auto loops = tile_matmul(sch, "dense");  // i_0, j_0, k_0, i_1, j_1, k_1
  auto st = sch.tensorize(loops[3], "dot_4x4x4_f32");
  ASSERT_TRUE(st.ok()) << st.error().reason();
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_TRUE(computes_reference_dirty(w, sch.func()));
}

TEST(Tensorize, CopyTwiceInOneProgram) {
  auto w = workloads::from_index_notation("T[i,j] = A[i,j]; B[i,j] = T[i,j]", "i=8,j=16");
  Schedule sch(w.func, true);
  for (const char* name : {"T", "B"}) {
    auto loops = sch.get_loops(sch.get_block(name).value()).value();
    auto j = sch.split(loops[1], {std::nullopt, 4}).value();
    auto st = sch.tensorize(j[1], "copy_4_f32");
    ASSERT_TRUE(st.ok()) << st.error().reason();
  }
  std::string text = ir::to_string(sch.func());
  EXPECT_THAT(text, HasSubstr("B[vi_o_1, vj_o_1 * 4 + 3] = T[vi_o_1, vj_o_1 * 4 + 3]"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

TEST(Tensorize, RefusesNonMatchingLoops) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  std::string before = ir::to_string(sch.func());
  auto st = sch.tensorize(loops[1], "dot_4x4x4_f32");  // extents 32, not 4
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kIntrinsicMismatch);
  EXPECT_THAT(
      st.error().reason(),
      HasSubstr(
          "tensorize: the computation under loop 'i' does not match intrinsic 'dot_4x4x4_f32': "));
  EXPECT_THAT(st.error().reason(), HasSubstr("range [0, 32)"));
  EXPECT_EQ(ir::to_string(sch.func()), before);

  auto sfm = small("SFM-1");
  Schedule s2(sfm.func, true);
  auto l = s2.get_loops(s2.get_block("row_exp").value()).value();
  auto j = s2.split(l[1], {std::nullopt, 4}).value();
  before = ir::to_string(s2.func());
  st = s2.tensorize(j[1], "dot_4x4x4_f32");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(), HasSubstr("the loop nest has 1 loops, the intrinsic's has 3"));
  st = s2.tensorize(j[1], "copy_4_f32");  // exp(A - row_max) is not a copy
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(), HasSubstr("does not match the intrinsic's"));
  EXPECT_EQ(ir::to_string(s2.func()), before);
}

TEST(Tensorize, RefusesReductionWithInitInside) {
  // The whole reduction under the loop: the init stays in the inner block, the intrinsic has none.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=8,j=8,k=4");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("C").value()).value();
  auto i = sch.split(loops[0], {std::nullopt, 4}).value();
  auto j = sch.split(loops[1], {std::nullopt, 4}).value();
  sch.reorder({i[0], j[0], i[1], j[1]}).value();
  std::string before = ir::to_string(sch.func());
  auto st = sch.tensorize(i[1], "dot_4x4x4_f32");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error().reason(), HasSubstr("keeps its init"));
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(Tensorize, RefusesUnknownIntrinsic) {
  auto w = small("GMM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("Z").value()).value();
  std::string before = ir::to_string(sch.func());
  auto st = sch.tensorize(loops[1], "no_such_intrin");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kUnknownName);
  EXPECT_THAT(st.error().reason(), HasSubstr("unknown tensor intrinsic 'no_such_intrin'"));
  EXPECT_THAT(st.error().reason(), HasSubstr("dot_4x4x4_f32"));
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

// ---- the registry ----

ir::PrimFunc func_of(const std::string& name, std::vector<ir::Buffer> params, ir::Stmt body) {
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), std::move(body));
  return ir::PrimFunc(name, std::move(params), 1, ir::block_realize({}, ir::make_bool(true), root));
}

// exp(X[j] - M[0]) over 4 elements: a user intrinsic for SFM's row_exp.
std::pair<ir::PrimFunc, ir::PrimFunc> exp_row_intrin() {
  auto make_params = [] {
    return std::vector<ir::Buffer>{ir::make_buffer("X", kFloat32, {4}),
                                   ir::make_buffer("M", kFloat32, {1}),
                                   ir::make_buffer("E", kFloat32, {4})};
  };
  auto p = make_params();
  ir::Var j("j"), vj("vj");
  ir::Stmt store = ir::buffer_store(
      p[2], ir::exp(ir::buffer_load(p[0], {vj}) - ir::buffer_load(p[1], {0})), {vj});
  ir::Block b = ir::make_block("e", {ir::IterVar{vj, ir::Range(0, 4), ir::IterKind::kSpatial}}, {},
                               {}, ir::Stmt(), store);
  ir::PrimFunc desc = func_of(
      "exp_row", p,
      ir::for_loop(j, 0, 4, ir::ForKind::kSerial, ir::block_realize({j}, ir::make_bool(true), b)));
  auto q = make_params();
  ir::Var u("u");
  ir::Stmt impl_store =
      ir::buffer_store(q[2], ir::exp(ir::buffer_load(q[0], {u}) - ir::buffer_load(q[1], {0})), {u});
  ir::PrimFunc impl =
      func_of("exp_row_impl", q, ir::for_loop(u, 0, 4, ir::ForKind::kVectorized, impl_store));
  return {desc, impl};
}

TEST(TensorIntrin, BuiltinsDescribeTheirImplementations) {
  auto names = tensor_intrin_names();
  EXPECT_THAT(names, ::testing::IsSupersetOf({"copy_4_f32", "dot_4x4x4_f32"}));
  EXPECT_EQ(find_tensor_intrin("nope"), nullptr);
  // The CPUs' intrinsics too; their integer forms exactly, their bfloat16 ones summed in the same
  // order.
  for (std::string name : {"copy_4_f32", "dot_4x4x4_f32", "x86_avx512_vnni_dot_16x4_u8s8",
                           "x86_avx512_bf16_dot_16x2_bf16", "x86_amx_tile_16x16x64_u8s8",
                           "x86_amx_tile_16x16x32_bf16"}) {
    const TensorIntrin* t = find_tensor_intrin(name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->name, name);
    auto inputs = workloads::make_inputs(t->desc, 3);
    auto a = interp::run_on_inputs(t->desc, inputs);
    auto b = interp::run_on_inputs(t->impl, inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      runtime::Comparison c = runtime::compare(b[i], a[i]);
      EXPECT_TRUE(c.ok) << name << ": " << c.message;
      if (a[i].dtype().is_integer()) {
        EXPECT_EQ(c.max_abs_error, 0) << name;
      }
    }
  }
}

TEST(TensorIntrin, CpuIntrinsicsSayWhichCpusHaveThem) {
  auto on = [](const char* name, std::vector<std::string> features) {
    return find_tensor_intrin(name)->available_on(features);
  };
  EXPECT_TRUE(on("x86_avx512_vnni_dot_16x4_u8s8", {"avx2", "avx512f", "avx512vnni"}));
  EXPECT_FALSE(on("x86_avx512_vnni_dot_16x4_u8s8", {"avx2", "avxvnni"}));
  EXPECT_TRUE(on("x86_avx_vnni_dot_8x4_u8s8", {"avx2", "avxvnni"}));
  EXPECT_TRUE(on("x86_avx_vnni_dot_8x4_u8s8", {"avx512vnni", "avx512vl"}));
  EXPECT_FALSE(on("x86_avx_vnni_dot_8x4_u8s8", {"avx512vnni"}));
  EXPECT_TRUE(on("x86_avx2_dot_8x4_u8s8", {"avx2"}));
  EXPECT_FALSE(on("x86_avx512_bf16_dot_16x2_bf16", {"avx512f", "avx512vnni"}));
  EXPECT_TRUE(on("dot_4x4x4_f32", {}));
}

TEST(TensorIntrin, RegistrationErrors) {
  const TensorIntrin* dot = find_tensor_intrin("dot_4x4x4_f32");
  ASSERT_NE(dot, nullptr);
  EXPECT_THROW(register_tensor_intrin("dot_4x4x4_f32", dot->desc, dot->impl), Error);
  const TensorIntrin* copy = find_tensor_intrin("copy_4_f32");
  try {
    register_tensor_intrin("bad_count", dot->desc, copy->impl);
    ADD_FAILURE() << "param count mismatch accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("desc has 3 params, impl has 2"));
  }
  auto [desc, impl] = exp_row_intrin();
  // Same count, different shape / dtype.
  auto shape = impl->params;
  shape[0] = ir::make_buffer("X", kFloat32, {8});
  EXPECT_THROW(
      register_tensor_intrin("bad_shape", desc, ir::PrimFunc(impl->name, shape, 1, impl->body)),
      Error);
  auto dtype = impl->params;
  dtype[1] = ir::make_buffer("M", kFloat64, {1});
  EXPECT_THROW(
      register_tensor_intrin("bad_dtype", desc, ir::PrimFunc(impl->name, dtype, 1, impl->body)),
      Error);
  // A desc that is not a loop nest around one block.
  EXPECT_THROW(register_tensor_intrin("bad_desc", impl, impl), Error);
  for (const char* n : {"bad_count", "bad_shape", "bad_dtype", "bad_desc"})
    EXPECT_EQ(find_tensor_intrin(n), nullptr);
  // Override keeps earlier pointers alive.
  register_tensor_intrin("tensorize_test_override", copy->desc, copy->impl);
  const TensorIntrin* first = find_tensor_intrin("tensorize_test_override");
  EXPECT_THROW(register_tensor_intrin("tensorize_test_override", copy->desc, copy->impl), Error);
  register_tensor_intrin("tensorize_test_override", copy->desc, copy->impl, true);
  EXPECT_NE(find_tensor_intrin("tensorize_test_override"), first);
  EXPECT_EQ(first->name, "tensorize_test_override");
}

TEST(TensorIntrin, ConcurrentLookupAndRegistration) {
  const TensorIntrin* copy = find_tensor_intrin("copy_4_f32");
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      register_tensor_intrin("tensorize_test_thread_" + std::to_string(t), copy->desc, copy->impl);
      for (int i = 0; i < 100; ++i) found += find_tensor_intrin("dot_4x4x4_f32") != nullptr;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(found.load(), 800);
  for (int t = 0; t < 8; ++t)
    EXPECT_NE(find_tensor_intrin("tensorize_test_thread_" + std::to_string(t)), nullptr);
}

TEST(TensorIntrin, UserIntrinsicTensorizesSoftmaxExp) {
  auto [desc, impl] = exp_row_intrin();
  register_tensor_intrin("tensorize_test_exp_row_4", desc, impl, true);
  auto w = small("SFM-1");
  Schedule sch(w.func, true);
  auto loops = sch.get_loops(sch.get_block("row_exp").value()).value();
  auto j = sch.split(loops[1], {std::nullopt, 4}).value();
  auto st = sch.tensorize(j[1], "tensorize_test_exp_row_4");
  ASSERT_TRUE(st.ok()) << st.error().reason();
  EXPECT_THAT(ir::to_string(sch.func()), HasSubstr("for u in vectorized(4):"));
  EXPECT_TRUE(computes_reference(w, sch.func()));
}

}  // namespace
}  // namespace tyche::schedule
