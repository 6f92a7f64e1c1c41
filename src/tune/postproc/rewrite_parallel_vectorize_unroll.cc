// RewriteParallelVectorizeUnroll: turns the root block's meta_schedule.parallel / vectorize /
// unroll_* annotations (written by the ParallelVectorizeUnroll rule) into loop kinds, through
// the traced Schedule API so that a candidate's trace replays to the same program.
//
// For each block directly under the root (get_child_blocks(root)), in order:
// - parallel (limit L > 0): the block's loops from the outermost while each is serial, of
//   constant extent >= 1, unannotated, the only statement of the previous taken loop's body,
//   with a range independent of the taken loops, and safe to run in parallel (only spatial
//   iterators depend on it, and no reduction under it ignores it); the first always, then the
//   next while the product of those taken is below L (tune/core/parallel_plan.h, shared with
//   MutateParallel). Several are fused; the result is parallel().
// - vectorize (limit V > 0): for every leaf block at or under it, the block's loops from the
//   innermost outwards while each is serial, of constant extent, unannotated, has as body
//   exactly the block realize / the next taken loop, binds only spatial iterators (and binds
//   one, unless its extent is 1), and the product stays <= V, taking at most one loop of extent
//   > 1 (unit loops around it are fused in). Several are fused; the result is vectorize(). A loop
//   already parallel is never taken (parallel goes first).
// - unroll (U > 0): the outermost loop of the nest gets pragma_auto_unroll_max_step = U and
//   pragma_unroll_explicit = 1 (meta_schedule.unroll_explicit) or 0 (unroll_implicit); see
//   lower/unroll.cc for what lowering does with it.
// The annotations are removed from the root. A primitive that refuses fails the postproc.
#include <fmt/format.h>

#include <optional>
#include <unordered_set>
#include <vector>

#include "arith/const_int_bound.h"
#include "arith/linear.h"
#include "ir/annotation_keys.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "tune/core/parallel_plan.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

using schedule::BlockRV;
using schedule::ErrorCode;
using schedule::LoopRV;
using schedule::Schedule;
using schedule::ScheduleError;
using schedule::Status;
using VarSet = std::unordered_set<const ir::VarNode*>;

// An integer annotation of the root; nullopt when absent.
schedule::Result<std::optional<int64_t>> read_int(const ir::Annotations& ann, const char* key) {
  auto it = ann.find(key);
  if (it == ann.end()) return std::optional<int64_t>();
  if (const auto* i = std::get_if<int64_t>(&it->second)) return std::optional<int64_t>(*i);
  return ScheduleError(ErrorCode::kInvalidAnnotation,
                       fmt::format("root annotation '{}' is not an integer", key));
}

// Serial, unannotated, with a constant extent of at least 1.
bool plain_serial(const ir::ForNode* f) {
  auto extent = ir::as_const_int(f->extent);
  return f->for_kind == ir::ForKind::kSerial && f->annotations.empty() && extent && *extent >= 1;
}

Status fuse_and(Schedule& sch, const std::vector<LoopRV>& loops,
                Status (Schedule::*kind)(const LoopRV&)) {
  LoopRV loop = loops[0];
  if (loops.size() > 1) {
    TYCHE_TRY_ASSIGN(fused, sch.fuse(loops));
    loop = fused;
  }
  return (sch.*kind)(loop);
}

Status parallelize(Schedule& sch, const BlockRV& block, int64_t limit) {
  TYCHE_TRY_ASSIGN(sref, sch.block_sref(block));
  size_t n = parallel_plan(parallel_prefix(sch.state(), sref), limit);
  TYCHE_TRY_ASSIGN(loops, sch.get_loops(block));
  if (n == 0) return schedule::ok_status();
  loops.resize(n);
  return fuse_and(sch, loops, &Schedule::parallel);
}

Status vectorize_leaf(Schedule& sch, const BlockRV& block, int64_t limit) {
  TYCHE_TRY_ASSIGN(block_sref, sch.block_sref(block));
  TYCHE_TRY_ASSIGN(loops, sch.get_loops(block));
  const ir::BlockRealizeNode* realize = sch.state().realize_of(block_sref.get());
  const ir::BlockNode* b = block_sref->as_block();
  const ir::StmtNode* child = realize;
  std::vector<LoopRV> taken;
  VarSet inner_range_vars;  // variables the ranges of the taken loops use
  int64_t product = 1;
  for (size_t i = loops.size(); i-- > 0;) {
    TYCHE_TRY_ASSIGN(sref, sch.loop_sref(loops[i]));
    const ir::ForNode* f = sref->as_for();
    if (!plain_serial(f) || f->body.get() != child || inner_range_vars.count(f->loop_var.get()))
      break;
    int64_t extent = *ir::as_const_int(f->extent);
    bool used = false, spatial_only = true;
    for (size_t k = 0; k < b->iter_vars.size(); ++k) {
      if (!ir::uses_var(realize->iter_values[k], f->loop_var.get())) continue;
      used = true;
      spatial_only &= b->iter_vars[k].kind == ir::IterKind::kSpatial;
    }
    // A loop the block does not use would have every lane store to the same element.
    if (!spatial_only || (!used && extent != 1) || arith::sat_mul(product, extent) > limit) break;
    // One non-unit loop at most: fusing a second makes the lanes' accesses strided (gathers and
    // scatters), which costs compile time and seldom pays on a CPU.
    if (product > 1 && extent > 1) break;
    product *= extent;
    taken.insert(taken.begin(), loops[i]);
    auto collect = [&](const ir::VarNode* v) {
      inner_range_vars.insert(v);
      return false;  // keep visiting
    };
    (void)ir::uses_var(f->min, collect);
    (void)ir::uses_var(f->extent, collect);
    child = f;
  }
  if (product <= 1) return schedule::ok_status();
  return fuse_and(sch, taken, &Schedule::vectorize);
}

// Vectorizes the leaf blocks at or under `block` (blocks nested in it after blockize, say).
Status vectorize_leaves(Schedule& sch, const BlockRV& block, int64_t limit) {
  TYCHE_TRY_ASSIGN(sref, sch.block_sref(block));
  if (schedule::child_blocks(sch.state(), sref.get()).empty())
    return vectorize_leaf(sch, block, limit);
  TYCHE_TRY_ASSIGN(kids, sch.get_child_blocks(block));
  for (const BlockRV& k : kids)
    if (Status s = vectorize_leaves(sch, k, limit); !s) return s;
  return schedule::ok_status();
}

class RewriteParallelVectorizeUnroll : public Postproc {
 public:
  std::string name() const override { return "RewriteParallelVectorizeUnroll"; }

  Status apply(Schedule& sch) override {
    // Copies: unannotate replaces the root node.
    const std::string root_name = sch.state().root()->as_block()->name;
    const ir::Annotations ann = sch.state().root()->as_block()->annotations;
    TYCHE_TRY_ASSIGN(parallel, read_int(ann, ir::ann::kParallel));
    TYCHE_TRY_ASSIGN(vectorize, read_int(ann, ir::ann::kVectorize));
    TYCHE_TRY_ASSIGN(unroll_explicit, read_int(ann, ir::ann::kUnrollExplicit));
    TYCHE_TRY_ASSIGN(unroll_implicit, read_int(ann, ir::ann::kUnrollImplicit));
    if (!parallel && !vectorize && !unroll_explicit && !unroll_implicit)
      return schedule::ok_status();

    TYCHE_TRY_ASSIGN(root_rv, sch.get_block(root_name));
    for (const char* key : {ir::ann::kParallel, ir::ann::kVectorize, ir::ann::kUnrollExplicit,
                            ir::ann::kUnrollImplicit}) {
      if (!ann.count(key)) continue;
      if (Status s = sch.unannotate(root_rv, key); !s) return s;
    }
    // Explicit wins when a hand-written schedule gives both.
    int64_t unroll = unroll_explicit ? *unroll_explicit : unroll_implicit.value_or(0);
    TYCHE_TRY_ASSIGN(children, sch.get_child_blocks(root_rv));
    std::unordered_set<const schedule::SRefNode*> unroll_done;
    for (const BlockRV& block : children) {
      if (parallel && *parallel > 0) {
        if (Status s = parallelize(sch, block, *parallel); !s) return s;
      }
      if (vectorize && *vectorize > 0) {
        if (Status s = vectorize_leaves(sch, block, *vectorize); !s) return s;
      }
      if (unroll <= 0) continue;
      TYCHE_TRY_ASSIGN(loops, sch.get_loops(block));
      if (loops.empty()) continue;
      TYCHE_TRY_ASSIGN(outer, sch.loop_sref(loops[0]));
      if (!unroll_done.insert(outer.get()).second) continue;  // a nest shared with an earlier block
      if (Status s = sch.annotate(loops[0], ir::ann::kAutoUnrollMaxStep, unroll); !s) return s;
      if (Status s = sch.annotate(loops[0], ir::ann::kUnrollExplicitPragma,
                                  int64_t{unroll_explicit ? 1 : 0});
          !s)
        return s;
    }
    return schedule::ok_status();
  }
};

}  // namespace

PostprocPtr rewrite_parallel_vectorize_unroll() {
  return std::make_shared<RewriteParallelVectorizeUnroll>();
}

}  // namespace tyche::tune
