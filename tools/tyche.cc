// The `tyche` command-line program. Every user error prints one line on stderr and exits 2.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "codegen/c_codegen.h"
#include "codegen/cuda_function.h"
#include "codegen/export_gpu.h"
#include "codegen/opencl_function.h"
#include "flag_checks.h"
#include "gpu_run.h"
#include "run_args.h"
#include "target/cpu.h"
#include "codegen/export.h"
#include "codegen/layout_rewrites.h"
#include "codegen/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "lower/layout_rewrite.h"
#include "lower/gpu_lower.h"
#include "lower/lower.h"
#include "target/host.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "schedule/schedule.h"
#include "tune/space/multi_level_tiling_with_intrin.h"
#include "tune/space/schedule_rule.h"
#include "tune/cost_model/cost_model.h"
#include "tune/cost_model/metrics.h"
#include "tune/explore/dataset.h"
#include "tune/explore/sample_measure.h"
#include "tune/explore/sample_space.h"
#include "tune/database/database.h"
#include "tune/postproc/candidate.h"
#include "tune/search/records.h"
#include "tune/search/search_strategy.h"
#include "ir/annotation_keys.h"
#include "tune/task/tune.h"
#include "tune/feature/per_store_feature.h"
#include "workloads/reference.h"
#include "workloads/workloads.h"
#include "runtime/compare.h"
#include "model_commands.h"

namespace {

using namespace tyche;

constexpr int kExitUsage = 2;
using tools::kExitMismatch;

int cmd_workloads() {
  fmt::print("{:<14} {:>12}  {}\n", "name", "GFLOP", "shape");
  for (const std::string& op : workloads::op_names()) {
    const auto& names = workloads::param_names(op);
    const auto& presets = workloads::preset_params(op);
    for (size_t i = 0; i < presets.size(); ++i) {
      std::vector<std::string> parts;
      for (size_t j = 0; j < names.size(); ++j) parts.push_back(fmt::format("{}={}", names[j], presets[i][j]));
      double flop = workloads::reference_flop(op, presets[i]);
      fmt::print("{:<14} {:>12.4f}  {}\n", fmt::format("{}-{}", op, i + 1), flop / 1e9, fmt::join(parts, ","));
    }
  }
  workloads::Workload bert = workloads::get_preset("DENSE-BERT");
  fmt::print("{:<14} {:>12.4f}  {}\n", bert.name, bert.flop / 1e9, bert.shape);
  fmt::print("typed variants (docs/workloads.md): {}\n", fmt::join(workloads::typed_preset_names(), " "));
  return 0;
}

struct Options {
  std::string workload, extents, dtypes, trace_file;
  bool scale_down = false;
  int64_t seed = 0;
  // run
  std::string emit, json_file;
  int threads = 0;
  bool dump_ir = false;
  int repeat = 10;
  std::string cpu;  // run, space, cpu: the CPU code is generated for ("" = default)
  // space
  int samples = 100;
  bool compile = false;
  std::string target = "llvm";
  bool postprocess = false;  // show, check, run, features, export
  // sample-measure, model
  std::vector<std::string> records;
  int batch = 0;  // 0: the command's default (sample-measure 32, tune 64)
  double timeout = 10;
  std::string model, output;
  int top_k = 32;
  // tune
  std::vector<std::string> workload_list;
  int trials = 1000;
  int confirm = 16;  // tune: leaders timed again at the end
  std::string db, strategy = "evolutionary", acceptance = "eps-greedy", cost_model = "xgb", scheduler = "gradient";
  bool no_warm_start = false;
  // export
  std::string export_name, library, export_target = "llvm";
};

// The best program of `w` that the database at o.db measured for this target: the GPU target of
// --target (run) or export's --target, else llvm on this host's cores and --cpu.
ir::PrimFunc best_in_database(const workloads::Workload& w, const Options& o) {
  if (!std::filesystem::is_directory(o.db)) throw Error(fmt::format("no tuning database at '{}'", o.db));
  target::Target target = target::Target::host();
  target.cpu = o.cpu;
  if (target::Target t = target::Target::parse(o.target); t.is_gpu()) target = t;
  if (o.export_target != "llvm" && o.export_target != "c") target = target::Target::parse(o.export_target);
  // Read-only: these commands only read, so a database they may not write is usable, and
  // nothing in it is created or changed.
  std::vector<std::string> warnings;
  ir::PrimFunc best = tune::best_program(tune::Database(o.db, tune::OpenMode::kReadOnly), w.name, w.func, target, o.seed, &warnings);
  for (const std::string& warning : warnings) fmt::print(stderr, "warning: {}\n", warning);
  return best;
}

// The program after the target's postprocessors, as tuning finishes every candidate.
ir::PrimFunc postprocessed(const ir::PrimFunc& func, const Options& o) {
  target::Target target = target::Target::parse(o.target);
  if (!o.cpu.empty()) target.cpu = o.cpu;
  tune::TuneContext context{func, target};
  auto postprocs = tune::default_postprocs(context);
  schedule::Schedule sch(func, schedule::ScheduleOptions{.seed = o.seed, .trace = true});
  for (const auto& p : postprocs) {
    auto st = p->apply(sch);
    if (!st.ok()) throw Error(fmt::format("postprocessor {}: {}", p->name(), st.error().reason()));
  }
  return sch.func();
}

// The root annotations a design-space trace (a tuning record's) leaves for the postprocessors
// to turn into parallel, vectorized and unrolled loops.
std::vector<std::string> postprocessor_annotations(const ir::PrimFunc& func) {
  schedule::Schedule sch(func);
  const ir::Annotations& ann = sch.state().root()->as_block()->annotations;
  std::vector<std::string> keys;
  for (const char* key : {ir::ann::kParallel, ir::ann::kVectorize, ir::ann::kUnrollExplicit, ir::ann::kUnrollImplicit})
    if (ann.count(key)) keys.push_back(key);
  return keys;
}

// The workload, scaled down on request, with the trace file (text or JSON) applied and, with
// --postprocess, the postprocessors. Sampling instructions without a recorded decision draw
// from --seed.
workloads::Workload load(const Options& o) {
  workloads::Workload w = workloads::resolve(o.workload, o.extents, o.dtypes);
  if (!o.db.empty()) {
    if (!o.trace_file.empty()) throw Error("--db and --trace both give a schedule: use one");
    if (o.scale_down) throw Error("--db applies a record of the full-size workload: drop --scale-down");
    if (o.postprocess) throw Error("--db applies the postprocessors already: drop --postprocess");
    w.func = best_in_database(w, o);
    return w;
  }
  if (o.scale_down) w = workloads::scaled_down(w);
  if (!o.trace_file.empty()) w.func = schedule::apply_trace_file(w.func, o.trace_file, o.seed);
  if (o.postprocess) {
    w.func = postprocessed(w.func, o);
  } else if (!o.trace_file.empty()) {
    std::vector<std::string> keys = postprocessor_annotations(w.func);
    if (!keys.empty())
      fmt::print(stderr, "note: the trace leaves {} for the postprocessors (as a tuning record does): add --postprocess to apply them\n",
                 fmt::join(keys, ", "));
  }
  return w;
}


int cmd_show(const Options& o) {
  fmt::print("{}", ir::to_string(load(o).func));
  return 0;
}

int cmd_check(const Options& o) {
  workloads::Workload w = load(o);
  // A GPU target: the program bound (AutoBind without a trace) must lower to kernels; the
  // interpreter then checks what it computes.
  std::string gpu_kernels;
  if (target::Target gpu = target::Target::parse(o.target); gpu.is_gpu()) {
    if (o.trace_file.empty() && o.db.empty()) w.func = tune::auto_bind_blocks(w.func, gpu, o.seed);
    lower::GpuProgram program = lower::lower_gpu(w.func, {}, codegen::gpu_lower_options(gpu));
    gpu_kernels = fmt::format(", {} {} kernel(s)", program.kernels.size(), gpu.kind);
  }
  auto inputs = workloads::make_inputs(w.func);
  auto start = std::chrono::steady_clock::now();
  auto actual = interp::run_on_inputs(w.func, inputs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto expected = w.reference(inputs);
  runtime::OutputsComparison c = runtime::compare_outputs(actual, expected, tools::output_names(w.func));
  if (!c.ok) fmt::print("{}\n", c.message);
  fmt::print("{} [{}]{}: max abs error {:.3g}, interpreter {:.3f} s: {}\n", w.name, w.shape, gpu_kernels, c.max_abs_error, seconds,
             c.ok ? "OK" : "MISMATCH");
  return c.ok ? 0 : kExitMismatch;
}

std::string bytes_text(size_t b) {
  if (b >= (size_t{1} << 20) && b % (size_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  return fmt::format("{} KiB", b >> 10);
}

// What code is generated for: the CPU (--cpu, TYCHE_CPU or the host), its vector width and
// features, the levels this host runs, and the caches and cores it reports.
int cmd_cpu(const Options& o) {
  const target::Cpu& cpu = target::resolve_cpu(o.cpu);
  std::vector<std::string> missing = target::missing_on_host(cpu);
  fmt::print("cpu: {}\n", cpu.name);
  fmt::print("llvm cpu: {}\n", cpu.llvm_cpu);
  fmt::print("vector bits: {}\n", cpu.vector_bits());
  fmt::print("runs here: {}\n", missing.empty() ? "yes" : fmt::format("no (lacks {})", fmt::join(missing, ", ")));
  fmt::print("host levels: {}\n", fmt::join(target::host_levels(), " "));
  std::vector<std::string> caches;
  for (const target::CacheInfo& c : target::cpu_caches())
    if (c.type != "Instruction") caches.push_back(fmt::format("L{} {}", c.level, bytes_text(c.bytes)));
  fmt::print("host caches: {}\n", caches.empty() ? "not reported" : fmt::format("{}", fmt::join(caches, ", ")));
  fmt::print("host threads: {}\n", runtime::ThreadPool::global().num_threads());
  fmt::print("features: {}\n", fmt::join(cpu.features, " "));
  return 0;
}

// The --json file, opened before any work so that an unwritable path fails first (closed when
// there is no --json).
std::ofstream open_json_output(const Options& o) {
  std::ofstream out;
  if (o.json_file.empty()) return out;
  out.open(o.json_file);
  if (!out) throw Error(fmt::format("cannot write '{}'", o.json_file));
  return out;
}

// Compiles with LLVM, checks against the reference, times, and reports latency and GFLOP/s.
int cmd_run(const Options& o) {
  if (target::Target gpu = target::Target::parse(o.target); gpu.is_gpu()) {
    tools::GpuRunOptions g{.target = gpu, .auto_bind = o.trace_file.empty() && o.db.empty(), .seed = o.seed, .emit = o.emit,
                           .dump_ir = o.dump_ir, .repeat = o.repeat, .json_file = o.json_file};
    if (o.emit == "llvm" || o.emit == "asm" || o.emit == "c") throw Error(fmt::format("--emit {} is for CPU code: use ir, cuda or opencl", o.emit));
    workloads::Workload w = load(o);
    return tools::run_on_gpu(std::move(w), g);
  }
  if (o.emit == "cuda" || o.emit == "opencl") throw Error(fmt::format("--emit {} needs --target {}", o.emit, o.emit));
  std::ofstream json_out = open_json_output(o);
  workloads::Workload w = load(o);
  if (o.threads > 0) runtime::ThreadPool::global().set_num_threads(o.threads);
  lower::LowerOptions lo;
  if (o.dump_ir) lo.log = [](const std::string& pass, const ir::PrimFunc& f) { fmt::print("# after {}\n{}\n", pass, ir::to_string(f)); };
  // Layout rewrites of layout-free weights run once, before timing, as the tuner and a model's
  // executor run them (at load): the timed kernel is the main part.
  lower::SplitProgram split = lower::split_layout_rewrites(w.func);
  lower::Lowered lowered = lower::lower(split.main, lo);
  for (const std::string& note : lowered.notes) fmt::print(stderr, "note: {}\n", note);
  codegen::CompileOptions co;
  co.cpu = o.cpu;
  co.keep_module = o.emit == "llvm" || o.emit == "asm";
  const target::Cpu& cpu = target::resolve_cpu(o.cpu);
  auto kernel = codegen::compile(lowered.func, co);
  std::vector<codegen::CompiledRewrite> rewrites = codegen::compile_rewrites(split.rewrites, {.cpu = o.cpu});
  if (o.emit == "ir") fmt::print("{}", ir::to_string(lowered.func));
  if (o.emit == "c") fmt::print("{}", codegen::emit_c(lowered.func));
  if (o.emit == "llvm") fmt::print("{}", kernel->llvm_ir());
  if (o.emit == "asm") fmt::print("{}", kernel->assembly());

  tools::RunArgs run_args = tools::make_run_args(w);
  std::vector<void*>& ptrs = run_args.ptrs;
  std::vector<runtime::NDArray> packed;  // the rewritten weights, which the main part reads in their place
  codegen::apply_rewrites(rewrites, w.func, ptrs, packed);
  if (!split.rewrites.empty()) {
    std::vector<std::string> names;
    for (const lower::LayoutRewrite& rw : split.rewrites) names.push_back(w.func->params[rw.param]->name);
    fmt::print("{} laid out anew once, before timing (layout-free weights)\n", fmt::join(names, ", "));
  }
  kernel->run(ptrs.data());
  runtime::OutputsComparison check =
      runtime::compare_outputs(run_args.outputs(), run_args.expected, tools::output_names(w.func));
  if (!check.ok) fmt::print(stderr, "{}\n", check.message);
  runtime::TimeOptions to;
  to.repeat = o.repeat;
  to.min_repeat_ms = 100;
  runtime::TimeResult t = runtime::time_function([&] { kernel->run(ptrs.data()); }, to);
  double gflops = w.flop / t.median / 1e9;
  fmt::print("{} [{}]: {:.4f} ms median ({:.4f} min, cv {:.1f}%, {} repeats x {}), {:.1f} GFLOP/s, {} threads, "
             "cpu {}, compile {:.0f} ms, {} (max abs error {:.3g})\n",
             w.name, w.shape, t.median * 1e3, t.min * 1e3, t.cv * 100, t.seconds.size(), t.number, gflops,
             runtime::ThreadPool::global().num_threads(), cpu.describe(), kernel->compile_seconds() * 1e3,
             check.ok ? "correct" : "WRONG", check.max_abs_error);
  if (!o.json_file.empty()) {
    nlohmann::json j = {{"workload", w.name}, {"gflop", w.flop / 1e9}, {"latency_s", t.median}, {"gflops", gflops},
                        {"correct", check.ok},   {"cpu", cpu.name},      {"llvm_cpu", cpu.llvm_cpu}};
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  return check.ok ? 0 : kExitMismatch;
}

// The per-store features of the (scheduled) workload: one column per store, one line per feature.
int cmd_features(const Options& o) {
  std::ofstream json_out = open_json_output(o);
  workloads::Workload w = load(o);
  target::Target target = target::Target::parse(o.target);
  tune::FeatureRows f = tune::per_store_features(w.func, {.is_gpu = target.is_gpu()});
  fmt::print("{} [{}]: {} stores x {} features (layout version {})\n", w.name, w.shape, f.rows, tune::feature_count(),
             tune::kFeatureLayoutVersion);
  fmt::print("{:<36}", "feature");
  for (int r = 0; r < f.rows; ++r) fmt::print(" {:>12}", fmt::format("{}:{}", r, f.stores[static_cast<size_t>(r)]).substr(0, 12));
  fmt::print("\n");
  for (int i = 0; i < tune::feature_count(); ++i) {
    fmt::print("{:<36}", tune::feature_names()[static_cast<size_t>(i)]);
    for (int r = 0; r < f.rows; ++r) fmt::print(" {:>12.4g}", f.row(r)[i]);
    fmt::print("\n");
  }
  if (!o.json_file.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (int r = 0; r < f.rows; ++r)
      rows.push_back({{"store", f.stores[static_cast<size_t>(r)]}, {"values", std::vector<float>(f.row(r), f.row(r) + tune::feature_count())}});
    nlohmann::json j = {{"workload", w.name}, {"layout_version", tune::kFeatureLayoutVersion}, {"names", tune::feature_names()}, {"rows", rows}};
    if (!(json_out << j.dump() << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  return 0;
}

// The directory of this program: tyche-worker sits beside it.
std::string program_dir() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

// Samples, builds, times and records candidates of a workload's design space.
int cmd_sample_measure(const Options& o) {
  workloads::Workload w = workloads::resolve(o.workload, o.extents, o.dtypes);
  target::Target target = target::Target::parse(o.target);
  if (!o.cpu.empty()) target.cpu = o.cpu;
  tune::SampleMeasureOptions so;
  so.samples = o.samples;
  so.seed = o.seed;
  so.batch = o.batch > 0 ? o.batch : 32;
  so.records_path = o.records.empty() ? "" : o.records[0];
  so.extents = o.extents;
  so.runner.worker_path = program_dir() + "/tyche-worker";
  so.runner.timeout_s = o.timeout;
  so.progress = [](const std::string& line) { fmt::print("{}\n", line); std::fflush(stdout); };
  tune::SampleMeasureReport r = tune::sample_measure(w, target, so);
  fmt::print("{} [{}] on {}: {} records appended to {} ({} measured, {} failed); {} drawn, {} invalid, {} already measured; "
             "best {:.4f} ms ({:.1f} GFLOP/s)\n",
             w.name, w.shape, target.str(), r.measured + r.failed, so.records_path, r.measured, r.failed, r.sampled, r.invalid,
             r.duplicates, r.best_seconds * 1e3, r.best_seconds > 0 ? w.flop / r.best_seconds / 1e9 : 0.0);
  return 0;
}

// Loads the records (warning about what was skipped) for model training and evaluation.
tune::Dataset load_records(const Options& o) {
  if (o.records.empty()) throw Error("no --records file");
  tune::Dataset d = tune::load_dataset(o.records, o.threads);
  for (const std::string& w : d.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (d.skipped > static_cast<int>(d.warnings.size()))
    fmt::print(stderr, "warning: {} more skipped\n", d.skipped - static_cast<int>(d.warnings.size()));
  if (d.size() == 0) throw Error("the records hold no usable measurement");
  return d;
}

// tyche model train: an XGBoost model on every record given, saved for later searches.
int cmd_model_train(const Options& o) {
  auto start = std::chrono::steady_clock::now();
  tune::Dataset d = load_records(o);
  auto model = tune::make_xgboost_model({.min_measured = 0, .threads = o.threads, .seed = static_cast<uint64_t>(o.seed)});
  model->update_features(d.inputs, d.seconds);
  model->save(o.output);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("trained {} on {} records of {} workloads ({} skipped) in {:.1f} s: {}\n", model->name(), d.size(),
             d.workloads().size(), d.skipped, seconds, o.output);
  return 0;
}

// tyche model eval: how well a saved model ranks the measured candidates of each workload.
int cmd_model_eval(const Options& o) {
  std::ofstream json_out = open_json_output(o);
  auto model = tune::load_cost_model(o.model, {.threads = o.threads});
  tune::Dataset all = load_records(o);
  fmt::print("{:<14} {:>8} {:>9} {:>16} {:>8} {:>9}\n", "workload", "records", "pairwise",
             fmt::format("top-{} recall", o.top_k), "random", "spearman");
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : all.workloads()) {
    tune::Dataset d = all.subset(name);
    std::vector<size_t> measured;
    for (size_t i = 0; i < d.size(); ++i)
      if (std::isfinite(d.seconds[i])) measured.push_back(i);
    tune::Dataset m = d.pick(measured);
    if (m.size() < 2) continue;
    std::vector<double> truth;
    for (double s : m.seconds) truth.push_back(1 / s);
    std::vector<double> scores = model->predict_features(m.inputs);
    double pairwise = tune::pairwise_accuracy(scores, truth), recall = tune::top_k_recall(scores, truth, o.top_k);
    double random = std::min(1.0, static_cast<double>(o.top_k) / static_cast<double>(m.size()));
    double rho = tune::spearman(scores, truth);
    fmt::print("{:<14} {:>8} {:>9.3f} {:>16.3f} {:>8.3f} {:>9.3f}\n", name, m.size(), pairwise, recall, random, rho);
    rows.push_back({{"workload", name}, {"records", m.size()}, {"pairwise_accuracy", pairwise}, {"top_k", o.top_k},
                    {"top_k_recall", recall}, {"random_top_k_recall", random}, {"spearman", rho}});
  }
  if (!o.json_file.empty()) {
    nlohmann::json j = {{"model", o.model}, {"kind", model->name()}, {"workloads", rows}};
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  return 0;
}

std::atomic<bool> interrupted{false};
void on_interrupt(int) { interrupted = true; }

// Refusals by reason, the most frequent first: "replay: dependence_violated (41), ...".
template <typename Count>
std::string refusal_text(const std::map<std::string, Count>& counts) {
  std::vector<std::pair<std::string, Count>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [reason, n] : sorted) parts.push_back(fmt::format("{} ({})", reason, n));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string duration_text(double s) {
  int t = static_cast<int>(std::lround(s));
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

// tyche tune: search each workload's design space, measuring up to --trials candidates in all.
int cmd_tune(const Options& o) {
  std::ofstream json_out = open_json_output(o);
  std::vector<tune::TuneTask> tasks;
  for (const std::string& name : o.workload_list) {
    bool formula = name.find_first_of("[=") != std::string::npos;
    tasks.push_back({workloads::resolve(name, formula ? o.extents : "", formula ? o.dtypes : ""), formula ? o.extents : "", 1.0, nullptr});
  }
  if (!o.dtypes.empty() && std::none_of(tasks.begin(), tasks.end(), [](const tune::TuneTask& t) { return t.workload.op == "index_notation"; }))
    throw InputError("--dtypes is only for index-notation formulas; a preset names its types (e.g. GMM-4-U8S8)");
  target::Target target = target::Target::parse(o.target);
  if (!o.cpu.empty()) target.cpu = o.cpu;
  for (const tune::TuneTask& t : tasks)
    if (!target.is_gpu())
      if (std::string note = tune::intrinsic_note(t.workload.func, target.cpu_info().name, target.cpu_info().features); !note.empty())
        fmt::print("{}: {}\n", t.workload.name, note);
  tune::TuneOptions to;
  to.trials = o.trials;
  to.batch = o.batch > 0 ? o.batch : 64;
  to.confirm_top = o.confirm;
  to.strategy = o.strategy;
  to.evolutionary.acceptance = o.acceptance;
  to.cost_model = o.cost_model;
  to.model_path = o.model;
  to.warm_start = !o.no_warm_start;
  to.scheduler = o.scheduler;
  to.seed = o.seed;
  to.threads = o.threads;
  to.runner.worker_path = program_dir() + "/tyche-worker";
  to.runner.timeout_s = o.timeout;
  to.stop = &interrupted;
  to.db_dir = o.db;
  bool temporary_db = to.db_dir.empty();
  if (temporary_db) {
    char dir[] = "/tmp/tyche_tune_XXXXXX";
    if (!::mkdtemp(dir)) throw Error("cannot create a temporary database directory");
    to.db_dir = dir;
  }
  bool live = ::isatty(1);
  std::signal(SIGINT, on_interrupt);
  auto report = [&](const tune::TuneProgress& p) {
    const tune::TaskResult& t = *p.task;
    double eta = p.trials > 0 ? p.elapsed_s * (p.budget - p.trials) / p.trials : 0;
    // As timed: the drift-corrected times rank the candidates but are not measurements.
    double fastest = t.search_best_seconds;
    std::string best = fastest > 0 ? fmt::format("{:.4f} ms ({:.1f} GFLOP/s)", fastest * 1e3, t.flop / fastest / 1e9) : "none yet";
    std::string line = fmt::format("[{}/{}] {}: best {}, {} failed, elapsed {}, ETA {}", p.trials, p.budget, t.name, best, t.failed,
                                   duration_text(p.elapsed_s), duration_text(eta));
    if (live) fmt::print("\r\x1b[2K{}", line);
    else fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  tune::TuneResult r = tune::tune(tasks, target, to, report);
  std::signal(SIGINT, SIG_DFL);
  if (live) fmt::print("\n");
  for (const std::string& w : r.warnings) fmt::print(stderr, "warning: {}\n", w);
  nlohmann::json tasks_json = nlohmann::json::array();
  for (const tune::TaskResult& t : r.tasks) {
    fmt::print("{} [{}]: {} trials ({} failed)", t.name, t.shape, t.trials, t.failed);
    if (t.best_seconds > 0) {
      std::string confirmed = t.confirmed ? fmt::format(" (the fastest of the {} best timed again, {} rounds; the fastest single "
                                                        "measurement while searching: {:.4f} ms)",
                                                        t.confirmed, to.confirm_rounds, t.search_best_seconds * 1e3)
                                          : "";
      fmt::print(", best {:.4f} ms, {:.1f} GFLOP/s{}; its trace:\n{}", t.best_seconds * 1e3, t.flop / t.best_seconds / 1e9, confirmed,
                 t.best_trace_text);
    } else {
      fmt::print(", nothing ran correctly\n");
    }
    if (!t.refusals.empty()) fmt::print("candidates refused while searching: {}\n", refusal_text(t.refusals));
    nlohmann::json history = nlohmann::json::array();
    for (const tune::TunePoint& h : t.history)
      history.push_back({{"trials", h.trials},
                         {"best_gflops", h.measured_best_seconds > 0 ? t.flop / h.measured_best_seconds / 1e9 : 0.0},
                         {"corrected_best_gflops", h.best_seconds > 0 ? t.flop / h.best_seconds / 1e9 : 0.0},
                         {"elapsed_s", h.elapsed_s}});
    tasks_json.push_back({{"workload", t.name}, {"trials", t.trials}, {"failed", t.failed},
                          {"best_latency_s", t.best_seconds > 0 ? nlohmann::json(t.best_seconds) : nlohmann::json(nullptr)},
                          {"best_gflops", t.best_seconds > 0 ? t.flop / t.best_seconds / 1e9 : 0.0}, {"confirmed", t.confirmed},
                          {"warm_start", t.warm_start},
                          {"search_best_latency_s", t.search_best_seconds > 0 ? nlohmann::json(t.search_best_seconds) : nlohmann::json(nullptr)},
                          {"wall_s", r.times.total}, {"refusals", t.refusals},
                          {"history", history}, {"best_trace", t.best_trace_text}});
  }
  const tune::TuneTimes& tm = r.times;
  double outside = tm.search + tm.model + tm.database;
  fmt::print("time {}: build {:.1f} s, run {:.1f} s, search {:.1f} s, model {:.1f} s, database {:.1f} s, leaders timed again {:.1f} s "
             "({:.1f}% outside building and running)\n",
             duration_text(tm.total), tm.build, tm.run, tm.search, tm.model, tm.database, tm.confirm, tm.total > 0 ? 100 * outside / tm.total : 0.0);
  fmt::print("records: {}{}{}\n", to.db_dir, temporary_db ? " (a temporary database: pass --db DIR to keep and resume)" : "",
             r.resumed_records ? fmt::format("; resumed from {} records", r.resumed_records) : "");
  fmt::print("cost model: started from {}\n", r.model == "untrained" || r.model == "random" ? r.model : "the model in " + r.model);
  int warm = 0;
  for (const tune::TaskResult& t : r.tasks) warm += t.warm_start;
  if (warm > 0) fmt::print("warm start: {} programs of similar workloads, their decisions carried over\n", warm);
  if (!o.json_file.empty()) {
    nlohmann::json j = tasks_json.size() == 1 ? tasks_json[0] : nlohmann::json{{"tasks", tasks_json}, {"wall_s", tm.total}};
    j["times"] = {{"build_s", tm.build}, {"run_s", tm.run}, {"search_s", tm.search}, {"model_s", tm.model}, {"database_s", tm.database}, {"confirm_s", tm.confirm}, {"total_s", tm.total}};
    j["interrupted"] = r.interrupted;
    j["db"] = to.db_dir;
    j["cost_model"] = r.model;
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  if (r.interrupted) {
    fmt::print(stderr, "interrupted: what was measured is saved in {}\n", to.db_dir);
    return 130;
  }
  return 0;
}

// tyche export: the workload's program (the database's best or a trace) as a C header and a
// static library (or C source) that need nothing of Tyche to run.
int cmd_export(const Options& o) {
  if (o.export_target != "llvm" && o.export_target != "c") {  // a GPU target: CUDA C or OpenCL C and their host sides
    target::Target gpu = target::Target::parse(o.export_target);
    if (!gpu.is_gpu()) throw Error(fmt::format("export --target takes llvm, c, cuda or opencl, not '{}'", o.export_target));
    codegen::check_export_name(o.export_name);
    if (!o.cpu.empty()) throw Error("--cpu is for --target llvm");
    workloads::Workload w = load(o);
    if (o.trace_file.empty() && o.db.empty()) w.func = tune::auto_bind_blocks(w.func, gpu, o.seed);
    const bool cuda = gpu.kind == "cuda";
    lower::GpuProgram program = lower::lower_gpu(w.func, {}, codegen::gpu_lower_options(gpu));
    std::string description = fmt::format("{} [{}], {}", w.name, w.shape,
                                          !o.db.empty()           ? "the best record of " + o.db
                                          : o.trace_file.empty() ? std::string("bound by AutoBind")
                                                                 : "the schedule of " + o.trace_file);
    std::vector<std::string> files =
        codegen::export_gpu(std::move(program), cuda ? codegen::GpuDialect::kCuda : codegen::GpuDialect::kOpenCL, o.output, o.export_name, description);
    fmt::print("exported {} ({} [{}]) for {}: {}\n", o.export_name, w.name, w.shape, gpu.kind, fmt::join(files, ", "));
    return 0;
  }
  if (o.db.empty() && o.trace_file.empty())
    throw Error("export needs the schedule to export: --db DIR (its best record) or --trace FILE");
  codegen::check_export_name(o.export_name);  // before any work
  if (o.export_target == "c" && !o.cpu.empty()) throw Error("--cpu is for --target llvm (C is compiled by your compiler)");
  if (o.export_target == "llvm") target::resolve_cpu(o.cpu);
  if (o.threads > 1) throw Error("--threads takes 1 (serial code); without it, parallel loops run on the library's thread pool");
  workloads::Workload w = load(o);
  codegen::ExportOptions eo;
  eo.name = o.export_name;
  eo.target = o.export_target;
  eo.cpu = o.export_target == "llvm" ? o.cpu : "";
  eo.parallel = o.threads != 1;
  eo.library = o.library;
  eo.description = fmt::format("{} [{}], {} {}", w.name, w.shape, o.db.empty() ? "the schedule of" : "the best record of",
                               o.db.empty() ? o.trace_file : o.db);
  codegen::ExportResult r = codegen::export_kernel(w.func, o.output, eo);
  for (const std::string& note : r.notes) fmt::print(stderr, "note: {}\n", note);
  fmt::print("exported {} ({} [{}]): {}\n", eo.name, w.name, w.shape, fmt::join(r.files, ", "));
  return 0;
}

// Prints the design spaces of a workload, samples programs from them, validates them with the
// postprocessors and checks the valid ones against the reference.
int cmd_space(const Options& o) {
  std::ofstream json_out = open_json_output(o);
  target::Target target = target::Target::parse(o.target);
  if (!o.cpu.empty()) {
    if (target.is_gpu()) throw Error("--cpu is for the llvm target");
    if (!target.cpu.empty() && target.cpu != o.cpu)
      throw Error(fmt::format("--cpu {} contradicts the target's -mcpu {}", o.cpu, target.cpu));
    target.cpu = o.cpu;
  }
  if (!target.is_gpu()) {
    const target::Cpu& cpu = target::resolve_cpu(target.cpu);  // an unknown name fails here
    if (o.compile) target::check_runs_on_host(cpu);
  }
  workloads::Workload w = workloads::resolve(o.workload, o.extents, o.dtypes);
  // Checking in the interpreter needs small shapes; compiled code checks the real one (on PoCL,
  // which runs GPU code on the CPU, the small one too).
  // CUDA: every valid sample at full size compiled with NVRTC and checked against the
  // architecture's limits (nothing runs it here).
  const bool opencl = target.kind == "opencl", cuda = target.kind == "cuda";
  if (!o.compile || opencl) w = workloads::scaled_down(w);
  tune::SampleSpaceOptions so{.samples = o.samples, .seed = o.seed, .compile = o.compile, .check = !(o.compile && cuda)};
  std::optional<runtime::opencl::Device> device;
  if (o.compile && opencl) {
    device = runtime::opencl::Device::open();
    so.checker = [&](const ir::PrimFunc& f, const std::vector<runtime::NDArray>& in, const std::vector<runtime::NDArray>& expected) {
      return codegen::check_on_opencl(f, *device, in, expected);
    };
  }
  if (o.compile && cuda) {
    runtime::cuda::nvrtc_version();  // no NVRTC: one line, before sampling
    so.compiler = [&](const ir::PrimFunc& f) {
      lower::GpuProgram program = lower::lower_gpu(f, {}, codegen::gpu_lower_options(target));
      return codegen::check_cuda_limits(codegen::compile_cuda(program, codegen::cuda_arch(target)), program, target);
    };
  }
  tune::SampleSpaceReport r = tune::sample_space(w, target, so);
  for (size_t i = 0; i < r.spaces.size(); ++i) fmt::print("# design space {}\n{}\n", i, r.spaces[i]);
  for (const std::string& f : r.failures) fmt::print(stderr, "{}\n", f);
  double pct = r.samples ? 100.0 * r.valid / r.samples : 0.0;
  std::string outcome = so.compiler ? fmt::format("{} of {} compiled (NVRTC, {}, within its limits)", r.compiled, r.valid, codegen::cuda_arch(target))
                                    : fmt::format("{} of {} correct ({})", r.correct, r.checked,
                                                  o.compile ? (opencl ? "OpenCL, scaled down" : "compiled") : "interpreter");
  fmt::print("{} [{}] on {}: {} design spaces; {} samples, {} valid ({:.1f}%), {}; invalid: {}; median sample+replay+postprocess {:.3f} ms\n",
             w.name, w.shape, target.str(), r.spaces.size(), r.samples, r.valid, pct, outcome, refusal_text(r.invalid_reasons),
             r.median_candidate_seconds * 1e3);
  if (!o.json_file.empty()) {
    nlohmann::json reasons_json = nlohmann::json::object();
    for (const auto& [k, n] : r.invalid_reasons) reasons_json[k] = n;
    nlohmann::json j = {{"workload", w.name}, {"target", target.str()},         {"spaces", r.spaces.size()},
                        {"samples", r.samples}, {"valid", r.valid},   {"correct", r.correct},
                        {"invalid_reasons", reasons_json}};
    if (target.is_gpu() && o.compile) {
      nlohmann::json intrinsics = nlohmann::json::object();
      for (const auto& [k, n] : r.intrinsics) intrinsics[k] = n;
      j["compiled"] = so.compiler ? r.compiled : r.checked;
      j["intrinsics"] = intrinsics;
    }
    if (!(json_out << j.dump(2) << "\n")) throw Error(fmt::format("cannot write '{}'", o.json_file));
  }
  if (so.compiler) return r.compiled == r.valid ? 0 : kExitMismatch;
  return r.correct == r.checked ? 0 : kExitMismatch;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tyche: a tensor-program auto-scheduler"};
  app.require_subcommand(1);
  Options opts;

  app.add_subcommand("workloads", "list the preset workloads with their GFLOP");
  auto* show = app.add_subcommand("show", "print the IR of a workload");
  auto* check = app.add_subcommand("check", "run a workload in the interpreter against its reference");
  auto* run = app.add_subcommand("run", "compile with LLVM, check against the reference, and time");
  auto* space = app.add_subcommand("space", "print the design spaces, sample and validate programs, check them");
  auto* cpu = app.add_subcommand("cpu", "describe the CPU code is generated for and what this host runs");
  auto* features = app.add_subcommand("features", "print the per-store features the cost model sees");
  auto* export_cmd = app.add_subcommand("export", "write a workload's tuned program as a C header and a static library (or C source)");
  export_cmd->add_option("--name", opts.export_name, "the C function's name (a C identifier); also the header's, NAME.h")->required();
  export_cmd->add_option("-o,--output", opts.output, "the directory to write into (created if missing)")->required();
  export_cmd->add_option("--target", opts.export_target,
                         "llvm (default: NAME.h and libLIBRARY.a), c (NAME.h, NAME.c, tyche_rt1_runtime.c), cuda (NAME.cu, NAME.h) or "
                         "opencl (NAME.cl, NAME.c, NAME.h); a GPU target without --trace binds with AutoBind");
  export_cmd->add_option("--library", opts.library, "llvm: add the kernel to libLIBRARY.a (default: libNAME.a); several kernels can share one");
  tools::thread_count(export_cmd->add_option("--threads", opts.threads, "1: parallel loops run serially (default: on the library's thread pool)"));
  auto* sample_measure = app.add_subcommand("sample-measure", "sample design-space candidates, time them in the isolated runner, append records");
  sample_measure->add_option("workload", opts.workload, "preset name (GMM-4) or index notation")->required();
  sample_measure->add_option("--extents", opts.extents, "index extents for a formula, e.g. i=64,j=64,k=64");
  sample_measure->add_option("--dtypes", opts.dtypes, "element types of a formula's tensors (default float32), e.g. A=uint8,B=int8,C=int32");
  tools::at_least(sample_measure->add_option("--samples", opts.samples, "candidates to measure (default 100)"), 1);
  sample_measure->add_option("--records", opts.records, "the records file to append to (JSON lines)")->required()->expected(1);
  sample_measure->add_option("--seed", opts.seed, "seed of the spaces and the samples (default 0)");
  sample_measure->add_option("--target", opts.target, "llvm (default), 'llvm -mcpu=NAME -num-cores=N', 'cuda -arch=sm_XY' or opencl (run on that device)");
  sample_measure->add_option("--cpu", opts.cpu, "generate code for this CPU (as tyche run --cpu)");
  tools::at_least(sample_measure->add_option("--batch", opts.batch, "candidates built together before they are measured (default 32)"), 1);
  tools::seconds(sample_measure->add_option("--timeout", opts.timeout, "seconds a candidate may run, all repeats (default 10)"));
  auto* tune_cmd = app.add_subcommand("tune", "search for the fastest program of workloads, measuring up to --trials candidates");
  tune_cmd->add_option("workloads", opts.workload_list, "preset names (GMM-4) or index-notation formulas")->required();
  tune_cmd->add_option("--extents", opts.extents, "index extents for the formulas, e.g. i=64,j=64,k=64");
  tune_cmd->add_option("--dtypes", opts.dtypes, "element types of a formula's tensors (default float32), e.g. A=uint8,B=int8,C=int32");
  tools::at_least(tune_cmd->add_option("--trials", opts.trials, "candidates to measure, all workloads together (default 1000)"), 1);
  tune_cmd->add_option("--db", opts.db, "the tuning database directory: records kept, resumed (default: a temporary one)");
  tune_cmd->add_option("--strategy", opts.strategy, fmt::format("{} (default: evolutionary)", fmt::join(tune::search_strategy_names(), ", ")))
      ->check(CLI::IsMember(tune::search_strategy_names()));
  tune_cmd->add_option("--acceptance", opts.acceptance, "eps-greedy (default) or annealing")->check(CLI::IsMember({"eps-greedy", "annealing"}));
  tune_cmd->add_option("--cost-model", opts.cost_model, "xgb (default) or random")->check(CLI::IsMember({"xgb", "random"}));
  tune_cmd->add_option("--model", opts.model,
                       "a cost model saved by 'tyche model train' to start from (default: the one pre-trained on bench/data; "
                       "'none': untrained)");
  tune_cmd->add_flag("--no-warm-start", opts.no_warm_start,
                     "do not start a workload the database has few records of from the best of similar ones");
  tune_cmd->add_option("--scheduler", opts.scheduler, "gradient (default) or round-robin: which workload gets the next round")
      ->check(CLI::IsMember({"gradient", "round-robin"}));
  tune_cmd->add_option("--seed", opts.seed, "seed of the spaces and the search (default 0)");
  tools::thread_count(tune_cmd->add_option("--threads", opts.threads, "threads for search and the cost model (default: all)"));
  tools::at_least(tune_cmd->add_option("--batch", opts.batch, "candidates measured per round (default 64)"), 1);
  tools::at_least(tune_cmd->add_option("--confirm", opts.confirm,
                                       "at the end, time the N fastest again, interleaved, and keep the fastest (default 16; 0: off)"),
                  0);
  tools::seconds(tune_cmd->add_option("--timeout", opts.timeout, "seconds a candidate may run, all repeats (default 10)"));
  tune_cmd->add_option("--target", opts.target, "llvm (default), 'llvm -mcpu=NAME -num-cores=N', 'cuda -arch=sm_XY' or opencl (run on that device)");
  tune_cmd->add_option("--cpu", opts.cpu, "generate code for this CPU (as tyche run --cpu)");
  tune_cmd->add_option("--json", opts.json_file, "write {workload, trials, best_latency_s, best_gflops, wall_s, history, best_trace} here");
  auto* model = app.add_subcommand("model", "train a cost model on tuning records, or evaluate one");
  model->require_subcommand(1);
  auto* model_train = model->add_subcommand("train", "train an XGBoost cost model on records and save it");
  model_train->add_option("--records", opts.records, "record files (JSON lines, .gz too)")->required();
  model_train->add_option("-o,--output", opts.output, "where to save the model (JSON)")->required();
  model_train->add_option("--seed", opts.seed, "seed of the held-out split and of XGBoost (default 0)");
  auto* model_eval = model->add_subcommand("eval", "rank each workload's measured candidates with a saved model");
  model_eval->add_option("--model", opts.model, "a model saved by 'tyche model train'")->required();
  model_eval->add_option("--records", opts.records, "record files (JSON lines, .gz too)")->required();
  tools::at_least(model_eval->add_option("--top-k", opts.top_k, "k of the top-k recall (default 32)"), 1);
  model_eval->add_option("--json", opts.json_file, "write the metrics per workload here");
  for (auto* sub : {model_train, model_eval})
    tools::thread_count(sub->add_option("--threads", opts.threads, "threads for features, training and prediction (default: all)"));
  features->add_option("--target", opts.target, "llvm (default), cuda or opencl: which postprocessors, GPU features");
  features->add_option("--json", opts.json_file, "write {workload, layout_version, names, rows} here");
  for (auto* sub : {run, space, cpu, export_cmd})
    sub->add_option("--cpu", opts.cpu,
                    "generate code for: host (default; TYCHE_CPU overrides), x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM CPU "
                    "name (znver3)");
  tools::at_least(space->add_option("--samples", opts.samples, "programs to sample (default 100)"), 0);
  space->add_flag("--compile", opts.compile,
                  "check at full size with LLVM-compiled code; opencl: run on the OpenCL device, scaled down; cuda: compile each at full size with NVRTC (default: interpreter, scaled down)");
  space->add_option("--target", opts.target, "llvm (default), 'llvm -mcpu=NAME -num-cores=N', 'cuda -arch=sm_90' or opencl");
  space->add_option("--json", opts.json_file, "write {workload, spaces, samples, valid, correct, invalid_reasons} here");
  space->add_option("workload", opts.workload, "preset name (GMM-4) or index notation ('C[i,j] += A[i,k]*B[k,j]')")->required();
  space->add_option("--extents", opts.extents, "index extents for a formula, e.g. i=64,j=64,k=64");
  space->add_option("--dtypes", opts.dtypes, "element types of a formula's tensors (default float32), e.g. A=uint8,B=int8,C=int32");
  space->add_option("--seed", opts.seed, "seed of the space generation and of the samples (default 0)");
  run->add_option("--emit", opts.emit, "also print the lowered IR, C source, LLVM IR or assembly (CPU); the IR, CUDA C or OpenCL C (GPU)")
      ->check(CLI::IsMember({"ir", "c", "llvm", "asm", "cuda", "opencl"}));
  run->add_option("--target", opts.target, "llvm (default), 'llvm -mcpu=NAME', 'cuda -arch=sm_90' (compiled with NVRTC) or opencl (run on PoCL here)");
  check->add_option("--target", opts.target, "llvm (default), cuda or opencl: a GPU program (AutoBind without a trace) must lower to kernels");
  tools::thread_count(run->add_option("--threads", opts.threads, "threads for parallel loops (default: all)"));
  run->add_option("--json", opts.json_file, "write {workload, gflop, latency_s, gflops, correct} here");
  run->add_flag("--dump-ir", opts.dump_ir, "print the IR after every lowering pass");
  tools::at_least(run->add_option("--repeat", opts.repeat, "timed repeats (default 10)"), 1);
  for (auto* sub : {show, run, export_cmd}) sub->add_option("--db", opts.db, "apply the best record of this workload in a tuning database");
  for (auto* sub : {show, check, run, features, export_cmd}) {
    sub->add_option("workload", opts.workload, "preset name (GMM-4) or index notation ('C[i,j] += A[i,k]*B[k,j]')")
        ->required();
    sub->add_option("--extents", opts.extents, "index extents for a formula, e.g. i=64,j=64,k=64");
    sub->add_option("--dtypes", opts.dtypes, "element types of a formula's tensors (default float32), e.g. A=uint8,B=int8,C=int32");
    sub->add_flag("--scale-down", opts.scale_down, "shrink the shape so the check takes well under a second");
    sub->add_option("--trace", opts.trace_file, "a schedule trace to apply first (text form or JSON)");
    sub->add_flag("--postprocess", opts.postprocess,
                  "then run the target's postprocessors, as tuning does (a tuning record's trace or a design-space sample)");
    sub->add_option("--seed", opts.seed, "seed for sampling instructions that carry no decision (default 0)");
  }

  tools::ModelCommands model_commands(app);

  if (argc > 1 && argv[1][0] != '-') {
    std::string cmd = argv[1];
    auto subs = app.get_subcommands([](CLI::App*) { return true; });
    if (std::none_of(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == cmd; })) {
      fmt::print(stderr, "tyche: error: unknown command '{}' (commands: workloads, show, check, run, space, cpu, features, sample-measure, model, tune, export, import, tune-model, run-model, export-model)\n", cmd);
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.empty()) msg = "invalid command line";
    fmt::print(stderr, "tyche: error: {} (see tyche --help)\n", msg);
    return kExitUsage;
  } catch (const tyche::Error& e) {  // a flag's value, refused by flag_checks.h: the message says it all
    fmt::print(stderr, "tyche: error: {}\n", e.what());
    return kExitUsage;
  }

  try {
    // Before the thread pool starts: it sizes itself by TYCHE_NUM_THREADS.
    tools::check_thread_environment();
    if (app.got_subcommand("workloads")) return cmd_workloads();
    if (show->parsed()) return cmd_show(opts);
    if (check->parsed()) return cmd_check(opts);
    if (run->parsed()) return cmd_run(opts);
    if (space->parsed()) return cmd_space(opts);
    if (cpu->parsed()) return cmd_cpu(opts);
    if (features->parsed()) return cmd_features(opts);
    if (sample_measure->parsed()) return cmd_sample_measure(opts);
    if (tune_cmd->parsed()) return cmd_tune(opts);
    if (export_cmd->parsed()) return cmd_export(opts);
    if (model_train->parsed()) return cmd_model_train(opts);
    if (model_eval->parsed()) return cmd_model_eval(opts);
    if (model_commands.parsed()) return model_commands.run();
  } catch (const tyche::Error& e) {
    fmt::print(stderr, "tyche: error: {}\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tyche: error: {}\n", e.what());
    return kExitUsage;
  }
  return kExitUsage;
}
