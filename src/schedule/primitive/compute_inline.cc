// compute_inline and reverse_compute_inline (TVM semantics): fold a complete block's
// element-wise computation into the blocks that read it, or a consumer's computation into its
// single producer, and drop the intermediate buffer. Both rebuild the subtree of the block that
// allocates the buffer in one replace, so the consumers' (or the producer's) handles continue.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

namespace {

using VarSet = std::unordered_set<const ir::VarNode*>;

// For a store/load whose indices are the block's iter vars, each exactly once: the position of
// the iter var each index names. nullopt otherwise.
std::optional<std::vector<size_t>> iter_var_positions(const std::vector<ir::Expr>& indices,
                                                      const ir::BlockNode* b) {
  if (indices.size() != b->iter_vars.size()) return std::nullopt;
  std::vector<size_t> pos;
  std::vector<bool> seen(b->iter_vars.size(), false);
  for (const ir::Expr& idx : indices) {
    auto* v = idx.as<ir::VarNode>();
    if (!v) return std::nullopt;
    auto it = std::find_if(b->iter_vars.begin(), b->iter_vars.end(),
                           [&](const ir::IterVar& iv) { return iv.var.get() == v; });
    if (it == b->iter_vars.end()) return std::nullopt;
    size_t p = static_cast<size_t>(it - b->iter_vars.begin());
    if (seen[p]) return std::nullopt;
    seen[p] = true;
    pos.push_back(p);
  }
  return pos;
}

VarSet iter_var_set(const ir::BlockNode* b) {
  VarSet s;
  for (const ir::IterVar& iv : b->iter_vars) s.insert(iv.var.get());
  return s;
}

// Loads and free variables of an expression (let-bound variables are not free).
class ExprScan : public ir::StmtExprVisitor {
 public:
  std::vector<const ir::BufferLoadNode*> loads;
  VarSet free_vars;

 protected:
  void visit_var(const ir::VarNode* v) override {
    if (!bound_.count(v)) free_vars.insert(v);
  }
  void visit_let(const ir::LetNode* n) override {
    visit_expr(n->value);
    bound_.insert(n->var.get());
    visit_expr(n->body);
  }
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    loads.push_back(n);
    StmtExprVisitor::visit_buffer_load(n);
  }

 private:
  VarSet bound_;
};

ExprScan scan(const ir::BufferStoreNode* store) {
  ExprScan s;
  s.visit_expr(store->value);
  for (const ir::Expr& i : store->indices) s.visit_expr(i);
  return s;
}

bool uses_only(const VarSet& used, const VarSet& allowed) {
  return std::all_of(used.begin(), used.end(),
                     [&](const ir::VarNode* v) { return allowed.count(v) > 0; });
}

// Every load and store under a statement, in program order, with its innermost enclosing block.
class AccessWalker : public ir::StmtExprVisitor {
 public:
  using Callback =
      std::function<void(const ir::BlockNode* block, const ir::BufferNode* buffer, bool is_store)>;
  explicit AccessWalker(Callback cb) : cb_(std::move(cb)) {}

 protected:
  void visit_block(const ir::BlockNode* n) override {
    blocks_.push_back(n);
    if (n->init.defined()) visit_stmt(n->init);
    visit_stmt(n->body);
    blocks_.pop_back();
  }
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    cb_(blocks_.empty() ? nullptr : blocks_.back(), n->buffer.get(), false);
    StmtExprVisitor::visit_buffer_load(n);
  }
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    StmtExprVisitor::visit_buffer_store(n);
    cb_(blocks_.empty() ? nullptr : blocks_.back(), n->buffer.get(), true);
  }

 private:
  Callback cb_;
  std::vector<const ir::BlockNode*> blocks_;
};

// The nearest block at or above `sref` that allocates `buffer`.
SRefNode* alloc_site(const SRefNode* sref, const ir::BufferNode* buffer) {
  for (SRefNode* p = const_cast<SRefNode*>(sref); p; p = p->parent) {
    if (auto* b = p->as_block())
      for (const ir::Buffer& a : b->alloc_buffers)
        if (a.get() == buffer) return p;
  }
  return nullptr;
}

bool mentions(const std::vector<ir::BufferRegion>& regions, const ir::BufferNode* buffer) {
  return std::any_of(regions.begin(), regions.end(),
                     [&](const ir::BufferRegion& r) { return r.buffer.get() == buffer; });
}

// Rebuilds the subtree of the allocating block: deletes one realize (and the loops, branches and
// sequences it leaves empty), optionally swaps another realize, rewrites loads of a buffer,
// drops the buffer's allocation, and recomputes the access regions of every block that changed.
class ScopeRewriter : public ir::StmtExprMutator {
 public:
  const ir::StmtNode* remove = nullptr;
  const ir::StmtNode* swap_from = nullptr;
  ir::Stmt swap_to;
  const ir::BufferNode* buffer = nullptr;  // rewritten loads and dropped allocation
  std::function<ir::Expr(const ir::BufferLoadNode*)> on_load;
  const ir::BlockNode* alloc_block = nullptr;
  bool alloc_is_func_root = false;
  BlockReuse reuse;

  ir::Stmt mutate_stmt(const ir::Stmt& s) override {
    if (s.get() == remove) {
      structural_ = true;
      return ir::Stmt();
    }
    if (s.get() == swap_from) {
      structural_ = true;
      return swap_to;
    }
    return StmtExprMutator::mutate_stmt(s);
  }

 protected:
  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
    ir::Expr e = StmtExprMutator::mutate_buffer_load(n, self);
    if (!on_load || n->buffer.get() != buffer) return e;
    return on_load(e.as<ir::BufferLoadNode>());
  }
  ir::Stmt mutate_seq(const ir::SeqStmtNode* n, const ir::Stmt& self) override {
    std::vector<ir::Stmt> out;
    bool changed = false;
    for (const ir::Stmt& s : n->seq) {
      ir::Stmt m = mutate_stmt(s);
      changed |= !m.same_as(s);
      if (m.defined()) out.push_back(m);
    }
    if (!changed) return self;
    if (out.empty()) return ir::Stmt();
    return ir::seq(std::move(out));
  }
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    ir::Stmt body = mutate_stmt(n->body);
    if (!body.defined()) return ir::Stmt();
    ir::Expr mn = mutate_expr(n->min), ext = mutate_expr(n->extent);
    if (body.same_as(n->body) && mn.same_as(n->min) && ext.same_as(n->extent)) return self;
    return ir::for_loop(n->loop_var, mn, ext, n->for_kind, body, n->thread_tag, n->annotations);
  }
  ir::Stmt mutate_if(const ir::IfThenElseNode* n, const ir::Stmt& self) override {
    ir::Expr c = mutate_expr(n->condition);
    ir::Stmt t = mutate_stmt(n->then_case);
    ir::Stmt e = n->else_case.defined() ? mutate_stmt(n->else_case) : ir::Stmt();
    if (!t.defined() && !e.defined()) return ir::Stmt();
    if (c.same_as(n->condition) && t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
    if (!t.defined()) t = ir::evaluate(ir::make_int(0));
    return ir::if_then_else(c, t, e);
  }
  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt& self) override {
    ir::Stmt body = mutate_stmt(n->body);
    if (!body.defined()) return ir::Stmt();
    return body.same_as(n->body) ? self : ir::allocate(n->buffer, body);
  }
  ir::Stmt mutate_block(const ir::BlockNode* n, const ir::Stmt& self) override {
    bool outer_structural = structural_;
    structural_ = false;
    ir::Stmt init = n->init.defined() ? mutate_stmt(n->init) : ir::Stmt();
    ir::Stmt body = mutate_stmt(n->body);
    bool structural = structural_;
    structural_ = outer_structural || structural;
    bool is_alloc = n == alloc_block;
    bool stale_regions = mentions(n->reads, buffer) || mentions(n->writes, buffer);
    if (init.same_as(n->init) && body.same_as(n->body) && !is_alloc && !stale_regions) return self;
    if (!body.defined()) body = ir::evaluate(ir::make_int(0));
    if (n->init.defined() && !init.defined()) init = ir::evaluate(ir::make_int(0));
    std::vector<ir::Buffer> allocs;
    for (const ir::Buffer& a : n->alloc_buffers)
      if (!is_alloc || a.get() != buffer) allocs.push_back(a);
    ir::Block block = ir::make_block(n->name, n->iter_vars, n->reads, n->writes, init, body, allocs,
                                     n->annotations);
    if (!(is_alloc && alloc_is_func_root)) {
      arith::Analyzer analyzer;
      arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
      // Writes change only where a producer was removed or rewritten below this block.
      bool new_writes = structural || mentions(n->writes, buffer);
      block = ir::make_block(n->name, n->iter_vars, regions.reads,
                             new_writes ? regions.writes : n->writes, init, body, allocs,
                             n->annotations);
    }
    reuse[block.get()] = n;
    return block;
  }

 private:
  bool structural_ = false;  // the removed/swapped realize was met under the current block
};

ScheduleError not_inlinable(ErrorCode code, const ir::BlockNode* b, const std::string& why) {
  return ScheduleError(code, fmt::format("cannot inline block '{}': {}", b->name, why), b);
}

ScheduleError not_reverse_inlinable(ErrorCode code, const ir::BlockNode* b,
                                    const std::string& why) {
  return ScheduleError(code, fmt::format("cannot reverse-inline block '{}': {}", b->name, why), b);
}

bool is_reduction_like(const ir::BlockNode* b) {
  return b->init.defined() ||
         std::any_of(b->iter_vars.begin(), b->iter_vars.end(),
                     [](const ir::IterVar& iv) { return iv.kind == ir::IterKind::kReduce; });
}

// Every block of the subtree under `stmt` that reads `buffer` reads it only inside the producer's
// iteration domain (relaxed over the reader's iter var domains). Needed only when the domain does
// not cover the whole buffer: elsewhere the inlined expression would be evaluated at points the
// producer never computed.
std::optional<ScheduleError> check_reads_covered(const ir::Stmt& stmt,
                                                 const ir::BlockNode* producer,
                                                 const std::vector<size_t>& pos,
                                                 const ir::Buffer& buffer) {
  arith::Analyzer analyzer;
  bool full = buffer->shape.size() == pos.size();
  for (size_t k = 0; k < pos.size() && full; ++k) {
    const ir::Range& dom = producer->iter_vars[pos[k]].dom;
    full = ir::is_const_int(dom.min, 0) && analyzer.can_prove_equal(dom.extent, buffer->shape[k]);
  }
  if (full) return std::nullopt;
  std::optional<ScheduleError> err;
  ir::post_order_visit(stmt, [&](const ir::Stmt& s) {
    auto* b = s.as<ir::BlockNode>();
    if (err || !b || b == producer) return;
    arith::VarRangeMap dom;
    for (const ir::IterVar& iv : b->iter_vars) dom[iv.var] = iv.dom;
    for (const ir::BufferRegion& r : b->reads) {
      if (r.buffer.get() != buffer.get()) continue;
      ir::BufferRegion relaxed = arith::relax_region(r, dom, &analyzer);
      for (size_t k = 0; k < pos.size() && !err; ++k) {
        const ir::Range& pd = producer->iter_vars[pos[k]].dom;
        const ir::Range& rr = relaxed.region[k];
        if (!analyzer.can_prove(rr.min >= pd.min) ||
            !analyzer.can_prove(rr.min + rr.extent <= pd.min + pd.extent))
          err = not_inlinable(ErrorCode::kNotCovered, producer,
                              fmt::format("block '{}' reads '{}' outside the region it computes",
                                          b->name, buffer->name));
      }
    }
  });
  return err;
}

}  // namespace

Status compute_inline(ScheduleState& state, const SRef& block_sref) {
  const ir::BlockNode* producer = block_sref->as_block();
  if (!producer || !block_sref->parent)
    return ScheduleError(ErrorCode::kUnsupported, "cannot inline the root block", block_sref->stmt);
  if (is_reduction_like(producer))
    return ScheduleError(ErrorCode::kIsReduction,
                         fmt::format("cannot inline reduction block '{}'", producer->name),
                         producer);
  auto* store = producer->body.as<ir::BufferStoreNode>();
  if (!store)
    return not_inlinable(ErrorCode::kNotComplete, producer,
                         "its body is not a single buffer store");
  const ir::Buffer& buffer = store->buffer;
  if (producer->writes.size() != 1 || producer->writes[0].buffer.get() != buffer.get())
    return not_inlinable(ErrorCode::kNotComplete, producer,
                         fmt::format("it must write only '{}'", buffer->name));
  if (is_output_buffer(state, buffer.get()))
    return not_inlinable(ErrorCode::kIsOutput, producer,
                         fmt::format("it writes the output '{}'", buffer->name));
  if (is_param_buffer(state, buffer.get()))
    return not_inlinable(ErrorCode::kParameterBuffer, producer,
                         fmt::format("it writes the parameter '{}'", buffer->name));
  if (Status s = check_complete_block(state, block_sref.get()); !s) return s.error();
  auto pos = iter_var_positions(store->indices, producer);
  if (!pos)
    return not_inlinable(
        ErrorCode::kNotInlinable, producer,
        fmt::format("the indices of its store to '{}' are not its iterators, each once",
                    buffer->name));
  ExprScan value_scan;
  value_scan.visit_expr(store->value);
  if (!uses_only(value_scan.free_vars, iter_var_set(producer)))
    return not_inlinable(ErrorCode::kNotInlinable, producer,
                         "its value uses variables other than its iterators");
  SRefNode* site = alloc_site(block_sref->parent, buffer.get());
  if (!site)
    return not_inlinable(ErrorCode::kUnsupported, producer,
                         fmt::format("'{}' is not allocated by an enclosing block", buffer->name));
  ir::Stmt site_stmt = state.stmt_of(site);

  // Inside the allocation scope: no other writer of the buffer, and nothing the value reads is
  // overwritten after the producer (the consumers would see the new contents).
  std::unordered_set<const ir::BufferNode*> value_reads;
  for (const ir::BufferLoadNode* l : value_scan.loads) value_reads.insert(l->buffer.get());
  std::optional<ScheduleError> hazard;
  bool after = false;
  AccessWalker walker([&](const ir::BlockNode* b, const ir::BufferNode* buf, bool is_store) {
    if (hazard || !is_store || b == producer) {
      after = after || b == producer;
      return;
    }
    if (buf == buffer.get())
      hazard = not_inlinable(
          ErrorCode::kNotComplete, producer,
          fmt::format("block '{}' also writes '{}'", b ? b->name : "root", buffer->name));
    else if (after && value_reads.count(buf))
      hazard = not_inlinable(ErrorCode::kDependenceViolated, producer,
                             fmt::format("block '{}' overwrites '{}', which it reads, after it",
                                         b ? b->name : "root", buf->name));
  });
  walker.visit_stmt(site_stmt);
  if (hazard) return *hazard;
  if (auto err = check_reads_covered(site_stmt, producer, *pos, buffer)) return *err;

  // v_k := i_k in the producer's value for every load B[i_0, i_1, ...].
  ScopeRewriter rw;
  rw.remove = state.realize_stmt_of(block_sref.get()).get();
  rw.buffer = buffer.get();
  rw.alloc_block = site->as_block();
  rw.alloc_is_func_root = site->parent == nullptr;
  rw.on_load = [&](const ir::BufferLoadNode* load) {
    return ir::substitute(store->value, [&](const ir::Var& v) -> ir::Expr {
      for (size_t k = 0; k < pos->size(); ++k)
        if (producer->iter_vars[(*pos)[k]].var.same_as(v)) return load->indices[k];
      return ir::Expr();
    });
  };
  ir::Stmt new_site = rw.mutate_stmt(site_stmt);
  state.replace(state.get_sref(site->stmt), new_site, rw.reuse);
  return ok_status();
}

namespace {

// What the checks establish, so that the rewrite needs no second look at the state.
struct ReverseInline {
  const ir::BlockNode* consumer = nullptr;
  const ir::BufferStoreNode* store = nullptr;  // the consumer's body
  ExprScan consumer_scan;
  SRefNode* scope = nullptr;  // the consumer's scope block
  ir::Buffer buffer;          // the intermediate: read by the consumer, written by the producer
  SRef producer_sref;
  const ir::BlockNode* producer = nullptr;
  const ir::BufferStoreNode* pstore = nullptr;  // the producer's body
  // The iterator each intermediate index names, in the producer's store and the consumer's loads.
  std::vector<size_t> ppos, cpos;
  SRefNode* site = nullptr;  // the block that allocates the intermediate
};

// The consumer's one unpredicated store must be able to run at the producer's iterations.
Status check_consumer(const ScheduleState& state, const SRef& block_sref, ReverseInline& r) {
  const ir::BlockNode* consumer = block_sref->as_block();
  if (!consumer || !block_sref->parent)
    return ScheduleError(ErrorCode::kUnsupported, "cannot reverse-inline the root block",
                         block_sref->stmt);
  auto* store = consumer->body.as<ir::BufferStoreNode>();
  if (!store)
    return not_reverse_inlinable(ErrorCode::kNotComplete, consumer,
                                 "its body is not a single buffer store");
  if (Status s = check_complete_block(state, block_sref.get()); !s) return s.error();
  if (consumer->writes.size() != 1 || consumer->writes[0].buffer.get() != store->buffer.get())
    return not_reverse_inlinable(ErrorCode::kNotComplete, consumer,
                                 fmt::format("it must write only '{}'", store->buffer->name));
  if (!ir::is_true(state.realize_of(block_sref.get())->predicate))
    return not_reverse_inlinable(ErrorCode::kNotInlinable, consumer, "its realize has a predicate");
  r.consumer = consumer;
  r.store = store;
  r.consumer_scan = scan(store);
  if (!uses_only(r.consumer_scan.free_vars, iter_var_set(consumer)))
    return not_reverse_inlinable(ErrorCode::kNotInlinable, consumer,
                                 "its store uses variables other than its iterators");
  return ok_status();
}

// The intermediate disappears, so it must be the only produced buffer read and not an output.
Status find_intermediate(const ScheduleState& state, const SRef& block_sref, ReverseInline& r) {
  const ir::BlockNode* consumer = r.consumer;
  r.scope = scope_block(block_sref.get());
  std::unordered_set<const ir::BufferNode*> written_in_scope;
  AccessWalker([&](const ir::BlockNode* b, const ir::BufferNode* buf, bool is_store) {
    if (is_store && b != consumer) written_in_scope.insert(buf);
  }).visit_stmt(state.stmt_of(r.scope));
  std::vector<ir::Buffer> produced;
  for (const ir::BufferLoadNode* l : r.consumer_scan.loads)
    if (written_in_scope.count(l->buffer.get()) &&
        std::none_of(produced.begin(), produced.end(),
                     [&](const ir::Buffer& b) { return b.same_as(l->buffer); }))
      produced.push_back(l->buffer);
  if (produced.empty())
    return not_reverse_inlinable(ErrorCode::kNotInlinable, consumer,
                                 "it reads no buffer produced in its scope");
  if (produced.size() > 1)
    return not_reverse_inlinable(
        ErrorCode::kNotComplete, consumer,
        fmt::format("it reads {} produced buffers ('{}' and '{}'); it needs exactly one producer",
                    produced.size(), produced[0]->name, produced[1]->name));
  const ir::Buffer& buffer = r.buffer = produced[0];
  if (is_output_buffer(state, buffer.get()))
    return not_reverse_inlinable(
        ErrorCode::kIsOutput, consumer,
        fmt::format("it reads the output '{}', which must stay written", buffer->name));
  if (is_param_buffer(state, buffer.get()))
    return not_reverse_inlinable(ErrorCode::kParameterBuffer, consumer,
                                 fmt::format("it reads the parameter '{}'", buffer->name));
  return ok_status();
}

// The producer takes the consumer's store, so it must be the only writer, storing at its iterators.
Status check_producer(const ScheduleState& state, const SRef& block_sref, ReverseInline& r) {
  const ir::BlockNode* consumer = r.consumer;
  const ir::Buffer& buffer = r.buffer;
  std::vector<SRef> writers = other_writers(state, block_sref.get(), buffer.get());
  if (writers.size() != 1)
    return not_reverse_inlinable(ErrorCode::kNotComplete, consumer,
                                 fmt::format("'{}' has {} producer blocks in its scope, not one",
                                             buffer->name, writers.size()));
  r.producer_sref = writers[0];
  const ir::BlockNode* producer = r.producer = r.producer_sref->as_block();
  if (is_reduction_like(producer))
    return ScheduleError(ErrorCode::kIsReduction,
                         fmt::format("cannot reverse-inline block '{}' into reduction block '{}'",
                                     consumer->name, producer->name),
                         consumer);
  if (Status s = check_complete_block(state, r.producer_sref.get()); !s) return s.error();
  auto* pstore = producer->body.as<ir::BufferStoreNode>();
  if (!pstore || pstore->buffer.get() != buffer.get() || producer->writes.size() != 1)
    return not_reverse_inlinable(ErrorCode::kNotComplete, consumer,
                                 fmt::format("its producer '{}' is not a single store to '{}'",
                                             producer->name, buffer->name));
  auto ppos = iter_var_positions(pstore->indices, producer);
  ExprScan producer_scan = scan(pstore);
  if (!ppos || !uses_only(producer_scan.free_vars, iter_var_set(producer)))
    return not_reverse_inlinable(
        ErrorCode::kNotInlinable, consumer,
        fmt::format("its producer '{}' does not store to '{}' at its iterators", producer->name,
                    buffer->name));
  for (const ir::BufferLoadNode* l : producer_scan.loads)
    if (l->buffer.get() == r.store->buffer.get())
      return not_reverse_inlinable(
          ErrorCode::kNotInlinable, consumer,
          fmt::format("its producer '{}' reads '{}'", producer->name, r.store->buffer->name));
  r.pstore = pstore;
  r.ppos = *ppos;
  return ok_status();
}

// Each consumer iteration must read what exactly one producer iteration stores.
Status check_intermediate_loads(ReverseInline& r) {
  // Every load of the intermediate uses the same indices: the consumer's iterators, each once.
  const ir::BlockNode* consumer = r.consumer;
  const ir::BufferLoadNode* first = nullptr;
  for (const ir::BufferLoadNode* l : r.consumer_scan.loads) {
    if (l->buffer.get() != r.buffer.get()) continue;
    if (!first) first = l;
    bool same = l->indices.size() == first->indices.size() &&
                std::equal(l->indices.begin(), l->indices.end(), first->indices.begin(),
                           [](const ir::Expr& a, const ir::Expr& b) { return a.same_as(b); });
    if (!same)
      return not_reverse_inlinable(
          ErrorCode::kNotInlinable, consumer,
          fmt::format("it reads '{}' at different indices", r.buffer->name));
  }
  auto cpos = iter_var_positions(first->indices, consumer);
  if (!cpos)
    return not_reverse_inlinable(
        ErrorCode::kNotInlinable, consumer,
        fmt::format("it reads '{}' at indices that are not its iterators, each once",
                    r.buffer->name));
  r.cpos = *cpos;
  return ok_status();
}

// The intermediate's allocation goes away: inside it, nobody but the consumer may read it.
Status check_sole_reader(const ScheduleState& state, ReverseInline& r) {
  const ir::BlockNode* consumer = r.consumer;
  const ir::Buffer& buffer = r.buffer;
  SRefNode* site = alloc_site(r.scope, buffer.get());
  if (!site)
    return not_reverse_inlinable(
        ErrorCode::kUnsupported, consumer,
        fmt::format("'{}' is not allocated by an enclosing block", buffer->name));
  std::optional<ScheduleError> other_reader;
  AccessWalker([&](const ir::BlockNode* b, const ir::BufferNode* buf, bool is_store) {
    if (!other_reader && !is_store && buf == buffer.get() && b != consumer)
      other_reader = not_reverse_inlinable(
          ErrorCode::kDependenceViolated, consumer,
          fmt::format("block '{}' also reads '{}'", b ? b->name : "root", buffer->name));
  }).visit_stmt(state.stmt_of(site));
  if (other_reader) return *other_reader;
  r.site = site;
  return ok_status();
}

// The consumer's iterators in terms of the producer's, and the producer's new predicate.
struct ProducerIters {
  std::unordered_map<const ir::VarNode*, ir::Expr> from_consumer;
  ir::Expr predicate;
};

// Consumer iterator at position cpos[k] becomes the producer iterator at ppos[k]. Where the
// consumer covers less than the producer, the producer's realize gets a predicate.
Result<ProducerIters> map_onto_producer(const ScheduleState& state, const ReverseInline& r,
                                        arith::Analyzer* analyzer) {
  const ir::BlockRealizeNode* prealize = state.realize_of(r.producer_sref.get());
  ProducerIters out{{}, prealize->predicate};
  for (size_t k = 0; k < r.cpos.size(); ++k) {
    const ir::IterVar& civ = r.consumer->iter_vars[r.cpos[k]];
    const ir::IterVar& piv = r.producer->iter_vars[r.ppos[k]];
    out.from_consumer[civ.var.get()] = piv.var;
    if (analyzer->can_prove_equal(civ.dom.min, piv.dom.min) &&
        analyzer->can_prove_equal(civ.dom.extent, piv.dom.extent))
      continue;
    bool inside = analyzer->can_prove(civ.dom.min >= piv.dom.min) &&
                  analyzer->can_prove(civ.dom.min + civ.dom.extent <= piv.dom.min + piv.dom.extent);
    if (!inside)
      return not_reverse_inlinable(
          ErrorCode::kNotCovered, r.consumer,
          fmt::format("it iterates '{}' beyond what producer '{}' computes", civ.var.name(),
                      r.producer->name));
    const ir::Expr& bound = prealize->iter_values[r.ppos[k]];
    ir::Expr in_range = bound >= civ.dom.min && bound < civ.dom.min + civ.dom.extent;
    out.predicate = ir::is_true(out.predicate) ? in_range : (out.predicate && in_range);
  }
  if (!out.predicate.same_as(prealize->predicate)) {
    arith::Analyzer loops;  // the producer's loop ranges decide the trivial half of each bound
    for (SRefNode* p : ancestors(r.producer_sref.get()))
      if (auto* f = p->as_for()) loops.bind(f->loop_var, ir::Range(f->min, f->extent));
    out.predicate = loops.simplify(out.predicate);
  }
  return out;
}

// The producer block computing the consumer's store, as the intermediate is no longer there.
ir::Block fold_into_producer(const ReverseInline& r,
                             const std::unordered_map<const ir::VarNode*, ir::Expr>& vmap,
                             arith::Analyzer* analyzer) {
  const ir::BlockNode* producer = r.producer;
  auto to_producer = [&](const ir::Var& v) -> ir::Expr {
    auto it = vmap.find(v.get());
    return it == vmap.end() ? ir::Expr() : it->second;
  };
  ScopeRewriter fold;  // loads of the intermediate -> the producer's value
  fold.buffer = r.buffer.get();
  fold.on_load = [&](const ir::BufferLoadNode*) { return r.pstore->value; };
  ir::Expr value = ir::substitute(fold.mutate_expr(r.store->value), to_producer);
  std::vector<ir::Expr> indices;
  for (const ir::Expr& i : r.store->indices) indices.push_back(ir::substitute(i, to_producer));
  ir::Stmt body = ir::buffer_store(r.store->buffer, value, std::move(indices));
  ir::Block draft = ir::make_block(producer->name, producer->iter_vars, {}, {}, ir::Stmt(), body,
                                   producer->alloc_buffers, producer->annotations);
  arith::AccessRegions regions = arith::infer_access_regions(*draft, analyzer);
  return ir::make_block(producer->name, producer->iter_vars, regions.reads, regions.writes,
                        ir::Stmt(), body, producer->alloc_buffers, producer->annotations);
}

}  // namespace

Status reverse_compute_inline(ScheduleState& state, const SRef& block_sref) {
  ReverseInline r;
  if (Status s = check_consumer(state, block_sref, r); !s) return s;
  if (Status s = find_intermediate(state, block_sref, r); !s) return s;
  if (Status s = check_producer(state, block_sref, r); !s) return s;
  if (Status s = check_intermediate_loads(r); !s) return s;
  if (Status s = check_sole_reader(state, r); !s) return s;
  arith::Analyzer analyzer;
  TYCHE_TRY_ASSIGN(iters, map_onto_producer(state, r, &analyzer));
  ir::Block new_producer = fold_into_producer(r, iters.from_consumer, &analyzer);

  const ir::BlockRealizeNode* prealize = state.realize_of(r.producer_sref.get());
  ScopeRewriter rw;
  rw.remove = state.realize_stmt_of(block_sref.get()).get();
  rw.swap_from = prealize;
  rw.swap_to = ir::block_realize(prealize->iter_values, iters.predicate, new_producer);
  rw.buffer = r.buffer.get();
  rw.alloc_block = r.site->as_block();
  rw.alloc_is_func_root = r.site->parent == nullptr;
  rw.reuse[new_producer.get()] = r.producer;
  ir::Stmt new_site = rw.mutate_stmt(state.stmt_of(r.site));
  state.replace(state.get_sref(r.site->stmt), new_site, rw.reuse);
  return ok_status();
}

// ---- instructions ----

namespace {

template <Status (*F)(ScheduleState&, const SRef&)>
Status apply_inline(InstructionContext& ctx, BlockRV block) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  Status s = F(ctx.state(), sref);
  if (s) ctx.consume(block);
  return s;
}

}  // namespace

TYCHE_INSTRUCTION(compute_inline, apply_inline<compute_inline>, {{"block"}})
TYCHE_INSTRUCTION(reverse_compute_inline, apply_inline<reverse_compute_inline>, {{"block"}})

Status Schedule::compute_inline(const BlockRV& block) {
  return compute_inline_kind()(*this, block);
}
Status Schedule::reverse_compute_inline(const BlockRV& block) {
  return reverse_compute_inline_kind()(*this, block);
}

}  // namespace tyche::schedule
