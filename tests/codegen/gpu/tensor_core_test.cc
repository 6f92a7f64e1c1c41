// Tensor cores (WMMA m16n16k16; mma.sync m16n8k16 with ldmatrix): a GMM scheduled by hand as
// MetaSchedule's tensor-core tiling schedules it (operands staged in shared memory by every
// thread, software-pipelined or not, loaded into fragments per warp, the accumulator filled,
// updated and stored by warp-wide instructions) runs on PoCL as loops and matches the reference,
// and compiles with NVRTC into HMMA instructions (LDSM and LDGSTS for ldmatrix and cp.async).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "../../common/one_line_error.h"
#include "../../schedule/schedule_test_util.h"
#include "gpu_test_util.h"
#include "codegen/cuda_function.h"
#include "codegen/export_gpu.h"
#include "codegen/gpu_codegen.h"
#include "codegen/opencl_function.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "lower/gpu_lower.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "tune/explore/sample_space.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using schedule::testing::expect_golden;

using testing::ok;

// A cooperative fetch into shared memory at `at`: the copy's loops fused and spread over the
// block's 2 warps of 32 threads, `vector` elements each; rows padded to 8 elements past a multiple
// of 32 (storage_align, laid out again for the tile compact_buffers shrinks the buffer to).
void fetch_to_shared(schedule::Schedule& sch, const schedule::BlockRV& reader, int read, const schedule::LoopRV& at, int64_t lanes,
                     int64_t vector) {
  auto shared = ok(sch.cache_read(reader, read, "shared"));
  ok(sch.compute_at(shared, at));
  ok(sch.storage_align(shared, 0, 1, 32, 8));
  auto loops = ok(sch.get_loops(shared));
  auto fused = ok(sch.fuse({loops[loops.size() - 2], loops.back()}));
  std::vector<std::optional<schedule::ExprArg>> factors = {std::nullopt, 2, lanes};
  if (vector > 1) factors.push_back(vector);
  auto parts = ok(sch.split(fused, factors));
  ok(sch.bind(parts[1], "threadIdx.y"));
  ok(sch.bind(parts[2], "threadIdx.x"));
  if (vector > 1) ok(sch.vectorize(parts[3]));
}

// The innermost two loops of `block` (rows, then columns of `cols` = 16 * n) as n tiles of
// 16 x 16, tensorized with `intrin`.
void tensorize_tiles(schedule::Schedule& sch, const schedule::BlockRV& block, const std::string& intrin) {
  auto loops = ok(sch.get_loops(block));
  schedule::LoopRV rows = loops[loops.size() - 2], cols = loops.back();
  auto c = ok(sch.split(cols, {std::nullopt, 16}));
  auto r = ok(sch.split(rows, {std::nullopt, 16}));
  ok(sch.reorder({r[0], c[0], r[1], c[1]}));
  ok(sch.tensorize(r[1], intrin));
}

// GMM (float16 x float16 -> float32) on tensor cores: a block computes 32 x 32 of Z with 2 warps
// (threadIdx.y), each 16 rows by 2 tiles of 16 columns; per k step of 16, X's 32 x 16 and Y's
// 16 x 32 are fetched into shared memory by all 64 threads, then each warp loads its fragments
// and issues 2 mma. `type` is "f16" or "bf16"; `lanes` the fetches' threadIdx.x; without
// `tensorize_store` the accumulator is copied out by plain loops. `family`: "wmma" or "mma";
// `stages` > 0: the k loop annotated software_pipeline_stages.
struct TensorCoreGmm {
  std::string type = "f16";
  int64_t lanes = 32;
  bool tensorize_store = true;
  std::string family = "wmma";
  int64_t stages = 0;
  int64_t vector = 1;  // the fetches' elements per thread and step
};
ir::PrimFunc tensor_core_gmm(const ir::PrimFunc& func, const TensorCoreGmm& o) {
  const std::string& type = o.type;
  const std::string intrin = "cuda_" + o.family + "_";
  schedule::Schedule sch(func);
  auto z = ok(sch.get_block("Z"));
  auto acc = ok(sch.cache_write(z, 0, o.family + ".accumulator"));
  auto loops = ok(sch.get_loops(z));  // b, i, j, k
  auto i = ok(sch.split(loops[1], {std::nullopt, 2, 16}));
  auto j = ok(sch.split(loops[2], {std::nullopt, 2, 16}));
  auto k = ok(sch.split(loops[3], {std::nullopt, 16}));
  ok(sch.reorder({i[0], j[0], i[1], k[0], j[1], i[2], j[2], k[1]}));
  ok(sch.bind(i[0], "blockIdx.x"));
  ok(sch.bind(j[0], "blockIdx.y"));
  ok(sch.bind(i[1], "threadIdx.y"));
  ok(sch.reverse_compute_at(acc, i[1]));
  auto a = ok(sch.cache_read(z, 0, o.family + ".matrix_a"));
  auto b = ok(sch.cache_read(z, 1, o.family + ".matrix_b"));
  ok(sch.compute_at(a, k[0]));
  ok(sch.compute_at(b, k[0]));
  fetch_to_shared(sch, a, 0, k[0], o.lanes, o.vector);
  fetch_to_shared(sch, b, 0, k[0], o.lanes, o.vector);
  if (o.stages > 0) ok(sch.annotate(k[0], ir::ann::kSoftwarePipelineStages, o.stages));
  auto init = ok(sch.decompose_reduction(z, k[0]));
  tensorize_tiles(sch, a, intrin + "load_a_16x16_" + type);
  tensorize_tiles(sch, b, intrin + "load_b_16x16_" + type);
  tensorize_tiles(sch, init, intrin + "fill_16x16_f32");
  ok(sch.tensorize(i[2], intrin + (o.family == "mma" ? "sync" : "mma") + "_16x16x16_" + type + "f32"));
  if (o.tensorize_store) tensorize_tiles(sch, acc, intrin + "store_16x16_f32");
  return sch.func();
}

TEST(TensorCore, AScheduledGmmRunsOnOpenCLAsLoops) {
  OPEN_OR_SKIP(device);
  for (const char* type : {"f16", "bf16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, type == std::string("f16") ? "F16" : "BF16");
    ir::PrimFunc f = tensor_core_gmm(w.func, {.type = type});
    auto inputs = workloads::make_inputs(w.func);
    auto expected = w.reference(inputs);
    EXPECT_EQ(check_on_opencl(f, *device, inputs, expected), "") << type << "\n" << ir::to_string(f);
  }
}

// The kernel's body as the CUDA lowering leaves it: the nests are warp_matrix_* calls on fragment
// arrays, threadIdx.x is one warp's 32 lanes, barriers fence the shared tiles.
TEST(TensorCore, TheCudaLoweringIssuesWarpInstructions) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  lower::GpuProgram p = lower::lower_gpu(tensor_core_gmm(w.func, {}), {}, {.cuda = true});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].block, (std::array<int64_t, 3>{32, 2, 1}));
  EXPECT_EQ(p.kernels[0].grid, (std::array<int64_t, 3>{2, 2, 1}));
  // X's 32 x 16 tile with rows 40 apart (1 + 31 * 40 + 15 elements), Y's 16 x 32 likewise.
  EXPECT_EQ(p.kernels[0].shared_bytes, 2 * (1256 + 632));
  expect_golden("tensor_core_gmm", ir::to_string(p.kernels[0].body), "gpu");
}

// cuobjdump, with the nvdisasm it runs beside it on PATH: the toolkit's, or pip's
// nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (scripts/install_python_deps.sh).
std::string cuobjdump() {
  for (const char* dir : {"/usr/local/cuda/bin", "/usr/bin"})
    if (std::filesystem::exists(std::string(dir) + "/cuobjdump") && std::filesystem::exists(std::string(dir) + "/nvdisasm"))
      return fmt::format("PATH={}:$PATH {}/cuobjdump", dir, dir);
  FILE* f = popen("python3 -c 'import nvidia, os; print(*[p for p in nvidia.__path__], sep=chr(10))' 2>/dev/null", "r");
  if (!f) return "";
  char line[4096];
  std::string found;
  while (fgets(line, sizeof line, f)) {
    std::string dir(line);
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
    if (found.empty() && std::filesystem::exists(dir + "/cu13/bin/cuobjdump") && std::filesystem::exists(dir + "/cu13/bin/nvdisasm"))
      found = fmt::format("PATH={0}/cu13/bin:$PATH {0}/cu13/bin/cuobjdump", dir);
  }
  pclose(f);
  return found;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* f = popen(command.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  pclose(f);
  return out;
}

// The machine code of a cubin, as `dump` (cuobjdump) prints it.
std::string sass(const std::string& dump, const CudaBinary& binary) {
  std::string file = ::testing::TempDir() + "/tyche_tensor_core_" + std::to_string(getpid()) + ".cubin";
  std::ofstream(file, std::ios::binary).write(binary.compiled.cubin.data(), static_cast<std::streamsize>(binary.compiled.cubin.size()));
  std::string text = run(dump + " -sass " + file);
  std::filesystem::remove(file);
  return text;
}

// float16 and bfloat16, for sm_80 and sm_90: NVRTC compiles the WMMA instructions, the cubin's
// machine code multiplies on the tensor cores (HMMA), and the kernels fit the architectures.
TEST(TensorCore, CompilesToHmmaInstructions) {
  NVRTC_OR_SKIP();
  std::string dump = cuobjdump();
  for (const char* type : {"f16", "bf16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 128, 128, 64}, type == std::string("f16") ? "F16" : "BF16");
    lower::GpuProgram program = lower::lower_gpu(tensor_core_gmm(w.func, {.type = type}), {}, {.cuda = true});
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaBinary binary = compile_cuda(program, arch);
      EXPECT_THAT(binary.compiled.ptx, HasSubstr(fmt::format("wmma.mma.sync.aligned.row.row.m16n16k16.f32.{}", type == std::string("f16") ? "f32" : "bf16")));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("wmma.load.a.sync"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("bar.sync"));
      EXPECT_EQ(check_cuda_limits(binary, program, target::Target::parse(std::string("cuda -arch=") + arch)), "");
      if (!dump.empty()) {
        EXPECT_THAT(sass(dump, binary), HasSubstr("HMMA")) << type << " " << arch;
      }
    }
  }
  if (dump.empty()) GTEST_SKIP() << "no cuobjdump and nvdisasm (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm): PTX checked, machine code not";
}

// The cuda space's Use-Tensor-Core samples (MultiLevelTilingTensorCore, postprocessed): each runs
// on PoCL as loops and matches the reference, and compiles with NVRTC for sm_80 and sm_90 within
// the limits, its tensor intrinsics counted.
TEST(TensorCore, SampledProgramsRunOnOpenCLAndCompileWithNvrtc) {
  OPEN_OR_SKIP(device);
  bool nvrtc = true;
  try {
    runtime::cuda::nvrtc_version();
  } catch (const Error&) {
    nvrtc = false;
  }
  for (const char* precision : {"F16", "BF16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 128, 64, 96}, precision);
    {
      target::Target t = target::Target::parse("cuda -arch=sm_80");  // sm_90's space is the same
      tune::SampleSpaceOptions so{.samples = 5, .seed = 3};
      so.checker = [&](const ir::PrimFunc& f, const std::vector<runtime::NDArray>& in, const std::vector<runtime::NDArray>& expected) {
        return check_on_opencl(f, *device, in, expected);
      };
      if (nvrtc) {
        so.compiler = [&](const ir::PrimFunc& f) {
          lower::GpuProgram program = lower::lower_gpu(f, {}, {.cuda = true});
          for (const char* arch : {"sm_80", "sm_90"})
            if (std::string why = check_cuda_limits(compile_cuda(program, arch), program, target::Target::parse(std::string("cuda -arch=") + arch));
                !why.empty())
              return why;
          return std::string();
        };
      }
      tune::SampleSpaceReport r = tune::sample_space(w, t, so);
      SCOPED_TRACE(fmt::format("{}\n{}", precision, fmt::join(r.failures, "\n")));
      EXPECT_GT(r.valid, 0);
      EXPECT_EQ(r.correct, r.checked);
      EXPECT_EQ(r.checked, r.valid);
      if (nvrtc) {
        EXPECT_EQ(r.compiled, r.valid);
      }
      std::string type = precision == std::string("F16") ? "f16" : "bf16";
      // Each valid sample uses one family's update and store (mma.sync or WMMA).
      EXPECT_EQ(r.intrinsics["cuda_wmma_mma_16x16x16_" + type + "f32"] + r.intrinsics["cuda_mma_sync_16x16x16_" + type + "f32"], r.valid);
      EXPECT_EQ(r.intrinsics["cuda_wmma_store_16x16_f32"] + r.intrinsics["cuda_mma_store_16x16_f32"], r.valid);
    }
  }
}

// The CUDA export of a tensor-core program (kernels with their inline-PTX instructions and the
// host launcher) compiles with nvcc for sm_80.
TEST(TensorCore, TheCudaExportCompilesWithNvcc) {
  std::string nvcc;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) nvcc = p;
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc";
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  std::string dir = ::testing::TempDir() + "/tyche_tensor_core_export_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  export_gpu(lower::lower_gpu(tensor_core_gmm(w.func, {}), {}, {.cuda = true}), GpuDialect::kCuda, dir, "tc_gmm", "GMM F16");
  std::string command = nvcc + " -arch=sm_80 -c " + dir + "/tc_gmm.cu -o " + dir + "/tc_gmm.o > " + dir + "/nvcc.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << run("cat " + dir + "/nvcc.log");
  std::filesystem::remove_all(dir);
}

// mma.sync's family and software-pipelined copies run as loops on PoCL (the pipeline's versions,
// prologue and guards are the same IR on every target; only CUDA's copies are cp.async): k steps
// of 1 and 3 (3 stages with one step: the prologue's second copy is guarded away).
TEST(TensorCore, MmaAndPipelinedCopiesRunOnOpenCL) {
  OPEN_OR_SKIP(device);
  struct Case {
    int64_t k;
    TensorCoreGmm o;
  };
  for (const Case& c : {Case{48, {.family = "mma", .stages = 1}}, Case{48, {.family = "mma", .stages = 2, .vector = 8}},
                        Case{48, {.family = "mma", .stages = 3}}, Case{16, {.family = "mma", .stages = 3, .vector = 4}},
                        Case{48, {.type = "bf16", .family = "mma", .stages = 2, .vector = 2}}, Case{48, {.family = "wmma", .stages = 2}}}) {
    SCOPED_TRACE(fmt::format("{} {} k {} stages {} vector {}", c.o.family, c.o.type, c.k, c.o.stages, c.o.vector));
    workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, c.k}, c.o.type == "f16" ? "F16" : "BF16");
    auto inputs = workloads::make_inputs(w.func);
    EXPECT_EQ(check_on_opencl(tensor_core_gmm(w.func, c.o), *device, inputs, w.reference(inputs)), "");
  }
}

// The CUDA lowering of a pipelined mma GMM: X and Y get two versions each (every version rounded
// up to 64 bytes), the first k step's copies are issued before the loop; each step waits for its
// own copies, passes the one barrier, issues the next step's 16-byte copies as cp.async (a commit
// group) and reads its version.
TEST(TensorCore, TheCudaLoweringPipelinesTheCopies) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  lower::GpuProgram p = lower::lower_gpu(tensor_core_gmm(w.func, {.family = "mma", .stages = 2, .vector = 8}), {}, {.cuda = true});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].shared_bytes, 2 * 2 * (1280 + 640));
  expect_golden("tensor_core_gmm_pipelined", ir::to_string(p.kernels[0].body), "gpu");
  // sm_75 has no cp.async: the copies stay plain stores.
  lower::GpuProgram turing = lower::lower_gpu(tensor_core_gmm(w.func, {.family = "wmma", .stages = 2, .vector = 8}), {}, {.cuda = true, .sm = 75});
  EXPECT_THAT(ir::to_string(turing.kernels[0].body), Not(HasSubstr("async_copy")));
}

// mma.sync with ldmatrix and cp.async (2 stages for float16, 3 for bfloat16) for sm_80 and sm_90:
// the PTX has the instructions, the machine code LDSM (ldmatrix), HMMA.16816 (m16n8k16) and
// LDGSTS (cp.async).
TEST(TensorCore, MmaCompilesToLdmatrixHmmaAndAsyncCopies) {
  NVRTC_OR_SKIP();
  std::string dump = cuobjdump();
  for (const char* type : {"f16", "bf16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 128, 128, 64}, type == std::string("f16") ? "F16" : "BF16");
    const int64_t stages = type == std::string("f16") ? 2 : 3;
    lower::GpuProgram program =
        lower::lower_gpu(tensor_core_gmm(w.func, {.type = type, .family = "mma", .stages = stages, .vector = 8}), {}, {.cuda = true});
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaBinary binary = compile_cuda(program, arch);
      EXPECT_THAT(binary.compiled.ptx, HasSubstr(fmt::format("mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32", type)));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("cp.async.cg.shared.global"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr(fmt::format("cp.async.wait_group {}", stages - 2)));
      EXPECT_EQ(check_cuda_limits(binary, program, target::Target::parse(std::string("cuda -arch=") + arch)), "");
      if (dump.empty()) continue;
      std::string machine = sass(dump, binary);
      for (const char* instruction : {"HMMA.16816", "LDSM", "LDGSTS"}) EXPECT_THAT(machine, HasSubstr(instruction)) << type << " " << arch;
    }
  }
  if (dump.empty()) GTEST_SKIP() << "no cuobjdump and nvdisasm: PTX checked, machine code not";
}

TEST(TensorCore, RefusesWhatTheInstructionsCannotDo) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  ir::PrimFunc wide = tensor_core_gmm(w.func, {.lanes = 16});  // the fetches' threadIdx.x: 16 lanes, not a warp
  tyche::testing::expect_one_line_error([&] { lower::lower_gpu(wide, {}, {.cuda = true}); },
                                        "a kernel using tensor cores launches threadIdx.x as one warp's 32 lanes, not 16");
  ir::PrimFunc plain_store = tensor_core_gmm(w.func, {.tensorize_store = false});
  tyche::testing::expect_one_line_error([&] { lower::lower_gpu(plain_store, {}, {.cuda = true}); },
                                        "fragment 'Z_wmma_accumulator' is accessed outside a tensor-core instruction");
  // Elsewhere the nests are loops: both run on OpenCL.
  EXPECT_NO_THROW(lower::lower_gpu(wide));
  EXPECT_NO_THROW(lower::lower_gpu(plain_store));
}

// A software pipeline needs stages 1 to 8 and a loop that copies into shared memory.
TEST(TensorCore, RefusesPipelinesWithoutCopies) {
  workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48}, "F16");
  tyche::testing::expect_one_line_error([&] { lower::lower_gpu(tensor_core_gmm(w.func, {.stages = 9})); },
                                        "loop 'k_0' asks for 9 software pipeline stages (1 to 8)");
  schedule::Schedule sch(workloads::make_workload("GMM", {1, 64, 64, 48}).func);
  auto loops = ok(sch.get_loops(ok(sch.get_block("Z"))));
  auto i = ok(sch.split(loops[1], {std::nullopt, 32}));
  ok(sch.bind(i[0], "blockIdx.x"));
  ok(sch.bind(i[1], "threadIdx.x"));
  ok(sch.annotate(loops[3], ir::ann::kSoftwarePipelineStages, int64_t{2}));
  tyche::testing::expect_one_line_error([&] { lower::lower_gpu(sch.func(), {}, {.cuda = true}); },
                                        "loop 'k' cannot be software-pipelined: its body copies nothing into shared memory");
}

}  // namespace
}  // namespace tyche::codegen
