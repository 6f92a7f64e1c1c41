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

#include "../../common/gpu_test_util.h"
#include "../../common/one_line_error.h"
#include "../../schedule/schedule_test_util.h"
#include "codegen/gpu/cuda_function.h"
#include "codegen/gpu/export_gpu.h"
#include "codegen/gpu/gpu_codegen.h"
#include "codegen/gpu/opencl_function.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "lower/gpu/gpu_lower.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "tune/explore/sample_space.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using tyche::testing::tensor_core_gmm;
using tyche::testing::TensorCoreGmm;

TEST(TensorCore, AScheduledGmmRunsOnOpenCLAsLoops) {
  OPEN_OR_SKIP(device);
  for (const char* type : {"f16", "bf16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 64, 64, 48},
                                                     type == std::string("f16") ? "F16" : "BF16");
    ir::PrimFunc f = tensor_core_gmm(w.func, {.type = type});
    auto inputs = workloads::make_inputs(w.func);
    auto expected = w.reference(inputs);
    EXPECT_EQ(check_on_opencl(f, *device, inputs, expected), "") << type << "\n"
                                                                 << ir::to_string(f);
  }
}

// cuobjdump, with the nvdisasm it runs beside it on PATH: the toolkit's, or pip's
// nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (scripts/install_python_deps.sh).
std::string cuobjdump() {
  for (const char* dir : {"/usr/local/cuda/bin", "/usr/bin"})
    if (std::filesystem::exists(std::string(dir) + "/cuobjdump") &&
        std::filesystem::exists(std::string(dir) + "/nvdisasm"))
      return fmt::format("PATH={}:$PATH {}/cuobjdump", dir, dir);
  FILE* f = popen(
      "python3 -c 'import nvidia, os; print(*[p for p in nvidia.__path__], sep=chr(10))' "
      "2>/dev/null",
      "r");
  if (!f) return "";
  char line[4096];
  std::string found;
  while (fgets(line, sizeof line, f)) {
    std::string dir(line);
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
    if (found.empty() && std::filesystem::exists(dir + "/cu13/bin/cuobjdump") &&
        std::filesystem::exists(dir + "/cu13/bin/nvdisasm"))
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
  std::string file =
      ::testing::TempDir() + "/tyche_tensor_core_" + std::to_string(getpid()) + ".cubin";
  std::ofstream(file, std::ios::binary)
      .write(binary.compiled.cubin.data(),
             static_cast<std::streamsize>(binary.compiled.cubin.size()));
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
    workloads::Workload w = workloads::make_workload("GMM", {1, 128, 128, 64},
                                                     type == std::string("f16") ? "F16" : "BF16");
    lower::GpuProgram program =
        lower::lower_gpu(tensor_core_gmm(w.func, {.type = type}), {}, {.cuda = true});
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaBinary binary = compile_cuda(program, arch);
      EXPECT_THAT(binary.compiled.ptx,
                  HasSubstr(fmt::format("wmma.mma.sync.aligned.row.row.m16n16k16.f32.{}",
                                        type == std::string("f16") ? "f32" : "bf16")));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("wmma.load.a.sync"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("bar.sync"));
      EXPECT_EQ(check_cuda_limits(binary, program,
                                  target::Target::parse(std::string("cuda -arch=") + arch)),
                "");
      if (!dump.empty()) {
        EXPECT_THAT(sass(dump, binary), HasSubstr("HMMA")) << type << " " << arch;
      }
    }
  }
  if (dump.empty())
    GTEST_SKIP() << "no cuobjdump and nvdisasm (pip install nvidia-cuda-cuobjdump "
                    "nvidia-cuda-nvdisasm): PTX checked, machine code not";
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
      so.checker = [&](const ir::PrimFunc& f, const std::vector<runtime::NDArray>& in,
                       const std::vector<runtime::NDArray>& expected) {
        return check_on_opencl(f, *device, in, expected);
      };
      if (nvrtc) {
        so.compiler = [&](const ir::PrimFunc& f) {
          lower::GpuProgram program = lower::lower_gpu(f, {}, {.cuda = true});
          for (const char* arch : {"sm_80", "sm_90"})
            if (std::string why =
                    check_cuda_limits(compile_cuda(program, arch), program,
                                      target::Target::parse(std::string("cuda -arch=") + arch));
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
      EXPECT_EQ(r.intrinsics["cuda_wmma_mma_16x16x16_" + type + "f32"] +
                    r.intrinsics["cuda_mma_sync_16x16x16_" + type + "f32"],
                r.valid);
      EXPECT_EQ(
          r.intrinsics["cuda_wmma_store_16x16_f32"] + r.intrinsics["cuda_mma_store_16x16_f32"],
          r.valid);
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
  export_gpu(lower::lower_gpu(tensor_core_gmm(w.func, {}), {}, {.cuda = true}), GpuDialect::kCuda,
             dir, "tc_gmm", "GMM F16");
  std::string command = nvcc + " -arch=sm_80 -c " + dir + "/tc_gmm.cu -o " + dir + "/tc_gmm.o > " +
                        dir + "/nvcc.log 2>&1";
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
  for (const Case& c : {Case{48, {.family = "mma", .stages = 1}},
                        Case{48, {.family = "mma", .stages = 2, .vector = 8}},
                        Case{48, {.family = "mma", .stages = 3}},
                        Case{16, {.family = "mma", .stages = 3, .vector = 4}},
                        Case{48, {.type = "bf16", .family = "mma", .stages = 2, .vector = 2}},
                        Case{48, {.family = "wmma", .stages = 2}}}) {
    SCOPED_TRACE(fmt::format("{} {} k {} stages {} vector {}", c.o.family, c.o.type, c.k,
                             c.o.stages, c.o.vector));
    workloads::Workload w =
        workloads::make_workload("GMM", {1, 64, 64, c.k}, c.o.type == "f16" ? "F16" : "BF16");
    auto inputs = workloads::make_inputs(w.func);
    EXPECT_EQ(check_on_opencl(tensor_core_gmm(w.func, c.o), *device, inputs, w.reference(inputs)),
              "");
  }
}

// mma.sync with ldmatrix and cp.async (2 stages for float16, 3 for bfloat16) for sm_80 and sm_90:
// the PTX has the instructions, the machine code LDSM (ldmatrix), HMMA.16816 (m16n8k16) and
// LDGSTS (cp.async).
TEST(TensorCore, MmaCompilesToLdmatrixHmmaAndAsyncCopies) {
  NVRTC_OR_SKIP();
  std::string dump = cuobjdump();
  for (const char* type : {"f16", "bf16"}) {
    workloads::Workload w = workloads::make_workload("GMM", {1, 128, 128, 64},
                                                     type == std::string("f16") ? "F16" : "BF16");
    const int64_t stages = type == std::string("f16") ? 2 : 3;
    lower::GpuProgram program = lower::lower_gpu(
        tensor_core_gmm(w.func, {.type = type, .family = "mma", .stages = stages, .vector = 8}), {},
        {.cuda = true});
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaBinary binary = compile_cuda(program, arch);
      EXPECT_THAT(
          binary.compiled.ptx,
          HasSubstr(fmt::format("mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32", type)));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
      EXPECT_THAT(binary.compiled.ptx, HasSubstr("cp.async.cg.shared.global"));
      EXPECT_THAT(binary.compiled.ptx,
                  HasSubstr(fmt::format("cp.async.wait_group {}", stages - 2)));
      EXPECT_EQ(check_cuda_limits(binary, program,
                                  target::Target::parse(std::string("cuda -arch=") + arch)),
                "");
      if (dump.empty()) continue;
      std::string machine = sass(dump, binary);
      for (const char* instruction : {"HMMA.16816", "LDSM", "LDGSTS"})
        EXPECT_THAT(machine, HasSubstr(instruction)) << type << " " << arch;
    }
  }
  if (dump.empty()) GTEST_SKIP() << "no cuobjdump and nvdisasm: PTX checked, machine code not";
}

}  // namespace
}  // namespace tyche::codegen
