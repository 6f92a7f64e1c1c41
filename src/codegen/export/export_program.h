// The entry of an exported model (executor/export_model.h): kernels compiled separately for export
// (compile_export_object, each under a name of its own) called in order on the entry's buffers,
// constant data and one arena. Generated directly as LLVM IR, one object file defining
//   int32_t NAME(const void* in0, ..., void* out0, ...);  // graph inputs, then outputs
//   int32_t NAME_packed(void** args);                      // the same, pointers in an array
//   void NAME_set_num_threads(int n);                      // the runtime's pool (or nothing)
// NAME refuses a null pointer (TYCHE_ERROR_NULL_ARGUMENT), allocates the arena from the exported
// runtime (tyche_rt1_alloc: 64-byte aligned, a block cached per thread, so back-to-back calls do
// not go to the system; out of memory is TYCHE_ERROR_OUT_OF_MEMORY), makes the calls, stops at
// the first that does not return 0 and returns its status, else copies each output's value out
// (the caller's output buffers are written only then, with memcpy: any alignment) and returns 0.
// The constants are 64-byte aligned read-only data of the object.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tyche::codegen {

// Where a kernel's argument, or an output's value, is.
struct ProgramBuffer {
  enum class Kind { kInput, kConstant, kArena };
  Kind kind = Kind::kArena;
  int64_t index = 0;  // kInput: the entry's input; kConstant: the constant; kArena: the byte offset
                      // (a multiple of 64)
};

struct ProgramCall {
  std::string kernel;  // the symbol of `int32_t kernel(void*, ...)`, defined by another object
  std::vector<ProgramBuffer> args;  // its pointers, in order
};

struct ExportProgram {
  std::string name;  // the entry's symbol (a C identifier: check_export_name)
  int num_inputs = 0;
  std::vector<ProgramBuffer> outputs;       // where each output's value is once the calls are done
  std::vector<int64_t> output_bytes;        // and its size
  std::vector<std::string_view> constants;  // the bytes of each constant (viewed, not owned)
  int64_t arena_bytes = 0;
  std::vector<ProgramCall> calls;
  bool parallel = true;  // false: NAME_set_num_threads does nothing (the kernels are serial)
};

// The entry's object file: position-independent code for `cpu` (cpu.h; "" is the default), which
// need not run here. Throws tyche::Error for an unknown CPU.
std::string compile_program_object(const ExportProgram& program, const std::string& cpu);

}  // namespace tyche::codegen
