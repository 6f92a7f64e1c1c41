#include "codegen/opencl_function.h"

#include <fmt/format.h>

#include <unordered_map>

#include "codegen/gpu_codegen.h"
#include "ir/op.h"
#include "runtime/compare.h"
#include "support/error.h"

namespace tyche::codegen {

OpenCLFunction::OpenCLFunction(lower::GpuProgram program, runtime::opencl::Device device)
    : program_(std::move(program)), device_(std::move(device)) {
  source_ = emit_gpu(program_, GpuDialect::kOpenCL);
  built_ = device_.build(source_);
  for (const ir::Buffer& b : program_.params) {
    param_bytes_.push_back(gpu_buffer_bytes(b));
    params_.push_back(device_.allocate(std::max<size_t>(param_bytes_.back(), 1)));
  }
  for (const ir::Buffer& b : program_.intermediates) intermediates_.push_back(device_.allocate(std::max<size_t>(gpu_buffer_bytes(b), 1)));
  for (const lower::GpuKernel& k : program_.kernels) {
    size_t threads = static_cast<size_t>(k.block[0] * k.block[1] * k.block[2]);
    if (threads > device_.info().max_work_group_size)
      throw Error(fmt::format("OpenCL: kernel {} has {} threads in a block; the device runs at most {}", k.name, threads,
                              device_.info().max_work_group_size));
    if (static_cast<uint64_t>(k.shared_bytes) > device_.info().local_mem_bytes)
      throw Error(fmt::format("OpenCL: kernel {} uses {} bytes of shared memory; the device has {}", k.name, k.shared_bytes,
                              device_.info().local_mem_bytes));
  }
}

void OpenCLFunction::run(void* const* args) {
  size_t num_inputs = program_.params.size() - static_cast<size_t>(program_.num_outputs);
  for (size_t i = 0; i < num_inputs; ++i)
    if (param_bytes_[i]) device_.write(params_[i], args[i], param_bytes_[i]);
  run_kernels();
  for (size_t i = num_inputs; i < params_.size(); ++i)
    if (param_bytes_[i]) device_.read(params_[i], args[i], param_bytes_[i]);
}

double OpenCLFunction::run_kernels() {
  std::unordered_map<const ir::BufferNode*, const runtime::opencl::Buffer*> device_buffer;
  for (size_t i = 0; i < params_.size(); ++i) device_buffer[program_.params[i].get()] = &params_[i];
  for (size_t i = 0; i < intermediates_.size(); ++i) device_buffer[program_.intermediates[i].get()] = &intermediates_[i];
  double seconds = 0;
  for (const lower::GpuKernel& k : program_.kernels) {
    std::vector<runtime::opencl::Arg> args;
    for (const ir::Buffer& b : k.buffers) args.push_back(runtime::opencl::Arg::of(*device_buffer.at(b.get())));
    std::vector<size_t> local, global;
    for (size_t d = 0; d < 3; ++d) {
      local.push_back(static_cast<size_t>(k.block[d]));
      global.push_back(static_cast<size_t>(k.grid[d] * k.block[d]));
    }
    seconds += device_.run(built_, k.name, args, global, local);
  }
  return seconds;
}

std::string check_on_opencl(const ir::PrimFunc& func, const runtime::opencl::Device& device, const std::vector<runtime::NDArray>& inputs,
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
