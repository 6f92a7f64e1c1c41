// blockize's plan, which tensorize shares: the new outer block and the rewritten inner one,
// computed without touching the state (private to src/schedule/).
#pragma once

#ifndef TYCHE_SCHEDULE_INTERNAL
#error "schedule/primitive/blockize.h is private to src/schedule/"
#endif

#include <fmt/format.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "arith/linear.h"
#include "ir/functor.h"
#include "schedule/error.h"
#include "schedule/state.h"

namespace tyche::schedule {

// Block names already used in the function, and fresh ones derived from a hint.
class BlockNames {
 public:
  explicit BlockNames(const ir::PrimFunc& f) {
    ir::post_order_visit(f->body, [&](const ir::Stmt& s) {
      if (auto* b = s.as<ir::BlockNode>()) used_.insert(b->name);
    });
  }
  std::string fresh(const std::string& hint) {
    std::string name = hint;
    for (int i = 1; used_.count(name); ++i) name = fmt::format("{}_{}", hint, i);
    used_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

// One iterator of the inner block after division: old = outer_part * extent + inner.
struct IterSplit {
  ir::IterVar old;
  bool has_outer = false, has_inner = false;
  ir::IterVar outer_iv, inner_iv;
  ir::Expr outer_value, inner_value;
  int64_t extent = 1;                  // of the inner part
  arith::LinearSum inner_sum{kInt32};  // inner part, for the coverage check of a moved init
  ir::Expr replacement;                // what `old.var` becomes inside the outer block
};

struct BlockizePlan {
  std::vector<const ir::ForNode*> loops;  // `loop` and the loops under it, outermost first
  const ir::BlockNode* old_inner = nullptr;
  ir::Block inner;  // the rewritten inner block
  ir::Stmt inner_realize;
  std::vector<IterSplit> splits;
  ir::Block outer;
  ir::Stmt outer_realize;
  BlockReuse reuse;  // rewritten blocks -> the blocks they continue
};

// The plan of blockize(loop); `prim` names the primitive in refusals.
Result<BlockizePlan> plan_blockize(const ScheduleState& state, const SRefNode* loop_sref,
                                   const char* prim);
// The handle's statement is a live loop.
Status check_loop(const SRef& loop, const char* prim);

}  // namespace tyche::schedule
