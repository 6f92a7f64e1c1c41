// What running a lowered GPU program takes once its code is built: the buffers' sizes and each
// kernel's launch, with its arguments as indices. A tuner builds candidates in one process and
// runs them in another (the isolated worker), which never sees the IR: this plan travels with the
// code (tune/measure writes it as JSON).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/gpu/gpu_lower.h"

namespace tyche::codegen {

struct GpuKernelLaunch {
  std::string name;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t shared_bytes = 0;  // its static shared arrays (lower::kernel_resources)
  // The kernel's arguments in order: i >= 0 is parameter i, -1 - i is intermediate i.
  std::vector<int64_t> args;
};

struct GpuLaunchPlan {
  std::vector<size_t> param_bytes;  // the function's parameters, inputs then outputs
  int num_outputs = 0;
  std::vector<size_t> intermediate_bytes;
  std::vector<GpuKernelLaunch> kernels;
  size_t num_inputs() const { return param_bytes.size() - static_cast<size_t>(num_outputs); }
};

GpuLaunchPlan launch_plan(const lower::GpuProgram& program);

}  // namespace tyche::codegen
