// `tyche run --target cuda|opencl`: a workload's GPU program (its trace's, or AutoBind's without
// one) lowered for the GPU, printed as CUDA C or OpenCL C; OpenCL runs it (PoCL on these
// machines) and checks it against the reference like a CPU run; CUDA compiles it with NVRTC and
// runs it where the driver and a device are.
#pragma once

#include <string>

#include "target/target.h"
#include "workloads/workloads.h"

namespace tyche::tools {

struct GpuRunOptions {
  target::Target target;
  bool auto_bind = true;  // false: the program is already bound (a trace, a record)
  int64_t seed = 0;
  std::string emit;  // "ir", "cuda", "opencl": also print it
  bool dump_ir = false;
  int repeat = 10;
  std::string json_file;
};

// The exit code: 0 when the outputs match the reference.
int run_on_gpu(workloads::Workload w, const GpuRunOptions& options);

}  // namespace tyche::tools
