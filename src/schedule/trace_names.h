// Shared by trace.cc and trace_text.cc: how handles are named when a trace is written out.
#pragma once

#include <string>
#include <unordered_map>

#include "schedule/trace.h"

namespace tyche::schedule {

// b0, l1, l2, v3...: a kind prefix and the position among all outputs in order of definition,
// so the names depend only on the trace, not on the schedule's handle ids.
std::unordered_map<int64_t, std::string> rv_names(const Trace& trace);
// The handle kind an instruction kind's outputs have.
Value::Kind rv_kind_of_output(const InstructionKind& kind);

}  // namespace tyche::schedule
