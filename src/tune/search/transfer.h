// Warm start across shapes: the decisions of a program measured on one workload carried over to
// another workload whose design space has the same structure (the same rules made the same
// instructions: a convolution at another shape, a model's other convolution tasks). What makes a
// program fast, its register tile, vector width, unrolling and compute locations, mostly
// survives a change of extents; the outer tiles do not, so each tile decision is re-cut for the
// new loop, keeping the inner factors where they divide it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "schedule/trace.h"
#include "tune/core/context.h"

namespace tyche::tune {

// `factors` (innermost last) re-cut for a loop of `extent`: from the innermost outwards each
// factor becomes the largest divisor of what is left that is not above it (the innermost also not
// above `max_innermost`, -1: no limit); the outermost takes the rest. Always a legal perfect tile.
std::vector<int64_t> adapt_tile(const std::vector<int64_t>& factors, int64_t extent,
                                int64_t max_innermost);

// `space` (a design-space trace of ctx's workload) with the decisions of `measured` (a trace of
// the same instructions measured on another workload), tile decisions re-cut for this workload's
// loops; nullopt when the two traces differ in their instructions or the result does not replay.
std::optional<schedule::Trace> transfer_decisions(const TuneContext& ctx,
                                                  const schedule::Trace& space,
                                                  const schedule::Trace& measured);

}  // namespace tyche::tune
