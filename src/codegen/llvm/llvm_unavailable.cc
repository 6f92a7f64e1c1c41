// A build without LLVM (TYCHE_WITH_LLVM=OFF): what needs LLVM, CPU code and the libraries
// `tyche export --target llvm` writes, stops in one line saying so; GPU code, the interpreter and
// everything above them work as in a full build.
#include <fmt/format.h>

#include "codegen/export/export.h"
#include "codegen/export/export_program.h"
#include "codegen/llvm/llvm_archive.h"
#include "codegen/llvm/llvm_codegen.h"
#include "support/error.h"

namespace tyche::codegen {

namespace {

[[noreturn]] void no_llvm(const char* what) {
  throw Error(
      fmt::format("{}: this Tyche was built without LLVM (TYCHE_WITH_LLVM=OFF), which CPU code "
                  "needs; use a GPU target "
                  "(cuda, opencl) or a build with LLVM",
                  what));
}

}  // namespace

void CompiledKernel::fail(int32_t status) const {
  throw Error(fmt::format("kernel {} failed with status {}", name_, status));
}
void CompiledKernel::run(std::vector<runtime::NDArray>&) const {
  no_llvm("running a CPU kernel");
}

std::unique_ptr<CompiledKernel> compile(const ir::PrimFunc&, const CompileOptions&) {
  no_llvm("compiling CPU code");
}
void compile_to_object(const ir::PrimFunc&, const std::string&, const CompileOptions&) {
  no_llvm("compiling CPU code");
}
std::string compile_export_object(const ir::PrimFunc&, const CompileOptions&) {
  no_llvm("exporting CPU code");
}
std::unique_ptr<CompiledKernel> load_object(const std::string&, const std::string&) {
  no_llvm("loading CPU code");
}
runtime::Module build_module(const std::vector<ir::PrimFunc>&, const CompileOptions&) {
  no_llvm("compiling CPU code");
}
std::string compile_program_object(const ExportProgram&, const std::string&) {
  no_llvm("exporting a model");
}
std::string static_library(const std::vector<std::pair<std::string, std::string>>&) {
  no_llvm("writing a static library");
}
std::string archive_with(const std::filesystem::path&,
                         const std::vector<std::pair<std::string, std::string>>&,
                         const std::vector<std::string>&) {
  no_llvm("writing a static library");
}

}  // namespace tyche::codegen
