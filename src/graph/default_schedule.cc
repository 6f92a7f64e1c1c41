#include "graph/default_schedule.h"

#include <string>
#include <vector>

#include "ir/functor.h"
#include "ir/op.h"
#include "schedule/schedule.h"

namespace tyche::graph {

namespace {

class BlockCollector : public ir::StmtExprVisitor {
 public:
  std::vector<const ir::BlockNode*> blocks;

 protected:
  void visit_block(const ir::BlockNode* n) override {
    if (n->name != "root") blocks.push_back(n);
    StmtExprVisitor::visit_block(n);
  }
};

struct Stage {
  std::string name;
  std::vector<int64_t> spatial;  // extents of the spatial iterators, in loop order
  size_t reduce = 0;             // reduction iterators (innermost loops)
};

// Fewer output points than this run serially: a parallel loop's dispatch would cost more than
// the work, and the serial loop is less code to compile.
constexpr int64_t kParallelMinPoints = 4096;

bool tiny(const Stage& st) {
  int64_t points = 1;
  for (int64_t e : st.spatial) points *= e > 0 ? e : kParallelMinPoints;
  return points < kParallelMinPoints;
}

// Outer spatial loops fused and parallel (serial when tiny), reductions, the last spatial axis
// vectorized.
bool schedule_reduction(schedule::Schedule& sch, const Stage& st) {
  auto block = sch.get_block(st.name);
  if (!block.ok()) return false;
  auto loops_r = sch.get_loops(block.value());
  if (!loops_r.ok()) return false;
  std::vector<schedule::LoopRV> loops = loops_r.value();
  size_t s = st.spatial.size();
  if (loops.size() != s + st.reduce || s < 2) return false;
  int64_t last = st.spatial.back();
  int64_t factor = last % 16 == 0 ? 16 : last % 8 == 0 ? 8 : 0;
  std::vector<schedule::LoopRV> order(loops.begin(), loops.begin() + static_cast<long>(s - 1));
  order.insert(order.end(), loops.begin() + static_cast<long>(s), loops.end());
  std::optional<schedule::LoopRV> inner;
  if (factor) {
    auto parts = sch.split(loops[s - 1], {std::nullopt, schedule::ExprArg(factor)});
    if (!parts.ok()) return false;
    order.push_back(parts.value()[0]);
    order.push_back(parts.value()[1]);
    inner = parts.value()[1];
  } else {
    order.push_back(loops[s - 1]);
  }
  if (!sch.reorder(order).ok()) return false;
  std::vector<schedule::LoopRV> outer(order.begin(), order.begin() + static_cast<long>(s - 1));
  auto fused = outer.size() > 1 ? sch.fuse(outer) : schedule::Result<schedule::LoopRV>(outer[0]);
  if (!fused.ok() || (!tiny(st) && !sch.parallel(fused.value()).ok())) return false;
  if (inner && !sch.vectorize(*inner).ok()) return false;
  return true;
}

// Every spatial loop fused and parallel.
void schedule_spatial(schedule::Schedule& sch, const Stage& st) {
  auto block = sch.get_block(st.name);
  if (!block.ok() || st.spatial.empty() || tiny(st)) return;
  auto loops_r = sch.get_loops(block.value());
  if (!loops_r.ok() || loops_r.value().empty()) return;
  std::vector<schedule::LoopRV> all = loops_r.value();
  std::vector<schedule::LoopRV> outer(
      all.begin(), all.begin() + static_cast<long>(std::min(st.spatial.size(), all.size())));
  auto fused = outer.size() > 1 ? sch.fuse(outer) : schedule::Result<schedule::LoopRV>(outer[0]);
  if (fused.ok()) (void)sch.parallel(fused.value());
}

}  // namespace

ir::PrimFunc default_schedule(const ir::PrimFunc& func) {
  BlockCollector c;
  c.visit_stmt(func->body);
  schedule::Schedule sch(func);
  std::vector<Stage> kept;
  for (size_t i = 0; i < c.blocks.size(); ++i) {
    const ir::BlockNode* b = c.blocks[i];
    Stage st{b->name, {}, 0};
    for (const ir::IterVar& iv : b->iter_vars) {
      if (iv.kind != ir::IterKind::kSpatial)
        ++st.reduce;
      else
        st.spatial.push_back(ir::as_const_int(iv.dom.extent).value_or(0));
    }
    auto rv = sch.get_block(b->name);
    if (!rv.ok()) continue;
    // Stages without a reduction are inlined into their readers where that is legal.
    if (st.reduce == 0 && i + 1 < c.blocks.size() && sch.compute_inline(rv.value()).ok()) continue;
    kept.push_back(std::move(st));
  }
  for (const Stage& st : kept) {
    if (st.reduce > 0) {
      // On a copy: a step the stage refuses leaves the simpler plan below.
      schedule::Schedule attempt = sch.copy();
      if (schedule_reduction(attempt, st)) {
        sch = std::move(attempt);
        continue;
      }
    }
    schedule_spatial(sch, st);
  }
  return sch.func();
}

}  // namespace tyche::graph
