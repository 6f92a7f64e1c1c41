// A lowered GPU program built for an OpenCL device (PoCL on these machines), run from host
// buffers as a CPU kernel is: one pointer per parameter, inputs then outputs.
#pragma once

#include <string>
#include <vector>

#include "codegen/gpu/gpu_launch.h"
#include "lower/gpu/gpu_lower.h"
#include "runtime/ndarray.h"
#include "runtime/opencl.h"

namespace tyche::codegen {

class OpenCLFunction {
 public:
  // Prints the program as OpenCL C and builds it; a build failure throws tyche::Error (one line).
  OpenCLFunction(const lower::GpuProgram& program, runtime::opencl::Device device);
  // Builds OpenCL C printed earlier (emit_gpu) for the program `plan` describes.
  OpenCLFunction(GpuLaunchPlan plan, std::string source, runtime::opencl::Device device);

  const std::string& source() const { return source_; }
  const GpuLaunchPlan& plan() const { return plan_; }

  // Copies the inputs to the device, runs every kernel, copies the outputs back. Throws
  // tyche::Error where a kernel's work-group exceeds the device's limit.
  void run(void* const* args);
  // Runs the kernels on the buffers already on the device; their time on it in seconds.
  double run_kernels();

 private:
  GpuLaunchPlan plan_;
  std::string source_;
  runtime::opencl::Device device_;
  runtime::opencl::Program built_;
  std::vector<runtime::opencl::Buffer> params_, intermediates_;
};

// `func` lowered for the GPU and run on `device` with `inputs`: "" when its outputs match
// `expected`, else why not (one line per output). Lowering and build errors throw.
std::string check_on_opencl(const ir::PrimFunc& func, const runtime::opencl::Device& device,
                            const std::vector<runtime::NDArray>& inputs,
                            const std::vector<runtime::NDArray>& expected);

}  // namespace tyche::codegen
