// MutateParallel: another meta_schedule.parallel limit on the root block. Only limits that change
// how many outer loops some block fuses into its parallel loop are worth a candidate, so the
// trace is replayed and each block's plan is found with the RewriteParallelVectorizeUnroll
// postprocessor's own rule (tune/core/parallel_plan.h); limits with the same plans are one
// candidate.
#include <limits>
#include <set>

#include "ir/annotation_keys.h"
#include "schedule/analysis.h"
#include "schedule/schedule.h"
#include "tune/core/parallel_plan.h"
#include "tune/mutator/mutator.h"

namespace tyche::tune {

namespace {

using schedule::SRef;
using schedule::Value;

class MutateParallel : public Mutator {
 public:
  std::string name() const override { return "MutateParallel"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    // The last parallel annotation is the one in force.
    std::optional<size_t> index;
    for (size_t i = 0; i < trace.size(); ++i) {
      const schedule::Instruction& inst = trace.instructions()[i];
      if (inst.is(schedule::kind_annotate()) && inst.arg("ann_key").s == ir::ann::kParallel &&
          inst.arg("ann_val").kind == Value::Kind::kInt)
        index = i;
    }
    if (!index) return std::nullopt;
    int64_t current = trace.instructions()[*index].arg("ann_val").i;
    schedule::Schedule sch(context_.func, schedule::ScheduleOptions{.seed = 0, .trace = false});
    if (!trace.apply_to(sch).ok()) return std::nullopt;
    const schedule::ScheduleState& state = sch.state();
    // A block's plan changes only where a limit passes a product of its leading extents (the
    // plan takes the next loop while the product so far is below the limit); 1 stands for the
    // limits below all of them.
    std::vector<std::vector<int64_t>> prefixes;
    std::set<int64_t> limits = {1};  // ordered, so the draw is deterministic
    for (const SRef& block : schedule::child_blocks(state, state.root().get())) {
      prefixes.push_back(parallel_prefix(state, block));
      int64_t product = 1;
      for (int64_t e : prefixes.back()) {
        if (product > (std::numeric_limits<int64_t>::max() - 1) / e) break;
        product *= e;
        limits.insert(product);
        limits.insert(product + 1);
      }
    }
    auto plans = [&](int64_t limit) {
      std::vector<size_t> out;
      for (const auto& p : prefixes) out.push_back(parallel_plan(p, limit));
      return out;
    };
    // One candidate (the smallest limit) per plan other than the current one.
    std::set<std::vector<size_t>> seen = {plans(current)};
    std::vector<int64_t> candidates;
    for (int64_t limit : limits)
      if (seen.insert(plans(limit)).second) candidates.push_back(limit);
    if (candidates.empty()) return std::nullopt;
    int64_t chosen = candidates[static_cast<size_t>(
        rng.uniform_int(0, static_cast<int64_t>(candidates.size())))];
    return trace.with_argument(*index, "ann_val", Value::integer(chosen));
  }
};

}  // namespace

MutatorPtr mutate_parallel() {
  return std::make_shared<MutateParallel>();
}

}  // namespace tyche::tune
