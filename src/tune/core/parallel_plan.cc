#include "tune/core/parallel_plan.h"

#include <unordered_set>

#include "arith/const_int_bound.h"
#include "arith/linear.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"

namespace tyche::tune {

namespace {

using ir::uses_any;
using ir::VarSet;

// Whether the iterations of a loop may run concurrently: walking down from the loop, a variable
// depends on it when it is the loop's own or an inner loop's whose range uses a dependent one.
// Every block under it must bind dependent variables to spatial iterators only; and a block
// with reduce iterators or an init must bind one at all, or every iteration would re-run the
// whole reduction (init included) on the same elements. Nested blocks are governed by their
// enclosing block's bindings, so block bodies are not entered.
class ParallelSafety {
 public:
  static bool check(const ir::ForNode* loop) {
    ParallelSafety p;
    VarSet dep = {loop->loop_var.get()};
    p.walk(loop->body, dep);
    return p.safe_;
  }

 private:
  void walk(const ir::Stmt& s, VarSet& dep) {
    if (!safe_ || !s.defined()) return;
    switch (s.kind()) {
      case ir::StmtKind::kFor: {
        const auto* f = s.as<ir::ForNode>();
        bool added = (uses_any(f->min, dep) || uses_any(f->extent, dep)) &&
                     dep.insert(f->loop_var.get()).second;
        walk(f->body, dep);
        if (added) dep.erase(f->loop_var.get());
        return;
      }
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) walk(c, dep);
        return;
      case ir::StmtKind::kIfThenElse:
        walk(s.as<ir::IfThenElseNode>()->then_case, dep);
        walk(s.as<ir::IfThenElseNode>()->else_case, dep);
        return;
      case ir::StmtKind::kAllocate:
        walk(s.as<ir::AllocateNode>()->body, dep);
        return;
      case ir::StmtKind::kBlockRealize: {
        const auto* r = s.as<ir::BlockRealizeNode>();
        const ir::BlockNode* b = r->block.get();
        bool used = false, reduces = b->init.defined();
        for (size_t i = 0; i < b->iter_vars.size(); ++i) {
          reduces |= b->iter_vars[i].kind != ir::IterKind::kSpatial;
          if (!uses_any(r->iter_values[i], dep)) continue;
          used = true;
          if (b->iter_vars[i].kind != ir::IterKind::kSpatial) safe_ = false;
        }
        if (reduces && !used) safe_ = false;
        return;
      }
      default:
        return;
    }
  }

  bool safe_ = true;
};

}  // namespace

std::vector<int64_t> parallel_prefix(const schedule::ScheduleState& state,
                                     const schedule::SRef& block) {
  std::vector<int64_t> extents;
  const ir::ForNode* prev = nullptr;
  VarSet taken_vars;
  for (const schedule::SRef& sref : schedule::get_loops(state, block)) {
    const ir::ForNode* f = sref->as_for();
    auto extent = ir::as_const_int(f->extent);
    if (f->for_kind != ir::ForKind::kSerial || !f->annotations.empty() || !extent || *extent < 1)
      break;
    if ((prev && prev->body.get() != f) || uses_any(f->min, taken_vars) ||
        !ParallelSafety::check(f))
      break;
    extents.push_back(*extent);
    taken_vars.insert(f->loop_var.get());
    prev = f;
  }
  return extents;
}

size_t parallel_plan(const std::vector<int64_t>& extents, int64_t limit) {
  if (extents.empty() || limit <= 0) return 0;
  // TVM's rule: the next loop joins while the jobs so far are fewer than the limit, so the fused
  // extent reaches the limit when it can (outer extents 4, 64 with limit 32 give 256 jobs).
  size_t n = 1;
  for (int64_t product = extents[0]; n < extents.size() && product < limit; ++n)
    product = arith::sat_mul(product, extents[n]);
  return n;
}

}  // namespace tyche::tune
