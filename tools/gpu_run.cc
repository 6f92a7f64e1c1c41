#include "gpu_run.h"
#include "run_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "codegen/gpu/cuda_function.h"
#include "codegen/gpu/gpu_codegen.h"
#include "codegen/gpu/opencl_function.h"
#include "ir/printer.h"
#include "lower/gpu/gpu_lower.h"
#include "runtime/compare.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "support/error.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tools {

namespace {

// Runs once and compares with the reference, then times the kernels on the device (a warm-up,
// then o.repeat runs, the median).
int check_and_time(const workloads::Workload& w, const GpuRunOptions& o,
                   const std::function<void(void* const*)>& run,
                   const std::function<double()>& run_kernels, const std::string& device,
                   size_t kernels) {
  RunArgs a = make_run_args(w);
  run(a.ptrs.data());
  runtime::OutputsComparison check =
      runtime::compare_outputs(a.outputs(), a.expected, output_names(w.func));
  if (!check.ok) fmt::print(stderr, "{}\n", check.message);
  run_kernels();  // warm-up
  std::vector<double> seconds;
  for (int r = 0; r < o.repeat; ++r) seconds.push_back(run_kernels());
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  fmt::print(
      "{} [{}]: {:.4f} ms median on the device ({} repeats), {:.2f} GFLOP/s, {} kernel(s), {}, {} "
      "(max abs error {:.3g})\n",
      w.name, w.shape, median * 1e3, seconds.size(), w.flop / median / 1e9, kernels, device,
      check.ok ? "correct" : "WRONG", check.max_abs_error);
  if (!o.json_file.empty()) {
    nlohmann::json j = {{"workload", w.name},  {"gflop", w.flop / 1e9},
                        {"latency_s", median}, {"gflops", w.flop / median / 1e9},
                        {"correct", check.ok}, {"target", o.target.str()},
                        {"device", device},    {"seconds", seconds}};
    std::ofstream out(o.json_file);
    if (!(out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  return check.ok ? 0 : kExitMismatch;
}

// Compiled with NVRTC for the target's -arch (the device's when it is not given and a device is
// here), run and checked where the driver and a device are; else the compilation is reported and
// the missing driver is the error.
int run_cuda(const workloads::Workload& w, lower::GpuProgram program, const GpuRunOptions& o) {
  std::optional<runtime::cuda::Device> device;
  std::string no_device;
  try {
    device = runtime::cuda::Device::open();
  } catch (const Error& e) {
    no_device = e.what();
  }
  std::string arch =
      o.target.arch.empty() && device ? device->arch() : codegen::cuda_arch(o.target);
  codegen::CudaBinary binary = codegen::compile_cuda(program, arch);
  std::string limits = codegen::check_cuda_limits(binary, program, o.target);
  fmt::print("{} [{}]: {} kernel(s) compiled with NVRTC {} for {} ({} bytes of cubin){}\n", w.name,
             w.shape, program.kernels.size(), runtime::cuda::nvrtc_version(), arch,
             binary.compiled.cubin.size(), limits.empty() ? "" : "; " + limits);
  if (!device) throw Error(no_device);
  codegen::CudaFunction function(program, binary, *device);
  return check_and_time(
      w, o, [&](void* const* args) { function.run(args); },
      [&] { return function.run_kernels(true); },
      fmt::format("CUDA device {} ({})", device->name(), device->arch()),
      function.plan().kernels.size());
}

}  // namespace

int run_on_gpu(workloads::Workload w, const GpuRunOptions& o) {
  if (o.auto_bind) w.func = tune::auto_bind_blocks(w.func, o.target, o.seed);
  lower::LowerOptions lo;
  if (o.dump_ir)
    lo.log = [](const std::string& pass, const ir::PrimFunc& f) {
      fmt::print("# after {}\n{}\n", pass, ir::to_string(f));
    };
  const bool cuda = o.target.kind == "cuda";
  if ((o.emit == "cuda" || o.emit == "opencl") && o.emit != o.target.kind)
    throw Error(fmt::format("--emit {} needs --target {}", o.emit, o.emit));
  lower::GpuProgram program = lower::lower_gpu(w.func, lo, codegen::gpu_lower_options(o.target));
  for (const std::string& note : program.notes) fmt::print(stderr, "note: {}\n", note);
  std::string source =
      codegen::emit_gpu(program, cuda ? codegen::GpuDialect::kCuda : codegen::GpuDialect::kOpenCL);
  if (o.emit == "ir")
    for (const lower::GpuKernel& k : program.kernels)
      fmt::print("# kernel {}: grid ({}, {}, {}), block ({}, {}, {}), {} bytes shared\n{}\n",
                 k.name, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                 k.shared_bytes, ir::to_string(k.body));
  if (o.emit == "cuda" || o.emit == "opencl") fmt::print("{}", source);

  if (cuda) return run_cuda(w, std::move(program), o);
  runtime::opencl::Device device = runtime::opencl::Device::open();
  codegen::OpenCLFunction function(program, device);
  return check_and_time(
      w, o, [&](void* const* args) { function.run(args); }, [&] { return function.run_kernels(); },
      fmt::format("OpenCL device {} ({})", device.info().name, device.info().platform),
      function.plan().kernels.size());
}

}  // namespace tyche::tools
