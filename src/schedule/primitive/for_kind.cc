// parallel, vectorize, unroll and bind change how a loop runs, not what it computes; they are
// refused where running iterations concurrently would race on a reduction.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {

namespace {

// A block with a non-spatial iterator bound to the loop: iterations would update one element
// concurrently. With `cross_thread`, reduce iterators of a proper reduction block are allowed.
const ir::BlockRealizeNode* reduction_bound_to(const ScheduleState& state, const ir::ForNode* loop,
                                               bool cross_thread) {
  for (const ir::BlockRealizeNode* r : realizes_under(loop->body)) {
    for (size_t i = 0; i < r->iter_values.size(); ++i) {
      ir::IterKind kind = r->block->iter_vars[i].kind;
      if (kind == ir::IterKind::kSpatial) continue;
      if (!ir::uses_var(r->iter_values[i], loop->loop_var.get())) continue;
      if (!cross_thread || kind == ir::IterKind::kOpaque) return r;
      SRef block = state.get_sref(r->block.get());
      if (!block || !check_reduction_block(state, block.get()).ok()) return r;
    }
  }
  return nullptr;
}

Status set_kind(ScheduleState& state, const SRef& sref, ir::ForKind kind, const std::string& tag) {
  const ir::ForNode* loop = sref->as_for();
  const char* what = kind == ir::ForKind::kParallel     ? "parallel"
                     : kind == ir::ForKind::kVectorized ? "vectorize"
                                                        : "bind";
  // A reduction may be bound to threadIdx: a GPU back end lowers it to a cross-thread reduction
  // (as TVM's does; what CrossThreadReduction schedules); on the CPU it runs as a serial loop.
  bool cross_thread = kind == ir::ForKind::kThreadBinding && tag.starts_with("threadIdx");
  if (kind != ir::ForKind::kUnrolled) {
    if (const ir::BlockRealizeNode* r = reduction_bound_to(state, loop, cross_thread))
      return ScheduleError(
          ErrorCode::kInvalidLoopKind,
          fmt::format("{}: loop '{}' drives a reduction or opaque iterator of block '{}'", what,
                      loop->loop_var.name(), r->block->name),
          loop);
  }
  if (kind == ir::ForKind::kVectorized && !ir::as_const_int(loop->extent))
    return ScheduleError(
        ErrorCode::kNonConstantExtent,
        fmt::format("vectorize: loop '{}' has a non-constant extent", loop->loop_var.name()), loop);
  if (loop->for_kind == kind && loop->thread_tag == tag) return ok_status();
  state.replace(sref, ir::for_loop(loop->loop_var, loop->min, loop->extent, kind, loop->body, tag,
                                   loop->annotations));
  return ok_status();
}

}  // namespace

Status parallel(ScheduleState& state, const SRef& loop) {
  return set_kind(state, loop, ir::ForKind::kParallel, "");
}
Status vectorize(ScheduleState& state, const SRef& loop) {
  return set_kind(state, loop, ir::ForKind::kVectorized, "");
}
Status unroll(ScheduleState& state, const SRef& loop) {
  return set_kind(state, loop, ir::ForKind::kUnrolled, "");
}

Status bind(ScheduleState& state, const SRef& loop, const std::string& thread_axis) {
  static constexpr std::array kAxes = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                       "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                       "vthread.x",   "vthread.y",   "vthread.z"};
  if (std::find(kAxes.begin(), kAxes.end(), thread_axis) == kAxes.end())
    return ScheduleError(
        ErrorCode::kUnknownName,
        fmt::format(
            "bind: unknown thread axis '{}' (blockIdx.x/y/z, threadIdx.x/y/z, vthread.x/y/z)",
            thread_axis),
        loop->stmt);
  return set_kind(state, loop, ir::ForKind::kThreadBinding, thread_axis);
}

// ---- instructions ----

namespace {

template <Status (*F)(ScheduleState&, const SRef&)>
Status apply_loop_kind(InstructionContext& ctx, LoopRV loop) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  return F(ctx.state(), sref);
}

Status apply_bind(InstructionContext& ctx, LoopRV loop, std::string thread_axis) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  return schedule::bind(ctx.state(), sref, thread_axis);
}

}  // namespace

TYCHE_INSTRUCTION(parallel, apply_loop_kind<parallel>, {{"loop"}})
TYCHE_INSTRUCTION(vectorize, apply_loop_kind<vectorize>, {{"loop"}})
TYCHE_INSTRUCTION(unroll, apply_loop_kind<unroll>, {{"loop"}})
TYCHE_INSTRUCTION(bind, apply_bind, {{"loop"}, {"thread_axis"}})

Status Schedule::parallel(const LoopRV& loop) {
  return parallel_kind()(*this, loop);
}
Status Schedule::vectorize(const LoopRV& loop) {
  return vectorize_kind()(*this, loop);
}
Status Schedule::unroll(const LoopRV& loop) {
  return unroll_kind()(*this, loop);
}
Status Schedule::bind(const LoopRV& loop, const std::string& thread_axis) {
  return bind_kind()(*this, loop, thread_axis);
}

}  // namespace tyche::schedule
