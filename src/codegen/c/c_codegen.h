// The C source backend: a lowered PrimFunc -> portable C11 for export and debugging. Vector
// statements become loops over their lanes (each lane evaluates the scalar expression); parallel
// loops are outlined into functions run by the thread pool of the exported runtime
// (export_runtime.c, runtime_symbols.h: its source goes beside the kernel), or run serially; small
// intermediates live on the stack and large ones are heap-allocated. The result defines
//   int32_t <name>(const T0* p0, ..., Tn* pn);   // one pointer per parameter, inputs const
//   int32_t <name>_packed(void** args);           // the same, pointers in an array
// both returning a runtime::KernelStatus, and needs only <math.h> (link with -lm).
#pragma once

#include <string>

#include "ir/function.h"

namespace tyche::codegen {

struct COptions {
  int64_t max_stack_bytes = 64 * 1024;
  // false: parallel loops run serially and the code needs no runtime.
  bool parallel = true;
};

std::string emit_c(const ir::PrimFunc& lowered, const COptions& options = {});

// The C type of a parameter's elements as the generated function takes them: float, double,
// int8_t..uint64_t, bool; uint16_t holds the bits of a float16 or bfloat16.
std::string c_parameter_type(DataType dtype);

}  // namespace tyche::codegen
