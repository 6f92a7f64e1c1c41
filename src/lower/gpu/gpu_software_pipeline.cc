// pipeline_shared_copies: a loop annotated software_pipeline_stages = S (>= 2) keeps S copies of
// the shared buffers its leading statements fill, so that the copy of iteration k + S - 1 is
// under way while iteration k computes (the global -> shared staging of a tiled matrix product).
//
// The loop's body is its producers (the statements that copy into shared buffers from memory the
// statements before them do not write, reading no shared buffer) and its consumers (the rest,
// which may not write what the producers write; the buffers allocated in the body are theirs).
// It becomes
//   producer(min + p) into slot p                          for p < S - 1 (and < the extent)
//   for k: barrier
//          if k + S - 1 < end: producer(k + S - 1) into slot (k - min + S - 1) % S
//          consumer(k) from slot (k - min) % S
// where a slot is the buffer's old extent rounded up to 64 bytes. The one barrier per iteration
// does both jobs (as CUTLASS's multistage loops): every thread's copy into slot k is done before
// anyone reads it, and everyone's reads of slot k - 1 are done before the copy that reuses it is
// issued. The loop names the buffers (tyche.pipelined_shared_buffers) so that
// insert_thread_barriers, run after, adds none for them.
//
// With async_copy (CUDA, sm_80 and later) a producer's plain copy global -> shared of 4, 8 or 16
// aligned bytes becomes cp.async, each stage's copies one commit group; before its barrier an
// iteration waits for its own stage's group only (S - 2 later ones may stay in flight); other
// stores stay synchronous, which the barrier covers as well.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "arith/analyzer.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "lower/gpu/gpu_lower.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

bool is_shared(const ir::BufferNode* b) {
  return b->scope.starts_with("shared");
}

using BufferSet = std::unordered_set<const ir::BufferNode*>;

bool intersects(const BufferSet& a, const BufferSet& b) {
  return std::any_of(a.begin(), a.end(), [&](const ir::BufferNode* x) { return b.count(x) > 0; });
}
BufferSet shared_of(const BufferSet& s) {
  BufferSet out;
  for (const ir::BufferNode* b : s)
    if (is_shared(b)) out.insert(b);
  return out;
}

struct Touched {
  BufferSet reads, writes;
  bool sync = false;  // a barrier or a warp-wide instruction
};

Touched touched(const ir::Stmt& s) {
  struct Collector : ir::StmtExprVisitor {
    Touched out;
    void visit_buffer_load(const ir::BufferLoadNode* n) override {
      out.reads.insert(n->buffer.get());
      StmtExprVisitor::visit_buffer_load(n);
    }
    void visit_buffer_store(const ir::BufferStoreNode* n) override {
      out.writes.insert(n->buffer.get());
      StmtExprVisitor::visit_buffer_store(n);
    }
    void visit_call(const ir::CallNode* n) override {
      out.sync |= ir::is_gpu_call(n->op);
      // The tensor-core instructions write their first operand (a fragment, or a store's memory).
      if (n->op >= ir::CallOp::kWarpMatrixFill && n->op <= ir::CallOp::kWarpMatrixStore)
        if (auto* l = n->args[0].as<ir::BufferLoadNode>()) out.writes.insert(l->buffer.get());
      StmtExprVisitor::visit_call(n);
    }
  } c;
  c.visit_stmt(s);
  return c.out;
}

std::vector<ir::Stmt> statements(const ir::Stmt& s) {
  if (auto* q = s.as<ir::SeqStmtNode>()) return q->seq;
  return {s};
}

ir::Stmt async_call(ir::CallOp op, std::vector<ir::Expr> args = {}) {
  return ir::evaluate(ir::call(op, std::move(args)));
}

// Buffer accesses of the pipelined buffers moved into slot `slot` of their multi-versioned copy.
class SlotRewriter : public ir::StmtExprMutator {
 public:
  struct Versioned {
    ir::Buffer buffer;
    int64_t slot_elements;
  };
  SlotRewriter(const std::unordered_map<const ir::BufferNode*, Versioned>& versions, ir::Expr slot)
      : versions_(versions), slot_(std::move(slot)) {}

 protected:
  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& e) override {
    ir::Expr inner = StmtExprMutator::mutate_buffer_load(n, e);
    auto it = versions_.find(n->buffer.get());
    if (it == versions_.end()) return inner;
    auto* l = inner.as<ir::BufferLoadNode>();
    return ir::buffer_load(it->second.buffer, {offset(l->indices.at(0), it->second)});
  }
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& s) override {
    ir::Stmt inner = StmtExprMutator::mutate_buffer_store(n, s);
    auto it = versions_.find(n->buffer.get());
    if (it == versions_.end()) return inner;
    auto* st = inner.as<ir::BufferStoreNode>();
    return ir::buffer_store(it->second.buffer, st->value, {offset(st->indices.at(0), it->second)});
  }

 private:
  ir::Expr offset(const ir::Expr& index, const Versioned& v) const {
    const DataType t = index.dtype().element_of();
    ir::Expr base = ir::cast(t, slot_) * ir::make_int(v.slot_elements, t);
    if (auto* r = index.as<ir::RampNode>()) return ir::ramp(r->base + base, r->stride, r->lanes);
    if (index.dtype().lanes() > 1) return index + ir::broadcast(base, index.dtype().lanes());
    return index + base;
  }

  const std::unordered_map<const ir::BufferNode*, Versioned>& versions_;
  ir::Expr slot_;
};

// A producer's copies global -> shared as cp.async where the bytes and alignment allow.
class AsyncCopies : public ir::StmtExprMutator {
 protected:
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& s) override {
    auto* src = n->value.as<ir::BufferLoadNode>();
    if (!is_shared(n->buffer.get()) || !src || is_shared(src->buffer.get()) ||
        src->buffer->dtype != n->buffer->dtype)
      return s;
    const int lanes = n->value.dtype().lanes();
    const int64_t bytes = int64_t{lanes} * n->buffer->dtype.bytes();
    if (bytes != 4 && bytes != 8 && bytes != 16) return s;
    ir::Expr dst_at = first(n->indices.at(0), lanes), src_at = first(src->indices.at(0), lanes);
    if (!dst_at.defined() || !src_at.defined() ||
        !aligned(dst_at, bytes / n->buffer->dtype.bytes()) ||
        !aligned(src_at, bytes / n->buffer->dtype.bytes()))
      return s;
    return async_call(ir::CallOp::kAsyncCopy,
                      {ir::buffer_load(n->buffer, {dst_at}), ir::buffer_load(src->buffer, {src_at}),
                       ir::make_int(bytes)});
  }

 private:
  // The first element of a contiguous index; undefined if it is not contiguous.
  static ir::Expr first(const ir::Expr& index, int lanes) {
    if (lanes == 1) return index;
    auto* r = index.as<ir::RampNode>();
    return r && ir::is_const_int(r->stride, 1) ? r->base : ir::Expr();
  }
  bool aligned(const ir::Expr& at, int64_t elements) {
    const DataType t = at.dtype();
    return analyzer_.can_prove(ir::floormod(at, ir::make_int(elements, t)) == ir::make_int(0, t));
  }
  arith::Analyzer analyzer_;
};

class Pipeliner : public ir::StmtExprMutator {
 public:
  explicit Pipeliner(bool async_copy) : async_copy_(async_copy) {}

  // The multi-versioned buffers, by the buffer they replace.
  std::unordered_map<const ir::BufferNode*, SlotRewriter::Versioned> versions;

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& s) override {
    auto it = n->annotations.find(ir::ann::kSoftwarePipelineStages);
    if (it == n->annotations.end()) return StmtExprMutator::mutate_for(n, s);
    const int64_t* stages = std::get_if<int64_t>(&it->second);
    if (!stages || *stages < 1 || *stages > 8)
      throw Error(
          fmt::format("GPU lowering: loop '{}' asks for {} software pipeline stages (1 to 8)",
                      n->loop_var.name(), ir::to_string(it->second)));
    ir::Annotations rest = n->annotations;
    rest.erase(ir::ann::kSoftwarePipelineStages);
    ir::Stmt body = mutate_stmt(n->body);
    if (*stages == 1)
      return ir::for_loop(n->loop_var, n->min, n->extent, n->for_kind, body, n->thread_tag, rest);
    return pipeline(n, body, *stages, rest);
  }

 private:
  ir::Stmt pipeline(const ir::ForNode* n, const ir::Stmt& body, int64_t stages,
                    const ir::Annotations& annotations) {
    auto refuse = [&](const std::string& why) {
      return Error(fmt::format("GPU lowering: loop '{}' cannot be software-pipelined: {}",
                               n->loop_var.name(), why));
    };
    if (n->for_kind != ir::ForKind::kSerial) throw refuse("it is not a serial loop");
    // Buffers allocated per iteration (the fragments) wrap the new body: copies never use them.
    std::vector<ir::Buffer> allocated;
    BufferSet per_iteration;
    ir::Stmt inner = body;
    while (auto* a = inner.as<ir::AllocateNode>()) {
      allocated.push_back(a->buffer);
      per_iteration.insert(a->buffer.get());
      inner = a->body;
    }
    // A producer: a copy into shared memory from memory no earlier statement writes, of buffers no
    // earlier statement touches (so it may move before them).
    std::vector<ir::Stmt> producers, consumers;
    std::vector<Touched> before;
    BufferSet staged;
    for (const ir::Stmt& st : statements(inner)) {
      Touched t = touched(st);
      const BufferSet shared_writes = shared_of(t.writes);
      bool producer = !t.writes.empty() && shared_writes.size() == t.writes.size() &&
                      shared_of(t.reads).empty() && !t.sync && !intersects(t.reads, per_iteration);
      for (const Touched& c : before)
        producer = producer && !intersects(t.writes, c.reads) && !intersects(t.writes, c.writes) &&
                   !intersects(t.reads, c.writes);
      if (producer) {
        producers.push_back(st);
        staged.insert(shared_writes.begin(), shared_writes.end());
        continue;
      }
      for (const ir::BufferNode* b : shared_writes)
        if (staged.count(b))
          throw refuse(fmt::format("shared buffer '{}' is written after its copy", b->name));
      consumers.push_back(st);
      before.push_back(std::move(t));
    }
    if (producers.empty()) throw refuse("its body copies nothing into shared memory");
    if (consumers.empty()) throw refuse("nothing in its body reads the copies");
    for (const ir::BufferNode* b : staged) {
      if (versions.count(b))
        throw refuse(fmt::format("shared buffer '{}' is pipelined by another loop", b->name));
      const int64_t bytes = b->dtype.bytes();
      const int64_t slot =
          ir::pipeline_version_bytes(ir::as_const_int(b->shape.at(0)).value() * bytes) / bytes;
      ir::Buffer multi =
          ir::make_buffer(b->name, b->dtype, {ir::make_int(slot * stages)}, b->scope);
      versions[b] = {multi, slot};
    }
    const DataType t = n->loop_var.dtype();
    const ir::Expr end = n->min + n->extent, ahead = ir::make_int(stages - 1, t);
    auto stage = [&](const std::vector<ir::Stmt>& part, const ir::Expr& iteration,
                     const ir::Expr& slot) {
      ir::Stmt s = ir::substitute(ir::seq(part), [&](const ir::Var& v) {
        return v.same_as(n->loop_var) ? iteration : ir::Expr();
      });
      s = SlotRewriter(versions, slot).mutate_stmt(s);
      return async_copy_ ? AsyncCopies().mutate_stmt(s) : s;
    };
    std::vector<ir::Stmt> out;
    arith::Analyzer analyzer;
    for (int64_t p = 0; p + 1 < stages; ++p) {
      ir::Expr iteration = n->min + ir::make_int(p, t);
      ir::Stmt copy = stage(producers, iteration, ir::make_int(p, t));
      ir::Expr inside = analyzer.simplify(ir::make_int(p, t) < n->extent);
      if (!ir::is_const_int(inside, 1)) copy = ir::if_then_else(inside, copy);
      out.push_back(copy);
      if (async_copy_) out.push_back(async_call(ir::CallOp::kAsyncCommit));
    }
    const ir::Var& k = n->loop_var;
    std::vector<ir::Stmt> iteration;
    if (async_copy_)
      iteration.push_back(async_call(ir::CallOp::kAsyncWait, {ir::make_int(stages - 2)}));
    iteration.push_back(ir::evaluate(ir::call(ir::CallOp::kThreadBarrier, {})));
    ir::Stmt next =
        stage(producers, k + ahead, ir::floormod(k - n->min + ahead, ir::make_int(stages, t)));
    iteration.push_back(ir::if_then_else(k + ahead < end, next));
    if (async_copy_) iteration.push_back(async_call(ir::CallOp::kAsyncCommit));
    ir::Stmt now = ir::seq(consumers);
    iteration.push_back(
        SlotRewriter(versions, ir::floormod(k - n->min, ir::make_int(stages, t))).mutate_stmt(now));
    ir::Stmt loop_body = ir::seq(std::move(iteration));
    for (size_t a = allocated.size(); a-- > 0;) loop_body = ir::allocate(allocated[a], loop_body);
    std::vector<std::string> names;
    for (const ir::BufferNode* b : staged) names.push_back(b->name);
    std::sort(names.begin(), names.end());
    ir::Annotations fenced = annotations;
    fenced[ir::ann::kPipelinedSharedBuffers] = fmt::format("{}", fmt::join(names, ","));
    out.push_back(
        ir::for_loop(k, n->min, n->extent, n->for_kind, loop_body, n->thread_tag, fenced));
    if (async_copy_) out.push_back(async_call(ir::CallOp::kAsyncWait, {ir::make_int(0)}));
    return ir::seq(std::move(out));
  }

  bool async_copy_;
};

// The pipelined buffers' allocations take their multi-versioned copies; any access left outside
// the pipelined loop is an error (it would read one version of S).
class AllocationRewriter : public ir::StmtExprMutator {
 public:
  explicit AllocationRewriter(
      const std::unordered_map<const ir::BufferNode*, SlotRewriter::Versioned>& versions)
      : versions_(versions) {}

 protected:
  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt& s) override {
    auto it = versions_.find(n->buffer.get());
    if (it == versions_.end()) return StmtExprMutator::mutate_allocate(n, s);
    return ir::allocate(it->second.buffer, mutate_stmt(n->body));
  }
  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& e) override {
    refuse(n->buffer);
    return StmtExprMutator::mutate_buffer_load(n, e);
  }
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& s) override {
    refuse(n->buffer);
    return StmtExprMutator::mutate_buffer_store(n, s);
  }

 private:
  void refuse(const ir::Buffer& b) const {
    if (versions_.count(b.get()))
      throw Error(
          fmt::format("GPU lowering: shared buffer '{}' is software-pipelined but also accessed "
                      "outside its loop",
                      b->name));
  }
  const std::unordered_map<const ir::BufferNode*, SlotRewriter::Versioned>& versions_;
};

}  // namespace

ir::PrimFunc pipeline_shared_copies(const ir::PrimFunc& func, bool async_copy) {
  Pipeliner pipeliner(async_copy);
  ir::Stmt body = pipeliner.mutate_stmt(func->body);
  if (pipeliner.versions.empty()) return func.with_body(body);
  return func.with_body(AllocationRewriter(pipeliner.versions).mutate_stmt(body));
}

}  // namespace tyche::lower
