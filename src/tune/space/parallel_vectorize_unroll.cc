// ParallelVectorizeUnroll: records on the root block how much parallelism, vector width and
// unrolling the program may use; the unroll limit is sampled, so search explores it. The
// RewriteParallelVectorizeUnroll postprocessor turns the annotations into loop kinds once the
// loop structure is final.
#include "ir/annotation_keys.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::Schedule;

namespace {

class ParallelVectorizeUnroll : public ScheduleRule {
 public:
  explicit ParallelVectorizeUnroll(ParallelVectorizeUnrollConfig config)
      : config_(std::move(config)) {}
  std::string name() const override { return "ParallelVectorizeUnroll"; }
  void initialize(const TuneContext& context) override { num_cores_ = context.target.num_cores; }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    if (is_root_block(sch, block)) {
      if (config_.max_jobs_per_core > 0)
        (void)sch.annotate(block, ir::ann::kParallel,
                           config_.max_jobs_per_core * std::max(1, num_cores_));
      if (config_.max_vectorize_extent > 0)
        (void)sch.annotate(block, ir::ann::kVectorize, config_.max_vectorize_extent);
      // A purely spatial function has no reduction to unroll (TVM skips it too).
      if (!config_.unroll_max_steps.empty() && has_reduction_block(sch.func())) {
        auto step = sch.sample_categorical(config_.unroll_max_steps,
                                           uniform_probs(config_.unroll_max_steps.size()));
        if (step.ok())
          (void)sch.annotate(
              block, config_.unroll_explicit ? ir::ann::kUnrollExplicit : ir::ann::kUnrollImplicit,
              step.value());
      }
    }
    std::vector<Schedule> out;
    out.push_back(std::move(sch));
    return out;
  }

 private:
  ParallelVectorizeUnrollConfig config_;
  int num_cores_ = 1;
};

}  // namespace

ScheduleRulePtr parallel_vectorize_unroll(ParallelVectorizeUnrollConfig config) {
  return std::make_shared<ParallelVectorizeUnroll>(std::move(config));
}

}  // namespace tyche::tune
