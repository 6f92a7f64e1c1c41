// A tuning candidate for a GPU target, built in the tuner and run in the isolated worker: lowered
// for the target, its code (OpenCL C; for CUDA a cubin NVRTC compiled for the target's -arch
// and checked against its limits) written with its launch plan into one JSON file, which the
// worker (worker.cc) loads, runs and times by the device's events.
#pragma once

#include <string>

#include "codegen/gpu/gpu_launch.h"
#include "target/target.h"
#include "tune/measure/builder.h"

namespace tyche::tune {

// Builds `input` for `target` (cuda or opencl) into `path` (the JSON file); the error in the
// result when it does not lower, compile or fit.
BuildResult build_gpu(const BuildInput& input, const std::string& path,
                      const target::Target& target);

// A built GPU program as the worker reads it back. Throws tyche::Error for a file that is not one.
struct GpuBuilt {
  std::string dialect;      // "cuda" or "opencl"
  std::string source;       // OpenCL C
  std::vector<char> cubin;  // CUDA
  codegen::GpuLaunchPlan plan;
};
GpuBuilt read_gpu_built(const std::string& path);
// Whether `path` names such a file (its suffix).
bool is_gpu_built(const std::string& path);

}  // namespace tyche::tune
