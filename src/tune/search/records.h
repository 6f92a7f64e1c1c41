// What search needs of tuning records: which programs they hold, and how this machine's target
// is written in them.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "tune/database/record.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

// The programs of `records` as structural hashes: each record's own, or, for records that do
// not carry it, its trace replayed with `postprocs` (records that no longer replay are left out).
std::unordered_set<uint64_t> measured_programs(const std::vector<const TuningRecord*>& records, const TuneContext& context,
                                               const std::vector<PostprocPtr>& postprocs);

// How a record names code generated for `target` on this machine: its CPU (codegen/cpu.h), the
// LLVM name, the model name /proc/cpuinfo gives and the feature list.
RecordTarget record_target(const Target& target);

}  // namespace tyche::tune
