// Postprocessors: the validator and finisher of a replayed candidate. Each inspects or rewrites
// the schedule in place; a refusal means the candidate is invalid and the search discards it,
// counting the reason under the postprocessor's name.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "tune/core/context.h"

namespace tyche::tune {

class Postproc {
 public:
  virtual ~Postproc() = default;
  virtual std::string name() const = 0;
  virtual void initialize(const TuneContext& context) { (void)context; }
  virtual schedule::Status apply(schedule::Schedule& sch) = 0;
};
using PostprocPtr = std::shared_ptr<Postproc>;

// Refuses a program with a loop whose extent is not a constant.
PostprocPtr disallow_dynamic_loop();
// GPU: spreads the copy of each shared-memory cache block annotated meta_schedule.cooperative_fetch
// (by MultiLevelTiling) over the threads of its thread block: fuses the copy's own loops, splits
// off parts with the extents of the enclosing threadIdx.y/x loops and binds them, vectorizes an
// innermost part of the annotated length when it divides the copy. Removes the annotation.
PostprocPtr rewrite_cooperative_fetch();
// Turns the root block's meta_schedule.parallel / vectorize / unroll_* annotations into loop
// kinds: per block nest, fuses the outer loops that are spatial for every block under them (as
// long as the fused extent stays within the limit) and parallelizes the result; fuses and
// vectorizes the innermost spatial loops within the vectorize limit; puts the unroll limit on the
// outermost loop as pragma_auto_unroll_max_step (lowering unrolls what fits). Removes the
// annotations. Which loops may join the parallel loop (shared with MutateParallel) is in
// tune/core/parallel_plan.h; implicit unroll (pragma_unroll_explicit = 0) leaves the
// loops to the back-end compiler.
PostprocPtr rewrite_parallel_vectorize_unroll();
// decompose_reduction of every reduction block with an init at its outermost loop that drives a
// reduction iterator (so the init runs once, outside the reduction loops). A block with no such
// loop, or whose reduction is bound to threads (cross-thread), keeps its init.
PostprocPtr rewrite_reduction_block();
// GPU: refuses a program with a block outside every blockIdx/threadIdx loop (it could not run
// as a kernel), whose thread blocks exceed the target's threads per block, shared memory, or
// local memory, that binds a thread axis on nested loops with different extents (or where the
// inner nest uses the outer index, which both become), or vectorizes wider than the widest
// vector access. Buffer sizes are what one thread block (shared) or thread (local) touches of
// each buffer, as buffer compaction would allocate it. Reads the target in initialize().
PostprocPtr verify_gpu_code();

// A layout-free param (a model's weight, ir/layout_free.h) read by one block is copied, in a
// root-level stage annotated meta_schedule.layout_rewrite_preproc, into the order that block's
// loops walk it (see rewrite_layout.cc for what is left alone). lower/layout_rewrite.h splits the
// stage off so it runs once at load. Programs without layout-free params are untouched.
PostprocPtr rewrite_layout();

// TVM's lists (Postproc::DefaultLLVM / DefaultCUDA), less what has no counterpart here:
// llvm: DisallowDynamicLoop, RewriteLayout, RewriteParallelVectorizeUnroll, RewriteReductionBlock
// (RewriteLayout before the others, so it reads the tiles' own loops, unfused). cuda:
// DisallowDynamicLoop, RewriteCooperativeFetch, RewriteParallelVectorizeUnroll,
// RewriteReductionBlock, VerifyGPUCode (TVM has
// RewriteUnboundBlock after RewriteCooperativeFetch; here VerifyGPUCode refuses unbound blocks).
// The one place a target's postprocessors come from: returned initialized with `context`.
std::vector<PostprocPtr> default_postprocs(const TuneContext& context);

}  // namespace tyche::tune
