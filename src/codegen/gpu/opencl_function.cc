#include "codegen/gpu/opencl_function.h"

#include <fmt/format.h>

#include "codegen/gpu/gpu_codegen.h"
#include "ir/op.h"
#include "runtime/compare.h"
#include "support/error.h"

namespace tyche::codegen {

OpenCLFunction::OpenCLFunction(const lower::GpuProgram& program, runtime::opencl::Device device)
    : OpenCLFunction(launch_plan(program), emit_gpu(program, GpuDialect::kOpenCL),
                     std::move(device)) {}

OpenCLFunction::OpenCLFunction(GpuLaunchPlan plan, std::string source,
                               runtime::opencl::Device device)
    : plan_(std::move(plan)), source_(std::move(source)), device_(std::move(device)) {
  built_ = device_.build(source_);
  for (size_t bytes : plan_.param_bytes)
    params_.push_back(device_.allocate(std::max<size_t>(bytes, 1)));
  for (size_t bytes : plan_.intermediate_bytes)
    intermediates_.push_back(device_.allocate(std::max<size_t>(bytes, 1)));
  for (const GpuKernelLaunch& k : plan_.kernels) {
    size_t threads = static_cast<size_t>(k.block[0] * k.block[1] * k.block[2]);
    if (threads > device_.info().max_work_group_size)
      throw Error(
          fmt::format("OpenCL: kernel {} has {} threads in a block; the device runs at most {}",
                      k.name, threads, device_.info().max_work_group_size));
    if (static_cast<uint64_t>(k.shared_bytes) > device_.info().local_mem_bytes)
      throw Error(fmt::format("OpenCL: kernel {} uses {} bytes of shared memory; the device has {}",
                              k.name, k.shared_bytes, device_.info().local_mem_bytes));
  }
}

void OpenCLFunction::run(void* const* args) {
  const std::vector<size_t>& bytes = plan_.param_bytes;
  for (size_t i = 0; i < plan_.num_inputs(); ++i)
    if (bytes[i]) device_.write(params_[i], args[i], bytes[i]);
  run_kernels();
  for (size_t i = plan_.num_inputs(); i < params_.size(); ++i)
    if (bytes[i]) device_.read(params_[i], args[i], bytes[i]);
}

double OpenCLFunction::run_kernels() {
  double seconds = 0;
  for (const GpuKernelLaunch& k : plan_.kernels) {
    std::vector<runtime::opencl::Arg> args;
    for (int64_t a : k.args)
      args.push_back(
          runtime::opencl::Arg::of(a >= 0 ? params_.at(static_cast<size_t>(a))
                                          : intermediates_.at(static_cast<size_t>(-1 - a))));
    std::vector<size_t> local, global;
    for (size_t d = 0; d < 3; ++d) {
      local.push_back(static_cast<size_t>(k.block[d]));
      global.push_back(static_cast<size_t>(k.grid[d] * k.block[d]));
    }
    seconds += device_.run(built_, k.name, args, global, local);
  }
  return seconds;
}

std::string check_on_opencl(const ir::PrimFunc& func, const runtime::opencl::Device& device,
                            const std::vector<runtime::NDArray>& inputs,
                            const std::vector<runtime::NDArray>& expected) {
  OpenCLFunction function(lower::lower_gpu(func), device);
  std::vector<runtime::NDArray> args = inputs;
  for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  function.run(ptrs.data());
  return runtime::compare_outputs(std::span(args).subspan(inputs.size()), expected).message;
}

}  // namespace tyche::codegen
