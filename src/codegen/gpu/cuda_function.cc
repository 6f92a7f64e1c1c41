#include "codegen/gpu/cuda_function.h"

#include <fmt/format.h>

#include <regex>
#include <sstream>

#include "codegen/gpu/gpu_codegen.h"
#include "lower/gpu/gpu_resources.h"
#include "support/error.h"

namespace tyche::codegen {

namespace {

constexpr int kMaxRegistersPerThread = 255;
constexpr int64_t kRegistersPerBlock = 65536;

// ptxas -v: "Compiling entry function 'K' for 'sm_90'", then "N bytes spill stores" and
// "Used R registers, ..., S bytes smem" lines for it.
std::vector<CudaKernelResources> parse_resources(const std::string& log) {
  std::vector<CudaKernelResources> out;
  static const std::regex entry(R"(Compiling entry function '([^']+)')"),
      used(R"(Used (\d+) registers)"), smem(R"((\d+) bytes smem)"),
      spill(R"((\d+) bytes spill stores)");
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      out.push_back({m[1].str()});
      continue;
    }
    if (out.empty()) continue;
    if (std::regex_search(line, m, used)) out.back().registers = std::stoi(m[1].str());
    if (std::regex_search(line, m, smem)) out.back().shared_bytes = std::stoll(m[1].str());
    if (std::regex_search(line, m, spill)) out.back().spill_bytes = std::stoll(m[1].str());
  }
  return out;
}

}  // namespace

std::string cuda_arch(const target::Target& target) {
  return target.arch.empty() ? "sm_80" : target.arch;
}

lower::GpuLowerOptions gpu_lower_options(const target::Target& target) {
  return lower::GpuLowerOptions::for_target(target.kind, target.compute_capability());
}

CudaBinary compile_cuda(const lower::GpuProgram& program, const std::string& arch) {
  CudaBinary b;
  b.arch = arch;
  b.source = emit_gpu(program, GpuDialect::kCuda);
  b.compiled = runtime::cuda::compile(b.source, arch, {"--ptxas-options=-v"});
  std::vector<CudaKernelResources> found = parse_resources(b.compiled.log);
  for (const lower::GpuKernel& k : program.kernels) {
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const CudaKernelResources& r) { return r.name == k.name; });
    if (it == found.end())
      throw Error(fmt::format("CUDA: ptxas reported nothing for kernel {}", k.name));
    b.kernels.push_back(*it);
  }
  return b;
}

std::string check_cuda_limits(const CudaBinary& binary, const lower::GpuProgram& program,
                              const target::Target& target) {
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const lower::GpuKernel& k = program.kernels[i];
    const CudaKernelResources& r = binary.kernels.at(i);
    int64_t threads = lower::kernel_resources(k).threads;
    if (threads > target.max_threads_per_block)
      return fmt::format("kernel {} has {} threads per block, over the limit of {}", k.name,
                         threads, target.max_threads_per_block);
    if (r.shared_bytes > target.max_shared_memory_per_block)
      return fmt::format("kernel {} uses {} bytes of shared memory, over the limit of {}", k.name,
                         r.shared_bytes, target.max_shared_memory_per_block);
    if (r.registers > kMaxRegistersPerThread)
      return fmt::format("kernel {} uses {} registers per thread, over {}", k.name, r.registers,
                         kMaxRegistersPerThread);
    if (r.registers * threads > kRegistersPerBlock)
      return fmt::format("kernel {} needs {} registers per block ({} x {} threads), over {}",
                         k.name, r.registers * threads, r.registers, threads, kRegistersPerBlock);
  }
  return "";
}

CudaFunction::CudaFunction(const lower::GpuProgram& program, const CudaBinary& binary,
                           runtime::cuda::Device device)
    : CudaFunction(launch_plan(program), binary.compiled.cubin, std::move(device)) {}

CudaFunction::CudaFunction(GpuLaunchPlan plan, const std::vector<char>& cubin,
                           runtime::cuda::Device device)
    : plan_(std::move(plan)), device_(std::move(device)) {
  module_ = device_.load(cubin);
  for (size_t bytes : plan_.param_bytes) params_.push_back(device_.allocate(bytes));
  for (size_t bytes : plan_.intermediate_bytes) intermediates_.push_back(device_.allocate(bytes));
}

void CudaFunction::run(void* const* args) {
  for (size_t i = 0; i < plan_.num_inputs(); ++i)
    device_.write(params_[i], args[i], params_[i].bytes);
  run_kernels();
  for (size_t i = plan_.num_inputs(); i < params_.size(); ++i)
    device_.read(params_[i], args[i], params_[i].bytes);
}

double CudaFunction::run_kernels(bool flush_l2) {
  if (flush_l2 && !flush_.ptr)
    flush_ = device_.allocate(static_cast<size_t>(std::max<int64_t>(device_.l2_bytes(), 1) * 2));
  double seconds = 0;
  for (const GpuKernelLaunch& k : plan_.kernels) {
    std::vector<uint64_t> args;
    for (int64_t a : k.args)
      args.push_back(a >= 0 ? params_.at(static_cast<size_t>(a)).address()
                            : intermediates_.at(static_cast<size_t>(-1 - a)).address());
    if (flush_l2) device_.fill(flush_, 0);
    seconds += device_.launch(module_, k.name, args, k.grid, k.block);
  }
  return seconds;
}

}  // namespace tyche::codegen
