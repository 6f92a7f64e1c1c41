// Mutators: change one decision (or one annotation value) of a trace, never the IR. A mutated
// trace is replayed and validated like any candidate; a mutator that finds nothing to change
// returns nullopt.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedule/trace.h"
#include "support/random.h"
#include "tune/core/context.h"

namespace tyche::tune {

class Mutator {
 public:
  virtual ~Mutator() = default;
  virtual std::string name() const = 0;
  // Call before mutate: MutateComputeLocation and MutateParallel replay traces onto context.func.
  virtual void initialize(const TuneContext& context) { context_ = context; }
  // A trace that differs from `trace` in one decision or annotation value, or nullopt.
  virtual std::optional<schedule::Trace> mutate(const schedule::Trace& trace,
                                                RandomEngine& rng) = 0;

 protected:
  TuneContext context_;
};
using MutatorPtr = std::shared_ptr<Mutator>;

// Moves a factor between two tiles of one sample_perfect_tile decision, respecting its
// max_innermost_factor.
MutatorPtr mutate_tile_size();
// Picks another meta_schedule.parallel limit on the root block that changes how many outer
// loops some block fuses into its parallel loop (replaying the trace to see the loops).
MutatorPtr mutate_parallel();
// Picks another outcome of the sample_categorical that feeds a meta_schedule.unroll_* annotation.
MutatorPtr mutate_unroll();
// Picks another legal outcome of a sample_compute_location (replaying the trace up to it).
MutatorPtr mutate_compute_location();
// Picks another outcome of a sample_categorical whose value is the factor of a split whose loop
// is bound to threadIdx.
MutatorPtr mutate_thread_binding();

// With TVM's probabilities. llvm: tile size 0.9, compute location 0.05, unroll 0.03, parallel
// 0.02. cuda: tile size 0.9, unroll 0.08, thread binding 0.02.
std::vector<std::pair<MutatorPtr, double>> default_mutators(const target::Target& target);

}  // namespace tyche::tune
