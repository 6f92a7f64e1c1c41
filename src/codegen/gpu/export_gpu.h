// Export of a GPU program, for use outside Tyche:
//   cuda:   DIR/NAME.cu (the kernels and `int NAME(device pointers..., void* stream)`, which
//           launches them on the stream and returns a cudaError_t) and DIR/NAME.h (C);
//   opencl: DIR/NAME.cl (the kernels' OpenCL C), DIR/NAME.c (the host side: NAME_create builds the
//           embedded source for a context and device, NAME_run enqueues the kernels on a queue,
//           NAME_release) and DIR/NAME.h.
// Kernels are named NAME_kernel0, NAME_kernel1, ...; intermediates between them are allocated by
// the launcher (cuda: on the stream, for the call) or by NAME_create (opencl).
#pragma once

#include <string>
#include <vector>

#include "codegen/gpu/gpu_codegen.h"

namespace tyche::codegen {

// The files written. `description` goes into the header's comment. Throws tyche::Error for a
// name that is not a C identifier or a directory that cannot be written.
std::vector<std::string> export_gpu(lower::GpuProgram program, GpuDialect dialect,
                                    const std::string& dir, const std::string& name,
                                    const std::string& description);

}  // namespace tyche::codegen
