// The GPU back end's printer: a lowered GPU program (lower/gpu/gpu_lower.h) -> CUDA C or OpenCL C,
// one kernel function per GpuKernel, from the same printer. A kernel takes a pointer to each
// global buffer it uses (GpuKernel::buffers, in that order) and declares its thread indices,
// shared buffers and local arrays itself. 16-bit floats are held as their bits (uint16_t) and
// computed in float, as in the C back end.
#pragma once

#include <string>

#include "lower/gpu/gpu_lower.h"

namespace tyche::codegen {

enum class GpuDialect { kCuda, kOpenCL };
const char* gpu_dialect_name(GpuDialect d);  // "cuda", "opencl"

// Every kernel of `program`, with the prelude the dialect needs (CUDA's is `extern "C"`, so the
// kernels keep their names in the cubin).
std::string emit_gpu(const lower::GpuProgram& program, GpuDialect dialect);

// The C type a kernel's buffer of `dtype` holds (float, int8_t, ...; uint16_t for 16-bit floats,
// uint8_t for bool): what a host passes.
std::string gpu_memory_type(DataType dtype);
// The bytes a lowered (1-d) buffer holds on the device. Throws tyche::Error for a size that is not
// constant.
size_t gpu_buffer_bytes(const ir::Buffer& buffer);

}  // namespace tyche::codegen
