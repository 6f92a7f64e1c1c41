// insert_thread_barriers: a thread may read a shared buffer only after a barrier that follows
// every write of it by other threads, and write it only after a barrier that follows their reads.
// Walking a kernel's body in program order, the pass keeps the shared buffers read and written
// since the last barrier; a statement that reads one of the written (or writes one of the read)
// gets a barrier before it. A loop's body is walked again from the state its end leaves until
// nothing changes, so a barrier also separates one iteration's reads from the next one's writes.
//
// A barrier must be reached by all threads of a block: statements under a condition (or in a
// loop whose range) that depends on the thread index or on memory are taken whole; a barrier
// needed inside one of them is an error. Each statement of a store counts as one step: threads
// read and write in it at once only where the program reads other threads' elements than those
// it writes (the tree of a cross-thread reduction), which the IR's schedules ensure.
//
// A barrier already in the body (a software-pipelined loop's, gpu_software_pipeline.cc) counts as
// one; inside that loop the buffers it versions (its annotation names them) need no other.
#include <fmt/format.h>

#include <set>

#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/var_use.h"
#include "lower/gpu/gpu_lower.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

struct SharedAccesses {
  std::set<const ir::BufferNode*> reads, writes;
  bool operator==(const SharedAccesses&) const = default;
  void add(const SharedAccesses& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
  void clear() {
    reads.clear();
    writes.clear();
  }
  // A barrier is needed between `*this` (earlier) and `next`.
  bool conflicts(const SharedAccesses& next) const {
    for (const ir::BufferNode* b : next.reads)
      if (writes.count(b)) return true;
    for (const ir::BufferNode* b : next.writes)
      if (reads.count(b)) return true;
    return false;
  }
  const ir::BufferNode* any() const {
    return !writes.empty() ? *writes.begin() : reads.empty() ? nullptr : *reads.begin();
  }
};

bool is_shared(const ir::Buffer& b) {
  return b->scope.starts_with("shared");
}

// Shared buffers whose accesses need no barrier from this pass: a software-pipelined loop's
// versions, fenced by the loop's own barrier (its annotation names them).
using Fenced = std::set<std::string>;

SharedAccesses accesses_of(const ir::Stmt& s, const Fenced& fenced) {
  struct Collector : ir::StmtExprVisitor {
    const Fenced* fenced;
    SharedAccesses out;
    bool counts(const ir::Buffer& b) const { return is_shared(b) && !fenced->count(b->name); }
    void visit_buffer_load(const ir::BufferLoadNode* n) override {
      if (counts(n->buffer)) out.reads.insert(n->buffer.get());
      StmtExprVisitor::visit_buffer_load(n);
    }
    void visit_buffer_store(const ir::BufferStoreNode* n) override {
      if (counts(n->buffer)) out.writes.insert(n->buffer.get());
      StmtExprVisitor::visit_buffer_store(n);
    }
    void visit_call(const ir::CallNode* n) override {
      // A tensor core's store writes through its memory operand (an element, not a read).
      // So does an asynchronous copy (its data is there once the thread waited for it).
      if (n->op == ir::CallOp::kWarpMatrixStore || n->op == ir::CallOp::kAsyncCopy) {
        if (auto* m = n->args[0].as<ir::BufferLoadNode>(); m && counts(m->buffer))
          out.writes.insert(m->buffer.get());
        for (size_t a = 1; a < n->args.size(); ++a) visit_expr(n->args[a]);
        return;
      }
      StmtExprVisitor::visit_call(n);
    }
  } c;
  c.fenced = &fenced;
  c.visit_stmt(s);
  return c.out;
}

Fenced pipelined_buffers(const ir::ForNode* f) {
  Fenced out;
  auto it = f->annotations.find(ir::ann::kPipelinedSharedBuffers);
  const std::string* names =
      it == f->annotations.end() ? nullptr : std::get_if<std::string>(&it->second);
  for (size_t at = 0; names && at <= names->size();) {
    size_t comma = std::min(names->find(',', at), names->size());
    if (comma > at) out.insert(names->substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

ir::Stmt barrier() {
  return ir::evaluate(ir::call(ir::CallOp::kThreadBarrier, {}));
}

class BarrierInserter {
 public:
  explicit BarrierInserter(ir::VarSet thread_vars) : thread_vars_(std::move(thread_vars)) {}

  ir::Stmt run(const ir::Stmt& body) {
    SharedAccesses state;
    return visit(body, state);
  }

 private:
  bool uniform(const ir::Expr& e) const {
    return !ir::uses_any(e, thread_vars_) && !ir::loads_buffer(e);
  }

  ir::Stmt visit(const ir::Stmt& s, SharedAccesses& state) {
    switch (s.kind()) {
      case ir::StmtKind::kSeqStmt: {
        std::vector<ir::Stmt> out;
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) out.push_back(visit(c, state));
        return ir::seq(std::move(out));
      }
      case ir::StmtKind::kAllocate: {
        auto* a = s.as<ir::AllocateNode>();
        return ir::allocate(a->buffer, visit(a->body, state));
      }
      case ir::StmtKind::kIfThenElse: {
        auto* n = s.as<ir::IfThenElseNode>();
        if (!uniform(n->condition)) return whole(s, state);
        SharedAccesses other = state;
        ir::Stmt then_case = visit(n->then_case, state);
        ir::Stmt else_case = n->else_case.defined() ? visit(n->else_case, other) : ir::Stmt();
        state.add(other);
        return ir::if_then_else(n->condition, then_case, else_case);
      }
      case ir::StmtKind::kFor: {
        auto* f = s.as<ir::ForNode>();
        if (!uniform(f->min) || !uniform(f->extent)) return whole(s, state);
        Fenced outside = fenced_;
        for (const std::string& b : pipelined_buffers(f)) fenced_.insert(b);
        // A barrier the loop's first statements need goes before the loop, not into each iteration.
        std::vector<ir::Stmt> before;
        if (state.conflicts(accesses_of(s, fenced_))) {
          before.push_back(barrier());
          state.clear();
        }
        SharedAccesses entry = state;
        for (int round = 0;; ++round) {
          SharedAccesses end = entry;
          ir::Stmt body = visit(f->body, end);
          SharedAccesses next = entry;
          next.add(end);
          if (next == entry || round == 8) {
            state = next;
            if (!before.empty() && starts_with_barrier(body))
              before.clear();  // the body's own serves both
            before.push_back(ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, body,
                                          f->thread_tag, f->annotations));
            fenced_ = std::move(outside);
            return ir::seq(std::move(before));
          }
          entry = next;
        }
      }
      default: {              // a store or an evaluation: one step
        if (is_barrier(s)) {  // one already there (a software pipeline's)
          state.clear();
          return s;
        }
        SharedAccesses a = accesses_of(s, fenced_);
        if (!state.conflicts(a)) {
          state.add(a);
          return s;
        }
        state = a;
        return ir::seq({barrier(), s});
      }
    }
  }

  // A statement only some threads may run: a barrier before it if needed, none inside.
  ir::Stmt whole(const ir::Stmt& s, SharedAccesses& state) {
    bool needs_barrier = false;
    for (const ir::Stmt& part : parts(s)) {
      SharedAccesses inside;
      needs_barrier |= contains_barrier(visit(part, inside));
    }
    if (needs_barrier) {
      SharedAccesses all = accesses_of(s, fenced_);
      throw Error(
          fmt::format("GPU lowering: shared buffer '{}' is written and read by different threads "
                      "under a condition on the "
                      "thread index, where not every thread can wait at a barrier",
                      all.any() ? all.any()->name : "?"));
    }
    SharedAccesses a = accesses_of(s, fenced_);
    if (state.conflicts(a)) {
      state = a;
      return ir::seq({barrier(), s});
    }
    state.add(a);
    return s;
  }
  // What runs of `s` from a fresh state: each branch of an if; two iterations of a loop (what one
  // leaves, the next meets).
  static std::vector<ir::Stmt> parts(const ir::Stmt& s) {
    if (auto* n = s.as<ir::IfThenElseNode>()) {
      std::vector<ir::Stmt> out{n->then_case};
      if (n->else_case.defined()) out.push_back(n->else_case);
      return out;
    }
    auto* f = s.as<ir::ForNode>();
    return {ir::seq({f->body, f->body})};
  }
  static bool is_barrier(const ir::Stmt& s) {
    auto* e = s.as<ir::EvaluateNode>();
    auto* c = e ? e->value.as<ir::CallNode>() : nullptr;
    return c && c->op == ir::CallOp::kThreadBarrier;
  }
  static bool starts_with_barrier(const ir::Stmt& s) {
    if (auto* q = s.as<ir::SeqStmtNode>())
      return !q->seq.empty() && starts_with_barrier(q->seq.front());
    if (auto* a = s.as<ir::AllocateNode>()) return starts_with_barrier(a->body);
    return is_barrier(s);
  }
  static bool contains_barrier(const ir::Stmt& s) {
    bool found = false;
    ir::post_order_visit(s, [&](const ir::Stmt& x) { found |= is_barrier(x); });
    return found;
  }

  ir::VarSet thread_vars_;
  Fenced fenced_;
};

// The kernels' bodies: below the launch loops (bind_gpu_threads' nests).
class KernelFinder : public ir::StmtExprMutator {
 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (n->for_kind != ir::ForKind::kThreadBinding) return StmtExprMutator::mutate_for(n, self);
    if (n->thread_tag.starts_with("threadIdx")) thread_vars_.insert(n->loop_var.get());
    ir::Stmt body = n->body;
    if (auto* inner = body.as<ir::ForNode>();
        inner && inner->for_kind == ir::ForKind::kThreadBinding) {
      body = mutate_stmt(body);
    } else {
      body = BarrierInserter(thread_vars_).run(body);
      thread_vars_.clear();
    }
    return ir::for_loop(n->loop_var, n->min, n->extent, n->for_kind, body, n->thread_tag,
                        n->annotations);
  }

 private:
  ir::VarSet
      thread_vars_;  // the thread indices of the launch loops entered (block indices are uniform)
};

}  // namespace

ir::PrimFunc insert_thread_barriers(const ir::PrimFunc& func) {
  return func.with_body(KernelFinder().mutate_stmt(func->body));
}

}  // namespace tyche::lower
