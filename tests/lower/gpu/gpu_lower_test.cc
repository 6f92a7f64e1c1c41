// The GPU lowering alone (lower_gpu: src/lower/gpu), no code printed or run: golden lowered IR of
// a hand-bound GMM (shared memory, cooperative fetch, barriers), of one with virtual threads and
// of a cross-thread softmax; the CUDA lowering of tensor-core GMMs, plain and software-pipelined;
// the refusals, one line each. tests/codegen/gpu prints, runs and compiles the same programs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../common/gpu_test_util.h"
#include "../../common/one_line_error.h"
#include "../../schedule/schedule_test_util.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "lower/gpu/gpu_lower.h"
#include "lower/gpu/gpu_resources.h"
#include "workloads/workloads.h"

namespace tyche::lower {
namespace {

using schedule::testing::expect_golden;
using schedule::testing::small;
using ::testing::HasSubstr;
using ::testing::Not;
using tyche::testing::bound_gmm;
using tyche::testing::cross_thread_softmax;
using tyche::testing::describe;
using tyche::testing::ok;
using tyche::testing::tensor_core_gmm;
using tyche::testing::vthread_gmm;

TEST(GpuLower, ABoundGmmBecomesOneKernelWithSharedMemoryAndBarriers) {
  workloads::Workload w = small("GMM-1");
  GpuProgram p = lower_gpu(bound_gmm(w.func));
  ASSERT_EQ(p.kernels.size(), 1u);
  const GpuKernel& k = p.kernels[0];
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{8, 8, 1}));
  EXPECT_EQ(k.grid, (std::array<int64_t, 3>{4, 4, 1}));
  EXPECT_EQ(k.shared.size(), 1u);
  expect_golden("bound_gmm", describe(p), "gpu");
}

// The virtual threads share the fetch into shared memory (once per k step, not once per virtual
// thread) and each has its own accumulators (a local buffer of 2 x 1 x 1 x 1).
TEST(GpuLower, VirtualThreadsShareTheFetchAndPrivatizeTheirAccumulators) {
  workloads::Workload w = small("GMM-1");
  GpuProgram p = lower_gpu(vthread_gmm(w.func));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].block, (std::array<int64_t, 3>{8, 8, 1}));
  EXPECT_EQ(p.kernels[0].grid, (std::array<int64_t, 3>{2, 4, 1}));
  expect_golden("vthread_gmm", describe(p), "gpu");
}

TEST(GpuLower, ACrossThreadSoftmaxReducesAsATreeInSharedMemory) {
  workloads::Workload w = small("SFM-1");
  GpuProgram p = lower_gpu(cross_thread_softmax(w.func));
  EXPECT_EQ(p.kernels.size(), 4u);
  EXPECT_EQ(p.intermediates.size(), 3u);
  expect_golden("cross_thread_softmax", describe(p), "gpu");
}

TEST(GpuLower, RefusesAStatementOutsideEveryKernel) {
  workloads::Workload w = small("GMM-1");
  tyche::testing::expect_one_line_error([&] { lower_gpu(w.func); }, "runs outside every kernel");
}

TEST(GpuLower, RefusesAParallelLoop) {
  workloads::Workload w = small("GMM-1");
  schedule::Schedule sch(w.func);
  auto loops = ok(sch.get_loops(ok(sch.get_block("Z"))));
  ok(sch.parallel(loops[1]));
  tyche::testing::expect_one_line_error([&] { lower_gpu(sch.func()); }, "is parallel");
}

TEST(GpuLower, RefusesAThreadLoopOfUnknownAxis) {
  workloads::Workload w = small("GMM-1");
  schedule::Schedule sch(w.func);
  auto loops = ok(sch.get_loops(ok(sch.get_block("Z"))));
  ok(sch.bind(loops[0], "threadIdx.x"));
  ok(sch.bind(loops[1], "blockIdx.x"));  // below a thread loop
  tyche::testing::expect_one_line_error([&] { lower_gpu(sch.func()); },
                                        "blockIdx loops must be a kernel's outermost");
}

// The kernel's body as the CUDA lowering leaves it: the nests are warp_matrix_* calls on fragment
// arrays, threadIdx.x is one warp's 32 lanes, barriers fence the shared tiles.
TEST(TensorCore, TheCudaLoweringIssuesWarpInstructions) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  GpuProgram p = lower_gpu(tensor_core_gmm(w.func, {}), {}, {.cuda = true});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].block, (std::array<int64_t, 3>{32, 2, 1}));
  EXPECT_EQ(p.kernels[0].grid, (std::array<int64_t, 3>{2, 2, 1}));
  // X's 32 x 16 tile with rows 40 apart (1 + 31 * 40 + 15 elements), Y's 16 x 32 likewise,
  // starting at the next multiple of 32 bytes (each array is declared 32-byte aligned).
  EXPECT_EQ(p.kernels[0].shared_bytes, 2 * 1264 + 2 * 632);
  expect_golden("tensor_core_gmm", ir::to_string(p.kernels[0].body), "gpu");
}

// The CUDA lowering of a pipelined mma GMM: X and Y get two versions each (every version rounded
// up to 64 bytes), the first k step's copies are issued before the loop; each step waits for its
// own copies, passes the one barrier, issues the next step's 16-byte copies as cp.async (a commit
// group) and reads its version.
TEST(TensorCore, TheCudaLoweringPipelinesTheCopies) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  GpuProgram p = lower_gpu(tensor_core_gmm(w.func, {.family = "mma", .stages = 2, .vector = 8}), {},
                           {.cuda = true});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].shared_bytes, 2 * 2 * (1280 + 640));
  expect_golden("tensor_core_gmm_pipelined", ir::to_string(p.kernels[0].body), "gpu");
  // sm_75 has no cp.async: the copies stay plain stores.
  GpuProgram turing =
      lower_gpu(tensor_core_gmm(w.func, {.family = "wmma", .stages = 2, .vector = 8}), {},
                {.cuda = true, .sm = 75});
  EXPECT_THAT(ir::to_string(turing.kernels[0].body), Not(HasSubstr("async_copy")));
}

TEST(TensorCore, RefusesWhatTheInstructionsCannotDo) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  ir::PrimFunc wide =
      tensor_core_gmm(w.func, {.lanes = 16});  // the fetches' threadIdx.x: 16 lanes, not a warp
  tyche::testing::expect_one_line_error(
      [&] { lower_gpu(wide, {}, {.cuda = true}); },
      "a kernel using tensor cores launches threadIdx.x as one warp's 32 lanes, not 16");
  ir::PrimFunc plain_store = tensor_core_gmm(w.func, {.tensorize_store = false});
  tyche::testing::expect_one_line_error(
      [&] { lower_gpu(plain_store, {}, {.cuda = true}); },
      "fragment 'Z_wmma_accumulator' is accessed outside a tensor-core instruction");
  // Elsewhere the nests are loops: both run on OpenCL.
  EXPECT_NO_THROW(lower_gpu(wide));
  EXPECT_NO_THROW(lower_gpu(plain_store));
}

// A software pipeline needs stages 1 to 8 and a loop that copies into shared memory.
TEST(TensorCore, RefusesPipelinesWithoutCopies) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  tyche::testing::expect_one_line_error([&] { lower_gpu(tensor_core_gmm(w.func, {.stages = 9})); },
                                        "loop 'k_0' asks for 9 software pipeline stages (1 to 8)");
  schedule::Schedule sch(workloads::make_workload("GMM", {1, 64, 64, 48}).func);
  auto loops = ok(sch.get_loops(ok(sch.get_block("Z"))));
  auto i = ok(sch.split(loops[1], {std::nullopt, 32}));
  ok(sch.bind(i[0], "blockIdx.x"));
  ok(sch.bind(i[1], "threadIdx.x"));
  ok(sch.annotate(loops[3], ir::ann::kSoftwarePipelineStages, int64_t{2}));
  tyche::testing::expect_one_line_error(
      [&] { lower_gpu(sch.func(), {}, {.cuda = true}); },
      "loop 'k' cannot be software-pipelined: its body copies nothing into shared memory");
}

// A kernel's resources as its arrays are declared: on CUDA a warp's fragments are tiles of
// registers (the accumulator's 2 tiles x 8 words, A's 1 x 8, B's 2 x 8: 160 bytes per thread),
// elsewhere every thread holds them as plain arrays (512 floats, 256 and 512 halves: 3584 bytes).
TEST(GpuResources, FragmentsAreTheirTilesRegistersOnCuda) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  ir::PrimFunc f = tensor_core_gmm(w.func, {});
  GpuKernelResources cuda = kernel_resources(lower_gpu(f, {}, {.cuda = true}).kernels.at(0));
  EXPECT_EQ(cuda.threads, 64);
  EXPECT_EQ(cuda.local_bytes, 4 * (2 * 8 + 8 + 2 * 8));
  EXPECT_EQ(cuda.shared_bytes, 2 * 1264 + 2 * 632);
  GpuKernelResources loops = kernel_resources(lower_gpu(f).kernels.at(0));
  EXPECT_EQ(loops.local_bytes, 4 * 512 + 2 * 256 + 2 * 512);
  EXPECT_EQ(loops.shared_bytes, cuda.shared_bytes);
}

}  // namespace
}  // namespace tyche::lower
