#include "codegen/gpu/gpu_launch.h"

#include <fmt/format.h>

#include "codegen/gpu/gpu_codegen.h"
#include "lower/gpu/gpu_resources.h"
#include "support/error.h"

namespace tyche::codegen {

GpuLaunchPlan launch_plan(const lower::GpuProgram& program) {
  GpuLaunchPlan plan;
  for (const ir::Buffer& b : program.params) plan.param_bytes.push_back(gpu_buffer_bytes(b));
  plan.num_outputs = program.num_outputs;
  for (const ir::Buffer& b : program.intermediates)
    plan.intermediate_bytes.push_back(gpu_buffer_bytes(b));
  for (const lower::GpuKernel& k : program.kernels) {
    // The shared arrays the printed kernel declares (static: nothing is added at launch).
    GpuKernelLaunch launch{k.name, k.grid, k.block, lower::kernel_resources(k).shared_bytes, {}};
    for (const ir::Buffer& b : k.buffers) {
      int64_t arg = 0;
      bool found = false;
      for (size_t i = 0; i < program.params.size() && !found; ++i)
        if (program.params[i].same_as(b)) arg = static_cast<int64_t>(i), found = true;
      for (size_t i = 0; i < program.intermediates.size() && !found; ++i)
        if (program.intermediates[i].same_as(b)) arg = -1 - static_cast<int64_t>(i), found = true;
      if (!found)
        throw InternalError(fmt::format(
            "GPU launch: kernel {} reads buffer '{}', neither a parameter nor an intermediate",
            k.name, b->name));
      launch.args.push_back(arg);
    }
    plan.kernels.push_back(std::move(launch));
  }
  return plan;
}

}  // namespace tyche::codegen
