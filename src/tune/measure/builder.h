// The Builder: lowers and compiles a batch of scheduled candidates concurrently. Each candidate's
// failure (a lowering or codegen error) is captured as its own result; a compile that runs past
// the timeout is reported as failed and the batch goes on (LLVM cannot be interrupted, so the
// late compile finishes in the background and its result is dropped).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/llvm/llvm_codegen.h"
#include "ir/function.h"
#include "target/target.h"
#include "tune/feature/per_store_feature.h"

namespace tyche::tune {

struct BuilderOptions {
  int max_workers = 0;          // 0: one per hardware thread
  double timeout_s = 30;        // per candidate
  std::string object_dir = {};  // non-empty: write object files here for the isolated runner
  std::string cpu = {};         // code for this CPU (target/cpu.h; "" = default); must run here
  // A GPU target (cuda, opencl): each candidate is lowered for it and written, with its launch
  // plan, as one file the worker runs (gpu_build.h); needs object_dir.
  std::optional<target::Target> gpu = std::nullopt;
};

// A layout rewrite's preproc (lower/layout_rewrite.h), built beside its program: run it on the
// weight param `param` and pass its output in that param's place.
struct BuiltPreproc {
  size_t param = 0;
  std::shared_ptr<codegen::CompiledKernel> kernel;  // in-process
  std::string object_path;                          // with object_dir
  std::string name;
  std::vector<int64_t> shape;  // its output's (padding may make it larger)
};

struct BuildResult {
  std::shared_ptr<codegen::CompiledKernel> kernel;  // when built in-process (no object_dir)
  std::string object_path;                          // when object_dir is set
  std::string name;                                 // the function's name (the symbol)
  // The program's layout rewrites: the kernel is its main program (lower::split_layout_rewrites),
  // which takes each rewritten weight as its preproc left it.
  std::vector<BuiltPreproc> preprocs;
  std::string error;  // empty on success
  double seconds = 0;
  bool ok() const { return error.empty(); }
};

// Runs an in-process build on `args` (inputs, then outputs, as the program's params): each
// preproc first lays its weight out into a fresh array, which the kernel then reads in its place.
void run_built(const BuildResult& built, std::vector<runtime::NDArray> args);

// A program to build. With `lowered` (a tuning candidate's, its first half of lowering perhaps
// already done for the cost model), lowering goes on from its loops instead of starting again.
struct BuildInput {
  ir::PrimFunc func;
  LoweredProgramPtr lowered = nullptr;
};

class Builder {
 public:
  // Throws tyche::Error if options.cpu is unknown or this host cannot run its code.
  explicit Builder(BuilderOptions options = {});
  // Waits for compiles that outlived their deadline (they cannot be interrupted).
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  std::vector<BuildResult> build(const std::vector<BuildInput>& candidates);
  std::vector<BuildResult> build(const std::vector<ir::PrimFunc>& candidates);

 private:
  BuilderOptions options_;
  int batch_ = 0;
  std::shared_ptr<std::atomic<int>> live_threads_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace tyche::tune
