// The workload commands that generate code: run (compile, check, time), space (sample the design
// spaces and check the samples, compiled on request) and export.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/c/c_codegen.h"
#include "codegen/export/export.h"
#include "codegen/gpu/cuda_function.h"
#include "codegen/gpu/export_gpu.h"
#include "codegen/gpu/opencl_function.h"
#include "codegen/llvm/layout_rewrites.h"
#include "codegen/llvm/llvm_codegen.h"
#include "command_output.h"
#include "gpu_run.h"
#include "ir/printer.h"
#include "kernel_commands.h"
#include "lower/gpu/gpu_lower.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "run_args.h"
#include "runtime/compare.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "target/cpu.h"
#include "target/host.h"
#include "target/target.h"
#include "tune/explore/sample_space.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tools {

// Compiles with LLVM, checks against the reference, times, and reports latency and GFLOP/s.
int KernelCommands::cmd_run() {
  if (target::Target gpu = target::Target::parse(target_); gpu.is_gpu()) {
    GpuRunOptions g{.target = gpu,
                    .auto_bind = trace_file_.empty() && db_.empty(),
                    .seed = seed_,
                    .emit = emit_,
                    .dump_ir = dump_ir_,
                    .repeat = repeat_,
                    .json_file = json_file_};
    if (emit_ == "llvm" || emit_ == "asm" || emit_ == "c")
      throw Error(fmt::format("--emit {} is for CPU code: use ir, cuda or opencl", emit_));
    workloads::Workload w = load();
    return run_on_gpu(std::move(w), g);
  }
  if (emit_ == "cuda" || emit_ == "opencl")
    throw Error(fmt::format("--emit {} needs --target {}", emit_, emit_));
  std::ofstream json_out = open_json_output(json_file_);
  workloads::Workload w = load();
  if (threads_ > 0) runtime::ThreadPool::global().set_num_threads(threads_);
  lower::LowerOptions lo;
  if (dump_ir_)
    lo.log = [](const std::string& pass, const ir::PrimFunc& f) {
      fmt::print("# after {}\n{}\n", pass, ir::to_string(f));
    };
  // Layout rewrites of layout-free weights run once, before timing, as the tuner and a model's
  // executor run them (at load): the timed kernel is the main part.
  lower::SplitProgram split = lower::split_layout_rewrites(w.func);
  lower::Lowered lowered = lower::lower(split.main, lo);
  for (const std::string& note : lowered.notes) fmt::print(stderr, "note: {}\n", note);
  codegen::CompileOptions co;
  co.cpu = cpu_;
  co.keep_module = emit_ == "llvm" || emit_ == "asm";
  const target::Cpu& cpu = target::resolve_cpu(cpu_);
  auto kernel = codegen::compile(lowered.func, co);
  std::vector<codegen::CompiledRewrite> rewrites =
      codegen::compile_rewrites(split.rewrites, {.cpu = cpu_});
  if (emit_ == "ir") fmt::print("{}", ir::to_string(lowered.func));
  if (emit_ == "c") fmt::print("{}", codegen::emit_c(lowered.func));
  if (emit_ == "llvm") fmt::print("{}", kernel->llvm_ir());
  if (emit_ == "asm") fmt::print("{}", kernel->assembly());

  RunArgs run_args = make_run_args(w);
  std::vector<void*>& ptrs = run_args.ptrs;
  std::vector<runtime::NDArray>
      packed;  // the rewritten weights, which the main part reads in their place
  codegen::apply_rewrites(rewrites, w.func, ptrs, packed);
  if (!split.rewrites.empty()) {
    std::vector<std::string> names;
    for (const lower::LayoutRewrite& rw : split.rewrites)
      names.push_back(w.func->params[rw.param]->name);
    fmt::print("{} laid out anew once, before timing (layout-free weights)\n",
               fmt::join(names, ", "));
  }
  kernel->run(ptrs.data());
  runtime::OutputsComparison check =
      runtime::compare_outputs(run_args.outputs(), run_args.expected, output_names(w.func));
  if (!check.ok) fmt::print(stderr, "{}\n", check.message);
  runtime::TimeOptions to;
  to.repeat = repeat_;
  to.min_repeat_ms = 100;
  runtime::TimeResult t = runtime::time_function([&] { kernel->run(ptrs.data()); }, to);
  double gflops = w.flop / t.median / 1e9;
  fmt::print(
      "{} [{}]: {:.4f} ms median ({:.4f} min, cv {:.1f}%, {} repeats x {}), {:.1f} GFLOP/s, {} "
      "threads, "
      "cpu {}, compile {:.0f} ms, {} (max abs error {:.3g})\n",
      w.name, w.shape, t.median * 1e3, t.min * 1e3, t.cv * 100, t.seconds.size(), t.number, gflops,
      runtime::ThreadPool::global().num_threads(), cpu.describe(), kernel->compile_seconds() * 1e3,
      check.ok ? "correct" : "WRONG", check.max_abs_error);
  if (!json_file_.empty()) {
    nlohmann::json j = {{"workload", w.name},      {"gflop", w.flop / 1e9}, {"latency_s", t.median},
                        {"gflops", gflops},        {"correct", check.ok},   {"cpu", cpu.name},
                        {"llvm_cpu", cpu.llvm_cpu}};
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", json_file_));
  }
  return check.ok ? 0 : kExitMismatch;
}

// Prints the design spaces of a workload, samples programs from them, validates them with the
// postprocessors and checks the valid ones against the reference.
int KernelCommands::cmd_space() {
  std::ofstream json_out = open_json_output(json_file_);
  target::Target target = target::Target::parse(target_);
  if (!cpu_.empty()) {
    if (target.is_gpu()) throw Error("--cpu is for the llvm target");
    if (!target.cpu.empty() && target.cpu != cpu_)
      throw Error(fmt::format("--cpu {} contradicts the target's -mcpu {}", cpu_, target.cpu));
    target.cpu = cpu_;
  }
  if (!target.is_gpu()) {
    const target::Cpu& cpu = target::resolve_cpu(target.cpu);  // an unknown name fails here
    if (compile_) target::check_runs_on_host(cpu);
  }
  workloads::Workload w = workloads::resolve(workload_, extents_, dtypes_);
  // Checking in the interpreter needs small shapes; compiled code checks the real one (on PoCL,
  // which runs GPU code on the CPU, the small one too).
  // CUDA: every valid sample at full size compiled with NVRTC and checked against the
  // architecture's limits (nothing runs it here).
  const bool opencl = target.kind == "opencl", cuda = target.kind == "cuda";
  if (!compile_ || opencl) w = workloads::scaled_down(w);
  tune::SampleSpaceOptions so{
      .samples = samples_, .seed = seed_, .compile = compile_, .check = !(compile_ && cuda)};
  std::optional<runtime::opencl::Device> device;
  if (compile_ && opencl) {
    device = runtime::opencl::Device::open();
    so.checker = [&](const ir::PrimFunc& f, const std::vector<runtime::NDArray>& in,
                     const std::vector<runtime::NDArray>& expected) {
      return codegen::check_on_opencl(f, *device, in, expected);
    };
  }
  if (compile_ && cuda) {
    runtime::cuda::nvrtc_version();  // no NVRTC: one line, before sampling
    so.compiler = [&](const ir::PrimFunc& f) {
      lower::GpuProgram program = lower::lower_gpu(f, {}, codegen::gpu_lower_options(target));
      return codegen::check_cuda_limits(codegen::compile_cuda(program, codegen::cuda_arch(target)),
                                        program, target);
    };
  }
  tune::SampleSpaceReport r = tune::sample_space(w, target, so);
  for (size_t i = 0; i < r.spaces.size(); ++i)
    fmt::print("# design space {}\n{}\n", i, r.spaces[i]);
  for (const std::string& f : r.failures) fmt::print(stderr, "{}\n", f);
  double pct = r.samples ? 100.0 * r.valid / r.samples : 0.0;
  std::string outcome =
      so.compiler
          ? fmt::format("{} of {} compiled (NVRTC, {}, within its limits)", r.compiled, r.valid,
                        codegen::cuda_arch(target))
          : fmt::format("{} of {} correct ({})", r.correct, r.checked,
                        compile_ ? (opencl ? "OpenCL, scaled down" : "compiled") : "interpreter");
  fmt::print(
      "{} [{}] on {}: {} design spaces; {} samples, {} valid ({:.1f}%), {}; invalid: {}; median "
      "sample+replay+postprocess {:.3f} ms\n",
      w.name, w.shape, target.str(), r.spaces.size(), r.samples, r.valid, pct, outcome,
      refusal_text(r.invalid_reasons), r.median_candidate_seconds * 1e3);
  if (!json_file_.empty()) {
    nlohmann::json reasons_json = nlohmann::json::object();
    for (const auto& [k, n] : r.invalid_reasons) reasons_json[k] = n;
    nlohmann::json j = {{"workload", w.name},
                        {"target", target.str()},
                        {"spaces", r.spaces.size()},
                        {"samples", r.samples},
                        {"valid", r.valid},
                        {"correct", r.correct},
                        {"invalid_reasons", reasons_json}};
    if (target.is_gpu() && compile_) {
      nlohmann::json intrinsics = nlohmann::json::object();
      for (const auto& [k, n] : r.intrinsics) intrinsics[k] = n;
      j["compiled"] = so.compiler ? r.compiled : r.checked;
      j["intrinsics"] = intrinsics;
    }
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", json_file_));
  }
  if (so.compiler) return r.compiled == r.valid ? 0 : kExitMismatch;
  return r.correct == r.checked ? 0 : kExitMismatch;
}

// tyche export: the workload's program (the database's best or a trace) as a C header and a
// static library (or C source) that need nothing of Tyche to run.
int KernelCommands::cmd_export() {
  if (export_target_ != "llvm" &&
      export_target_ != "c") {  // a GPU target: CUDA C or OpenCL C and their host sides
    target::Target gpu = target::Target::parse(export_target_);
    if (!gpu.is_gpu())
      throw Error(
          fmt::format("export --target takes llvm, c, cuda or opencl, not '{}'", export_target_));
    codegen::check_export_name(export_name_);
    if (!cpu_.empty()) throw Error("--cpu is for --target llvm");
    workloads::Workload w = load();
    if (trace_file_.empty() && db_.empty()) w.func = tune::auto_bind_blocks(w.func, gpu, seed_);
    const bool cuda = gpu.kind == "cuda";
    lower::GpuProgram program = lower::lower_gpu(w.func, {}, codegen::gpu_lower_options(gpu));
    std::string description = fmt::format("{} [{}], {}", w.name, w.shape,
                                          !db_.empty()          ? "the best record of " + db_
                                          : trace_file_.empty() ? std::string("bound by AutoBind")
                                                                : "the schedule of " + trace_file_);
    std::vector<std::string> files = codegen::export_gpu(
        std::move(program), cuda ? codegen::GpuDialect::kCuda : codegen::GpuDialect::kOpenCL,
        output_, export_name_, description);
    fmt::print("exported {} ({} [{}]) for {}: {}\n", export_name_, w.name, w.shape, gpu.kind,
               fmt::join(files, ", "));
    return 0;
  }
  if (db_.empty() && trace_file_.empty())
    throw Error("export needs the schedule to export: --db DIR (its best record) or --trace FILE");
  codegen::check_export_name(export_name_);  // before any work
  if (export_target_ == "c" && !cpu_.empty())
    throw Error("--cpu is for --target llvm (C is compiled by your compiler)");
  if (export_target_ == "llvm") target::resolve_cpu(cpu_);
  if (threads_ > 1)
    throw Error(
        "--threads takes 1 (serial code); without it, parallel loops run on the library's thread "
        "pool");
  workloads::Workload w = load();
  codegen::ExportOptions eo;
  eo.name = export_name_;
  eo.target = export_target_;
  eo.cpu = export_target_ == "llvm" ? cpu_ : "";
  eo.parallel = threads_ != 1;
  eo.library = library_;
  eo.description = fmt::format("{} [{}], {} {}", w.name, w.shape,
                               db_.empty() ? "the schedule of" : "the best record of",
                               db_.empty() ? trace_file_ : db_);
  codegen::ExportResult r = codegen::export_kernel(w.func, output_, eo);
  for (const std::string& note : r.notes) fmt::print(stderr, "note: {}\n", note);
  fmt::print("exported {} ({} [{}]): {}\n", eo.name, w.name, w.shape, fmt::join(r.files, ", "));
  return 0;
}

}  // namespace tyche::tools
