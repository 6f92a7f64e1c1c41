// The runtime functions generated code calls (<prefix>parallel_for, <prefix>alloc, <prefix>free,
// and for exported kernels <prefix>set_num_threads): Tyche's own (runtime/thread_pool.h) for code
// that runs inside Tyche, the exported runtime's (export_runtime.c, whose names carry its ABI
// version) for exported code. Distinct names, so one program may link both.
#pragma once

namespace tyche::codegen {

inline constexpr const char* kTycheRuntimePrefix = "tyche_";
inline constexpr const char* kExportRuntimePrefix = "tyche_rt1_";

}  // namespace tyche::codegen
