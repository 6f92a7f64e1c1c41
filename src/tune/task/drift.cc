#include "tune/task/drift.h"

#include <algorithm>

#include "support/median.h"

namespace tyche::tune {

void DriftCorrection::choose_yardstick(Measurer& measurer, const std::vector<Trial>& round) {
  const Trial* best = nullptr;
  for (const Trial& t : round)
    if (t.ok() && (!best || t.typical_seconds() < best->typical_seconds())) best = &t;
  if (!best) return;
  yardstick_ = measurer.keep(*best);
  if (yardstick_) times_ = {best->typical_seconds()};
}

double DriftCorrection::time_yardstick(Measurer& measurer, const MeasureTask& task) {
  if (!yardstick_) return 0;
  double y = measurer.time(*yardstick_, task);
  if (y > 0) times_.push_back(y);
  return y;
}

double DriftCorrection::scale(std::vector<Trial>& round, double before, double after) const {
  if ((before <= 0 && after <= 0) || times_.empty()) return 0;
  // A hiccup only ever slows a timing, so the faster of the two is the host's speed then.
  double y = before > 0 && after > 0 ? std::min(before, after) : std::max(before, after);
  double typical = median(times_);
  double factor = std::clamp(typical / y, kMinFactor, kMaxFactor);
  for (Trial& t : round) t.ranked_seconds *= factor;
  return typical;
}

}  // namespace tyche::tune
