#include "tune/explore/sample_measure.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_set>

#include "target/cpu.h"
#include "ir/structural.h"
#include "support/error.h"
#include "support/random.h"
#include "tune/database/record.h"
#include "tune/measure/builder.h"
#include "tune/postproc/candidate.h"
#include "tune/search/records.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {

SampleMeasureReport sample_measure(const workloads::Workload& w, const Target& target, const SampleMeasureOptions& options) {
  if (target.is_gpu()) throw Error("sample-measure: CUDA kernels cannot be run yet (measure an llvm target)");
  const target::Cpu& cpu = target::resolve_cpu(target.cpu);
  target::check_runs_on_host(cpu);
  if (options.records_path.empty()) throw Error("sample-measure: no records file");
  {  // fail before any work if the file cannot be written
    FILE* f = std::fopen(options.records_path.c_str(), "a");
    if (!f) throw Error(fmt::format("cannot write records file '{}'", options.records_path));
    std::fclose(f);
  }
  TuneContext context{w.func, target};
  auto postprocs = default_postprocs(target);
  for (const PostprocPtr& p : postprocs) p->initialize(context);
  std::vector<schedule::Trace> spaces;
  for (const schedule::Schedule& d : post_order_apply(default_rules(target))->generate(context, options.seed))
    spaces.push_back(d.trace()->simplified());
  if (spaces.empty()) throw Error(fmt::format("sample-measure: {} has no design space", w.name));

  const uint64_t workload_hash = ir::structural_hash(w.func);
  std::unordered_set<uint64_t> seen;
  if (std::filesystem::exists(options.records_path)) {
    RecordFile existing = read_records(options.records_path);
    std::vector<const TuningRecord*> mine;
    for (const TuningRecord& r : existing.records)
      if (r.workload.hash == workload_hash) mine.push_back(&r);
    seen = measured_programs(mine, context, postprocs);
  }
  RecordWorkload rw{w.name, options.extents, workload_hash, w.shape, w.flop};
  RecordTarget rt = record_target(target);

  std::vector<runtime::NDArray> expected = w.reference(workloads::make_inputs(w.func, 42));
  std::string object_dir =
      (std::filesystem::temp_directory_path() / fmt::format("tyche_sample_measure_{}", ::getpid())).string();
  Builder builder(BuilderOptions{.object_dir = object_dir, .cpu = cpu.name});
  RunnerOptions runner_options = options.runner;
  if (runner_options.threads <= 0) runner_options.threads = target.num_cores;
  Runner runner(runner_options);

  SampleMeasureReport report;
  report.best_seconds = std::numeric_limits<double>::infinity();
  RandomEngine rng(options.seed);
  const int max_draws = std::max(options.samples, 1) * 50;
  int batch_no = 0;
  while (report.measured + report.failed < options.samples && report.sampled < max_draws) {
    std::vector<schedule::Trace> traces;
    std::vector<ir::PrimFunc> funcs;
    std::vector<uint64_t> hashes;
    while (static_cast<int>(funcs.size()) < options.batch &&
           report.measured + report.failed + static_cast<int>(funcs.size()) < options.samples && report.sampled < max_draws) {
      const schedule::Trace& space = spaces[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(spaces.size())))];
      schedule::Trace replayed;
      auto c = make_candidate(context, space, {.fresh_decisions = true}, postprocs, rng.fork().seed(), &replayed);
      ++report.sampled;
      auto* sch = std::get_if<schedule::Schedule>(&c);
      if (!sch) {
        ++report.invalid;
        continue;
      }
      uint64_t hash = ir::structural_hash(sch->func());
      if (!seen.insert(hash).second) {
        ++report.duplicates;
        continue;
      }
      hashes.push_back(hash);
      traces.push_back(replayed);
      funcs.push_back(sch->func());
    }
    if (funcs.empty()) break;
    std::vector<BuildResult> built = builder.build(funcs);
    std::vector<TuningRecord> records;
    for (size_t i = 0; i < funcs.size(); ++i) {
      TuningRecord r{rw, traces[i].to_json(), rt, hashes[i], {}, {}, utc_now()};
      if (!built[i].ok()) {
        r.error = "build: " + built[i].error;
      } else {
        RunResult res = runner.run(run_input_for(built[i].object_path, built[i].name, funcs[i], expected));
        if (!res.ok()) r.error = "run: " + res.error;
        else if (!res.correct) r.error = "wrong result: " + res.mismatch;
        else r.seconds = res.time.seconds;
        std::remove(built[i].object_path.c_str());
      }
      if (r.ok()) {
        ++report.measured;
        report.best_seconds = std::min(report.best_seconds, r.mean_seconds());
      } else {
        ++report.failed;
      }
      records.push_back(std::move(r));
    }
    append_records(options.records_path, records);
    ++batch_no;
    if (options.progress) {
      double best = report.best_seconds;
      options.progress(fmt::format("batch {}: {} measured, {} failed so far ({} drawn, {} invalid, {} duplicates); best {}", batch_no,
                                   report.measured, report.failed, report.sampled, report.invalid, report.duplicates,
                                   std::isfinite(best) ? fmt::format("{:.4f} ms ({:.1f} GFLOP/s)", best * 1e3, w.flop / best / 1e9) : "none"));
    }
  }
  std::filesystem::remove_all(object_dir);
  if (!std::isfinite(report.best_seconds)) report.best_seconds = 0;
  return report;
}

}  // namespace tyche::tune
