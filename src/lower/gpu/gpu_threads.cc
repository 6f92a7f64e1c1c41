// bind_gpu_threads: each kernel (a top-level statement with loops bound to GPU indices) as the
// launch nest the GPU back end prints. In the IR a loop bound to threadIdx.x means "the threads
// of a block share these iterations"; on the GPU every thread runs the whole kernel body, so the
// loop's variable becomes the thread index (plus the loop's min) and the loop goes, guarded by
// `index < extent` when it is shorter than the launch (the longest loop of that tag). Statements
// outside every thread loop run on every thread (their stores write the same values); a vthread
// loop runs in each thread, moved down to the statements that use it (VthreadSinker).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "lower/gpu/gpu_lower.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

constexpr const char* kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                 "threadIdx.x", "threadIdx.y", "threadIdx.z"};

bool is_block_tag(const std::string& tag) {
  return tag.starts_with("blockIdx.");
}
bool is_thread_tag(const std::string& tag) {
  return tag.starts_with("threadIdx.");
}
bool is_vthread_tag(const std::string& tag) {
  return tag.starts_with("vthread");
}

bool binds_gpu_index(const ir::Stmt& s) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Stmt& x) {
    auto* f = x.as<ir::ForNode>();
    found |= f && f->for_kind == ir::ForKind::kThreadBinding && !is_vthread_tag(f->thread_tag);
  });
  return found;
}

int64_t constant_extent(const ir::ForNode* f) {
  auto e = ir::as_const_int(f->extent);
  if (!e || *e < 1)
    throw Error(
        fmt::format("GPU lowering: loop '{}' bound to {} has extent {}, not a positive constant",
                    f->loop_var.name(), f->thread_tag, ir::to_string(f->extent)));
  return *e;
}

// The longest loop of each threadIdx tag in a kernel's body.
std::map<std::string, int64_t> thread_extents(const ir::Stmt& body) {
  std::map<std::string, int64_t> out;
  ir::post_order_visit(body, [&](const ir::Stmt& x) {
    auto* f = x.as<ir::ForNode>();
    if (!f || f->for_kind != ir::ForKind::kThreadBinding || !is_thread_tag(f->thread_tag)) return;
    int64_t& e = out[f->thread_tag];
    e = std::max(e, constant_extent(f));
  });
  return out;
}

// A vthread loop's virtual threads run in one thread, in any interleaving (their iterations are
// independent, as threads' are): the loop moves down to the statements that use its variable, so
// what does not (a cooperative fetch into shared memory, the barriers around it) runs once
// instead of once per virtual thread. A local buffer allocated inside the loop is privatized
// (one copy per virtual thread, indexed by it) as the loop moves below its allocation (TVM's
// InjectVirtualThread does the same).
class VthreadSinker {
 public:
  explicit VthreadSinker(const ir::ForNode* loop) : loop_(loop) {
    auto e = ir::as_const_int(loop->extent);
    if (!e)
      throw Error(fmt::format("GPU lowering: vthread loop '{}' has an extent that is not constant",
                              loop->loop_var.name()));
  }

  ir::Stmt sink(const ir::Stmt& s) {
    const ir::VarNode* v = loop_->loop_var.get();
    if (!ir::stmt_uses_var(s, v)) return s;  // the same for every virtual thread: run once
    if (auto* q = s.as<ir::SeqStmtNode>()) {
      std::vector<ir::Stmt> out;
      for (const ir::Stmt& c : q->seq) out.push_back(sink(c));
      return ir::seq(std::move(out));
    }
    if (auto* f = s.as<ir::ForNode>(); f && !ir::uses_var(f->min, v) && !ir::uses_var(f->extent, v))
      return ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, sink(f->body), f->thread_tag,
                          f->annotations);
    if (auto* i = s.as<ir::IfThenElseNode>(); i && !ir::uses_var(i->condition, v))
      return ir::if_then_else(i->condition, sink(i->then_case),
                              i->else_case.defined() ? sink(i->else_case) : ir::Stmt());
    if (auto* a = s.as<ir::AllocateNode>()) {
      if (a->buffer->scope.starts_with("shared"))
        return ir::allocate(a->buffer, sink(a->body));  // spans the virtual threads
      return privatized(a);
    }
    return wrap(s);
  }

 private:
  ir::Stmt wrap(const ir::Stmt& s) const {
    return ir::for_loop(loop_->loop_var, loop_->min, loop_->extent, ir::ForKind::kUnrolled, s, {},
                        loop_->annotations);
  }

  // One copy of the buffer per virtual thread: [extent, ...shape], indexed by the loop's offset.
  ir::Stmt privatized(const ir::AllocateNode* a) {
    const ir::Buffer& b = a->buffer;
    if (!b->strides.empty()) return wrap(ir::allocate(b, a->body));
    std::vector<ir::Expr> shape{loop_->extent};
    shape.insert(shape.end(), b->shape.begin(), b->shape.end());
    ir::Buffer copies = ir::make_buffer(b->name, b->dtype, shape, b->scope);
    ir::Expr which =
        ir::is_const_int(loop_->min, 0) ? ir::Expr(loop_->loop_var) : loop_->loop_var - loop_->min;
    struct Redirect : ir::StmtExprMutator {
      const ir::BufferNode* from;
      ir::Buffer to;
      ir::Expr which;
      ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
        ir::Expr e = StmtExprMutator::mutate_buffer_load(n, self);
        auto* l = e.as<ir::BufferLoadNode>();
        if (l->buffer.get() != from) return e;
        std::vector<ir::Expr> idx{which};
        idx.insert(idx.end(), l->indices.begin(), l->indices.end());
        return ir::Expr(std::make_shared<ir::BufferLoadNode>(l->dtype, to, idx));
      }
      ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& self) override {
        ir::Stmt st = StmtExprMutator::mutate_buffer_store(n, self);
        auto* w = st.as<ir::BufferStoreNode>();
        if (w->buffer.get() != from) return st;
        std::vector<ir::Expr> idx{which};
        idx.insert(idx.end(), w->indices.begin(), w->indices.end());
        return ir::buffer_store(to, w->value, idx);
      }
    } redirect;
    redirect.from = b.get();
    redirect.to = copies;
    redirect.which = which;
    return ir::allocate(copies, sink(redirect.mutate_stmt(a->body)));
  }

  const ir::ForNode* loop_;
};

// Rewrites one kernel's body: thread loops -> their index, vthreads -> serial loops, buffers
// allocated in the kernel -> shared (hoisted) or local.
class KernelBodyRewriter : public ir::StmtExprMutator {
 public:
  KernelBodyRewriter(const std::map<std::string, int64_t>& launch,
                     const std::map<std::string, ir::Var>& index)
      : launch_(launch), index_(index) {}

  std::vector<ir::Buffer> shared;  // hoisted to the kernel's top, in order of appearance

  // A buffer allocated above the body, outside every thread loop: shared by the block's threads.
  ir::Buffer share(const ir::Buffer& b) {
    ir::Buffer s = b->scope == "shared" ? b : ir::with_scope(b, "shared");
    renamed_[b.get()] = s;
    shared.push_back(s);
    return s;
  }

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (n->for_kind != ir::ForKind::kThreadBinding) return StmtExprMutator::mutate_for(n, self);
    if (is_vthread_tag(n->thread_tag)) return mutate_stmt(VthreadSinker(n).sink(n->body));
    if (is_block_tag(n->thread_tag))
      throw Error(
          fmt::format("GPU lowering: loop '{}' bound to {} lies inside its kernel (below other "
                      "statements or thread loops): "
                      "blockIdx loops must be a kernel's outermost",
                      n->loop_var.name(), n->thread_tag));
    if (!is_thread_tag(n->thread_tag))
      throw Error(fmt::format("GPU lowering: loop '{}' is bound to unknown thread axis '{}'",
                              n->loop_var.name(), n->thread_tag));
    const ir::Var& idx = index_.at(n->thread_tag);
    const int64_t extent = constant_extent(n);
    ir::Expr value = ir::is_const_int(n->min, 0) ? ir::Expr(idx) : idx + n->min;
    const ir::VarNode* var = n->loop_var.get();
    ++thread_depth_;
    ir::Stmt body = mutate_stmt(ir::substitute(
        n->body, [&](const ir::Var& v) { return v.get() == var ? value : ir::Expr(); }));
    --thread_depth_;
    if (extent < launch_.at(n->thread_tag))
      body = ir::if_then_else(idx < ir::make_int(extent), body);
    return body;
  }

  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt&) override {
    const ir::Buffer& b = n->buffer;
    if (b->scope == "local" || ir::is_fragment_scope(b->scope) || b->scope == "warp")
      return ir::allocate(b, mutate_stmt(n->body));
    // A shared buffer spans its block's threads wherever compact_buffers put it; another buffer
    // allocated in a thread loop's iteration is one per thread.
    if (thread_depth_ > 0 && !b->scope.starts_with("shared")) {
      ir::Buffer local = ir::with_scope(b, "local");
      renamed_[b.get()] = local;
      return ir::allocate(local, mutate_stmt(n->body));
    }
    share(b);
    return mutate_stmt(n->body);
  }

  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
    ir::Expr e = StmtExprMutator::mutate_buffer_load(n, self);
    auto* load = e.as<ir::BufferLoadNode>();
    auto it = renamed_.find(load->buffer.get());
    if (it == renamed_.end()) return e;
    return ir::Expr(std::make_shared<ir::BufferLoadNode>(load->dtype, it->second, load->indices));
  }

  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& self) override {
    ir::Stmt s = StmtExprMutator::mutate_buffer_store(n, self);
    auto* store = s.as<ir::BufferStoreNode>();
    auto it = renamed_.find(store->buffer.get());
    if (it == renamed_.end()) return s;
    return ir::buffer_store(it->second, store->value, store->indices);
  }

 private:
  const std::map<std::string, int64_t>& launch_;
  const std::map<std::string, ir::Var>& index_;
  std::unordered_map<const ir::BufferNode*, ir::Buffer> renamed_;
  int thread_depth_ = 0;
};

ir::Stmt bind_kernel(const ir::Stmt& kernel) {
  // The launch prefix: blockIdx loops and the allocations among them.
  std::map<std::string, int64_t> launch;
  std::unordered_map<const ir::VarNode*, std::pair<std::string, ir::Expr>>
      block_vars;  // loop var -> tag, min
  std::vector<ir::Buffer> prefix_allocs;
  ir::Annotations annotations;
  ir::Stmt s = kernel;
  for (;;) {
    if (auto* f = s.as<ir::ForNode>();
        f && f->for_kind == ir::ForKind::kThreadBinding && is_block_tag(f->thread_tag)) {
      if (launch.count(f->thread_tag))
        throw Error(fmt::format("GPU lowering: two nested loops are bound to {}", f->thread_tag));
      launch[f->thread_tag] = constant_extent(f);
      block_vars[f->loop_var.get()] = {f->thread_tag, f->min};
      annotations.insert(f->annotations.begin(), f->annotations.end());
      s = f->body;
    } else if (auto* a = s.as<ir::AllocateNode>()) {
      prefix_allocs.push_back(a->buffer);
      s = a->body;
    } else {
      break;
    }
  }
  for (const auto& [tag, extent] : thread_extents(s)) launch[tag] = extent;
  std::map<std::string, ir::Var> index;
  for (const auto& [tag, extent] : launch) {
    std::string name = tag;
    std::replace(name.begin(), name.end(), '.', '_');
    index.emplace(tag, ir::Var(name, kInt32));
  }
  s = ir::substitute(s, [&](const ir::Var& v) -> ir::Expr {
    auto it = block_vars.find(v.get());
    if (it == block_vars.end()) return ir::Expr();
    const ir::Var& idx = index.at(it->second.first);
    return ir::is_const_int(it->second.second, 0) ? ir::Expr(idx) : idx + it->second.second;
  });
  KernelBodyRewriter rewriter(launch, index);
  for (const ir::Buffer& b : prefix_allocs) rewriter.share(b);
  ir::Stmt body = rewriter.mutate_stmt(s);
  for (auto it = rewriter.shared.rbegin(); it != rewriter.shared.rend(); ++it)
    body = ir::allocate(*it, body);
  for (auto it = std::rbegin(kTags); it != std::rend(kTags); ++it) {
    auto l = launch.find(*it);
    if (l == launch.end()) continue;
    body = ir::for_loop(index.at(*it), ir::make_int(0), ir::make_int(l->second),
                        ir::ForKind::kThreadBinding, body, *it,
                        is_block_tag(*it) ? annotations : ir::Annotations{});
    if (is_block_tag(*it)) annotations.clear();  // on the outermost loop only
  }
  return body;
}

// The function's top: global allocations (intermediates between kernels) and sequences around
// kernels.
ir::Stmt bind_top(const ir::Stmt& s) {
  if (auto* a = s.as<ir::AllocateNode>()) {
    if (a->buffer->scope == "global") return ir::allocate(a->buffer, bind_top(a->body));
    if (a->body.as<ir::SeqStmtNode>())
      throw Error(fmt::format("GPU lowering: {} buffer '{}' is used by several kernels",
                              a->buffer->scope, a->buffer->name));
  }
  if (auto* q = s.as<ir::SeqStmtNode>()) {
    std::vector<ir::Stmt> out;
    for (const ir::Stmt& c : q->seq) out.push_back(bind_top(c));
    return ir::seq(std::move(out));
  }
  if (!binds_gpu_index(s)) {
    std::string what = ir::to_string(s);
    if (auto nl = what.find('\n'); nl != std::string::npos) what = what.substr(0, nl) + " ...";
    throw Error(
        fmt::format("GPU lowering: a statement runs outside every kernel (bind its loops to "
                    "blockIdx/threadIdx, or let "
                    "AutoBind do it): {}",
                    what));
  }
  auto* f = s.as<ir::ForNode>();
  if (f && f->for_kind != ir::ForKind::kThreadBinding &&
      ir::is_const_int(f->extent, 1)) {  // a unit loop: its min
    const ir::VarNode* var = f->loop_var.get();
    return bind_top(ir::substitute(
        f->body, [&](const ir::Var& v) { return v.get() == var ? f->min : ir::Expr(); }));
  }
  if (f && f->for_kind != ir::ForKind::kThreadBinding)
    throw Error(
        fmt::format("GPU lowering: loop '{}' encloses a kernel: a kernel's outermost loops must be "
                    "bound to blockIdx",
                    f->loop_var.name()));
  return bind_kernel(s);
}

}  // namespace

ir::PrimFunc bind_gpu_threads(const ir::PrimFunc& func) {
  return func.with_body(bind_top(func->body));
}

}  // namespace tyche::lower
