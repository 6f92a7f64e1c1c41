#include "gpu_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/gpu_codegen.h"
#include "codegen/opencl_function.h"
#include "ir/printer.h"
#include "lower/gpu_lower.h"
#include "runtime/compare.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "support/error.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tools {

namespace {

constexpr int kExitMismatch = 1;  // as tyche.cc's

std::vector<std::string> output_names(const ir::PrimFunc& f) {
  std::vector<std::string> names;
  for (size_t i = f->params.size() - static_cast<size_t>(f->num_outputs); i < f->params.size(); ++i) names.push_back(f->params[i]->name);
  return names;
}

int run_cuda(const workloads::Workload& w, const lower::GpuProgram& program, const GpuRunOptions& o, const std::string& source) {
  std::string arch = o.target.arch.empty() ? "sm_80" : o.target.arch;
  runtime::cuda::Compiled compiled = runtime::cuda::compile(source, arch);
  fmt::print("{} [{}]: {} kernel(s) compiled with NVRTC {} for {} ({} bytes of cubin)\n", w.name, w.shape, program.kernels.size(),
             runtime::cuda::nvrtc_version(), arch, compiled.cubin.size());
  runtime::cuda::driver_version();  // throws in one line where there is no driver
  throw Error("tyche run --target cuda: running on the device is not built yet (the CUDA runner); the kernels compiled");
}

}  // namespace

int run_on_gpu(workloads::Workload w, const GpuRunOptions& o) {
  if (o.auto_bind) w.func = tune::auto_bind_blocks(w.func, o.target, o.seed);
  lower::LowerOptions lo;
  if (o.dump_ir) lo.log = [](const std::string& pass, const ir::PrimFunc& f) { fmt::print("# after {}\n{}\n", pass, ir::to_string(f)); };
  lower::GpuProgram program = lower::lower_gpu(w.func, lo);
  for (const std::string& note : program.notes) fmt::print(stderr, "note: {}\n", note);
  const bool cuda = o.target.kind == "cuda";
  std::string source = codegen::emit_gpu(program, cuda ? codegen::GpuDialect::kCuda : codegen::GpuDialect::kOpenCL);
  if (o.emit == "ir")
    for (const lower::GpuKernel& k : program.kernels)
      fmt::print("# kernel {}: grid ({}, {}, {}), block ({}, {}, {}), {} bytes shared\n{}\n", k.name, k.grid[0], k.grid[1], k.grid[2],
                 k.block[0], k.block[1], k.block[2], k.shared_bytes, ir::to_string(k.body));
  if (o.emit == "cuda" || o.emit == "opencl") fmt::print("{}", o.emit == (cuda ? "cuda" : "opencl") ? source : codegen::emit_gpu(program, o.emit == "cuda" ? codegen::GpuDialect::kCuda : codegen::GpuDialect::kOpenCL));
  if (cuda) return run_cuda(w, program, o, source);

  runtime::opencl::Device device = runtime::opencl::Device::open();
  codegen::OpenCLFunction function(std::move(program), device);
  auto inputs = workloads::make_inputs(w.func);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args = inputs;
  for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  function.run(ptrs.data());
  runtime::OutputsComparison check = runtime::compare_outputs(std::span(args).subspan(inputs.size()), expected, output_names(w.func));
  if (!check.ok) fmt::print(stderr, "{}\n", check.message);
  function.run_kernels();  // warm-up
  std::vector<double> seconds;
  for (int r = 0; r < o.repeat; ++r) seconds.push_back(function.run_kernels());
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  const auto& info = device.info();
  fmt::print("{} [{}]: {:.4f} ms median on the device ({} repeats), {:.2f} GFLOP/s, {} kernel(s), OpenCL device {} ({}), {} "
             "(max abs error {:.3g})\n",
             w.name, w.shape, median * 1e3, seconds.size(), w.flop / median / 1e9, function.program().kernels.size(), info.name,
             info.platform, check.ok ? "correct" : "WRONG", check.max_abs_error);
  if (!o.json_file.empty()) {
    nlohmann::json j = {{"workload", w.name}, {"gflop", w.flop / 1e9}, {"latency_s", median}, {"gflops", w.flop / median / 1e9},
                        {"correct", check.ok},   {"target", o.target.str()}, {"device", info.name}};
    std::ofstream out(o.json_file);
    if (!(out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  return check.ok ? 0 : kExitMismatch;
}

}  // namespace tyche::tools
