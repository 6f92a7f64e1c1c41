// One figure for a kernel's shared memory (lower::kernel_resources): VerifyGPUCode refuses a
// candidate by the figure the launch plan carries and ptxas allocates for the printed CUDA C, for
// the GPU tests' programs -- hand-bound GMMs, cross-thread softmaxes, and tensor-core GMMs plain
// and software-pipelined (the case a copy of the sizing rules in VerifyGPUCode once got wrong).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "../../common/gpu_test_util.h"
#include "../../schedule/schedule_test_util.h"
#include "codegen/gpu/cuda_function.h"
#include "codegen/gpu/gpu_codegen.h"
#include "codegen/gpu/gpu_launch.h"
#include "lower/gpu/gpu_resources.h"
#include "tune/postproc/postproc.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using schedule::testing::small;
using ::testing::HasSubstr;
using tyche::testing::bound_gmm;
using tyche::testing::cross_thread_softmax;
using tyche::testing::tensor_core_gmm;
using tyche::testing::TensorCoreGmm;
using tyche::testing::vthread_gmm;

schedule::Status verify(const ir::PrimFunc& f, const target::Target& target) {
  schedule::Schedule sch(f);
  tune::PostprocPtr p = tune::verify_gpu_code();
  p->initialize(tune::TuneContext{f, target});
  return p->apply(sch);
}

struct Program {
  std::string name;
  ir::PrimFunc func;
  target::Target target;
};

std::vector<Program> programs() {
  const target::Target opencl = target::Target::parse("opencl"),
                       cuda = target::Target::parse("cuda -arch=sm_80");
  workloads::Workload gmm = small("GMM-1"), sfm = small("SFM-1");
  workloads::Workload f16 = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  workloads::Workload bf16 = workloads::make_workload("GMM", {1, 64, 64, 48}, "BF16");
  return {
      {"bound GMM, OpenCL", bound_gmm(gmm.func), opencl},
      {"bound GMM, CUDA", bound_gmm(gmm.func), cuda},
      {"virtual threads", vthread_gmm(gmm.func), cuda},
      {"softmax, 16 threads as a tree", cross_thread_softmax(sfm.func, 16), opencl},
      {"softmax, 64 threads by warps", cross_thread_softmax(sfm.func, 64), cuda},
      {"tensor cores, WMMA", tensor_core_gmm(f16.func, {}), cuda},
      {"tensor cores, WMMA, sm_75", tensor_core_gmm(f16.func, {.stages = 2}),
       target::Target::parse("cuda -arch=sm_75")},
      {"tensor cores, mma.sync, 2 stages",
       tensor_core_gmm(f16.func, {.family = "mma", .stages = 2, .vector = 8}), cuda},
      {"tensor cores, mma.sync, 3 stages, bfloat16",
       tensor_core_gmm(bf16.func, {.type = "bf16", .family = "mma", .stages = 3, .vector = 2}),
       cuda},
  };
}

TEST(GpuSharedMemory, VerifyGPUCodeCountsWhatTheLaunchedKernelDeclares) {
  const bool nvrtc = tyche::testing::nvrtc_missing().empty();
  for (const Program& p : programs()) {
    SCOPED_TRACE(p.name);
    lower::GpuProgram program = lower::lower_gpu(p.func, {}, gpu_lower_options(p.target));
    GpuLaunchPlan plan = launch_plan(program);
    int64_t most = 0;
    for (size_t i = 0; i < program.kernels.size(); ++i) {
      EXPECT_EQ(plan.kernels[i].shared_bytes, program.kernels[i].shared_bytes);
      EXPECT_EQ(plan.kernels[i].shared_bytes,
                lower::kernel_resources(program.kernels[i]).shared_bytes);
      most = std::max(most, plan.kernels[i].shared_bytes);
    }
    ASSERT_GT(most, 0);
    // VerifyGPUCode's figure is the launch's: the program fits a limit of exactly that much and
    // is refused, naming it, one byte below.
    target::Target limit = p.target;
    limit.max_shared_memory_per_block = most;
    schedule::Status st = verify(p.func, limit);
    EXPECT_TRUE(st.ok()) << st.error().reason();
    limit.max_shared_memory_per_block = most - 1;
    st = verify(p.func, limit);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code(), schedule::ErrorCode::kExceedsLimit);
    EXPECT_THAT(
        st.error().reason(),
        HasSubstr(fmt::format("{} bytes of shared memory exceed max_shared_memory_per_block {}",
                              most, most - 1)));
    // And the printed kernel's: ptxas allocates that much static shared memory for each kernel.
    if (p.target.kind != "cuda" || !nvrtc) continue;
    CudaBinary binary = compile_cuda(program, cuda_arch(p.target));
    for (size_t i = 0; i < program.kernels.size(); ++i)
      EXPECT_EQ(binary.kernels.at(i).shared_bytes, plan.kernels[i].shared_bytes) << i;
  }
  if (!nvrtc)
    GTEST_SKIP() << "no NVRTC: the launch plan and VerifyGPUCode checked, ptxas's figure not";
}

// Each array is declared 32-byte aligned in both dialects, as the figure lays them out.
TEST(GpuSharedMemory, ThePrintersDeclareTheArraysAligned) {
  workloads::Workload f16 = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  lower::GpuProgram program = lower::lower_gpu(tensor_core_gmm(f16.func, {}), {}, {.cuda = true});
  ASSERT_EQ(program.kernels[0].shared.size(), 2u);
  EXPECT_THAT(emit_gpu(program, GpuDialect::kCuda), HasSubstr("__shared__ __align__(32) uint16_t"));
  lower::GpuProgram loops = lower::lower_gpu(bound_gmm(small("GMM-1").func));
  EXPECT_THAT(emit_gpu(loops, GpuDialect::kOpenCL),
              HasSubstr("__local float b_X_shared[64] __attribute__((aligned(32)));"));
}

}  // namespace
}  // namespace tyche::codegen
