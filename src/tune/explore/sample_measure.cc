#include "tune/explore/sample_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_set>

#include "ir/structural.h"
#include "support/error.h"
#include "support/random.h"
#include "tune/database/record.h"
#include "tune/measure/measure_batch.h"
#include "tune/postproc/candidate.h"
#include "tune/search/records.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {

namespace {

// What drawing samples needs: the design spaces, the postprocessors, the programs seen.
struct Sampler {
  TuneContext context;
  std::vector<PostprocPtr> postprocs;
  std::vector<schedule::Trace> spaces;
  std::unordered_set<uint64_t> seen;  // in the records file already, or drawn in this run
  RandomEngine rng{0};

  // Up to `want` valid trials of programs not seen yet; counts the draws in `report`.
  std::vector<Trial> draw(int want, int max_draws, SampleMeasureReport& report) {
    std::vector<Trial> out;
    while (static_cast<int>(out.size()) < want && report.sampled < max_draws) {
      const schedule::Trace& space =
          spaces[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(spaces.size())))];
      schedule::Trace replayed;
      auto c = make_candidate(context, space, {.fresh_decisions = true}, postprocs,
                              rng.fork().seed(), &replayed);
      ++report.sampled;
      auto* sch = std::get_if<schedule::Schedule>(&c);
      if (!sch) {
        ++report.invalid;
        continue;
      }
      Trial t = Trial::of(std::move(replayed), sch->func(), context.target.is_gpu());
      if (!seen.insert(t.program_hash).second) {
        ++report.duplicates;
        continue;
      }
      out.push_back(std::move(t));
    }
    return out;
  }
};

Sampler make_sampler(const workloads::Workload& w, const target::Target& target,
                     const SampleMeasureOptions& options) {
  Sampler s{TuneContext{w.func, target}, {}, {}, {}, RandomEngine(options.seed)};
  s.postprocs = default_postprocs(s.context);
  for (const schedule::Schedule& d :
       post_order_apply(default_rules(target))->generate(s.context, options.seed))
    s.spaces.push_back(d.trace()->simplified());
  if (s.spaces.empty()) throw Error(fmt::format("sample-measure: {} has no design space", w.name));
  if (std::filesystem::exists(options.records_path)) {
    RecordFile existing = read_records(options.records_path);
    const uint64_t workload_hash = ir::structural_hash(w.func);
    std::vector<const TuningRecord*> mine;
    for (const TuningRecord& r : existing.records)
      if (r.workload.hash == workload_hash) mine.push_back(&r);
    s.seen = measured_programs(mine, s.context, s.postprocs);
  }
  return s;
}

std::string progress_line(int batch_no, const SampleMeasureReport& r, double flop) {
  double best = r.best_seconds;
  return fmt::format(
      "batch {}: {} measured, {} failed so far ({} drawn, {} invalid, {} duplicates); best {}",
      batch_no, r.measured, r.failed, r.sampled, r.invalid, r.duplicates,
      std::isfinite(best) ? fmt::format("{:.4f} ms ({:.1f} GFLOP/s)", best * 1e3, flop / best / 1e9)
                          : "none");
}

}  // namespace

SampleMeasureReport sample_measure(const workloads::Workload& w, const target::Target& target,
                                   const SampleMeasureOptions& options) {
  if (target.is_gpu())
    require_device(target);
  else
    target::check_runs_on_host(target.cpu_info());
  if (options.records_path.empty()) throw Error("sample-measure: no records file");
  {  // fail before any work if the file cannot be written
    FILE* f = std::fopen(options.records_path.c_str(), "a");
    if (!f) throw Error(fmt::format("cannot write records file '{}'", options.records_path));
    std::fclose(f);
  }
  Sampler sampler = make_sampler(w, target, options);
  MeasureTask task{RecordWorkload{w.name, options.extents, ir::structural_hash(w.func), w.shape,
                                  w.flop, w.dtypes},
                   record_target(target, options.runner.time),
                   w.reference(workloads::make_inputs(w.func, 42)), w.constant_params};
  Measurer measurer(target, options.runner);
  RecordSink append = [&](const std::vector<TuningRecord>& records) {
    append_records(options.records_path, records);
  };

  SampleMeasureReport report;
  report.best_seconds = std::numeric_limits<double>::infinity();
  const int max_draws = std::max(options.samples, 1) * 50;
  for (int batch_no = 1;
       report.measured + report.failed < options.samples && report.sampled < max_draws;
       ++batch_no) {
    int want = std::min(options.batch, options.samples - report.measured - report.failed);
    std::vector<Trial> trials = sampler.draw(want, max_draws, report);
    if (trials.empty()) break;
    measurer.measure_batch(trials, task, append);
    for (const Trial& t : trials) {
      if (t.ok()) report.best_seconds = std::min(report.best_seconds, t.typical_seconds());
      ++(t.ok() ? report.measured : report.failed);
    }
    if (options.progress) options.progress(progress_line(batch_no, report, w.flop));
  }
  if (!std::isfinite(report.best_seconds)) report.best_seconds = 0;
  return report;
}

}  // namespace tyche::tune
