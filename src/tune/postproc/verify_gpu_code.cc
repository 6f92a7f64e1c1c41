// VerifyGPUCode: refuses GPU programs that could not launch or would not compile. Only for
// cuda targets (read in initialize()); on llvm it accepts everything.
//
// Every block must lie inside a loop bound to blockIdx.* or threadIdx.* (or contain such loops,
// like a block wrapping a kernel): a nest without one could not run as a kernel (TVM's
// RewriteUnboundBlock would bind it; here the candidate is refused).
//
// A kernel is a top-level statement of the root block with a loop bound to a thread axis. Per
// kernel:
// - one thread axis bound on nested loops (threadIdx.x inside threadIdx.x) is legal only when the
//   extents are equal and the inner nest does not use the outer loop's variable: a GPU back end
//   makes both loops one thread index (TVM's UnifyThreadBinding, which refuses different
//   extents), so the inner nest must not depend on the two differing -- RewriteCooperativeFetch's
//   copy, whose region is the thread block's, is the intended case;
// - threads per block = the product over threadIdx.x/y/z of the largest extent bound to each
//   (sibling loops on one axis share the threads) <= max_threads_per_block;
// - shared memory: the "shared" buffers the kernel accesses, each sized as TVM's buffer
//   compaction would allocate it: the region its accesses cover while the loops below their
//   deepest common loop and every threadIdx/vthread loop range over their domains (blockIdx and
//   enclosing loops fixed), capped at the buffer's shape, times the stages of a software pipeline
//   around them; the sum <= max_shared_memory_per_block;
// - local memory likewise for "local" buffers, relaxing only the loops below the common loop
//   and vthread loops (one thread's copy); the sum <= max_local_memory_per_block;
// - a vectorized loop: extent x the widest element it loads or stores <= max_vector_bytes.
// Sizes are computed on the scheduled IR (no lowering), from the blocks' declared regions.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "ir/var_use.h"
#include "arith/analyzer.h"
#include "arith/const_int_bound.h"
#include "arith/int_set.h"
#include "arith/linear.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

using schedule::ErrorCode;
using schedule::ScheduleError;
using schedule::Status;

// One block's declared access, in terms of the loop variables around it.
struct Access {
  const ir::BufferNode* buffer;
  std::vector<ir::Range> region;
  std::vector<const ir::ForNode*> path;  // loops from the kernel's top down to the block
};

// The widest element loaded or stored under a statement (blocks entered).
class ElementWidth : public ir::StmtExprVisitor {
 public:
  int bytes = 0;

 protected:
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    bytes = std::max(bytes, n->buffer->dtype.bytes());
    StmtExprVisitor::visit_buffer_load(n);
  }
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    bytes = std::max(bytes, n->buffer->dtype.bytes());
    StmtExprVisitor::visit_buffer_store(n);
  }
};

class KernelScan {
 public:
  KernelScan(const target::Target& target, std::string kernel) : target_(target), kernel_(std::move(kernel)) {}

  std::vector<Access> accesses;
  std::map<std::string, int64_t> threads;  // threadIdx.* -> largest bound extent
  std::optional<ScheduleError> error;

  void walk(const ir::Stmt& s) {
    if (error || !s.defined()) return;
    switch (s.kind()) {
      case ir::StmtKind::kFor: walk_for(s.as<ir::ForNode>()); return;
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) walk(c);
        return;
      case ir::StmtKind::kIfThenElse:
        walk(s.as<ir::IfThenElseNode>()->then_case);
        walk(s.as<ir::IfThenElseNode>()->else_case);
        return;
      case ir::StmtKind::kAllocate: walk(s.as<ir::AllocateNode>()->body); return;
      case ir::StmtKind::kBlockRealize: walk_realize(s.as<ir::BlockRealizeNode>()); return;
      default: return;
    }
  }

 private:
  void walk_for(const ir::ForNode* f) {
    auto extent = ir::as_const_int(f->extent);
    if (f->for_kind == ir::ForKind::kThreadBinding) {
      if (!extent) {
        error = ScheduleError(ErrorCode::kNonConstantExtent,
                              fmt::format("kernel {}: loop '{}' bound to {} has a non-constant extent", kernel_,
                                          f->loop_var.name(), f->thread_tag),
                              f);
        return;
      }
      for (const ir::ForNode* outer : path_) {
        if (outer->for_kind != ir::ForKind::kThreadBinding || outer->thread_tag != f->thread_tag) continue;
        std::optional<int64_t> outer_extent = ir::as_const_int(outer->extent);
        if (outer_extent != extent) {
          error = ScheduleError(ErrorCode::kInvalidLoopKind,
                                fmt::format("kernel {}: {} is bound on nested loops with different extents ('{}' {}, '{}' {})",
                                            kernel_, f->thread_tag, outer->loop_var.name(),
                                            outer_extent ? std::to_string(*outer_extent) : "?", f->loop_var.name(), *extent),
                                f);
          return;
        }
        if (uses_outer(f->body, outer->loop_var.get())) {
          error = ScheduleError(ErrorCode::kInvalidLoopKind,
                                fmt::format("kernel {}: {} is bound on nested loops '{}' and '{}' and the inner nest uses '{}' "
                                            "(both loops become one thread index)",
                                            kernel_, f->thread_tag, outer->loop_var.name(), f->loop_var.name(),
                                            outer->loop_var.name()),
                                f);
          return;
        }
      }
      if (f->thread_tag.starts_with("threadIdx")) threads[f->thread_tag] = std::max(threads[f->thread_tag], *extent);
    }
    if (f->for_kind == ir::ForKind::kVectorized && extent) {
      ElementWidth w;
      w.visit_stmt(f->body);
      if (arith::sat_mul(*extent, w.bytes) > target_.max_vector_bytes) {
        error = ScheduleError(ErrorCode::kInvalidLoopKind,
                              fmt::format("kernel {}: vectorized loop '{}' moves {} x {} bytes, more than max_vector_bytes {}",
                                          kernel_, f->loop_var.name(), *extent, w.bytes, target_.max_vector_bytes),
                              f);
        return;
      }
    }
    path_.push_back(f);
    walk(f->body);
    path_.pop_back();
  }

  void walk_realize(const ir::BlockRealizeNode* r) {
    const ir::BlockNode* b = r->block.get();
    auto subst = [&](const ir::Expr& e) {
      return ir::substitute(e, [&](const ir::Var& v) {
        auto it = bindings_.find(v.get());
        return it == bindings_.end() ? ir::Expr() : it->second;
      });
    };
    // Outer bindings first: inner values refer to the enclosing block's iter vars.
    std::vector<ir::Expr> values;
    for (const ir::Expr& v : r->iter_values) values.push_back(subst(v));
    for (size_t i = 0; i < b->iter_vars.size(); ++i) bindings_[b->iter_vars[i].var.get()] = values[i];
    for (const auto* regions : {&b->reads, &b->writes}) {
      for (const ir::BufferRegion& br : *regions) {
        Access a{br.buffer.get(), {}, path_};
        for (const ir::Range& rg : br.region) a.region.emplace_back(subst(rg.min), subst(rg.extent));
        accesses.push_back(std::move(a));
      }
    }
    walk(b->init);
    walk(b->body);
    for (const ir::IterVar& iv : b->iter_vars) bindings_.erase(iv.var.get());
  }

  // `stmt` reads `outer` directly or through the bindings of the blocks it is nested in.
  bool uses_outer(const ir::Stmt& stmt, const ir::VarNode* outer) const {
    class Uses : public ir::StmtExprVisitor {
     public:
      Uses(const KernelScan& scan, const ir::VarNode* v) : scan_(scan), v_(v) {}
      bool found = false;

     protected:
      void visit_var(const ir::VarNode* v) override {
        if (v == v_) found = true;
        auto it = scan_.bindings_.find(v);
        if (it != scan_.bindings_.end() && it->second.defined())
          found = found || ir::uses_var(it->second, v_);
      }

     private:
      const KernelScan& scan_;
      const ir::VarNode* v_;
    };
    Uses uses(*this, outer);
    uses.visit_stmt(stmt);
    return uses.found;
  }

  const target::Target& target_;
  std::string kernel_;
  std::vector<const ir::ForNode*> path_;
  std::unordered_map<const ir::VarNode*, ir::Expr> bindings_;
};

bool is_thread_like(const ir::ForNode* f, bool shared) {
  if (f->for_kind != ir::ForKind::kThreadBinding) return false;
  return f->thread_tag.starts_with("vthread") || (shared && f->thread_tag.starts_with("threadIdx"));
}

// Bytes one thread block (shared) or one thread (local) holds of `buffer`; nullopt if unknown.
std::optional<int64_t> footprint(const ir::BufferNode* buffer, const std::vector<const Access*>& uses, bool shared) {
  size_t common = uses[0]->path.size();
  for (const Access* a : uses) {
    size_t d = 0;
    while (d < std::min(common, a->path.size()) && a->path[d] == uses[0]->path[d]) ++d;
    common = d;
  }
  arith::Analyzer analyzer;
  arith::VarRangeMap relax;
  for (const Access* a : uses) {
    for (size_t d = 0; d < a->path.size(); ++d) {
      const ir::ForNode* f = a->path[d];
      ir::Range range(f->min, f->extent);
      analyzer.bind(f->loop_var, range);
      if (d >= common || is_thread_like(f, shared)) relax[f->loop_var] = range;
    }
  }
  std::vector<int64_t> extents;
  for (size_t dim = 0; dim < buffer->shape.size(); ++dim) {
    std::optional<int64_t> full = ir::as_const_int(buffer->shape[dim]);
    std::optional<arith::IntervalSet> hull;
    for (const Access* a : uses) {
      if (dim >= a->region.size()) continue;
      const ir::Range& r = a->region[dim];
      arith::IntervalSet lo = arith::eval_interval(r.min, relax, &analyzer);
      arith::IntervalSet hi = arith::eval_interval(r.min + r.extent - 1, relax, &analyzer);
      arith::IntervalSet s{lo.min_value, hi.max_value};
      hull = hull ? arith::union_interval(*hull, s, &analyzer) : s;
    }
    int64_t extent = full.value_or(arith::ConstIntBound::kPosInf);
    if (hull && hull->is_bounded()) {
      int64_t bound = analyzer.const_int_bound(analyzer.simplify(hull->max_value - hull->min_value + 1)).max_value;
      extent = std::min(extent, bound);
    }
    if (extent == arith::ConstIntBound::kPosInf) return std::nullopt;
    extents.push_back(std::max<int64_t>(extent, 0));
  }
  int64_t elements = 1;
  for (int64_t e : extents) elements = arith::sat_mul(elements, e);
  // Rows storage_align pads take their padding too (laid out for the tile, as compact_buffers
  // lays them out): 1 + the offset of the last element.
  if (!buffer->dim_aligns.empty() && elements > 0) {
    std::optional<std::vector<int64_t>> strides = ir::aligned_strides(extents, buffer->dim_aligns);
    if (!strides) return std::nullopt;
    elements = 1;
    for (size_t d = 0; d < extents.size(); ++d) elements = arith::sat_add(elements, arith::sat_mul(extents[d] - 1, (*strides)[d]));
  }
  int64_t bytes = arith::sat_mul(elements, buffer->dtype.bytes());
  // A software-pipelined loop above every access keeps one copy per stage, each rounded up to
  // 64 bytes (lower/gpu_software_pipeline.cc).
  for (size_t d = common; shared && d-- > 0;) {
    auto it = uses[0]->path[d]->annotations.find(ir::ann::kSoftwarePipelineStages);
    const int64_t* stages = it == uses[0]->path[d]->annotations.end() ? nullptr : std::get_if<int64_t>(&it->second);
    if (stages && *stages > 1) return arith::sat_mul(ir::pipeline_version_bytes(bytes), *stages);
  }
  return bytes;
}

class VerifyGPUCode : public Postproc {
 public:
  std::string name() const override { return "VerifyGPUCode"; }
  void initialize(const TuneContext& context) override { target_ = context.target; }

  Status apply(schedule::Schedule& sch) override {
    if (!target_.is_gpu()) return schedule::ok_status();
    const ir::BlockNode* root = sch.state().root()->as_block();
    if (const ir::BlockNode* b = unbound_block(root->body, false))
      return ScheduleError(ErrorCode::kInvalidLoopKind, fmt::format("block '{}' is not bound to GPU threads", b->name));
    std::vector<ir::Stmt> tops = {root->body};
    if (const auto* seq = root->body.as<ir::SeqStmtNode>()) tops = seq->seq;
    int index = 0;
    for (const ir::Stmt& top : tops) {
      if (!has_thread_binding(top)) continue;
      std::string kernel = std::to_string(index++);
      if (const auto* f = top.as<ir::ForNode>()) kernel += fmt::format(" (loop '{}')", f->loop_var.name());
      if (Status s = check_kernel(top, kernel); !s) return s;
    }
    return schedule::ok_status();
  }

 private:
  static bool has_thread_binding(const ir::Stmt& s, bool launch_only = false) {
    bool found = false;
    ir::post_order_visit(s, [&](const ir::Stmt& x) {
      const auto* f = x.as<ir::ForNode>();
      found |= f && f->for_kind == ir::ForKind::kThreadBinding && (!launch_only || is_launch_axis(f));
    });
    return found;
  }
  // blockIdx and threadIdx make a kernel launch; vthread alone does not.
  static bool is_launch_axis(const ir::ForNode* f) {
    return f->thread_tag.starts_with("blockIdx") || f->thread_tag.starts_with("threadIdx");
  }

  // The first block that no blockIdx/threadIdx loop encloses and that contains none either.
  static const ir::BlockNode* unbound_block(const ir::Stmt& s, bool bound) {
    if (!s.defined()) return nullptr;
    switch (s.kind()) {
      case ir::StmtKind::kFor: {
        const auto* f = s.as<ir::ForNode>();
        return unbound_block(f->body, bound || (f->for_kind == ir::ForKind::kThreadBinding && is_launch_axis(f)));
      }
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq)
          if (const ir::BlockNode* b = unbound_block(c, bound)) return b;
        return nullptr;
      case ir::StmtKind::kIfThenElse: {
        const auto* i = s.as<ir::IfThenElseNode>();
        const ir::BlockNode* b = unbound_block(i->then_case, bound);
        return b ? b : unbound_block(i->else_case, bound);
      }
      case ir::StmtKind::kAllocate: return unbound_block(s.as<ir::AllocateNode>()->body, bound);
      case ir::StmtKind::kBlockRealize: {
        const ir::BlockNode* b = s.as<ir::BlockRealizeNode>()->block.get();
        if (bound) return nullptr;
        // A block that wraps bound loops (e.g. blockize above the kernel) is checked inside.
        if (!has_thread_binding(b->body, true)) return b;
        const ir::BlockNode* inner = unbound_block(b->init, false);
        return inner ? inner : unbound_block(b->body, false);
      }
      default: return nullptr;
    }
  }

  Status check_kernel(const ir::Stmt& top, const std::string& kernel) const {
    KernelScan scan(target_, kernel);
    scan.walk(top);
    if (scan.error) return *scan.error;
    int64_t threads = 1;
    std::string axes;
    for (const auto& [tag, extent] : scan.threads) {
      threads = arith::sat_mul(threads, extent);
      axes += fmt::format("{}{} {}", axes.empty() ? "" : ", ", tag, extent);
    }
    if (threads > target_.max_threads_per_block)
      return ScheduleError(ErrorCode::kExceedsLimit,
                           fmt::format("kernel {}: {} threads per block ({}) exceed max_threads_per_block {}", kernel,
                                       threads, axes, target_.max_threads_per_block));
    for (bool shared : {true, false}) {
      const char* scope = shared ? "shared" : "local";
      std::unordered_map<const ir::BufferNode*, std::vector<const Access*>> uses;
      std::vector<const ir::BufferNode*> order;
      for (const Access& a : scan.accesses) {
        if (a.buffer->scope != scope) continue;
        if (uses[a.buffer].empty()) order.push_back(a.buffer);
        uses[a.buffer].push_back(&a);
      }
      int64_t total = 0;
      for (const ir::BufferNode* b : order) {
        std::optional<int64_t> bytes = footprint(b, uses[b], shared);
        if (!bytes)
          return ScheduleError(ErrorCode::kNonConstantExtent,
                               fmt::format("kernel {}: the {} buffer '{}' has no constant size", kernel, scope, b->name));
        total = arith::sat_add(total, *bytes);
      }
      int64_t limit = shared ? target_.max_shared_memory_per_block : target_.max_local_memory_per_block;
      if (total > limit)
        return ScheduleError(ErrorCode::kExceedsLimit,
                             fmt::format("kernel {}: {} bytes of {} memory exceed max_{}_memory_per_block {}", kernel, total,
                                         scope, scope, limit));
    }
    return schedule::ok_status();
  }

  target::Target target_;
};

}  // namespace

PostprocPtr verify_gpu_code() { return std::make_shared<VerifyGPUCode>(); }

}  // namespace tyche::tune
