#include "lower/layout_rewrite.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

// The stage block a top-level statement of the root realizes (through its loops), when it is an
// annotated stage copying one param into one root allocation.
const ir::BlockNode* preproc_stage(const ir::Stmt& top, const ir::PrimFunc& func,
                                   const ir::BlockNode* root, size_t* param) {
  const ir::BlockNode* found = nullptr;
  int blocks = 0;
  ir::post_order_visit(top, [&](const ir::Stmt& s) {
    if (const auto* b = s.as<ir::BlockNode>()) {
      ++blocks;
      found = b;
    }
  });
  if (blocks != 1 || !found->annotations.count(ir::ann::kLayoutRewritePreproc)) return nullptr;
  if (found->reads.size() != 1 || found->writes.size() != 1) return nullptr;
  const ir::BufferNode* from = found->reads[0].buffer.get();
  const ir::BufferNode* to = found->writes[0].buffer.get();
  size_t inputs = func->params.size() - static_cast<size_t>(func->num_outputs);
  auto p =
      std::find_if(func->params.begin(), func->params.begin() + static_cast<std::ptrdiff_t>(inputs),
                   [&](const ir::Buffer& b) { return b.get() == from; });
  bool allocated = std::any_of(root->alloc_buffers.begin(), root->alloc_buffers.end(),
                               [&](const ir::Buffer& b) { return b.get() == to; });
  if (p == func->params.begin() + static_cast<std::ptrdiff_t>(inputs) || !allocated) return nullptr;
  *param = static_cast<size_t>(p - func->params.begin());
  return found;
}

// The stage's loops as plain serial loops: the copy runs once per weight, and the parallel,
// vectorized and unrolled loops the tuner's annotations gave it would only make each candidate's
// build slower (a 9 MB weight copy unrolled by 512 takes LLVM seconds).
class PlainLoops : public ir::StmtExprMutator {
 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    (void)self;
    return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial, mutate_stmt(n->body));
  }
};

ir::Stmt root_realize(const ir::BlockRealizeNode* realize, ir::Stmt body,
                      std::vector<ir::BufferRegion> reads, std::vector<ir::BufferRegion> writes,
                      std::vector<ir::Buffer> allocs) {
  const ir::BlockNode* root = realize->block.get();
  ir::Block block =
      ir::make_block(root->name, root->iter_vars, std::move(reads), std::move(writes), root->init,
                     std::move(body), std::move(allocs), root->annotations);
  return ir::block_realize(realize->iter_values, realize->predicate, std::move(block));
}

}  // namespace

SplitProgram split_layout_rewrites(const ir::PrimFunc& scheduled) {
  SplitProgram out{scheduled, {}};
  const auto* realize = scheduled->body.as<ir::BlockRealizeNode>();
  if (!realize) return out;  // loops already (a lowered or hand-built program): no stage to split
  const ir::BlockNode* root = realize->block.get();
  std::vector<ir::Stmt> tops;
  if (const auto* seq = root->body.as<ir::SeqStmtNode>())
    tops = seq->seq;
  else
    tops = {root->body};

  std::vector<ir::Stmt> kept;
  std::vector<ir::Buffer> params = scheduled->params;
  std::vector<ir::Buffer> allocs = root->alloc_buffers;
  std::vector<ir::BufferRegion> reads = root->reads;
  for (const ir::Stmt& top : tops) {
    size_t param = 0;
    const ir::BlockNode* stage = preproc_stage(top, scheduled, root, &param);
    // A param rewritten twice keeps its second stage (its reader reads the first's buffer).
    if (!stage || params[param].get() != scheduled->params[param].get()) {
      kept.push_back(top);
      continue;
    }
    ir::Buffer from = scheduled->params[param];
    ir::Buffer to = stage->writes[0].buffer;
    ir::Stmt body = root_realize(realize, PlainLoops().mutate_stmt(top), {}, {}, {});
    ir::PrimFunc preproc(fmt::format("{}_pack{}", scheduled->name, param), {from, to}, 1, body);
    out.rewrites.push_back({param, preproc});
    params[param] = to;
    allocs.erase(std::find_if(allocs.begin(), allocs.end(),
                              [&](const ir::Buffer& b) { return b.get() == to.get(); }));
    for (ir::BufferRegion& r : reads)
      if (r.buffer.get() == from.get()) r = ir::BufferRegion::full(to);
  }
  if (out.rewrites.empty()) return out;
  ir::Stmt body = root_realize(realize, ir::seq(kept), reads, root->writes, allocs);
  out.main = ir::PrimFunc(scheduled->name, params, scheduled->num_outputs, body);
  return out;
}

}  // namespace tyche::lower
