// Export: a lowered kernel as files a C or C++ program builds with, needing nothing of Tyche at
// run time (what Halide's ahead-of-time generators give; TVM's exported libraries need its
// runtime). `tyche export` writes, into a directory:
//   NAME.h          the documented prototype `int32_t NAME(const float* A, ..., float* C)` (one
//                   pointer per tensor, inputs const), shapes and dtypes as constants, the error
//                   codes, NAME_set_num_threads;
//   libLIBRARY.a    (target llvm) the kernel's object for the chosen CPU and the runtime object
//                   (export_runtime.c: thread pool, allocator; weak symbols), added to the
//                   library if it exists, so that several kernels can share one;
//   NAME.c, tyche_rt1_runtime.c   (target c) portable C11, the runtime as source.
// A program links the library (and -lm -lpthread): no Tyche library, no OpenMP.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/function.h"
#include "support/dtype.h"

namespace tyche::codegen {

struct ExportOptions {
  std::string name;             // the C function's name: a C identifier
  std::string target = "llvm";  // "llvm" (header + static library) or "c" (header + C source)
  std::string cpu;              // llvm: the CPU to generate code for ("" = TYCHE_CPU or the host)
  bool parallel = true;         // false: parallel loops run serially, no thread pool is started
  std::string library;          // llvm: the library is libLIBRARY.a ("" = name)
  std::string description;      // a line for the header: what the kernel computes, its schedule
  int64_t max_stack_bytes = 64 * 1024;
};

struct ExportResult {
  std::vector<std::string> files;  // written
  std::vector<std::string> notes;  // lowering's (a loop that could not be treated as asked)
};

// Lowers the (scheduled) function, writes the files into `dir` (created when missing) and returns
// their paths. Everything is compiled before any file is written, and each file is written under
// a temporary name then renamed, so an error leaves what was there intact. Throws tyche::Error
// (one line) for a name that is not a C identifier, an unknown target or CPU, a directory that
// cannot be written, or an existing library that is not an archive.
ExportResult export_kernel(const ir::PrimFunc& func, const std::string& dir,
                           const ExportOptions& options);

// The header export_kernel writes for `func` (its parameters' shapes) under options.name.
std::string export_header(const ir::PrimFunc& func, const ExportOptions& options);

// The runtime's C source, as written beside exported C (tyche_rt1_runtime.c).
std::string export_runtime_source();

// Throws tyche::Error unless `name` can name an exported kernel: a C identifier, not a keyword
// of C or C++ nor a C library function, starting neither with '_' (the C implementation's) nor
// with "tyche_" (the runtime's prefix).
void check_export_name(const std::string& name);

// ---- The pieces of exported files, for exporters of more than one kernel
// (executor/export_model.h).

// The error codes, TYCHE_ALIGNMENT and tyche_error_string(), as every exported header holds them
// (guarded: once per program however many headers it includes).
std::string export_error_codes();
// An exported header's lines from the end of its comment (the thread pool's paragraph when
// `parallel`) to the error codes: include guard, C includes, extern "C". Kernels and models.
std::string export_header_opening(const std::string& name, bool parallel);
// One argument's #defines: PREFIX_DIMS, _SHAPE (when it has dimensions), _ELEMENTS, _BYTES, _DTYPE.
std::string export_argument_defines(const std::string& prefix, const std::vector<int64_t>& shape,
                                    int64_t elements, int64_t bytes, DataType dtype);
// An exported header's end: the prototype, its packed twin, set_num_threads (a no-op when the
// `what`, "kernel" or "model", runs serially), extern "C"'s and the include guard's ends.
std::string export_header_closing(const std::string& name, const std::string& prototype,
                                  bool parallel, const std::string& what);
// `text` fit for a line inside a /* */ comment.
std::string export_comment_text(std::string text);
// A dtype as a header's comment names it ("float32", "float16 (uint16_t: IEEE half-precision
// bits)").
std::string export_dtype_comment(DataType dtype);
// Names made prototype parameters: C identifiers ([^A-Za-z0-9_] as '_', "arg_" before one that
// starts with a digit or is a keyword), distinct.
std::vector<std::string> export_parameter_names(const std::vector<std::string>& names);
// The runtime's object (export_runtime.c, compiled for any x86-64) and its member name in a
// library.
std::string export_runtime_object();
std::string export_runtime_member();
// A static library (a GNU archive with its symbol table) of the members (name, object), in order.
std::string static_library(const std::vector<std::pair<std::string, std::string>>& members);
// Writes the files (name, content) into `dir` (created when missing) as export_kernel does: each
// under a temporary name first, then all renamed in order, the directory locked against other
// exports meanwhile; returns their paths. Throws tyche::Error (one line) when it cannot, leaving
// what was there as it was.
std::vector<std::string> write_export_files(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace tyche::codegen
