#include "kernel_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/gpu/cuda_function.h"
#include "command_output.h"
#include "flag_checks.h"
#include "interp/interpreter.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "lower/gpu/gpu_lower.h"
#include "run_args.h"
#include "runtime/compare.h"
#include "runtime/thread_pool.h"
#include "schedule/schedule.h"
#include "target/cpu.h"
#include "target/host.h"
#include "target/target.h"
#include "tune/database/database.h"
#include "tune/feature/per_store_feature.h"
#include "tune/postproc/postproc.h"
#include "tune/search/records.h"
#include "tune/space/schedule_rule.h"
#include "workloads/reference.h"

namespace tyche::tools {

namespace {

constexpr const char* kWorkloadHelp =
    "preset name (GMM-4) or index notation ('C[i,j] += A[i,k]*B[k,j]')";
constexpr const char* kExtentsHelp = "index extents for a formula, e.g. i=64,j=64,k=64";

// The root annotations a design-space trace (a tuning record's) leaves for the postprocessors
// to turn into parallel, vectorized and unrolled loops.
std::vector<std::string> postprocessor_annotations(const ir::PrimFunc& func) {
  schedule::Schedule sch(func);
  const ir::Annotations& ann = sch.state().root()->as_block()->annotations;
  std::vector<std::string> keys;
  for (const char* key : {ir::ann::kParallel, ir::ann::kVectorize, ir::ann::kUnrollExplicit,
                          ir::ann::kUnrollImplicit})
    if (ann.count(key)) keys.push_back(key);
  return keys;
}

std::string bytes_text(size_t b) {
  if (b >= (size_t{1} << 20) && b % (size_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  return fmt::format("{} KiB", b >> 10);
}

}  // namespace

KernelCommands::KernelCommands(CLI::App& app) {
  workloads_ = app.add_subcommand("workloads", "list the preset workloads with their GFLOP");
  show_ = app.add_subcommand("show", "print the IR of a workload");
  check_ = app.add_subcommand("check", "run a workload in the interpreter against its reference");
  run_ = app.add_subcommand("run", "compile with LLVM, check against the reference, and time");
  space_ = app.add_subcommand("space",
                              "print the design spaces, sample and validate programs, check them");
  cpu_cmd_ =
      app.add_subcommand("cpu", "describe the CPU code is generated for and what this host runs");
  features_ = app.add_subcommand("features", "print the per-store features the cost model sees");
  export_ = app.add_subcommand(
      "export",
      "write a workload's tuned program as a C header and a static library (or C source)");
  export_
      ->add_option("--name", export_name_,
                   "the C function's name (a C identifier); also the header's, NAME.h")
      ->required();
  export_->add_option("-o,--output", output_, "the directory to write into (created if missing)")
      ->required();
  export_->add_option(
      "--target", export_target_,
      "llvm (default: NAME.h and libLIBRARY.a), c (NAME.h, NAME.c, tyche_rt1_runtime.c), cuda "
      "(NAME.cu, NAME.h) or "
      "opencl (NAME.cl, NAME.c, NAME.h); a GPU target without --trace binds with AutoBind");
  export_->add_option(
      "--library", library_,
      "llvm: add the kernel to libLIBRARY.a (default: libNAME.a); several kernels can share one");
  thread_count(export_->add_option(
      "--threads", threads_,
      "1: parallel loops run serially (default: on the library's thread pool)"));
  for (CLI::App* sub : {run_, space_, cpu_cmd_, export_})
    sub->add_option("--cpu", cpu_,
                    "generate code for: host (default; TYCHE_CPU overrides), x86-64-v2, x86-64-v3, "
                    "x86-64-v4 or an LLVM CPU "
                    "name (znver3)");
  at_least(space_->add_option("--samples", samples_, "programs to sample (default 100)"), 0);
  space_->add_flag(
      "--compile", compile_,
      "check at full size with LLVM-compiled code; opencl: run on the OpenCL device, scaled down; "
      "cuda: compile each at full size with NVRTC (default: interpreter, scaled down)");
  space_->add_option(
      "--target", target_,
      "llvm (default), 'llvm -mcpu=NAME -num-cores=N', 'cuda -arch=sm_90' or opencl");
  space_->add_option("--json", json_file_,
                     "write {workload, spaces, samples, valid, correct, invalid_reasons} here");
  space_->add_option("workload", workload_, kWorkloadHelp)->required();
  space_->add_option("--extents", extents_, kExtentsHelp);
  space_->add_option("--dtypes", dtypes_, kDtypesHelp);
  space_->add_option("--seed", seed_,
                     "seed of the space generation and of the samples (default 0)");
  run_->add_option("--emit", emit_,
                   "also print the lowered IR, C source, LLVM IR or assembly (CPU); the IR, CUDA C "
                   "or OpenCL C (GPU)")
      ->check(CLI::IsMember({"ir", "c", "llvm", "asm", "cuda", "opencl"}));
  run_->add_option("--target", target_,
                   "llvm (default), 'llvm -mcpu=NAME', 'cuda -arch=sm_90' (compiled with NVRTC) or "
                   "opencl (run on PoCL here)");
  check_->add_option("--target", target_,
                     "llvm (default), cuda or opencl: a GPU program (AutoBind without a trace) "
                     "must lower to kernels");
  thread_count(
      run_->add_option("--threads", threads_, "threads for parallel loops (default: all)"));
  run_->add_option("--json", json_file_,
                   "write {workload, gflop, latency_s, gflops, correct} here");
  run_->add_flag("--dump-ir", dump_ir_, "print the IR after every lowering pass");
  at_least(run_->add_option("--repeat", repeat_, "timed repeats (default 10)"), 1);
  features_->add_option("--target", target_,
                        "llvm (default), cuda or opencl: which postprocessors, GPU features");
  features_->add_option("--json", json_file_, "write {workload, layout_version, names, rows} here");
  for (CLI::App* sub : {show_, run_, export_})
    sub->add_option("--db", db_, "apply the best record of this workload in a tuning database");
  for (CLI::App* sub : {show_, check_, run_, features_, export_}) {
    sub->add_option("workload", workload_, kWorkloadHelp)->required();
    sub->add_option("--extents", extents_, kExtentsHelp);
    sub->add_option("--dtypes", dtypes_, kDtypesHelp);
    sub->add_flag("--scale-down", scale_down_,
                  "shrink the shape so the check takes well under a second");
    sub->add_option("--trace", trace_file_, "a schedule trace to apply first (text form or JSON)");
    sub->add_flag("--postprocess", postprocess_,
                  "then run the target's postprocessors, as tuning does (a tuning record's trace "
                  "or a design-space sample)");
    sub->add_option("--seed", seed_,
                    "seed for sampling instructions that carry no decision (default 0)");
  }
}

bool KernelCommands::parsed() const {
  for (const CLI::App* sub :
       {workloads_, show_, check_, run_, space_, cpu_cmd_, features_, export_})
    if (sub->parsed()) return true;
  return false;
}

int KernelCommands::run() {
  if (workloads_->parsed()) return cmd_workloads();
  if (show_->parsed()) return cmd_show();
  if (check_->parsed()) return cmd_check();
  if (run_->parsed()) return cmd_run();
  if (space_->parsed()) return cmd_space();
  if (cpu_cmd_->parsed()) return cmd_cpu();
  if (features_->parsed()) return cmd_features();
  return cmd_export();
}

ir::PrimFunc KernelCommands::best_in_database(const workloads::Workload& w) const {
  if (!std::filesystem::is_directory(db_))
    throw Error(fmt::format("no tuning database at '{}'", db_));
  target::Target target = target::Target::host();
  target.cpu = cpu_;
  if (target::Target t = target::Target::parse(target_); t.is_gpu()) target = t;
  if (export_target_ != "llvm" && export_target_ != "c")
    target = target::Target::parse(export_target_);
  // Read-only: these commands only read, so a database they may not write is usable, and
  // nothing in it is created or changed.
  std::vector<std::string> warnings;
  ir::PrimFunc best = tune::best_program(tune::Database(db_, tune::OpenMode::kReadOnly), w.name,
                                         w.func, target, seed_, &warnings);
  for (const std::string& warning : warnings) fmt::print(stderr, "warning: {}\n", warning);
  return best;
}

ir::PrimFunc KernelCommands::postprocessed(const ir::PrimFunc& func) const {
  target::Target target = target::Target::parse(target_);
  if (!cpu_.empty()) target.cpu = cpu_;
  tune::TuneContext context{func, target};
  auto postprocs = tune::default_postprocs(context);
  schedule::Schedule sch(func, schedule::ScheduleOptions{.seed = seed_, .trace = true});
  for (const auto& p : postprocs) {
    auto st = p->apply(sch);
    if (!st.ok()) throw Error(fmt::format("postprocessor {}: {}", p->name(), st.error().reason()));
  }
  return sch.func();
}

workloads::Workload KernelCommands::load() const {
  workloads::Workload w = workloads::resolve(workload_, extents_, dtypes_);
  if (!db_.empty()) {
    if (!trace_file_.empty()) throw Error("--db and --trace both give a schedule: use one");
    if (scale_down_)
      throw Error("--db applies a record of the full-size workload: drop --scale-down");
    if (postprocess_) throw Error("--db applies the postprocessors already: drop --postprocess");
    w.func = best_in_database(w);
    return w;
  }
  if (scale_down_) w = workloads::scaled_down(w);
  if (!trace_file_.empty()) w.func = schedule::apply_trace_file(w.func, trace_file_, seed_);
  if (postprocess_) {
    w.func = postprocessed(w.func);
  } else if (!trace_file_.empty()) {
    std::vector<std::string> keys = postprocessor_annotations(w.func);
    if (!keys.empty())
      fmt::print(stderr,
                 "note: the trace leaves {} for the postprocessors (as a tuning record does): add "
                 "--postprocess to apply them\n",
                 fmt::join(keys, ", "));
  }
  return w;
}

int KernelCommands::cmd_workloads() {
  fmt::print("{:<14} {:>12}  {}\n", "name", "GFLOP", "shape");
  for (const std::string& op : workloads::op_names()) {
    const auto& names = workloads::param_names(op);
    const auto& presets = workloads::preset_params(op);
    for (size_t i = 0; i < presets.size(); ++i) {
      std::vector<std::string> parts;
      for (size_t j = 0; j < names.size(); ++j)
        parts.push_back(fmt::format("{}={}", names[j], presets[i][j]));
      double flop = workloads::reference_flop(op, presets[i]);
      fmt::print("{:<14} {:>12.4f}  {}\n", fmt::format("{}-{}", op, i + 1), flop / 1e9,
                 fmt::join(parts, ","));
    }
  }
  workloads::Workload bert = workloads::get_preset("DENSE-BERT");
  fmt::print("{:<14} {:>12.4f}  {}\n", bert.name, bert.flop / 1e9, bert.shape);
  fmt::print("typed variants (docs/workloads.md): {}\n",
             fmt::join(workloads::typed_preset_names(), " "));
  return 0;
}

int KernelCommands::cmd_show() {
  fmt::print("{}", ir::to_string(load().func));
  return 0;
}

int KernelCommands::cmd_check() {
  workloads::Workload w = load();
  // A GPU target: the program bound (AutoBind without a trace) must lower to kernels; the
  // interpreter then checks what it computes.
  std::string gpu_kernels;
  if (target::Target gpu = target::Target::parse(target_); gpu.is_gpu()) {
    if (trace_file_.empty() && db_.empty()) w.func = tune::auto_bind_blocks(w.func, gpu, seed_);
    lower::GpuProgram program = lower::lower_gpu(w.func, {}, codegen::gpu_lower_options(gpu));
    gpu_kernels = fmt::format(", {} {} kernel(s)", program.kernels.size(), gpu.kind);
  }
  auto inputs = workloads::make_inputs(w.func);
  auto start = std::chrono::steady_clock::now();
  auto actual = interp::run_on_inputs(w.func, inputs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto expected = w.reference(inputs);
  runtime::OutputsComparison c = runtime::compare_outputs(actual, expected, output_names(w.func));
  if (!c.ok) fmt::print("{}\n", c.message);
  fmt::print("{} [{}]{}: max abs error {:.3g}, interpreter {:.3f} s: {}\n", w.name, w.shape,
             gpu_kernels, c.max_abs_error, seconds, c.ok ? "OK" : "MISMATCH");
  return c.ok ? 0 : kExitMismatch;
}

// What code is generated for: the CPU (--cpu, TYCHE_CPU or the host), its vector width and
// features, the levels this host runs, and the caches and cores it reports.
int KernelCommands::cmd_cpu() {
  const target::Cpu& cpu = target::resolve_cpu(cpu_);
  std::vector<std::string> missing = target::missing_on_host(cpu);
  fmt::print("cpu: {}\n", cpu.name);
  fmt::print("llvm cpu: {}\n", cpu.llvm_cpu);
  fmt::print("vector bits: {}\n", cpu.vector_bits());
  fmt::print("runs here: {}\n",
             missing.empty() ? "yes" : fmt::format("no (lacks {})", fmt::join(missing, ", ")));
  fmt::print("host levels: {}\n", fmt::join(target::host_levels(), " "));
  std::vector<std::string> caches;
  for (const target::CacheInfo& c : target::cpu_caches())
    if (c.type != "Instruction")
      caches.push_back(fmt::format("L{} {}", c.level, bytes_text(c.bytes)));
  fmt::print("host caches: {}\n",
             caches.empty() ? "not reported" : fmt::format("{}", fmt::join(caches, ", ")));
  fmt::print("host threads: {}\n", runtime::ThreadPool::global().num_threads());
  fmt::print("features: {}\n", fmt::join(cpu.features, " "));
  return 0;
}

// The per-store features of the (scheduled) workload: one column per store, one line per feature.
int KernelCommands::cmd_features() {
  std::ofstream json_out = open_json_output(json_file_);
  workloads::Workload w = load();
  target::Target target = target::Target::parse(target_);
  tune::FeatureRows f = tune::per_store_features(w.func, {.is_gpu = target.is_gpu()});
  fmt::print("{} [{}]: {} stores x {} features (layout version {})\n", w.name, w.shape, f.rows,
             tune::feature_count(), tune::kFeatureLayoutVersion);
  fmt::print("{:<36}", "feature");
  for (int r = 0; r < f.rows; ++r)
    fmt::print(" {:>12}", fmt::format("{}:{}", r, f.stores[static_cast<size_t>(r)]).substr(0, 12));
  fmt::print("\n");
  for (int i = 0; i < tune::feature_count(); ++i) {
    fmt::print("{:<36}", tune::feature_names()[static_cast<size_t>(i)]);
    for (int r = 0; r < f.rows; ++r) fmt::print(" {:>12.4g}", f.row(r)[i]);
    fmt::print("\n");
  }
  if (!json_file_.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (int r = 0; r < f.rows; ++r)
      rows.push_back({{"store", f.stores[static_cast<size_t>(r)]},
                      {"values", std::vector<float>(f.row(r), f.row(r) + tune::feature_count())}});
    nlohmann::json j = {{"workload", w.name},
                        {"layout_version", tune::kFeatureLayoutVersion},
                        {"names", tune::feature_names()},
                        {"rows", rows}};
    if (!(json_out << j.dump() << "\n")) throw Error(fmt::format("cannot write '{}'", json_file_));
  }
  return 0;
}

}  // namespace tyche::tools
