// How candidates are timed: the presets a tune, a model's tasks and the records name ("warm",
// "cold", "llc", "mixed"). The Runner (tune/measure/runner.h) times with them; search reads the
// name back from records, so the presets live below measure.
#pragma once

#include <string>

#include "runtime/time_evaluator.h"

namespace tyche::tune {

// The Runner's default: three repeats of at least 20 ms each, caches warm. The worker runs each
// kernel once (and checks it) before timing: that is the warm-up.
runtime::TimeOptions warm_timing();
// How a model's tasks are timed: every argument evicted from the caches before each of ten
// single runs. In a model a kernel meets its weights and its input where the calls before it
// left them, not warm in L1/L2 as when it runs back to back; on MobileNet-v2 the warm-tuned
// kernels took 1.5x their tuned time in the model, mostly memory-bound depthwise convolutions.
runtime::TimeOptions cold_timing();
// As cold_timing(), but only the cores' private caches are evicted before each run: the
// arguments wait in the last-level cache, as a model's activations (and, where all of them fit
// there, its weights) do between its calls.
runtime::TimeOptions llc_timing();
// As llc_timing(), but the arguments that hold constants (RunInput::constant_params: a model's
// weights) are evicted from every cache too: activations wait in the last-level cache, weights
// come from memory, as in a model whose weights do not stay cached between runs.
runtime::TimeOptions mixed_timing();
// "cold" (cold_timing()), "llc" (llc_timing()), "mixed" (mixed_timing()) or "warm"
// (warm_timing()); tyche::InputError otherwise.
runtime::TimeOptions timing_named(const std::string& name);
// RecordTarget::timing for these options: "cold", "llc" or "mixed" when they evict the caches, ""
// (warm) else.
std::string timing_name(const runtime::TimeOptions& time);
// The timing as reported to users: timing_name(), or "warm".
std::string timing_label(const runtime::TimeOptions& time);

}  // namespace tyche::tune
