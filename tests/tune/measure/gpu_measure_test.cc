// GPU candidates through the Builder and the isolated Runner: built into one file each (code and
// launch plan), run and timed by the worker on the device (PoCL's OpenCL here), checked against
// the reference; what does not build, fit or run stays that candidate's failure, in one line.
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>

#include "measure_test_util.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "tune/measure/builder.h"
#include "tune/measure/gpu_build.h"
#include "tune/measure/runner.h"
#include "tune/space/schedule_rule.h"
#include "workloads/workloads.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

using testing::temp_dir;
using testing::worker_path;

bool has_opencl(std::string& why) {
  try {
    runtime::opencl::Device::open();
    return true;
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
}

const runtime::TimeOptions kQuick{.warmup = 1,
                                  .number = 1,
                                  .repeat = 3,
                                  .min_repeat_ms = 0,
                                  .flush_cache = false,
                                  .flush_ranges = {}};

TEST(GpuMeasure, OpenCLCandidatesRunInTheWorkerCheckedAndTimed) {
  std::string why;
  if (!has_opencl(why)) GTEST_SKIP() << why;
  target::Target opencl = target::Target::parse("opencl");
  workloads::Workload w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  std::vector<ir::PrimFunc> programs = {auto_bind_blocks(w.func, opencl, 1),
                                        auto_bind_blocks(w.func, opencl, 2)};
  std::string dir = temp_dir("gpu_objects");
  Builder builder(BuilderOptions{.object_dir = dir, .gpu = opencl});
  std::vector<BuildResult> built = builder.build(programs);
  ASSERT_EQ(built.size(), 2u);
  Runner runner(RunnerOptions{.worker_path = worker_path(), .timeout_s = 60, .time = kQuick});
  auto expected = w.reference(workloads::make_inputs(w.func, 42));
  for (size_t k = 0; k < built.size(); ++k) {
    ASSERT_TRUE(built[k].ok()) << built[k].error;
    EXPECT_TRUE(is_gpu_built(built[k].object_path));
    GpuBuilt file = read_gpu_built(built[k].object_path);
    EXPECT_EQ(file.dialect, "opencl");
    EXPECT_THAT(file.source, HasSubstr("__kernel"));
    RunResult r =
        runner.run(run_input_for(built[k].object_path, built[k].name, programs[k], expected));
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(r.checked);
    EXPECT_TRUE(r.correct) << r.mismatch;
    ASSERT_EQ(r.time.seconds.size(), 3u);
    for (double s : r.time.seconds) EXPECT_GT(s, 0);
  }
  // Inputs other than those the expected outputs came from: a wrong result, reported.
  RunInput wrong = run_input_for(built[0].object_path, built[0].name, programs[0], expected);
  wrong.seed = 7;
  RunResult r = runner.run(wrong);
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.correct);
  // A corrupt file: that candidate's one-line failure, and the worker goes on.
  std::ofstream(dir + "/corrupt.gpu.json") << "{\"dialect\": \"opencl\", \"plan\": 3}";
  RunInput corrupt = run_input_for(dir + "/corrupt.gpu.json", built[0].name, programs[0], expected);
  r = runner.run(corrupt);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.error, HasSubstr("is corrupt"));
  EXPECT_EQ(runner.worker_starts(), 1);
  std::filesystem::remove_all(dir);
}

// CUDA: NVRTC builds in the tuner (no GPU needed); a program over the target's limits fails its
// build; without a driver the worker says so in one line.
TEST(GpuMeasure, CudaCandidatesBuildWithNvrtcAndRunOnlyWithADriver) {
  try {
    runtime::cuda::nvrtc_version();
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  target::Target cuda = target::Target::parse("cuda -arch=sm_90");
  workloads::Workload w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ir::PrimFunc program = auto_bind_blocks(w.func, cuda, 1);
  std::string dir = temp_dir("cuda_objects");
  Builder builder(BuilderOptions{.object_dir = dir, .gpu = cuda});
  BuildResult built = builder.build({program})[0];
  ASSERT_TRUE(built.ok()) << built.error;
  GpuBuilt file = read_gpu_built(built.object_path);
  EXPECT_EQ(file.dialect, "cuda");
  EXPECT_GT(file.cubin.size(), 1000u);
  EXPECT_EQ(file.plan.kernels.size(), 1u);
  target::Target tiny = target::Target::parse("cuda -arch=sm_90 -max-threads-per-block=16");
  Builder strict(BuilderOptions{.object_dir = dir, .gpu = tiny});
  EXPECT_THAT(strict.build({program})[0].error, HasSubstr("over the limit of 16"));
  bool driver = true;
  try {
    runtime::cuda::driver_version();
  } catch (const Error&) {
    driver = false;
  }
  Runner runner(RunnerOptions{.worker_path = worker_path(), .timeout_s = 60, .time = kQuick});
  RunResult r = runner.run(run_input_for(built.object_path, built.name, program,
                                         w.reference(workloads::make_inputs(w.func, 42))));
  if (driver) {
    EXPECT_TRUE(r.ok() && r.correct) << r.error << r.mismatch;
  } else {
    EXPECT_FALSE(r.ok());
    EXPECT_THAT(r.error, HasSubstr("CUDA"));
    EXPECT_EQ(r.error.find('\n'), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tyche::tune
