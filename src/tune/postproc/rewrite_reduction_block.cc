// RewriteReductionBlock: decompose_reduction of every reduction block that still has an init, at
// the outermost of its loops that drives a reduce iterator, so the init runs once per output
// element in its own loop nest ahead of the reduction loops (as TVM's postprocessor does).
//
// Left alone (the init stays in the block, which lowering guards with "every reduce iterator at
// its minimum" -- still correct):
// - a block with no loop driving a reduce iterator (every reduce extent is 1, or no loops);
// - a block whose reduce iterator is driven by a thread-bound loop (a cross-thread reduction,
//   which a GPU back end lowers as a whole, as TVM's does; TVM skips these too).
// A decompose_reduction that refuses fails the postproc with its reason.
#include <string>
#include <unordered_set>

#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

using schedule::Schedule;
using schedule::Status;

// The index of the loop to decompose at, or -1 to leave the block alone.
int64_t decompose_point(const Schedule& sch, const schedule::SRef& block_sref) {
  const ir::BlockNode* b = block_sref->as_block();
  const ir::BlockRealizeNode* realize = sch.state().realize_of(block_sref.get());
  std::vector<schedule::SRef> loops = schedule::get_loops(sch.state(), block_sref);
  int64_t point = -1;
  for (size_t i = 0; i < loops.size(); ++i) {
    const ir::ForNode* f = loops[i]->as_for();
    bool drives_reduce = false;
    for (size_t k = 0; k < b->iter_vars.size() && !drives_reduce; ++k) {
      if (b->iter_vars[k].kind == ir::IterKind::kSpatial) continue;
      drives_reduce = ir::uses_var(realize->iter_values[k], f->loop_var.get());
    }
    if (!drives_reduce) continue;
    if (f->for_kind == ir::ForKind::kThreadBinding) return -1;
    if (point < 0) point = static_cast<int64_t>(i);
  }
  return point;
}

class RewriteReductionBlock : public Postproc {
 public:
  std::string name() const override { return "RewriteReductionBlock"; }

  Status apply(Schedule& sch) override {
    std::unordered_set<const ir::BlockNode*> skipped;  // nodes of the current IR
    for (;;) {
      // Each round removes one init (decompose) or skips one block, so this terminates.
      const ir::BlockNode* next = nullptr;
      ir::post_order_visit(sch.func()->body, [&](const ir::Stmt& s) {
        const auto* b = s.as<ir::BlockNode>();
        if (!next && b && b->init.defined() && !skipped.count(b)) next = b;
      });
      if (!next) return schedule::ok_status();
      schedule::SRef sref = sch.state().get_sref(next);
      int64_t point = decompose_point(sch, sref);
      if (point < 0) {
        // Skipping changes no IR, so the node stays valid for later rounds.
        skipped.insert(next);
        continue;
      }
      TYCHE_TRY_ASSIGN(block, sch.get_block(next->name));
      TYCHE_TRY_ASSIGN(loops, sch.get_loops(block));
      TYCHE_TRY_ASSIGN(init, sch.decompose_reduction(block, loops[static_cast<size_t>(point)]));
      (void)init;
      // decompose_reduction rebuilt the scope: earlier skips refer to replaced nodes. Re-derive
      // them (cheap: skipping is a pure function of the IR).
      skipped.clear();
    }
  }
};

}  // namespace

PostprocPtr rewrite_reduction_block() {
  return std::make_shared<RewriteReductionBlock>();
}

}  // namespace tyche::tune
