#include "tune/measure/builder.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "support/error.h"
#include "target/cpu.h"
#include "tune/measure/gpu_build.h"

namespace tyche::tune {

void run_built(const BuildResult& built, std::vector<runtime::NDArray> args) {
  if (!built.kernel) throw InternalError("run_built: the program was not built in-process");
  for (const BuiltPreproc& p : built.preprocs) {
    if (!p.kernel || p.param >= args.size())
      throw InternalError("run_built: a preproc was not built in-process");
    runtime::NDArray packed(p.shape, args[p.param].dtype());
    std::vector<runtime::NDArray> io = {args[p.param], packed};
    p.kernel->run(io);
    args[p.param] = packed;
  }
  built.kernel->run(args);
}

namespace {

// State shared with the compile threads; outlives the batch if a compile times out.
struct Batch {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<BuildResult> results;
  std::vector<bool> done, timed_out;
  std::vector<std::chrono::steady_clock::time_point> started;
  std::vector<BuildInput> inputs;
  std::vector<std::string> paths;
  std::atomic<size_t> next{0};
  size_t timed_out_count = 0;
  bool resolved(size_t i) const { return done[i] || timed_out[i]; }
};

BuildResult build_one(const BuildInput& input, const std::string& object_path,
                      const std::string& cpu) {
  BuildResult r;
  r.name = input.func->name;
  auto start = std::chrono::steady_clock::now();
  try {
    bool reuse = input.lowered && !input.lowered->is_gpu();
    lower::SplitProgram split = reuse
                                    ? lower::SplitProgram{ir::PrimFunc(), input.lowered->rewrites()}
                                    : lower::split_layout_rewrites(input.func);
    ir::PrimFunc lowered =
        (reuse ? lower::finish_lowering(input.lowered->loops()) : lower::lower(split.main)).func;
    codegen::CompileOptions options{.cpu = cpu};
    // In-process (no object path), or to the object file the worker loads.
    auto build = [&](const ir::PrimFunc& f, const std::string& path,
                     std::shared_ptr<codegen::CompiledKernel>* kernel) {
      if (path.empty())
        *kernel = codegen::compile(f, options);
      else
        codegen::compile_to_object(f, path, options);
    };
    build(lowered, object_path, &r.kernel);
    r.object_path = object_path;
    for (const lower::LayoutRewrite& rw : split.rewrites) {
      BuiltPreproc p{rw.param, nullptr,
                     object_path.empty() ? "" : fmt::format("{}.pack{}.o", object_path, rw.param),
                     rw.preproc->name, ir::const_shape(rw.preproc->params[1])};
      build(lower::lower(rw.preproc).func, p.object_path, &p.kernel);
      r.preprocs.push_back(std::move(p));
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

Builder::Builder(BuilderOptions options) : options_(std::move(options)) {
  if (options_.gpu && options_.object_dir.empty())
    throw InternalError("Builder: GPU programs are built for the worker (object_dir)");
  if (!options_.gpu) target::check_runs_on_host(target::resolve_cpu(options_.cpu));
  if (options_.max_workers <= 0)
    options_.max_workers = std::max(1u, std::thread::hardware_concurrency());
  if (!options_.object_dir.empty()) std::filesystem::create_directories(options_.object_dir);
}

Builder::~Builder() {
  while (live_threads_->load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

std::vector<BuildResult> Builder::build(const std::vector<ir::PrimFunc>& candidates) {
  std::vector<BuildInput> inputs;
  for (const ir::PrimFunc& f : candidates) inputs.push_back({f});
  return build(inputs);
}

std::vector<BuildResult> Builder::build(const std::vector<BuildInput>& candidates) {
  using Clock = std::chrono::steady_clock;
  auto batch = std::make_shared<Batch>();
  size_t n = candidates.size();
  batch->results.resize(n);
  batch->done.assign(n, false);
  batch->timed_out.assign(n, false);
  batch->started.assign(n, Clock::time_point{});
  batch->inputs = candidates;
  int batch_id = batch_++;
  batch->paths.resize(n);
  if (!options_.object_dir.empty())
    for (size_t i = 0; i < n; ++i)
      batch->paths[i] =
          fmt::format("{}/cand_{}_{}_{}.o", options_.object_dir, getpid(), batch_id, i);
  BuilderOptions options = options_;
  auto live = live_threads_;
  auto worker = [batch, options, live] {
    struct Live {
      std::atomic<int>* n;
      ~Live() { n->fetch_sub(1); }
    } alive{live.get()};
    while (true) {
      size_t i = batch->next.fetch_add(1);
      if (i >= batch->inputs.size()) return;
      {
        std::lock_guard<std::mutex> lock(batch->mu);
        batch->started[i] = Clock::now();
      }
      BuildResult r = options.gpu ? build_gpu(batch->inputs[i], batch->paths[i], *options.gpu)
                                  : build_one(batch->inputs[i], batch->paths[i], options.cpu);
      if (r.seconds > options.timeout_s) {  // finished, but past its deadline: still a timeout
        r = BuildResult{};
        r.name = batch->inputs[i].func->name;
        r.error = fmt::format("build timed out after {:g} s", options.timeout_s);
        r.seconds = options.timeout_s;
      }
      std::lock_guard<std::mutex> lock(batch->mu);
      if (!batch->timed_out[i]) batch->results[i] = std::move(r);
      batch->done[i] = true;
      batch->cv.notify_all();
    }
  };
  // Threads are detached: one stuck past its deadline must not hold up the batch, and `batch`
  // (shared) keeps what it touches alive.
  int workers = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(options_.max_workers)));
  auto spawn = [&] {
    live_threads_->fetch_add(1);
    std::thread(worker).detach();
  };
  for (int w = 0; w < workers; ++w) spawn();
  auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.timeout_s));
  std::unique_lock<std::mutex> lock(batch->mu);
  while (true) {
    size_t resolved = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!batch->done[i] && !batch->timed_out[i] && batch->started[i] != Clock::time_point{} &&
          Clock::now() - batch->started[i] > timeout) {
        batch->timed_out[i] = true;
        ++batch->timed_out_count;
        spawn();  // replaces the stuck thread
      }
      resolved += batch->resolved(i);
    }
    if (resolved == n) break;
    batch->cv.wait_for(lock, std::chrono::milliseconds(20));
  }
  std::vector<BuildResult> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (batch->timed_out[i]) {
      out[i].name = candidates[i].func->name;
      out[i].error = fmt::format("build timed out after {:g} s", options_.timeout_s);
      out[i].seconds = options_.timeout_s;
    } else {
      out[i] = batch->results[i];
    }
  }
  return out;
}

}  // namespace tyche::tune
