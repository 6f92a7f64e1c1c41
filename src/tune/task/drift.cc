#include "tune/task/drift.h"

#include <algorithm>

#include "support/median.h"

namespace tyche::tune {

void DriftCorrection::choose_yardstick(Measurer& measurer, const std::vector<Trial>& round) {
  const Trial* best = nullptr;
  for (const Trial& t : round)
    if (t.ok() && (!best || t.mean_seconds() < best->mean_seconds())) best = &t;
  if (!best) return;
  yardstick_ = measurer.keep(*best);
  if (yardstick_) times_ = {best->mean_seconds()};
}

double DriftCorrection::time_yardstick(Measurer& measurer, const MeasureTask& task) {
  if (!yardstick_) return 0;
  double y = measurer.time(*yardstick_, task);
  if (y > 0) times_.push_back(y);
  return y;
}

double DriftCorrection::scale(std::vector<Trial>& round, double before, double after) const {
  if ((before <= 0 && after <= 0) || times_.empty()) return 0;
  double y0 = before > 0 ? before : after, y1 = after > 0 ? after : before;
  double typical = median(times_);
  for (size_t k = 0; k < round.size(); ++k) {
    double y = y0 + (y1 - y0) * (static_cast<double>(k) + 0.5) / static_cast<double>(round.size());
    round[k].ranked_seconds *= std::clamp(typical / y, 0.5, 2.0);
  }
  return typical;
}

}  // namespace tyche::tune
