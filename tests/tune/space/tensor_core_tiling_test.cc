// MultiLevelTilingTensorCore (the cuda defaults' Use-Tensor-Core module): a float16 / bfloat16
// GMM is tiled around WMMA's 16 x 16 x 16 and tensorized (fill, both loads, mma, store); the
// design still computes the reference (the interpreter runs the intrinsics' loops); extents that
// 16 does not divide are padded; float32, an architecture without tensor cores, and bfloat16 before
// sm_80 are left to MultiLevelTiling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../schedule/schedule_test_util.h"
#include "ir/printer.h"
#include "tune/space/multi_level_tiling_tensor_core.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using schedule::Schedule;
using schedule::testing::computes_reference;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<Schedule> tensor_core_designs(const workloads::Workload& w, const target::Target& t,
                                          int64_t seed) {
  return post_order_apply(default_rules(t))->generate(TuneContext{w.func, t}, seed);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// sm_80 and later: a design per family, mma.sync (ldmatrix) first, then WMMA; each software-
// pipelines its shared copies.
TEST(TensorCoreTiling, AHalfPrecisionGmmIsTensorized) {
  target::Target cuda = target::Target::parse("cuda -arch=sm_80");
  for (const char* precision : {"F16", "BF16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 32}, precision);
    std::string type = precision == std::string("F16") ? "f16" : "bf16";
    for (int64_t seed : {1, 2, 3}) {
      std::vector<Schedule> designs = tensor_core_designs(w, cuda, seed);
      ASSERT_EQ(designs.size(), 2u);
      for (auto [d, family, update] :
           {std::tuple{0, "mma", "sync"}, std::tuple{1, "wmma", "mma"}}) {
        SCOPED_TRACE(fmt::format("{} seed {} {}", precision, seed, family));
        std::string trace = designs[static_cast<size_t>(d)].trace()->to_text();
        std::string prefix = fmt::format("\"cuda_{}_", family);
        EXPECT_EQ(count(trace, prefix + "fill_16x16_f32\""), 1) << trace;
        EXPECT_EQ(count(trace, prefix + "load_a_16x16_" + type + "\""), 1);
        EXPECT_EQ(count(trace, prefix + "load_b_16x16_" + type + "\""), 1);
        EXPECT_EQ(count(trace, prefix + update + "_16x16x16_" + type + "f32\""), 1);
        EXPECT_EQ(count(trace, prefix + "store_16x16_f32\""), 1);
        EXPECT_EQ(count(trace, fmt::format("\"{}.matrix_a\"", family)), 1);
        EXPECT_THAT(trace, HasSubstr("storage_align"));
        EXPECT_THAT(trace, HasSubstr("\"threadIdx.y\""));
        EXPECT_THAT(trace, HasSubstr("\"software_pipeline_stages\""));
        EXPECT_TRUE(computes_reference(w, designs[static_cast<size_t>(d)].func()));
      }
    }
  }
  // Before Ampere, WMMA only.
  std::vector<Schedule> volta =
      tensor_core_designs(workloads::make_workload("GMM", {1, 64, 64, 32}, "F16"),
                          target::Target::parse("cuda -arch=sm_70"), 1);
  ASSERT_EQ(volta.size(), 1u);
  EXPECT_THAT(volta[0].trace()->to_text(), HasSubstr("cuda_wmma_mma_16x16x16_f16f32"));
  EXPECT_THROW(MultiLevelTilingTensorCore(tensor_core_tiling(), 75, {"mma"}), InputError);
  EXPECT_THROW(MultiLevelTilingTensorCore(tensor_core_tiling(), 80, {"hmma"}), InputError);
}

TEST(TensorCoreTiling, ExtentsAreRoundedUpToTheTile) {
  target::Target cuda = target::Target::parse("cuda");
  workloads::Workload w = workloads::resolve("C[i,j] += A[i,k]*B[k,j]", "i=40,j=24,k=20",
                                             "A=float16,B=float16,C=float32");
  std::vector<Schedule> designs = tensor_core_designs(w, cuda, 5);
  ASSERT_EQ(designs.size(), 2u);
  std::string trace = designs[1].trace()->to_text();
  EXPECT_THAT(trace, HasSubstr("pad_einsum"));
  EXPECT_THAT(trace, HasSubstr("cuda_wmma_mma_16x16x16_f16f32"));
  EXPECT_THAT(designs[0].trace()->to_text(), HasSubstr("cuda_mma_sync_16x16x16_f16f32"));
  for (const Schedule& d : designs) EXPECT_TRUE(computes_reference(w, d.func()));
}

TEST(TensorCoreTiling, OtherBlocksAndArchitecturesAreLeftToMultiLevelTiling) {
  workloads::Workload f32 = workloads::make_workload("GMM", {1, 64, 64, 32});
  workloads::Workload bf16 = workloads::make_workload("GMM", {1, 64, 64, 32}, "BF16");
  workloads::Workload f16 = workloads::make_workload("GMM", {1, 64, 64, 32}, "F16");
  auto tensorized = [](const workloads::Workload& w, const char* target) {
    std::string trace =
        tensor_core_designs(w, target::Target::parse(target), 1)[0].trace()->to_text();
    return trace.find("cuda_wmma") != std::string::npos ||
           trace.find("cuda_mma") != std::string::npos;
  };
  EXPECT_FALSE(tensorized(f32, "cuda"));
  EXPECT_FALSE(tensorized(f16, "cuda -arch=sm_61"));  // no tensor cores before Volta
  EXPECT_TRUE(tensorized(f16, "cuda -arch=sm_70"));
  EXPECT_FALSE(tensorized(bf16, "cuda -arch=sm_75"));  // bfloat16 from Ampere on
  EXPECT_TRUE(tensorized(bf16, "cuda -arch=sm_90"));
  EXPECT_FALSE(tensorized(f16, "opencl"));  // OpenCL has no WMMA
  EXPECT_EQ(cuda_compute_capability(target::Target::parse("cuda -arch=sm_90a")), 90);
  EXPECT_EQ(cuda_compute_capability(target::Target::parse("cuda")), 80);
}

}  // namespace
}  // namespace tyche::tune
