// The GPU back end (the lowering alone: tests/lower/gpu): OpenCL C run on the OpenCL device (PoCL
// here: work-groups, local memory and barriers on the CPU) against the reference for every
// family's AutoBind program and sampled programs, and CUDA C compiled by NVRTC. Without an OpenCL
// platform or NVRTC, those tests are skipped saying why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "../../common/gpu_test_util.h"
#include "../../common/one_line_error.h"
#include "../../schedule/schedule_test_util.h"
#include "codegen/gpu/cuda_function.h"
#include "codegen/gpu/export_gpu.h"
#include "codegen/gpu/gpu_codegen.h"
#include "codegen/gpu/opencl_function.h"
#include "ir/printer.h"
#include "lower/gpu/gpu_lower.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "tune/explore/sample_space.h"
#include "tune/space/schedule_rule.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using schedule::testing::small;
using ::testing::HasSubstr;
using tyche::testing::bound_gmm;
using tyche::testing::cross_thread_softmax;
using tyche::testing::kOpenCL;
using tyche::testing::vthread_gmm;

::testing::AssertionResult runs_correctly(const workloads::Workload& w, const ir::PrimFunc& f,
                                          const runtime::opencl::Device& device) {
  auto inputs = workloads::make_inputs(w.func);
  auto expected = w.reference(inputs);
  std::string mismatch;
  try {
    mismatch = check_on_opencl(f, device, inputs, expected);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << w.name << ": " << e.what() << "\n" << ir::to_string(f);
  }
  if (!mismatch.empty())
    return ::testing::AssertionFailure() << w.name << ": " << mismatch << "\n" << ir::to_string(f);
  return ::testing::AssertionSuccess();
}

TEST(GpuOpenCL, HandBoundProgramsMatchTheReference) {
  OPEN_OR_SKIP(device);
  workloads::Workload gmm = small("GMM-1");
  EXPECT_TRUE(runs_correctly(gmm, bound_gmm(gmm.func), *device));
  EXPECT_TRUE(runs_correctly(gmm, vthread_gmm(gmm.func), *device));
  workloads::Workload sfm = small("SFM-1");
  for (int64_t threads : {16, 7, 64})  // a power of two, an odd count, more threads than a row has
    EXPECT_TRUE(runs_correctly(sfm, cross_thread_softmax(sfm.func, threads), *device))
        << threads << " threads";
}

// One preset of each family; odd extents from formulas.
const char* kFamilies[] = {"GMM-1", "C1D-1", "C2D-1", "C3D-1",        "GRP-3",
                           "DIL-2", "DEP-1", "T2D-2", "CAP-1",        "NRM-4",
                           "SFM-2", "CBR-2", "TBG-1", "DENSE_RELU-4", "DENSE-BERT"};

TEST(GpuOpenCL, EveryFamilysAutoBindProgramMatchesTheReference) {
  OPEN_OR_SKIP(device);
  for (const char* name : kFamilies) {
    workloads::Workload w = small(name);
    EXPECT_TRUE(runs_correctly(w, tune::auto_bind_blocks(w.func, kOpenCL, 3), *device));
  }
}

TEST(GpuOpenCL, EveryFamilysSampledProgramsMatchTheReference) {
  OPEN_OR_SKIP(device);
  for (const char* name : kFamilies) {
    workloads::Workload w = small(name);
    tune::SampleSpaceOptions so{.samples = 2, .seed = 7};
    so.checker = [&](const ir::PrimFunc& f, const std::vector<runtime::NDArray>& in,
                     const std::vector<runtime::NDArray>& expected) {
      return check_on_opencl(f, *device, in, expected);
    };
    tune::SampleSpaceReport r = tune::sample_space(w, kOpenCL, so);
    EXPECT_GT(r.checked, 0) << name;
    EXPECT_EQ(r.correct, r.checked) << name << "\n"
                                    << fmt::format("{}", fmt::join(r.failures, "\n"));
  }
}

TEST(GpuOpenCL, OddExtentsMatchTheReference) {
  OPEN_OR_SKIP(device);
  for (const auto& [formula, extents] : std::vector<std::pair<std::string, std::string>>{
           {"C[i,j] += A[i,k]*B[k,j]", "i=33,j=17,k=29"},
           {"S[i] += A[i,k]", "i=7,k=45"},
           {"M[i] max= A[i,k]", "i=5,k=131"}}) {
    workloads::Workload w = workloads::resolve(formula, extents);
    EXPECT_TRUE(runs_correctly(w, tune::auto_bind_blocks(w.func, kOpenCL, 1), *device));
    tune::SampleSpaceOptions so{.samples = 3, .seed = 5};
    so.checker = [&](const ir::PrimFunc& f, const std::vector<runtime::NDArray>& in,
                     const std::vector<runtime::NDArray>& expected) {
      return check_on_opencl(f, *device, in, expected);
    };
    tune::SampleSpaceReport r = tune::sample_space(w, kOpenCL, so);
    EXPECT_GT(r.checked, 0) << formula;
    EXPECT_EQ(r.correct, r.checked) << formula << "\n"
                                    << fmt::format("{}", fmt::join(r.failures, "\n"));
  }
}

TEST(GpuCuda, TheKernelsCompileWithNvrtcForSm80AndSm90) {
  NVRTC_OR_SKIP();
  workloads::Workload gmm = small("GMM-1"), sfm = small("SFM-1");
  for (const ir::PrimFunc& f :
       {bound_gmm(gmm.func), vthread_gmm(gmm.func), cross_thread_softmax(sfm.func, 16),
        cross_thread_softmax(sfm.func, 64)}) {
    std::string source = emit_gpu(lower::lower_gpu(f), GpuDialect::kCuda);
    for (const char* arch : {"sm_80", "sm_90"}) {
      runtime::cuda::Compiled c = runtime::cuda::compile(source, arch);
      EXPECT_FALSE(c.cubin.empty()) << arch;
      EXPECT_THAT(c.ptx, HasSubstr("bar.sync")) << arch;  // __syncthreads()
    }
  }
  // With warp shuffles: 16 threads reduce in one warp segment (no shared memory, no barrier); 64
  // threads through the two warps' totals in shared memory.
  for (int64_t threads : {16, 64}) {
    lower::GpuProgram p =
        lower::lower_gpu(cross_thread_softmax(sfm.func, threads), {}, {.cuda = true});
    EXPECT_EQ(p.kernels[0].shared_bytes, threads == 16 ? 0 : 8) << threads;
    runtime::cuda::Compiled c = runtime::cuda::compile(emit_gpu(p, GpuDialect::kCuda), "sm_90");
    EXPECT_THAT(c.ptx, HasSubstr("shfl.sync.down")) << threads;
    EXPECT_THAT(c.ptx, HasSubstr("shfl.sync.idx")) << threads;
  }
  tyche::testing::expect_one_line_error(
      [&] {
        emit_gpu(lower::lower_gpu(cross_thread_softmax(sfm.func, 16), {}, {.cuda = true}),
                 GpuDialect::kOpenCL);
      },
      "warp shuffle in OpenCL C");
}

// Every GPU rule's valid samples (multi-level tiling with shared memory, cross-thread reduction,
// AutoBind), at full size, compile for sm_80 and sm_90 within the architectures' limits. Each
// workload is compiled for one of the two (NVRTC's compiles are the test's time), so that each
// architecture sees a tiled matmul or convolution, a reduction and a fused or batched one.
TEST(GpuCuda, SampledProgramsCompileWithinTheLimitsOfSm80AndSm90) {
  NVRTC_OR_SKIP();
  const std::map<std::string, std::vector<const char*>> workloads_of = {
      {"sm_80", {"GMM-4", "SFM-4", "CBR-2"}}, {"sm_90", {"C2D-3", "NRM-4", "TBG-1"}}};
  for (const auto& [arch, names] : workloads_of) {
    target::Target t = target::Target::parse("cuda -arch=" + arch);
    for (const char* name : names) {
      // CBR-2's samples at full size are valid about a quarter of the time (shared memory).
      tune::SampleSpaceOptions so{
          .samples = name == std::string("CBR-2") ? 16 : 5, .seed = 11, .check = false};
      so.compiler = [&](const ir::PrimFunc& f) {
        lower::GpuProgram program = lower::lower_gpu(f, {}, {.cuda = true});
        CudaBinary binary = compile_cuda(program, cuda_arch(t));
        for (const CudaKernelResources& k : binary.kernels) EXPECT_GT(k.registers, 0) << k.name;
        return check_cuda_limits(binary, program, t);
      };
      tune::SampleSpaceReport r = tune::sample_space(workloads::get_preset(name), t, so);
      EXPECT_GT(r.valid, 0) << name << " " << arch;
      EXPECT_EQ(r.compiled, r.valid) << name << " " << arch << "\n"
                                     << fmt::format("{}", fmt::join(r.failures, "\n"));
    }
  }
}

TEST(GpuCuda, LimitsAreCheckedAgainstTheTarget) {
  NVRTC_OR_SKIP();
  workloads::Workload gmm = small("GMM-1");
  lower::GpuProgram program = lower::lower_gpu(bound_gmm(gmm.func));
  CudaBinary binary = compile_cuda(program, "sm_80");
  ASSERT_EQ(binary.kernels.size(), 1u);
  EXPECT_EQ(binary.kernels[0].shared_bytes, 256);
  EXPECT_EQ(check_cuda_limits(binary, program, target::Target::parse("cuda -arch=sm_80")), "");
  EXPECT_THAT(
      check_cuda_limits(binary, program,
                        target::Target::parse("cuda -arch=sm_80 -max-shared-memory-per-block=128")),
      HasSubstr("256 bytes of shared memory, over the limit of 128"));
  EXPECT_THAT(
      check_cuda_limits(binary, program,
                        target::Target::parse("cuda -arch=sm_80 -max-threads-per-block=32")),
      HasSubstr("64 threads per block, over the limit of 32"));
}

std::string temp_dir(const std::string& what) {
  std::string dir = ::testing::TempDir() + "/tyche_gpu_" + what + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

int shell(const std::string& command) {
  return std::system((command + " > /dev/null 2>&1").c_str());
}

std::string nvcc() {
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

// The exported CUDA (kernels and launcher) compiles with nvcc, and its header with a C compiler.
TEST(GpuExport, CudaCompilesWithNvcc) {
  if (nvcc().empty()) GTEST_SKIP() << "no nvcc";
  std::string dir = temp_dir("cuda");
  workloads::Workload sfm = small("SFM-1");
  std::vector<std::string> files =
      export_gpu(lower::lower_gpu(cross_thread_softmax(sfm.func, 64), {}, {.cuda = true}),
                 GpuDialect::kCuda, dir, "softmax", "SFM-1");
  ASSERT_EQ(files.size(), 2u);
  std::ifstream h(dir + "/softmax.h");
  std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  EXPECT_THAT(header, HasSubstr("int softmax(const float* A, float* softmax, void* stream);"));
  EXPECT_EQ(shell(nvcc() + " -arch=sm_80 -c " + dir + "/softmax.cu -o " + dir + "/softmax.o"), 0)
      << dir;
  std::ofstream(dir + "/use.c")
      << "#include \"softmax.h\"\nint main(void) {\n  int (*f)(const float*, float*, void*) = "
         "softmax;\n  (void)f;\n  return 0;\n}\n";
  EXPECT_EQ(shell("cc -std=c11 -Wall -Werror -fsyntax-only -I" + dir + " " + dir + "/use.c"), 0);
  std::filesystem::remove_all(dir);
}

// The exported OpenCL host file builds the embedded kernels and runs them: a C program checks
// a GMM's result against its own loops.
TEST(GpuExport, OpenCLHostFileRunsTheKernels) {
  OPEN_OR_SKIP(device);
  if (shell("echo '#include <CL/cl.h>' | cc -E -x c -") != 0)
    GTEST_SKIP() << "no OpenCL headers (opencl-c-headers)";
  std::string dir = temp_dir("opencl");
  workloads::Workload gmm = small("GMM-1");  // 32 x 32 x 32
  export_gpu(lower::lower_gpu(bound_gmm(gmm.func)), GpuDialect::kOpenCL, dir, "gmm", "GMM-1");
  std::ofstream(dir + "/main.c") << R"(#include <math.h>
#include <stdio.h>
#include "gmm.h"
enum { N = 32 };
static float x[N * N], y[N * N], z[N * N];
int main(void) {
  for (int i = 0; i < N * N; ++i) { x[i] = (float)(i % 7) * 0.25f; y[i] = (float)(i % 5) * 0.5f - 1.0f; }
  cl_platform_id platform; cl_device_id device; cl_int err;
  if (clGetPlatformIDs(1, &platform, NULL) || clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL)) return 2;
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  cl_mem bx = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
  cl_mem by = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof y, y, &err);
  cl_mem bz = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof z, NULL, &err);
  struct gmm_program* p;
  if (gmm_create(context, device, &p) || gmm_run(p, queue, bx, by, bz)) return 3;
  clEnqueueReadBuffer(queue, bz, CL_TRUE, 0, sizeof z, z, 0, NULL, NULL);
  double worst = 0;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      double r = 0;
      for (int k = 0; k < N; ++k) r += (double)x[i * N + k] * y[k * N + j];
      if (fabs(r - z[i * N + j]) > worst) worst = fabs(r - z[i * N + j]);
    }
  gmm_release(p);
  printf("max error %g\n", worst);
  return worst < 1e-3 ? 0 : 1;
}
)";
  ASSERT_EQ(shell("cc -std=c11 -O1 -I" + dir + " " + dir + "/main.c " + dir +
                  "/gmm.c -lOpenCL -lm -o " + dir + "/gmm"),
            0)
      << dir;
  EXPECT_EQ(shell(dir + "/gmm"), 0) << dir;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tyche::codegen
