// RewriteCooperativeFetch (TVM's): a shared-memory cache block that MultiLevelTiling placed
// inside the threadIdx-bound loop of its consumer and annotated meta_schedule.cooperative_fetch
// would otherwise be copied whole by every thread. Its own loops (those that enclose only the
// copy) are fused and split into [rest, threadIdx.y?, threadIdx.x, vector]: the thread parts
// bound to the axes with the extents of the enclosing bound loops, so the thread block's threads
// share the copy (a GPU back end unifies equal-extent loops on one axis into one index, as TVM's
// UnifyThreadBinding does), and the vector part vectorized when the annotated length divides the
// copy (else 1, as in TVM). The thread part may not divide the copy: split adds a predicate.
//
// A block annotated meta_schedule.warp_execution (a tensor-core schedule's) with no enclosing
// threadIdx.x loop splits its copy over a warp's 32 lanes, as TVM's warp execution does.
//
// Left serial (the annotation only removed): no enclosing threadIdx.x loop, no own loop, a
// non-constant extent, or a copy whose bindings use an enclosing threadIdx loop's variable (its
// region is one thread's, not the thread block's: after unification each thread would copy only
// its share of its own region). Primitive refusals fail the postproc with their reason.
#include <fmt/format.h>

#include "arith/linear.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

using schedule::LoopRV;
using schedule::Schedule;
using schedule::Status;

// The first block of the program that still carries the annotation (nullptr if none).
const ir::BlockNode* next_annotated(const Schedule& sch) {
  const ir::BlockNode* found = nullptr;
  ir::post_order_visit(sch.func()->body, [&](const ir::Stmt& s) {
    const auto* b = s.as<ir::BlockNode>();
    if (!found && b && b->annotations.count(ir::ann::kCooperativeFetch)) found = b;
  });
  return found;
}

class RewriteCooperativeFetch : public Postproc {
 public:
  std::string name() const override { return "RewriteCooperativeFetch"; }

  Status apply(Schedule& sch) override {
    // Each round removes one annotation, so this terminates.
    while (const ir::BlockNode* b = next_annotated(sch)) {
      const ir::AnnotationValue& value = b->annotations.at(ir::ann::kCooperativeFetch);
      if (!std::holds_alternative<int64_t>(value))
        return schedule::ScheduleError(
            schedule::ErrorCode::kInvalidAnnotation,
            fmt::format("block '{}': {} must be an integer vector length", b->name,
                        ir::ann::kCooperativeFetch));
      if (Status s = rewrite(sch, b->name, std::get<int64_t>(value)); !s) return s;
    }
    return schedule::ok_status();
  }

 private:
  static Status rewrite(Schedule& sch, const std::string& name, int64_t vector_len) {
    TYCHE_TRY_ASSIGN(block, sch.get_block(name));
    TYCHE_TRY_ASSIGN(unannotated, sch.unannotate(block, ir::ann::kCooperativeFetch));
    (void)unannotated;
    TYCHE_TRY_ASSIGN(loops, sch.get_loops(block));
    const schedule::SRef block_sref = sch.block_sref(block).value();
    const ir::BlockRealizeNode* realize = sch.state().realize_of(block_sref.get());

    // The innermost enclosing loops bound to threadIdx.x / threadIdx.y, and the copy's own
    // loops: the serial innermost loops that enclose this block only.
    const ir::ForNode *tx = nullptr, *ty = nullptr;
    size_t own_begin = loops.size();
    for (size_t i = loops.size(); i-- > 0;) {
      const ir::ForNode* f = sch.loop_sref(loops[i]).value()->as_for();
      bool own = own_begin == i + 1 && f->for_kind == ir::ForKind::kSerial &&
                 f->annotations.empty() && schedule::realizes_under(f->body).size() == 1;
      if (own) own_begin = i;
      if (f->for_kind != ir::ForKind::kThreadBinding) continue;
      if (!tx && f->thread_tag == "threadIdx.x") tx = f;
      if (!ty && f->thread_tag == "threadIdx.y") ty = f;
    }
    // A tensor-core schedule's threads are whole warps: threadIdx.x is the 32 lanes.
    const bool warp_lanes = !tx && realize->block->annotations.count(ir::ann::kWarpExecution);
    if ((!tx && !warp_lanes) || own_begin == loops.size()) return schedule::ok_status();
    for (const ir::ForNode* t : {tx, ty}) {
      if (!t) continue;
      auto uses = [&](const ir::Expr& e) { return ir::uses_var(e, t->loop_var.get()); };
      bool dependent = uses(realize->predicate);
      for (const ir::Expr& v : realize->iter_values) dependent = dependent || uses(v);
      if (dependent) return schedule::ok_status();
    }
    std::optional<int64_t> tx_extent =
        warp_lanes ? std::optional<int64_t>(32) : ir::as_const_int(tx->extent);
    std::optional<int64_t> ty_extent =
        ty ? ir::as_const_int(ty->extent) : std::optional<int64_t>(1);
    if (!tx_extent || !ty_extent) return schedule::ok_status();

    std::vector<LoopRV> own(loops.begin() + static_cast<std::ptrdiff_t>(own_begin), loops.end());
    LoopRV fused = own[0];
    if (own.size() > 1) {
      TYCHE_TRY_ASSIGN(f, sch.fuse(own));
      fused = f;
    }
    std::optional<int64_t> extent =
        ir::as_const_int(sch.loop_sref(fused).value()->as_for()->extent);
    if (!extent) return schedule::ok_status();
    if (vector_len < 1 || *extent % vector_len != 0) vector_len = 1;

    std::vector<std::optional<schedule::ExprArg>> factors = {std::nullopt};
    if (ty) factors.emplace_back(*ty_extent);
    factors.emplace_back(*tx_extent);
    if (vector_len > 1) factors.emplace_back(vector_len);
    TYCHE_TRY_ASSIGN(parts, sch.split(fused, factors));
    size_t x = ty ? 2 : 1;
    if (ty) {
      TYCHE_TRY_ASSIGN(bound_y, sch.bind(parts[1], "threadIdx.y"));
      (void)bound_y;
    }
    TYCHE_TRY_ASSIGN(bound_x, sch.bind(parts[x], "threadIdx.x"));
    (void)bound_x;
    if (vector_len > 1) {
      TYCHE_TRY_ASSIGN(vectorized, sch.vectorize(parts[x + 1]));
      (void)vectorized;
    }
    return schedule::ok_status();
  }
};

}  // namespace

PostprocPtr rewrite_cooperative_fetch() {
  return std::make_shared<RewriteCooperativeFetch>();
}

}  // namespace tyche::tune
