// Helpers for the files that define instruction kinds (not part of the public API).
#pragma once

#include <span>
#include <vector>

#include "schedule/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

using Values = std::vector<Value>;
using Args = std::span<const Value>;

inline Values issued_blocks(Schedule& sch, const std::vector<SRef>& refs) {
  Values out;
  for (const SRef& r : refs) out.push_back(to_value(sch.issue_block(r)));
  return out;
}
inline Values issued_loops(Schedule& sch, const std::vector<SRef>& refs) {
  Values out;
  for (const SRef& r : refs) out.push_back(to_value(sch.issue_loop(r)));
  return out;
}
inline Values issued_block(Schedule& sch, const SRef& ref) { return {to_value(sch.issue_block(ref))}; }
inline Values issued_loop(Schedule& sch, const SRef& ref) { return {to_value(sch.issue_loop(ref))}; }
inline Values no_outputs(const Status&) { return {}; }

// The srefs of a list of loop handles, or the first stale-handle error.
inline Result<std::vector<SRef>> loop_args(const Schedule& sch, const Value& list) {
  std::vector<SRef> refs;
  for (const Value& v : list.list) {
    TYCHE_TRY_ASSIGN(sref, sch.loop_arg(v));
    refs.push_back(sref);
  }
  return refs;
}

}  // namespace tyche::schedule

// Runs a Status-returning primitive and yields no outputs, or returns its error.
#define TYCHE_APPLY_STATUS(expr)              \
  do {                                        \
    auto status_ = (expr);                    \
    if (!status_) return status_.error();     \
    return ::tyche::schedule::Values{};       \
  } while (0)
