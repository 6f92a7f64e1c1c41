// What search needs of tuning records: which programs they hold, and how this machine's target
// is written in them.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/function.h"
#include "tune/database/database.h"
#include "tune/database/record.h"
#include "tune/postproc/postproc.h"
#include "tune/trial/trial.h"

namespace tyche::tune {

// The programs of `records` as structural hashes: each record's own, or, for records that do
// not carry it, its trace replayed with `postprocs` (records that no longer replay are left out).
std::unordered_set<uint64_t> measured_programs(const std::vector<const TuningRecord*>& records,
                                               const TuneContext& context,
                                               const std::vector<PostprocPtr>& postprocs);

// The key of `target`'s records of the workload `hash` that its best programs come from: the
// ones timed as a model's task runs when `db` has any (mixed, else llc, else cold), else the warm
// ones.
std::string preferred_target_key(const Database& db, uint64_t hash, const target::Target& target);
// The best `k` programs `db` measured of the workload `func` (named `name` in messages) for
// `target`, fastest first (fewer when fewer were measured): their traces replayed and
// postprocessed, sampling without a recorded decision drawing from `seed`. A record whose trace
// does not replay is skipped for the next best, with a warning naming it and its line. Throws when
// there is no such record, when none replays, or when one replays to another program than the
// one measured (the rules or postprocessors changed: every record is suspect).
struct BestPrograms {
  std::vector<ir::PrimFunc> programs;
  std::vector<const TuningRecord*> records;  // each program's record
  std::vector<std::string> warnings;         // one line per record skipped
};
BestPrograms replayable_best(const Database& db, const std::string& name, const ir::PrimFunc& func,
                             const target::Target& target, int k, int64_t seed = 0);
// The same, the warnings appended to `warnings` when given.
std::vector<ir::PrimFunc> best_programs(const Database& db, const std::string& name,
                                        const ir::PrimFunc& func, const target::Target& target,
                                        int k, int64_t seed = 0,
                                        std::vector<std::string>* warnings = nullptr);
ir::PrimFunc best_program(const Database& db, const std::string& name, const ir::PrimFunc& func,
                          const target::Target& target, int64_t seed = 0,
                          std::vector<std::string>* warnings = nullptr);

}  // namespace tyche::tune
