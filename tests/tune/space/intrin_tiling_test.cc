// MultiLevelTilingWithIntrin: the multiply-accumulates a CPU's dot intrinsic takes are tiled around
// it, their weights packed (once, at load, when they are a model's constants), and tensorized;
// which intrinsic comes from the CPU named, never from the host; other blocks go to
// MultiLevelTiling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include "../../schedule/schedule_test_util.h"

#include <array>
#include <cstdio>

#include <functional>
#include <numeric>

#include "codegen/llvm/layout_rewrites.h"
#include "codegen/llvm/llvm_codegen.h"
#include "ir/annotation_keys.h"
#include "ir/layout_free.h"
#include "ir/printer.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "tune/space/multi_level_tiling_with_intrin.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using schedule::Schedule;
using schedule::testing::computes_reference;
using schedule::testing::small;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<Schedule> designs_for(const workloads::Workload& w, const std::string& cpu) {
  target::Target t = target::Target::parse("llvm -num-cores 2 -mcpu " + cpu);
  return post_order_apply(default_rules(t))->generate(TuneContext{w.func, t}, 5);
}

int count_with(const std::vector<Schedule>& designs, const std::string& text) {
  int n = 0;
  for (const Schedule& d : designs) n += d.trace()->to_text().find(text) != std::string::npos;
  return n;
}

TEST(IntrinTiling, TheCpuNamedChoosesTheIntrinsic) {
  auto w = small("GMM-1-U8S8");  // 32 x 32 x 32
  struct Case {
    const char* cpu;
    const char* intrin;  // nullptr: no intrinsic, MultiLevelTiling's designs
  };
  for (Case c : {Case{"sapphirerapids", "x86_amx_tile_16x16x64_u8s8"},
                 Case{"icelake-server", "x86_avx512_vnni_dot_16x4_u8s8"},
                 Case{"alderlake", "x86_avx_vnni_dot_8x4_u8s8"},
                 Case{"znver3", "x86_avx2_dot_8x4_u8s8"}, Case{"x86-64-v2", nullptr}}) {
    SCOPED_TRACE(c.cpu);
    auto designs = designs_for(w, c.cpu);
    ASSERT_FALSE(designs.empty());
    if (!c.intrin) {
      EXPECT_EQ(count_with(designs, "tensorize"), 0);
      continue;
    }
    EXPECT_EQ(count_with(designs, std::string("tensor_intrin=\"") + c.intrin + "\""),
              static_cast<int>(designs.size()));
    for (const Schedule& d : designs)
      EXPECT_TRUE(computes_reference(w, d.func())) << d.trace()->to_text();
  }
}

// GMM's right operand is an activation: packed at every call, inside the program. A dense layer's
// weights are constants: packed once, the stage annotated for lower/layout_rewrite.h.
TEST(IntrinTiling, WeightsArePackedTileByTile) {
  auto gmm = designs_for(small("GMM-1-U8S8"), "sapphirerapids");
  EXPECT_EQ(
      count_with(gmm, "index_map=\"lambda a0, a1, a2: (a0, a2 // 16, a1 // 4, a2 % 16, a1 % 4)\""),
      static_cast<int>(gmm.size()));
  EXPECT_EQ(count_with(gmm, ir::ann::kLayoutRewritePreproc), 0);
  auto dense = small("DENSE_RELU-1-BF16");
  auto bf16 = designs_for(dense, "cooperlake");  // AVX512-BF16 without AMX
  EXPECT_EQ(count_with(bf16, "x86_avx512_bf16_dot_16x2_bf16"), static_cast<int>(bf16.size()));
  EXPECT_EQ(count_with(bf16, ir::ann::kLayoutRewritePreproc), static_cast<int>(bf16.size()));
  for (const Schedule& d : bf16) EXPECT_TRUE(computes_reference(dense, d.func()));
  // A convolution: the weights [KH, KW, CI, CO] packed by (CO, CI) tiles. Scaled down it has 8
  // output channels, which 16 lanes do not divide: the 8-lane form takes it.
  auto conv = small("C2D-3-U8S8");
  auto c2d = designs_for(conv, "sapphirerapids");
  EXPECT_EQ(count_with(c2d, "x86_avx_vnni_dot_8x4_u8s8"), static_cast<int>(c2d.size()));
  EXPECT_EQ(count_with(c2d, "lambda a0, a1, a2, a3: (a0, a1, a3 // 8, a2 // 4, a3 % 8, a2 % 4)"),
            static_cast<int>(c2d.size()));
  for (const Schedule& d : c2d) EXPECT_TRUE(computes_reference(conv, d.func()));
}

// Blocks of other types are MultiLevelTiling's; so are s8 x s8 products, which VNNI does not take.
TEST(IntrinTiling, OtherBlocksAreLeftToMultiLevelTiling) {
  auto f32 = designs_for(small("GMM-1"), "sapphirerapids");
  EXPECT_EQ(count_with(f32, "tensorize"), 0);
  EXPECT_EQ(count_with(f32, "sample_perfect_tile"), static_cast<int>(f32.size()));
  auto s8s8 = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=8,j=32,k=16",
                                             "A=int8,B=int8,C=int32");
  EXPECT_EQ(count_with(designs_for(s8s8, "sapphirerapids"), "tensorize"), 0);
}

// Extents the intrinsic's shape does not divide are padded, never refused: 20 columns take the
// 8-lane form padded to 24 (the 16-lane one would compute 32), 10 reduction steps become 12; a
// dense layer's weights are padded and packed in one stage, once, at load.
TEST(IntrinTiling, OddExtentsArePadded) {
  auto odd = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=5,j=20,k=10",
                                            "A=uint8,B=int8,C=int32");
  auto designs = designs_for(odd, "sapphirerapids");
  ASSERT_FALSE(designs.empty());
  int n = static_cast<int>(designs.size());
  EXPECT_EQ(count_with(designs, "pad_einsum(block=b0, padding=[1, 8, 4])"), n)
      << designs[0].trace()->to_text();
  EXPECT_EQ(count_with(designs, "tensor_intrin=\"x86_avx_vnni_dot_8x4_u8s8\""), n);
  for (const Schedule& d : designs)
    EXPECT_TRUE(computes_reference(odd, d.func())) << d.trace()->to_text();
  auto bert = workloads::from_index_notation("C[i,j] += A[i,k] * W[j,k]", "i=3,j=36,k=7",
                                             "A=bfloat16,W=bfloat16,C=float32");
  bert.func = ir::with_layout_free_params(bert.func, {1});  // W: a model's weight
  designs = designs_for(bert, "sapphirerapids");
  ASSERT_FALSE(designs.empty());
  n = static_cast<int>(designs.size());
  EXPECT_EQ(count_with(designs, "x86_avx512_bf16_dot_"), n);
  EXPECT_EQ(count_with(designs, ir::ann::kLayoutRewritePreproc), n);
  for (const Schedule& d : designs) {
    EXPECT_TRUE(computes_reference(bert, d.func())) << d.trace()->to_text();
    // Split off and run as a caller runs it: W padded and packed into a larger array, once.
    lower::SplitProgram split = lower::split_layout_rewrites(d.func());
    ASSERT_EQ(split.rewrites.size(), 1u);
    std::vector<int64_t> packed_shape = ir::const_shape(split.rewrites[0].preproc->params[1]);
    EXPECT_GT(
        std::accumulate(packed_shape.begin(), packed_shape.end(), int64_t{1}, std::multiplies<>()),
        36 * 7);
    auto rewrites = codegen::compile_rewrites(split.rewrites);
    auto kernel = codegen::compile(lower::lower(split.main).func);
    auto inputs = workloads::make_inputs(bert.func, 3);
    auto expected = bert.reference(inputs);
    runtime::NDArray out(expected[0].shape(), expected[0].dtype());
    std::vector<void*> ptrs = {inputs[0].data(), inputs[1].data(), out.data()};
    std::vector<runtime::NDArray> packed;
    codegen::apply_rewrites(rewrites, d.func(), ptrs, packed);
    kernel->run(ptrs.data());
    runtime::Comparison c = runtime::compare(out, expected[0]);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

// A CPU with AMX (Sapphire Rapids) takes a matmul whose shape fits its tiles (or pads least) with
// them: 16 x 16 x 64 u8 x s8 tiles (16 x 16 x 32 bfloat16), the weights packed as for VNNI (whose
// K/4 x 16 x 4 slices are AMX's weight tiles), the rows of the activations and of the write cache
// read and written as tiles. Here, without AMX, the same programs run as rows of VNNI.
TEST(IntrinTiling, AmxTilesWhereTheyFit) {
  auto gmm = workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", "i=32,j=32,k=128",
                                            "A=uint8,B=int8,C=int32");
  auto designs = designs_for(gmm, "sapphirerapids");
  ASSERT_FALSE(designs.empty());
  const int n = static_cast<int>(designs.size());
  EXPECT_EQ(count_with(designs, "tensor_intrin=\"x86_amx_tile_16x16x64_u8s8\""), n)
      << designs[0].trace()->to_text();
  EXPECT_EQ(count_with(designs, "lambda a0, a1: (a1 // 16, a0 // 4, a1 % 16, a0 % 4)"), n);
  for (const Schedule& d : designs)
    EXPECT_TRUE(computes_reference(gmm, d.func())) << d.trace()->to_text();
  // Compiled for Sapphire Rapids: the tile instructions.
  if (std::system("objdump --version > /dev/null 2>&1") == 0) {
    std::string path = ::testing::TempDir() + fmt::format("/tyche_amx_design_{}.o", getpid());
    codegen::compile_to_object(lower::lower(designs[0].func()).func, path,
                               codegen::CompileOptions{.cpu = "sapphirerapids"});
    std::string text;
    if (FILE* p = popen(fmt::format("objdump -d --no-show-raw-insn {}", path).c_str(), "r")) {
      std::array<char, 4096> buf;
      for (size_t got; (got = fread(buf.data(), 1, buf.size(), p)) > 0;)
        text.append(buf.data(), got);
      pclose(p);
    }
    std::remove(path.c_str());
    EXPECT_THAT(text, HasSubstr("tdpbusd"));
    EXPECT_THAT(text, HasSubstr("ldtilecfg"));
  }
  // One row padded to 16 is more work than AMX's speed makes up for: VNNI's.
  auto vector = workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", "i=1,j=32,k=64",
                                               "A=uint8,B=int8,C=int32");
  designs = designs_for(vector, "sapphirerapids");
  ASSERT_FALSE(designs.empty());
  EXPECT_GT(count_with(designs, "x86_avx512_vnni_dot_16x4_u8s8"), 0);  // and AddRFactor's designs
  EXPECT_EQ(count_with(designs, "x86_amx"), 0);
  // Rows, columns and steps that the tile does not divide are padded.
  auto rows = workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", "i=20,j=24,k=100",
                                             "A=uint8,B=int8,C=int32");
  designs = designs_for(rows, "sapphirerapids");
  ASSERT_FALSE(designs.empty());
  EXPECT_EQ(count_with(designs, "pad_einsum(block=b0, padding=[16, 16, 64])"),
            static_cast<int>(designs.size()));
  for (const Schedule& d : designs)
    EXPECT_TRUE(computes_reference(rows, d.func())) << d.trace()->to_text();
  auto bf16 = workloads::from_index_notation("C[i, j] += A[i, k] * W[j, k]", "i=16,j=32,k=64",
                                             "A=bfloat16,W=bfloat16,C=float32");
  designs = designs_for(bf16, "sapphirerapids");
  ASSERT_FALSE(designs.empty());
  EXPECT_EQ(count_with(designs, "x86_amx_tile_16x16x32_bf16"), static_cast<int>(designs.size()));
  for (const Schedule& d : designs)
    EXPECT_TRUE(computes_reference(bf16, d.func())) << d.trace()->to_text();
  // Zen 4 has no AMX: VNNI.
  EXPECT_EQ(count_with(designs_for(gmm, "znver4"), "x86_amx"), 0);
}

TEST(IntrinTiling, CpuDotIntrinsicsBestFirst) {
  EXPECT_THAT(
      cpu_dot_intrins({"avx2", "avx512f", "avx512vl", "avx512vnni", "avx512bf16"}),
      ::testing::ElementsAre("x86_avx512_vnni_dot_16x4_u8s8", "x86_avx_vnni_dot_8x4_u8s8",
                             "x86_avx512_bf16_dot_16x2_bf16", "x86_avx512_bf16_dot_8x2_bf16"));
  EXPECT_THAT(
      cpu_dot_intrins(
          {"amx-bf16", "amx-int8", "amx-tile", "avx512f", "avx512vl", "avx512vnni", "avx512bf16"}),
      ::testing::ElementsAre("x86_amx_tile_16x16x64_u8s8", "x86_amx_tile_16x16x32_bf16",
                             "x86_avx512_vnni_dot_16x4_u8s8", "x86_avx_vnni_dot_8x4_u8s8",
                             "x86_avx512_bf16_dot_16x2_bf16", "x86_avx512_bf16_dot_8x2_bf16"));
  EXPECT_THAT(cpu_dot_intrins({"avx2", "avxvnni"}),
              ::testing::ElementsAre("x86_avx_vnni_dot_8x4_u8s8"));
  EXPECT_THAT(cpu_dot_intrins({"avx2"}), ::testing::ElementsAre("x86_avx2_dot_8x4_u8s8"));
  EXPECT_TRUE(cpu_dot_intrins({"sse4.2"}).empty());
}

}  // namespace
}  // namespace tyche::tune
