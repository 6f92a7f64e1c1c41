// Drift correction (TuneOptions::drift_correction). A shared host's speed drifts over minutes,
// and a round measured in a quiet spell would otherwise hold every leader. A yardstick (the
// task's fastest program of its first measured round, built once) is timed before and after each
// later round, and the round's ranked times are scaled by its typical time (the median of all
// its timings so far) over the faster of its two times then, held within [0.8, 1.25]. The bound
// is tight because most of the host's swings are not slow drift: on a 2-vCPU AMD EPYC tuning
// ResNet-50, the yardstick's speed halved and recovered within seconds (a neighbour's memory
// traffic), so a factor of 2 ranked whole rounds of ordinary programs first. Records keep the
// raw times.
#pragma once

#include <optional>
#include <vector>

#include "tune/measure/measure_batch.h"

namespace tyche::tune {

class DriftCorrection {
 public:
  static constexpr double kMinFactor = 0.8, kMaxFactor = 1.25;

  bool has_yardstick() const { return yardstick_.has_value(); }
  // Takes the fastest trial of `round` (its first measured round) as the yardstick; none when
  // nothing ran or it does not build (the next round chooses).
  void choose_yardstick(Measurer& measurer, const std::vector<Trial>& round);
  // One timing of the yardstick (the median of its repeats), kept; 0 when it failed.
  double time_yardstick(Measurer& measurer, const MeasureTask& task);
  // Scales the ranked_seconds of `round` (in the order measured) by the timings before and after
  // it; returns the typical time used, 0 when neither timing succeeded (nothing scaled).
  double scale(std::vector<Trial>& round, double before, double after) const;

 private:
  std::optional<KeptProgram> yardstick_;
  std::vector<double> times_;  // every timing of it, the first round's included
};

}  // namespace tyche::tune
