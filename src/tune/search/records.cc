#include "tune/search/records.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/measure/runner.h"
#include "tune/postproc/candidate.h"

namespace tyche::tune {

std::unordered_set<uint64_t> measured_programs(const std::vector<const TuningRecord*>& records, const TuneContext& context,
                                               const std::vector<PostprocPtr>& postprocs) {
  std::unordered_set<uint64_t> out;
  for (const TuningRecord* r : records) {
    if (r->program) {
      out.insert(r->program);
      continue;
    }
    try {
      auto c = make_candidate(context, schedule::Trace::from_json(r->trace_json), {}, postprocs, 0);
      if (auto* sch = std::get_if<schedule::Schedule>(&c)) out.insert(ir::structural_hash(sch->func()));
    } catch (const Error&) {
      // a trace of another version of the rules: not a program this run can produce again
    }
  }
  return out;
}

std::string preferred_target_key(const Database& db, uint64_t hash, const Target& target) {
  for (const runtime::TimeOptions& time : {mixed_timing(), llc_timing(), cold_timing()}) {
    std::string key = target_key(record_target(target, time));
    if (!db.best(hash, key, 1).empty()) return key;
  }
  return target_key(record_target(target));
}

std::vector<ir::PrimFunc> best_programs(const Database& db, const std::string& name, const ir::PrimFunc& func,
                                        const Target& target, int k, int64_t seed) {
  uint64_t hash = ir::structural_hash(func);
  auto best = db.best(hash, preferred_target_key(db, hash, target), k);
  if (best.empty()) {
    bool other = std::any_of(db.records().begin(), db.records().end(), [&](const TuningRecord& r) { return r.workload.hash == hash && r.ok(); });
    const char* others = target.is_gpu() ? "another GPU kind, architecture or limits" : "another CPU or core count";
    throw Error(fmt::format("the database at '{}' has no measured {} for {}{}", db.dir(), name, target.str(),
                            other ? fmt::format(" (only for other targets: {})", others) : ""));
  }
  TuneContext context{func, target};
  auto postprocs = default_postprocs(context);
  std::vector<ir::PrimFunc> out;
  for (size_t i = 0; i < best.size(); ++i) {
    std::string which = i == 0 ? "best record" : fmt::format("record ranked {}", i + 1);
    auto c = make_candidate(context, schedule::Trace::from_json(best[i]->trace_json), {}, postprocs, seed);
    if (auto* e = std::get_if<CandidateError>(&c))
      throw Error(fmt::format("the {} of {} no longer replays ({}: {})", which, name, e->category, e->message));
    ir::PrimFunc program = std::get<schedule::Schedule>(c).func();
    if (best[i]->program && ir::structural_hash(program) != best[i]->program)
      throw Error(fmt::format("the {} of {} replays to another program than the one measured (program {:016x}, "
                              "measured {:016x}): the rules or postprocessors changed since",
                              which, name, ir::structural_hash(program), best[i]->program));
    out.push_back(program);
  }
  return out;
}

ir::PrimFunc best_program(const Database& db, const std::string& name, const ir::PrimFunc& func, const Target& target,
                          int64_t seed) {
  return best_programs(db, name, func, target, 1, seed)[0];
}

}  // namespace tyche::tune
