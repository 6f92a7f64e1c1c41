// Schedule rules (transformation modules): expert knowledge applied to one block at a time. A
// rule hides its random variables: it samples through the schedule, so the trace records the
// draws and a replay with fresh decisions explores the rule's space. A rule may branch into
// several schedules (e.g. with and without a write cache); one it does not apply to comes back
// unchanged. Users add rules as classes or lambdas and compose lists of them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "tune/core/context.h"

namespace tyche::tune {

class ScheduleRule {
 public:
  virtual ~ScheduleRule() = default;
  virtual std::string name() const = 0;
  // Called once per task before any apply (rules read core counts or thread limits here).
  virtual void initialize(const TuneContext& context) { (void)context; }
  // The schedules that follow from `sch` by applying the rule to `block`; {sch} when the rule
  // does not apply. A primitive the rule calls may refuse; the rule then drops that branch.
  virtual std::vector<schedule::Schedule> apply(schedule::Schedule sch,
                                                const schedule::BlockRV& block) = 0;
};
using ScheduleRulePtr = std::shared_ptr<ScheduleRule>;

using RuleFunction =
    std::function<std::vector<schedule::Schedule>(schedule::Schedule, const schedule::BlockRV&)>;
// A rule from a function (a user's lambda).
ScheduleRulePtr make_rule(std::string name, RuleFunction apply);

// ---- the built-in rules ----

struct AutoInlineConfig {
  bool into_producer = false;  // reverse_compute_inline an element-wise consumer into its producer
  bool into_consumer = true;   // compute_inline a block into its consumers
  bool inline_const_tensor = true;    // always inline blocks that read no buffer
  bool disallow_if_then_else = true;  // keep blocks whose body selects (padding) as blocks
  bool require_injective = true;      // only blocks whose writes are injective
  bool require_ordered = true;        // only blocks that read each buffer with its indices in order
  std::vector<std::string> disallow_op = {};  // never inline blocks calling these (e.g. "exp")
};
ScheduleRulePtr auto_inline(AutoInlineConfig config = {});

// Data reuse through caches: none, a branch with and one without ("may"), or always ("must"),
// at each of the given levels: 1-based positions in the structure string, the cache going
// under the last loop of that tile level.
struct ReuseConfig {
  enum class Kind { kNo, kMay, kMust };
  Kind req = Kind::kNo;
  std::vector<int> levels = {};
  std::string scope = "global";
  // Reads only: cache just the inputs whose last index is the output's last one (the operand
  // the vector lanes run along: B in C[i,j] += A[i,k] * B[k,j], a convolution's weights), so a
  // CPU tile packs the panel it walks with a large stride and leaves the rows it reads in order.
  bool only_along_output_row = false;
};
struct MultiLevelTilingConfig {
  std::string structure = "SSRSRS";          // S: a spatial tile level, R: a reduction tile level
  std::vector<std::string> tile_binds = {};  // GPU: fuse the first levels' loops and bind them
  int64_t max_innermost_factor = 64;
  // The innermost reduction tile's limit, when not max_innermost_factor (0): the k steps a
  // register tile accumulates before its accumulators go back to memory.
  int64_t max_innermost_reduction_factor = 0;
  ReuseConfig reuse_read = {};
  ReuseConfig reuse_write = {};
  // CPU register tiles whose rows need not divide their loop: for each r, a design of its own in
  // which the spatial loop just outside the innermost one (the rows of the tile the vector lanes
  // run along) gets r as its innermost tile, by a split that does not divide the loop (the
  // remainder rows are guarded; lowering unswitches the guard), and the rest is tiled as usual.
  // Only where r does not divide the extent, which is over r, and the padding stays within 1/8
  // of it. An AVX2 core's 16 registers hold a 6 x 2-vector tile (12 accumulators, enough to
  // hide the FMA latency) but no power-of-two tile with more than 8.
  std::vector<int64_t> padded_rows = {};
  // In a padded-rows design with read caches: the innermost tile of the output's last loop is
  // fixed at this many elements (two vectors: BLIS's nr) where it divides that loop, and each
  // cache gets the panel layout [j // w, ..., j % w] (transform_layout), so the register tile
  // reads its w columns for every k step from one contiguous stream. 0: off.
  int64_t panel_width = 0;
  // GPU: the stage counts sampled (uniformly) for the loop the shared read caches sit in
  // (software_pipeline_stages: later iterations' copies overlap this one's compute; 1: none).
  // Empty: not annotated.
  std::vector<int64_t> software_pipeline_stages = {};
};
ScheduleRulePtr multi_level_tiling(MultiLevelTilingConfig config = {});

struct ParallelVectorizeUnrollConfig {
  int64_t max_jobs_per_core = 16;     // -1: no parallel annotation
  int64_t max_vectorize_extent = 64;  // -1: no vectorize annotation
  std::vector<int64_t> unroll_max_steps = {0, 16, 64, 512};
  bool unroll_explicit = true;
};
// Annotates the root block only; the postprocessor turns the annotations into loop kinds.
ScheduleRulePtr parallel_vectorize_unroll(ParallelVectorizeUnrollConfig config = {});

// compute_at a block at a sampled location (sample_compute_location) when it is not an output.
ScheduleRulePtr random_compute_location();
// For a reduction with little spatial but much reduction work: split the fused reduction loop
// by a sampled factor and rfactor either part (branches: as is, outer, inner).
ScheduleRulePtr add_rfactor(int64_t max_jobs_per_core = 16, int64_t max_innermost_factor = -1);
// GPU: a reduction whose spatial extent is small gets its fused reduction loop split by a
// sampled thread count and the inner part bound to threadIdx.x (branches: as is, bound).
ScheduleRulePtr cross_thread_reduction(std::vector<int64_t> thread_extents = {4, 8, 16, 32, 64, 128,
                                                                              256, 512});
// GPU: a block none of whose loops is bound gets its outer spatial loops fused, split by a
// sampled thread count, and bound to blockIdx.x / threadIdx.x.
ScheduleRulePtr auto_bind(std::vector<int64_t> thread_extents = {32, 64, 128, 256, 512, 1024});
// A GPU program from any program: AutoBind applied to every block of the root scope that has no
// blockIdx loop (thread counts drawn with `seed`), what `tyche run --target cuda|opencl` runs
// without a trace. Throws tyche::Error for a CPU target.
ir::PrimFunc auto_bind_blocks(const ir::PrimFunc& func, const target::Target& target, int64_t seed);

// TVM's defaults for the target: llvm: AutoInline (not exp), AddRFactor, MultiLevelTilingWithIntrin
// with the CPU's dot intrinsics (cpu_dot_intrins; the tiling below without padded rows or read
// caches), MultiLevelTiling "SSRSRS"
// (max innermost 64, write reuse "may" at levels 1 and 2; with 16 vector registers also padded
// rows {6}, read reuse "may" of the operand along the output rows at level 3, packing the panel
// that register tile streams, and reduction tiles up to 256), ParallelVectorizeUnroll (16 jobs per
// core, vectorize 64, unroll {0, 16, 64, 512}), RandomComputeLocation. cuda: first
// MultiLevelTilingTensorCore (float16 / bfloat16 products on sm_70 / sm_80 and later; mma.sync and
// WMMA designs from sm_80); both GPUs: MultiLevelTiling
// "SSSRRSRS" bound to blockIdx.x/vthread.x/threadIdx.x with shared read and local write caches
// (their loop software-pipelined over 1 or 2 sampled stages),
// AutoInline, CrossThreadReduction, ParallelVectorizeUnroll (unroll only), AutoBind.
std::vector<ScheduleRulePtr> default_rules(const target::Target& target);

}  // namespace tyche::tune
