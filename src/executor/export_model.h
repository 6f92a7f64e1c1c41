// Exporting a whole model (`tyche export-model`): the execution plan of the executor
// (execution_plan.h) as a header and a static library that a C or C++ program links with nothing
// of Tyche at run time (libm and pthreads). Into a directory:
//   NAME.h       the documented prototype `int32_t NAME(const float* in, ..., float* out, ...)`
//                (the graph's inputs, then its outputs), their names, shapes and dtypes as
//                constants (NAME_INPUT0_SHAPE, ...), the error codes, NAME_set_num_threads;
//   libNAME.a    (written anew) one object per task (its scheduled program compiled for export
//                as NAME_t<task>: codegen/export/export.h), the entry's object (the weights as
//                64-byte aligned read-only data, NAME calling the tasks in order over an arena:
//                codegen/export/export_program.h) and the exported runtime's object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/tasks.h"
#include "ir/function.h"

namespace tyche::executor {

struct ModelExportOptions {
  std::string name;  // the entry's name: a C identifier (codegen::check_export_name)
  std::string
      cpu;  // the CPU to generate code for ("" = TYCHE_CPU or the host); need not be this one
  bool parallel = true;     // false: parallel loops run serially, no thread pool is started
  std::string description;  // a line for the header: the model, where its schedules came from
  int64_t max_stack_bytes = 64 * 1024;
};

struct ModelExportResult {
  std::vector<std::string> files;  // written
  std::vector<std::string> notes;  // lowering's, each prefixed with its task
};

// Exports the model: `programs[t]` is task t's scheduled PrimFunc, or undefined for its default
// schedule (executor.h), as the executor takes them. Everything is compiled before any file is
// written, and the files are written under temporary names then renamed, so an error leaves what
// was there intact. Throws tyche::Error (one line) for a name that is not a C identifier, an
// unknown CPU, or a directory that cannot be written.
ModelExportResult export_model(const graph::Graph& graph, const graph::TaskTable& table,
                               const std::vector<ir::PrimFunc>& programs, const std::string& dir,
                               const ModelExportOptions& options);

// The header export_model writes.
std::string export_model_header(const graph::Graph& graph, const graph::TaskTable& table,
                                const ModelExportOptions& options);

}  // namespace tyche::executor
