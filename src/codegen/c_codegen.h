// The C source backend: a lowered PrimFunc -> portable C11 for export and debugging. Vector
// statements become loops over their lanes (each lane evaluates the scalar expression), parallel
// loops carry `#pragma omp parallel for`, small intermediates live on the stack and large ones
// are heap-allocated. The result defines
//   void <name>(T0* restrict p0, ..., Tn* restrict pn);   // one pointer per parameter
//   void <name>_packed(void** args);                        // the same, pointers in an array
// and needs only <math.h> (link with -lm).
#pragma once

#include <string>

#include "ir/function.h"

namespace tyche::codegen {

std::string emit_c(const ir::PrimFunc& lowered, int64_t max_stack_bytes = 64 * 1024);

}  // namespace tyche::codegen
