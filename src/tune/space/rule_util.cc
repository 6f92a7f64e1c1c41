#include "tune/space/rule_util.h"

#include "arith/linear.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"

namespace tyche::tune {

using schedule::Schedule;

LoopIterType loop_iter_type(const schedule::ScheduleState& state, const schedule::SRefNode* block,
                            const schedule::SRefNode* loop) {
  const ir::BlockRealizeNode* realize = state.realize_of(block);
  const ir::VarNode* var = loop->as_for()->loop_var.get();
  bool spatial = false, reduce = false;
  for (size_t i = 0; i < realize->iter_values.size(); ++i) {
    if (!ir::uses_var(realize->iter_values[i], var)) continue;
    ir::IterKind kind = realize->block->iter_vars[i].kind;
    if (kind == ir::IterKind::kSpatial)
      spatial = true;
    else if (kind == ir::IterKind::kReduce)
      reduce = true;
    else
      return LoopIterType::kMixed;
  }
  if (spatial && reduce) return LoopIterType::kMixed;
  return reduce ? LoopIterType::kReduce : LoopIterType::kSpatial;
}

bool is_root_block(const Schedule& sch, const schedule::BlockRV& block) {
  auto sref = sch.block_sref(block);
  return sref.ok() && schedule::scope_block(sref.value().get()) == nullptr;
}

bool is_subroot_block(const Schedule& sch, const schedule::BlockRV& block) {
  auto sref = sch.block_sref(block);
  if (!sref.ok()) return false;
  const schedule::SRefNode* scope = schedule::scope_block(sref.value().get());
  return scope && schedule::scope_block(scope) == nullptr;
}

bool writes_output(const Schedule& sch, const schedule::BlockRV& block) {
  const ir::BlockNode* b = block_node(sch, block);
  if (!b) return false;
  for (const ir::BufferRegion& w : b->writes)
    if (schedule::is_output_buffer(sch.state(), w.buffer.get())) return true;
  return false;
}

namespace {
class IfFinder : public ir::StmtExprVisitor {
 public:
  bool found = false;

 protected:
  void visit_call(const ir::CallNode* n) override {
    if (n->op == ir::CallOp::kIfThenElse) found = true;
    StmtExprVisitor::visit_call(n);
  }
  void visit_if(const ir::IfThenElseNode* n) override {
    found = true;
    StmtExprVisitor::visit_if(n);
  }
};
}  // namespace

bool has_reduction_block(const ir::PrimFunc& func) {
  bool found = false;
  ir::post_order_visit(func->body, [&](const ir::Stmt& s) {
    if (const auto* b = s.as<ir::BlockNode>())
      for (const ir::IterVar& iv : b->iter_vars) found |= iv.kind != ir::IterKind::kSpatial;
  });
  return found;
}

bool has_if_then_else(const ir::BlockNode* block) {
  IfFinder finder;
  finder.visit_stmt(block->body);
  if (block->init.get()) finder.visit_stmt(block->init);
  return finder.found;
}

std::optional<std::vector<int64_t>> const_extents(const Schedule& sch,
                                                  const std::vector<schedule::LoopRV>& loops) {
  std::vector<int64_t> out;
  for (const schedule::LoopRV& l : loops) {
    auto sref = sch.loop_sref(l);
    if (!sref.ok()) return std::nullopt;
    auto ext = ir::as_const_int(sref.value()->as_for()->extent);
    if (!ext) return std::nullopt;
    out.push_back(*ext);
  }
  return out;
}

const ir::BlockNode* block_node(const Schedule& sch, const schedule::BlockRV& block) {
  auto sref = sch.block_sref(block);
  return sref.ok() ? sref.value()->as_block() : nullptr;
}

// TVM's condition: a block that is not purely spatial, writes one buffer, binds its iterators
// affinely, and has an input that does not depend on some spatial iterator (so a tile of the
// output reuses it).
bool needs_multi_level_tiling(const Schedule& sch, const schedule::BlockRV& block) {
  const ir::BlockNode* b = block_node(sch, block);
  if (!b || b->annotations.count(ir::ann::kTilingStructure) || b->writes.size() != 1 ||
      b->reads.empty())
    return false;
  bool has_reduce = false;
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kOpaque) return false;
    has_reduce |= iv.kind == ir::IterKind::kReduce;
  }
  if (!has_reduce) return false;
  const schedule::SRef sref = sch.block_sref(block).value();
  if (!schedule::has_affine_bindings(sch.state(), sref.get())) return false;
  const ir::BufferNode* written = b->writes[0].buffer.get();
  int unused = 0;
  for (const ir::BufferRegion& r : b->reads) {
    if (r.buffer.get() == written) continue;
    for (const ir::IterVar& iv : b->iter_vars) {
      auto ext = ir::as_const_int(iv.dom.extent);
      if (iv.kind != ir::IterKind::kSpatial || (ext && *ext == 1)) continue;
      bool used = false;
      for (const ir::Range& range : r.region) used |= ir::uses_var(range.min, iv.var.get());
      unused += !used;
    }
  }
  return unused >= 1;
}

std::optional<ReductionLoops> reduction_loops(Schedule& sch, const schedule::BlockRV& block) {
  auto sref = sch.block_sref(block);
  if (!sref.ok() || !schedule::check_reduction_block(sch.state(), sref.value().get()).ok())
    return std::nullopt;
  auto loops = sch.get_loops(block);
  if (!loops.ok()) return std::nullopt;
  auto extents = const_extents(sch, loops.value());
  if (!extents) return std::nullopt;
  ReductionLoops out;
  for (size_t i = 0; i < loops.value().size(); ++i) {
    const schedule::LoopRV& l = loops.value()[i];
    LoopIterType t =
        loop_iter_type(sch.state(), sref.value().get(), sch.loop_sref(l).value().get());
    if (t == LoopIterType::kMixed) return std::nullopt;
    if (t == LoopIterType::kReduce) {
      out.reduce.push_back(l);
      out.reduce_extent *= (*extents)[i];
    } else {
      if (!out.reduce.empty()) out.reduce_innermost = false;
      out.spatial.push_back(l);
      out.spatial_extent *= (*extents)[i];
    }
  }
  if (out.reduce.empty()) return std::nullopt;
  return out;
}

std::optional<schedule::LoopRV> fuse_reduction_loops(Schedule& sch, const ReductionLoops& loops) {
  if (!loops.reduce_innermost) {
    std::vector<schedule::LoopRV> order = loops.spatial;
    order.insert(order.end(), loops.reduce.begin(), loops.reduce.end());
    if (!sch.reorder(order).ok()) return std::nullopt;
  }
  if (loops.reduce.size() == 1) return loops.reduce[0];
  auto fused = sch.fuse(loops.reduce);
  if (!fused.ok()) return std::nullopt;
  return fused.value();
}

std::vector<double> uniform_probs(size_t n) {
  return std::vector<double>(n, 1.0 / static_cast<double>(n));
}

const ir::VarNode* point_var(const ir::Range& r) {
  const auto* one = r.extent.as<ir::IntImmNode>();
  return one && one->value == 1 ? r.min.as<ir::VarNode>() : nullptr;
}

const ir::IterVar* iter_of(const ir::BlockNode* b, const ir::VarNode* v) {
  for (const ir::IterVar& iv : b->iter_vars)
    if (iv.var.get() == v) return &iv;
  return nullptr;
}

}  // namespace tyche::tune
