// Cost of producing one candidate from a design space, on one core: sample (replay a design
// space's trace with fresh decisions) + postprocess, median over many candidates. Measured in the
// same run, for scale: the replay alone, and lowering + LLVM compile of the same candidates (the
// step every measured candidate takes next).
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "codegen/llvm/llvm_codegen.h"
#include "lower/lower.h"
#include "tune/mutator/mutator.h"
#include "tune/postproc/candidate.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

using namespace tyche;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench(const std::string& name, int n, int n_compile) {
  workloads::Workload w = workloads::get_preset(name);
  target::Target target;
  target.num_cores = 2;
  tune::TuneContext context{w.func, target};
  auto start = std::chrono::steady_clock::now();
  auto designs = tune::post_order_apply(tune::default_rules(target))->generate(context, 0);
  double generate = seconds_since(start);
  std::vector<schedule::Trace> traces;
  for (const auto& d : designs) traces.push_back(d.trace()->simplified());
  auto postprocs = tune::default_postprocs(context);

  RandomEngine rng(1);
  std::vector<double> full, replay_only, compile;
  int valid = 0;
  for (int i = 0; i < n; ++i) {
    const schedule::Trace& t =
        traces[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(traces.size())))];
    int64_t seed = rng.fork().seed();
    auto t0 = std::chrono::steady_clock::now();
    {
      schedule::Schedule sch(w.func, schedule::ScheduleOptions{.seed = seed});
      (void)t.apply_to(sch, {.fresh_decisions = true});
    }
    replay_only.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    auto candidate = tune::make_candidate(context, t, {.fresh_decisions = true}, postprocs, seed);
    full.push_back(seconds_since(t0));
    auto* sch = std::get_if<schedule::Schedule>(&candidate);
    valid += sch != nullptr;
    if (sch && static_cast<int>(compile.size()) < n_compile) {
      t0 = std::chrono::steady_clock::now();
      auto kernel = codegen::compile(lower::lower(sch->func()).func);
      compile.push_back(seconds_since(t0));
    }
  }
  double m = median(full);
  fmt::print("{}: {} design spaces (generated in {:.2f} ms); {} of {} candidates valid\n", name,
             designs.size(), generate * 1e3, valid, n);
  fmt::print(
      "  sample + replay + postprocess: median {:.3f} ms per candidate{}; replay alone {:.3f} ms\n",
      m * 1e3, name == "GMM-4" ? " (target <= 1 ms)" : "", median(replay_only) * 1e3);
  if (!compile.empty())
    fmt::print(
        "  lower + LLVM compile of the same candidates: median {:.1f} ms = {:.0f}x the sampling "
        "cost\n",
        median(compile) * 1e3, median(compile) / m);
}

// How often a mutator turns a sampled candidate's trace into a different trace that replays and
// passes the postprocessors (the issue asks for >= 80%).
void mutator_rate(const tune::MutatorPtr& mutator, const std::string& name,
                  const target::Target& target, int tries) {
  workloads::Workload w = workloads::get_preset(name);
  tune::TuneContext context{w.func, target};
  auto designs = tune::post_order_apply(tune::default_rules(target))->generate(context, 0);
  auto postprocs = tune::default_postprocs(context);
  mutator->initialize(context);
  RandomEngine rng(3);
  int changed = 0, valid = 0;
  for (int i = 0; i < tries; ++i) {
    const schedule::Trace& space =
        *designs[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(designs.size())))]
             .trace();
    schedule::Trace trace;
    auto sampled = tune::make_candidate(context, space, {.fresh_decisions = true}, postprocs,
                                        rng.fork().seed(), &trace);
    if (!std::holds_alternative<schedule::Schedule>(sampled)) continue;
    auto mutated = mutator->mutate(trace, rng);
    if (!mutated || mutated->to_json() == trace.to_json()) continue;
    ++changed;
    valid += std::holds_alternative<schedule::Schedule>(
        tune::make_candidate(context, *mutated, {}, postprocs, 1));
  }
  fmt::print("  {:<22} on {:<6} ({}): {} of {} tries give a different valid trace ({:.1f}%)\n",
             mutator->name(), name, target.kind, valid, tries, 100.0 * valid / tries);
}

}  // namespace

int main() {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) fmt::print("note: could not pin to CPU 0\n");
  fmt::print("one core (CPU 0)\n");
  bench("GMM-4", 2000, 20);
  for (const char* name : {"C2D-2", "CBR-2", "SFM-3", "DEP-1"}) bench(name, 500, 0);
  fmt::print("mutators (full shapes, 200 tries each):\n");
  target::Target cpu;
  cpu.num_cores = 2;
  target::Target gpu = target::Target::parse("cuda");
  mutator_rate(tune::mutate_tile_size(), "GMM-4", cpu, 200);
  mutator_rate(tune::mutate_parallel(), "GMM-4", cpu, 200);
  mutator_rate(tune::mutate_unroll(), "GMM-4", cpu, 200);
  mutator_rate(tune::mutate_compute_location(), "CBR-2", cpu, 200);
  mutator_rate(tune::mutate_thread_binding(), "SFM-3", gpu, 200);
  return 0;
}
