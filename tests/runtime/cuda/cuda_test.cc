// CUDA at run time: NVRTC compiles CUDA C (here, where the toolkit is installed; skipped, saying
// why, where it is not), and the driver's absence is one line (these machines have none; on a
// machine with a GPU the driver answers instead).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

#include "../../common/one_line_error.h"
#include "runtime/cuda.h"
#include "support/error.h"

namespace tyche::runtime::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

#define NVRTC_OR_SKIP()       \
  try {                       \
    nvrtc_version();          \
  } catch (const Error& e) {  \
    GTEST_SKIP() << e.what(); \
  }

using tyche::testing::expect_one_line_error;

const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";

TEST(Nvrtc, CompilesForEachArchitectureToPtxAndACubin) {
  NVRTC_OR_SKIP();
  for (const char* arch : {"sm_80", "sm_90"}) {
    Compiled c = compile(kSaxpy, arch);
    EXPECT_THAT(c.ptx, HasSubstr(".entry saxpy")) << arch;
    EXPECT_THAT(c.ptx, HasSubstr(std::string(".target ") + arch)) << arch;
    ASSERT_GE(c.cubin.size(), 4u) << arch;
    EXPECT_EQ(std::string(c.cubin.data() + 1, 3), "ELF") << arch;
  }
}

TEST(Nvrtc, RefusalsAreOneLine) {
  NVRTC_OR_SKIP();
  expect_one_line_error(
      [] { compile("__global__ void k(int* x) { x[0] = undeclared; }", "sm_90"); },
      "does not compile for sm_90");
  expect_one_line_error([] { compile(kSaxpy, "compute_90"); }, "must be a real one such as sm_90");
  expect_one_line_error([] { compile(kSaxpy, "sm_10"); },
                        "NVRTC refused the compilation for sm_10");
}

TEST(Nvrtc, AMissingLibraryIsOneLine) {
  expect_one_line_error([] { nvrtc_version("/nonexistent/libnvrtc.so"); },
                        "cannot load NVRTC (/nonexistent/libnvrtc.so");
}

TEST(CudaDriver, NoDriverIsOneLineAndADriverAnswers) {
  expect_one_line_error([] { driver_version("/nonexistent/libcuda.so.1"); },
                        "cannot load the CUDA driver");
  try {
    EXPECT_GT(driver_version(), 0);  // a machine with a GPU
  } catch (const Error& e) {
    std::string m = e.what();  // these machines: no libcuda.so.1, or no device
    EXPECT_THAT(m, Not(HasSubstr("\n")));
    EXPECT_TRUE(m.find("cannot load the CUDA driver") != std::string::npos ||
                m.find("CUDA: cu") != std::string::npos || m.find("no device") != std::string::npos)
        << m;
  }
}

// Where a device is, a kernel compiled for its architecture runs on it; elsewhere opening one is a
// one-line error.
TEST(CudaDevice, RunsACompiledKernelOrSaysWhyNotInOneLine) {
  expect_one_line_error([] { Device::open(0, "/nonexistent/libcuda.so.1"); },
                        "cannot load the CUDA driver");
  std::optional<Device> device;
  try {
    device = Device::open();
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), Not(HasSubstr("\n")));
    GTEST_SKIP() << e.what();
  }
  Compiled c = compile("extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }",
                       device->arch());
  Device::Module module = device->load(c.cubin);
  std::vector<float> host(64, 1.5f);
  Device::Memory m = device->allocate(host.size() * sizeof(float));
  device->write(m, host.data(), m.bytes);
  EXPECT_GE(device->launch(module, "twice", {m.address()}, {1, 1, 1}, {64, 1, 1}), 0.0);
  device->read(m, host.data(), m.bytes);
  EXPECT_EQ(host[63], 3.0f);
  expect_one_line_error(
      [&] {
        device->launch(module, "nope", {m.address()}, {1, 1, 1}, {64, 1, 1});
      },
      "cuModuleGetFunction");
}

}  // namespace
}  // namespace tyche::runtime::cuda
