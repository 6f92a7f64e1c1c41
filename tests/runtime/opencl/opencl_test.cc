// OpenCL through the ICD loader opened at run time (PoCL on these machines: OpenCL C on the CPU,
// work-groups, local memory and barriers included). Without a platform the tests that need one
// are skipped, saying why; the refusals are one line each either way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>

#include "../../common/one_line_error.h"
#include "runtime/opencl.h"
#include "support/error.h"

namespace tyche::runtime::opencl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using tyche::testing::expect_one_line_error;

// The device, or a reason to skip.
std::optional<Device> device(std::string& why) {
  try {
    return Device::open();
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

#define OPEN_OR_SKIP(d) \
  std::string why;      \
  auto d = device(why); \
  if (!d) GTEST_SKIP() << why;

TEST(OpenCl, AMissingLibraryIsOneLine) {
  try {
    Device::open("/nonexistent/libOpenCL.so.1");
    FAIL() << "opened a library that does not exist";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("cannot load /nonexistent/libOpenCL.so.1"));
    EXPECT_THAT(m, Not(HasSubstr("\n")));
  }
}

TEST(OpenCl, AddsVectorsAndTimesTheKernel) {
  OPEN_OR_SKIP(d);
  EXPECT_FALSE(d->info().name.empty());
  EXPECT_GT(d->info().max_work_group_size, 0u);
  const int n = 1000;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  std::iota(a.begin(), a.end(), 0.0f);
  std::iota(b.begin(), b.end(), 0.5f);
  Buffer da = d->allocate(n * sizeof(float)), db = d->allocate(n * sizeof(float)),
         dc = d->allocate(n * sizeof(float));
  d->write(da, a.data(), n * sizeof(float));
  d->write(db, b.data(), n * sizeof(float));
  Program p = d->build(R"(
    __kernel void add(__global const float* a, __global const float* b, __global float* c, int n) {
      int i = get_global_id(0);
      if (i < n) c[i] = a[i] + b[i];
    })");
  double seconds = d->run(
      p, "add", {Arg::of(da), Arg::of(db), Arg::of(dc), Arg::scalar<int32_t>(n)}, {1024}, {64});
  EXPECT_GE(seconds, 0.0);
  d->read(dc, c.data(), n * sizeof(float));
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
}

// GPU-style code: each work-group sums its 64 values in local memory, halving with a barrier
// between the steps; a missing barrier would read values not yet written.
TEST(OpenCl, AWorkGroupReducesInLocalMemoryWithBarriers) {
  OPEN_OR_SKIP(d);
  const int groups = 8, size = 64;
  std::vector<int32_t> x(groups * size), sums(groups);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i * 7 % 31);
  Buffer dx = d->allocate(x.size() * 4), ds = d->allocate(sums.size() * 4);
  d->write(dx, x.data(), x.size() * 4);
  Program p = d->build(R"(
    __kernel void group_sum(__global const int* x, __global int* sums) {
      __local int part[64];
      int t = get_local_id(0);
      part[t] = x[get_global_id(0)];
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int s = 32; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (t == 0) sums[get_group_id(0)] = part[0];
    })");
  d->run(p, "group_sum", {Arg::of(dx), Arg::of(ds)}, {groups * size}, {size});
  d->read(ds, sums.data(), sums.size() * 4);
  for (int g = 0; g < groups; ++g)
    EXPECT_EQ(sums[g], std::accumulate(x.begin() + g * size, x.begin() + (g + 1) * size, 0)) << g;
}

TEST(OpenCl, RefusalsAreOneLine) {
  OPEN_OR_SKIP(d);
  // The compiler's first error, not the whole log.
  expect_one_line_error(
      [&] { d->build("__kernel void k(__global int* x) { x[0] = undeclared; }"); },
      "does not build");
  Program p = d->build("__kernel void k(__global int* x) { x[get_global_id(0)] = 1; }");
  Buffer b = d->allocate(16);
  expect_one_line_error([&] { d->run(p, "missing", {Arg::of(b)}, {4}); }, "no kernel missing");
  expect_one_line_error([&] { d->run(p, "k", {Arg::of(b)}, {4, 4, 4, 4}); }, "4 work dimensions");
  expect_one_line_error(
      [&] {
        d->run(p, "k", {Arg::of(b)}, {4}, {2, 2});
      },
      "2 work-group dimensions");
  std::vector<uint8_t> big(32);
  expect_one_line_error([&] { d->write(b, big.data(), big.size()); },
                        "writing 32 bytes into a buffer of 16");
}

TEST(OpenCl, NoPlatformIsOneLine) {
  // The ICD loader reads its vendors (here from an empty directory) once per process: this test
  // runs itself again in a fresh process, which opens the device and prints what it was told.
  if (std::getenv("TYCHE_NO_ICD_CHILD")) {
    std::string m = "opened a device with no vendor listed";
    try {
      Device::open();
    } catch (const Error& e) {
      m = e.what();
    }
    std::printf("<<<%s>>>\n", m.c_str());
    return;
  }
  std::filesystem::path empty =
      std::filesystem::temp_directory_path() / ("tyche_no_icd_" + std::to_string(getpid()));
  std::filesystem::create_directories(empty);
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string cmd = "TYCHE_NO_ICD_CHILD=1 OCL_ICD_VENDORS='" + empty.string() + "' '" + self +
                    "' --gtest_filter=OpenCl.NoPlatformIsOneLine 2>/dev/null";
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[512];
    for (size_t r; (r = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, r);
    pclose(f);
  }
  std::filesystem::remove_all(empty);
  size_t a = out.find("<<<"), b = out.find(">>>");
  ASSERT_TRUE(a != std::string::npos && b != std::string::npos && b > a) << out;
  std::string m = out.substr(a + 3, b - a - 3);
  // Without the loader itself the refusal is the missing library's: one line too.
  EXPECT_TRUE(m.find("no platform found") != std::string::npos ||
              m.find("cannot load") != std::string::npos)
      << m;
  EXPECT_THAT(m, Not(HasSubstr("\n")));
}

}  // namespace
}  // namespace tyche::runtime::opencl
