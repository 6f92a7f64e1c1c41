#include "tune/search/records.h"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "ir/structural.h"
#include "support/error.h"
#include "tune/postproc/candidate.h"
#include "tune/trial/timing.h"

namespace tyche::tune {

std::unordered_set<uint64_t> measured_programs(const std::vector<const TuningRecord*>& records,
                                               const TuneContext& context,
                                               const std::vector<PostprocPtr>& postprocs) {
  std::unordered_set<uint64_t> out;
  for (const TuningRecord* r : records) {
    if (r->program) {
      out.insert(r->program);
      continue;
    }
    try {
      auto c = make_candidate(context, schedule::Trace::from_json(r->trace_json), {}, postprocs, 0);
      if (auto* sch = std::get_if<schedule::Schedule>(&c))
        out.insert(ir::structural_hash(sch->func()));
    } catch (const Error&) {
      // a trace of another version of the rules: not a program this run can produce again
    }
  }
  return out;
}

std::string preferred_target_key(const Database& db, uint64_t hash, const target::Target& target) {
  for (const runtime::TimeOptions& time : {mixed_timing(), llc_timing(), cold_timing()}) {
    std::string key = target_key(record_target(target, time));
    if (!db.best(hash, key, 1).empty()) return key;
  }
  return target_key(record_target(target));
}

namespace {

// The record's trace replayed and postprocessed, or why it does not replay (a trace that is valid
// JSON but names an unknown instruction or a decision out of range: a hand-edited record, or one
// of another version of the rules).
std::variant<ir::PrimFunc, std::string> replay(const TuningRecord& r, const TuneContext& context,
                                               const std::vector<PostprocPtr>& postprocs,
                                               int64_t seed) {
  try {
    auto c = make_candidate(context, schedule::Trace::from_json(r.trace_json), {}, postprocs, seed);
    if (auto* e = std::get_if<CandidateError>(&c))
      return fmt::format("{}: {}", e->category, e->message);
    return std::get<schedule::Schedule>(c).func();
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

}  // namespace

BestPrograms replayable_best(const Database& db, const std::string& name, const ir::PrimFunc& func,
                             const target::Target& target, int k, int64_t seed) {
  uint64_t hash = ir::structural_hash(func);
  auto ranked = db.best(hash, preferred_target_key(db, hash, target), -1);
  if (ranked.empty()) {
    bool other = std::any_of(db.records().begin(), db.records().end(), [&](const TuningRecord& r) {
      return r.workload.hash == hash && r.ok();
    });
    const char* others =
        target.is_gpu() ? "another GPU kind, architecture or limits" : "another CPU or core count";
    throw Error(fmt::format("the database at '{}' has no measured {} for {}{}", db.dir(), name,
                            target.str(),
                            other ? fmt::format(" (only for other targets: {})", others) : ""));
  }
  TuneContext context{func, target};
  auto postprocs = default_postprocs(context);
  BestPrograms out;
  std::string first_failure;
  for (size_t i = 0; i < ranked.size() && static_cast<int>(out.programs.size()) < k; ++i) {
    const TuningRecord* r = ranked[i];
    std::string which = i == 0 ? "best record" : fmt::format("record ranked {}", i + 1);
    auto replayed = replay(*r, context, postprocs, seed);
    if (auto* why = std::get_if<std::string>(&replayed)) {
      // One broken record must not cost the workload its tuned program: the next one stands in.
      if (first_failure.empty())
        first_failure = fmt::format("the {} of {} no longer replays ({})", which, name, *why);
      int line = db.line_of(r);
      out.warnings.push_back(
          fmt::format("the {} of {} ({}{}) does not replay ({}); using the next best", which, name,
                      db.records_path(), line > 0 ? fmt::format(":{}", line) : "", *why));
      continue;
    }
    ir::PrimFunc program = std::get<ir::PrimFunc>(replayed);
    // Replaying to another program means the rules or postprocessors changed: every record is
    // suspect, so this is refused rather than skipped.
    if (r->program && ir::structural_hash(program) != r->program)
      throw Error(fmt::format(
          "the {} of {} replays to another program than the one measured (program {:016x}, "
          "measured {:016x}): the rules or postprocessors changed since",
          which, name, ir::structural_hash(program), r->program));
    out.programs.push_back(program);
    out.records.push_back(r);
  }
  if (out.programs.empty())
    throw Error(ranked.size() == 1 ? first_failure
                                   : fmt::format("{}, nor do the {} other records of it",
                                                 first_failure, ranked.size() - 1));
  return out;
}

std::vector<ir::PrimFunc> best_programs(const Database& db, const std::string& name,
                                        const ir::PrimFunc& func, const target::Target& target,
                                        int k, int64_t seed, std::vector<std::string>* warnings) {
  BestPrograms best = replayable_best(db, name, func, target, k, seed);
  if (warnings) warnings->insert(warnings->end(), best.warnings.begin(), best.warnings.end());
  return std::move(best.programs);
}

ir::PrimFunc best_program(const Database& db, const std::string& name, const ir::PrimFunc& func,
                          const target::Target& target, int64_t seed,
                          std::vector<std::string>* warnings) {
  return best_programs(db, name, func, target, 1, seed, warnings)[0];
}

}  // namespace tyche::tune
