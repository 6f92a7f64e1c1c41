// A lowered GPU program as CUDA: printed as CUDA C, compiled by NVRTC to PTX and a cubin for one
// architecture, with each kernel's resources as ptxas reports them, checked against the target's
// limits. No GPU is needed for any of it.
#pragma once

#include <string>
#include <vector>

#include "codegen/gpu/gpu_launch.h"
#include "lower/gpu/gpu_lower.h"
#include "runtime/cuda.h"
#include "target/target.h"

namespace tyche::codegen {

struct CudaKernelResources {
  std::string name;
  int registers = 0;         // per thread
  int64_t shared_bytes = 0;  // static shared memory, as ptxas reports it
  int64_t spill_bytes = 0;   // spill stores (local memory traffic ptxas had to add)
};

struct CudaBinary {
  std::string arch;  // "sm_90"
  std::string source;
  runtime::cuda::Compiled compiled;
  std::vector<CudaKernelResources> kernels;  // in the program's order
};

// The architecture code is compiled for: the target's -arch, else sm_80.
std::string cuda_arch(const target::Target& target);
// How to lower a program for a GPU target: CUDA's warp instructions and, from sm_80, cp.async.
lower::GpuLowerOptions gpu_lower_options(const target::Target& target);

// Throws tyche::Error in one line where NVRTC is missing or refuses the code.
CudaBinary compile_cuda(const lower::GpuProgram& program, const std::string& arch);

// "" when every kernel fits: threads per block and shared memory within the target's limits,
// at most 255 registers per thread and 65536 per block (every architecture from sm_50 on).
std::string check_cuda_limits(const CudaBinary& binary, const lower::GpuProgram& program,
                              const target::Target& target);

// A compiled program on a CUDA device, run from host buffers as a CPU kernel is (one pointer per
// parameter, inputs then outputs).
class CudaFunction {
 public:
  CudaFunction(const lower::GpuProgram& program, const CudaBinary& binary,
               runtime::cuda::Device device);
  // A cubin compiled earlier (compile_cuda) for the program `plan` describes.
  CudaFunction(GpuLaunchPlan plan, const std::vector<char>& cubin, runtime::cuda::Device device);
  // Copies the inputs to the device, runs every kernel, copies the outputs back.
  void run(void* const* args);
  // Runs the kernels on the buffers already on the device; their time in seconds (events). With
  // `flush_l2`, a buffer larger than the L2 is written before each kernel, so it starts cold.
  double run_kernels(bool flush_l2 = false);
  const GpuLaunchPlan& plan() const { return plan_; }

 private:
  GpuLaunchPlan plan_;
  runtime::cuda::Device device_;
  runtime::cuda::Device::Module module_;
  std::vector<runtime::cuda::Device::Memory> params_, intermediates_;
  runtime::cuda::Device::Memory flush_;
};

}  // namespace tyche::codegen
