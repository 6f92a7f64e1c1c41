// Shared by the mutators that re-draw a sample_categorical (unroll depth, threads per block).
#pragma once

#include <optional>
#include <set>

#include "schedule/trace.h"
#include "support/random.h"

namespace tyche::tune {

// One of the decided sample_categorical instructions whose output id is in `outputs`, with
// another outcome drawn by the remaining probabilities (TVM's rule); instructions whose other
// outcomes all have probability 0 are skipped. Nullopt if none can change.
std::optional<schedule::Trace> redraw_categorical(const schedule::Trace& trace,
                                                  const std::set<int64_t>& outputs,
                                                  RandomEngine& rng);

}  // namespace tyche::tune
