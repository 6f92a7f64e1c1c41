// VerifyGPUCode: refuses GPU programs that could not launch or would not compile. Only for GPU
// targets (read in initialize()); on llvm it accepts everything.
//
// On the scheduled IR, what the lowering cannot tell:
// - every block must lie inside a loop bound to blockIdx.* or threadIdx.* (or contain such loops,
//   like a block wrapping a kernel): a nest without one could not run as a kernel (TVM's
//   RewriteUnboundBlock would bind it; here the candidate is refused, naming the block);
// - one thread axis bound on nested loops (threadIdx.x inside threadIdx.x) is legal only when the
//   extents are equal and the inner nest does not use the outer loop's variable: the lowering
//   makes both loops one thread index (TVM's UnifyThreadBinding, which refuses different extents),
//   so the inner nest must not depend on the two differing -- RewriteCooperativeFetch's copy,
//   whose region is the thread block's, is the intended case.
// Then the candidate is lowered by the GPU pipeline the builders use (lower_gpu with the target's
// options); a lowering that fails refuses it. Each kernel it makes is sized by
// lower::kernel_resources, the rules the printers declare their arrays by, against the target:
// threads per block, shared bytes per block (pipelined buffers with every version, storage_align's
// padding, each array's alignment), local bytes per thread, the widest vector access.
#include <fmt/format.h>

#include <optional>
#include <unordered_map>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "lower/gpu/gpu_lower.h"
#include "lower/gpu/gpu_resources.h"
#include "support/error.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

using schedule::ErrorCode;
using schedule::ScheduleError;
using schedule::Status;

// One top-level nest's thread bindings: constant extents, one axis nested only as the lowering
// can unify it.
class KernelScan {
 public:
  explicit KernelScan(std::string kernel) : kernel_(std::move(kernel)) {}

  std::optional<ScheduleError> error;

  void walk(const ir::Stmt& s) {
    if (error || !s.defined()) return;
    switch (s.kind()) {
      case ir::StmtKind::kFor:
        walk_for(s.as<ir::ForNode>());
        return;
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) walk(c);
        return;
      case ir::StmtKind::kIfThenElse:
        walk(s.as<ir::IfThenElseNode>()->then_case);
        walk(s.as<ir::IfThenElseNode>()->else_case);
        return;
      case ir::StmtKind::kAllocate:
        walk(s.as<ir::AllocateNode>()->body);
        return;
      case ir::StmtKind::kBlockRealize:
        walk_realize(s.as<ir::BlockRealizeNode>());
        return;
      default:
        return;
    }
  }

 private:
  void walk_for(const ir::ForNode* f) {
    auto extent = ir::as_const_int(f->extent);
    if (f->for_kind == ir::ForKind::kThreadBinding) {
      if (!extent) {
        error =
            ScheduleError(ErrorCode::kNonConstantExtent,
                          fmt::format("kernel {}: loop '{}' bound to {} has a non-constant extent",
                                      kernel_, f->loop_var.name(), f->thread_tag),
                          f);
        return;
      }
      for (const ir::ForNode* outer : path_) {
        if (outer->for_kind != ir::ForKind::kThreadBinding || outer->thread_tag != f->thread_tag)
          continue;
        std::optional<int64_t> outer_extent = ir::as_const_int(outer->extent);
        if (outer_extent != extent) {
          error = ScheduleError(ErrorCode::kInvalidLoopKind,
                                fmt::format("kernel {}: {} is bound on nested loops with different "
                                            "extents ('{}' {}, '{}' {})",
                                            kernel_, f->thread_tag, outer->loop_var.name(),
                                            outer_extent ? std::to_string(*outer_extent) : "?",
                                            f->loop_var.name(), *extent),
                                f);
          return;
        }
        if (uses_outer(f->body, outer->loop_var.get())) {
          error = ScheduleError(ErrorCode::kInvalidLoopKind,
                                fmt::format("kernel {}: {} is bound on nested loops '{}' and '{}' "
                                            "and the inner nest uses '{}' "
                                            "(both loops become one thread index)",
                                            kernel_, f->thread_tag, outer->loop_var.name(),
                                            f->loop_var.name(), outer->loop_var.name()),
                                f);
          return;
        }
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
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      bindings_[b->iter_vars[i].var.get()] = values[i];
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

  std::string kernel_;
  std::vector<const ir::ForNode*> path_;
  std::unordered_map<const ir::VarNode*, ir::Expr> bindings_;
};

class VerifyGPUCode : public Postproc {
 public:
  std::string name() const override { return "VerifyGPUCode"; }
  void initialize(const TuneContext& context) override { target_ = context.target; }

  Status apply(schedule::Schedule& sch) override {
    if (!target_.is_gpu()) return schedule::ok_status();
    const ir::BlockNode* root = sch.state().root()->as_block();
    if (const ir::BlockNode* b = unbound_block(root->body, false))
      return ScheduleError(ErrorCode::kInvalidLoopKind,
                           fmt::format("block '{}' is not bound to GPU threads", b->name));
    std::vector<ir::Stmt> tops = {root->body};
    if (const auto* seq = root->body.as<ir::SeqStmtNode>()) tops = seq->seq;
    int index = 0;
    for (const ir::Stmt& top : tops) {
      if (!has_thread_binding(top)) continue;
      std::string kernel = std::to_string(index++);
      if (const auto* f = top.as<ir::ForNode>())
        kernel += fmt::format(" (loop '{}')", f->loop_var.name());
      KernelScan scan(kernel);
      scan.walk(top);
      if (scan.error) return *scan.error;
    }
    lower::GpuProgram program;
    try {
      program = lower::lower_gpu(
          sch.func(), {},
          lower::GpuLowerOptions::for_target(target_.kind, target_.compute_capability()));
    } catch (const Error& e) {
      std::string why = e.what();
      return ScheduleError(ErrorCode::kUnsupported, fmt::format("the GPU lowering refuses it: {}",
                                                                why.substr(0, why.find('\n'))));
    }
    for (const lower::GpuKernel& k : program.kernels)
      if (Status s = check_kernel(k); !s) return s;
    return schedule::ok_status();
  }

 private:
  static bool has_thread_binding(const ir::Stmt& s, bool launch_only = false) {
    bool found = false;
    ir::post_order_visit(s, [&](const ir::Stmt& x) {
      const auto* f = x.as<ir::ForNode>();
      found |=
          f && f->for_kind == ir::ForKind::kThreadBinding && (!launch_only || is_launch_axis(f));
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
        return unbound_block(
            f->body, bound || (f->for_kind == ir::ForKind::kThreadBinding && is_launch_axis(f)));
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
      case ir::StmtKind::kAllocate:
        return unbound_block(s.as<ir::AllocateNode>()->body, bound);
      case ir::StmtKind::kBlockRealize: {
        const ir::BlockNode* b = s.as<ir::BlockRealizeNode>()->block.get();
        if (bound) return nullptr;
        // A block that wraps bound loops (e.g. blockize above the kernel) is checked inside.
        if (!has_thread_binding(b->body, true)) return b;
        const ir::BlockNode* inner = unbound_block(b->init, false);
        return inner ? inner : unbound_block(b->body, false);
      }
      default:
        return nullptr;
    }
  }

  Status check_kernel(const lower::GpuKernel& k) const {
    const lower::GpuKernelResources r = lower::kernel_resources(k);
    if (r.threads > target_.max_threads_per_block) {
      std::string axes;
      for (const lower::ThreadIndex& t : k.indices)
        if (t.tag.starts_with("threadIdx"))
          axes += fmt::format("{}{} {}", axes.empty() ? "" : ", ", t.tag,
                              k.block[static_cast<size_t>(t.tag.back() - 'x')]);
      return ScheduleError(
          ErrorCode::kExceedsLimit,
          fmt::format("kernel {}: {} threads per block ({}) exceed max_threads_per_block {}",
                      k.name, r.threads, axes, target_.max_threads_per_block));
    }
    for (bool shared : {true, false}) {
      const char* scope = shared ? "shared" : "local";
      const int64_t bytes = shared ? r.shared_bytes : r.local_bytes;
      const int64_t limit =
          shared ? target_.max_shared_memory_per_block : target_.max_local_memory_per_block;
      if (bytes > limit)
        return ScheduleError(
            ErrorCode::kExceedsLimit,
            fmt::format("kernel {}: {} bytes of {} memory exceed max_{}_memory_per_block {}",
                        k.name, bytes, scope, scope, limit));
    }
    if (r.vector_bytes > target_.max_vector_bytes)
      return ScheduleError(
          ErrorCode::kInvalidLoopKind,
          fmt::format(
              "kernel {}: a vector load or store moves {} bytes, more than max_vector_bytes {}",
              k.name, r.vector_bytes, target_.max_vector_bytes));
    return schedule::ok_status();
  }

  target::Target target_;
};

}  // namespace

PostprocPtr verify_gpu_code() {
  return std::make_shared<VerifyGPUCode>();
}

}  // namespace tyche::tune
