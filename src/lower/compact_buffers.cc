// Intermediate buffers are declared at the root with their full shape; after compute_at or
// cache_write + reverse_compute_at only a tile of them is live at a time. This pass moves each
// allocation down the loops that contain all of its accesses, as long as no value flows from one
// iteration to another (distinct iterations touch disjoint elements, or each iteration writes
// everything it reads before reading it), and shrinks it to the region one iteration touches
// (TVM's buffer-allocation planning and compaction). A small tile inside a loop nest is what lets
// the backend keep it in registers; an allocation inside a parallel loop becomes per-thread. A
// shared (GPU) buffer's region spans its block's threads (relaxed()).
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "arith/int_set.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

struct Access {
  std::vector<const ir::ForNode*> loops;  // enclosing loops inside the allocation, outermost first
  std::vector<ir::Expr> indices;
  bool store = false;
  std::vector<ir::Expr> conditions;  // of the ifs it is under: it may not run
};

// Every load and store of one buffer under a statement, with its enclosing loops.
class AccessCollector : public ir::StmtExprVisitor {
 public:
  explicit AccessCollector(const ir::BufferNode* buffer) : buffer_(buffer) {}
  std::vector<Access> accesses;

 protected:
  void visit_for(const ir::ForNode* n) override {
    stack_.push_back(n);
    StmtExprVisitor::visit_for(n);
    stack_.pop_back();
  }
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    if (n->buffer.get() == buffer_) accesses.push_back({stack_, n->indices, false, conditions_});
    StmtExprVisitor::visit_buffer_load(n);
  }
  // In program order: a store's own loads (an accumulation) happen before it.
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    StmtExprVisitor::visit_buffer_store(n);
    if (n->buffer.get() == buffer_) accesses.push_back({stack_, n->indices, true, conditions_});
  }
  void visit_if(const ir::IfThenElseNode* n) override {
    visit_expr(n->condition);
    conditions_.push_back(n->condition);
    visit_stmt(n->then_case);
    conditions_.back() = !n->condition;
    if (n->else_case.defined()) visit_stmt(n->else_case);
    conditions_.pop_back();
  }

 private:
  const ir::BufferNode* buffer_;
  std::vector<const ir::ForNode*> stack_;
  std::vector<ir::Expr> conditions_;
};

// Whether `cond` says exactly "index < extent" for one dimension of an access: the guard a tile
// that does not divide its loop puts on the padding rows, which never touch an element of the
// buffer. Such a store stores every element of its region that exists.
bool is_bounds_guard(const ir::Expr& cond, const std::vector<ir::Expr>& indices,
                     const std::vector<ir::Expr>& shape) {
  if (cond.kind() != ir::ExprKind::kLT) return false;
  const auto* lt = static_cast<const ir::BinaryNode*>(cond.get());
  if (lt->a.dtype().lanes() != 1) return false;
  arith::Analyzer analyzer;
  for (size_t d = 0; d < indices.size() && d < shape.size(); ++d) {
    if (indices[d].dtype().lanes() != 1) continue;
    if (analyzer.can_prove_equal(lt->a - lt->b, indices[d] - shape[d])) return true;
  }
  return false;
}

// Rewrites accesses of `from` to `to` at indices minus `offsets`, and puts the allocation of
// `to` around the body of loop `at` (or around everything if `at` is null).
class Relocator : public ir::StmtExprMutator {
 public:
  Relocator(const ir::BufferNode* from, ir::Buffer to, std::vector<ir::Expr> offsets,
            const ir::ForNode* at)
      : from_(from), to_(std::move(to)), offsets_(std::move(offsets)), at_(at) {}

  std::vector<ir::Expr> shift(const std::vector<ir::Expr>& idx) {
    std::vector<ir::Expr> out;
    for (size_t d = 0; d < idx.size(); ++d)
      out.push_back(ir::is_const_int(offsets_[d], 0) ? idx[d] : idx[d] - offsets_[d]);
    return out;
  }

 protected:
  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
    ir::Expr e = StmtExprMutator::mutate_buffer_load(n, self);
    auto* l = e.as<ir::BufferLoadNode>();
    if (l->buffer.get() != from_) return e;
    return ir::Expr(std::make_shared<ir::BufferLoadNode>(l->dtype, to_, shift(l->indices)));
  }
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& self) override {
    ir::Stmt s = StmtExprMutator::mutate_buffer_store(n, self);
    auto* st = s.as<ir::BufferStoreNode>();
    if (st->buffer.get() != from_) return s;
    return ir::buffer_store(to_, st->value, shift(st->indices));
  }
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    ir::Stmt s = StmtExprMutator::mutate_for(n, self);
    if (n != at_) return s;
    auto* f = s.as<ir::ForNode>();
    return ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, ir::allocate(to_, f->body),
                        f->thread_tag, f->annotations);
  }

 private:
  const ir::BufferNode* from_;
  ir::Buffer to_;
  std::vector<ir::Expr> offsets_;
  const ir::ForNode* at_;
};

struct Region {
  std::vector<ir::Expr> min;    // per dimension, in the variables of the enclosing loops
  std::vector<int64_t> extent;  // per dimension, constant
};

class Compactor : public ir::StmtExprMutator {
 protected:
  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt& self) override {
    ir::Stmt body = mutate_stmt(n->body);  // inner allocations first
    const ir::Buffer& buf = n->buffer;
    // Strides storage_align set are laid out again for the compacted shape; others are fixed.
    if (!buf->strides.empty() && buf->dim_aligns.empty()) return rebuild(n, self, body);
    AccessCollector collector(buf.get());
    collector.visit_stmt(body);
    shared_ = buf->scope.starts_with("shared");
    local_ = buf->scope == "local";
    if (collector.accesses.empty()) return rebuild(n, self, body);
    // The loops common to every access, outermost first.
    std::vector<const ir::ForNode*> lca = collector.accesses[0].loops;
    for (const Access& a : collector.accesses) {
      size_t k = 0;
      while (k < lca.size() && k < a.loops.size() && lca[k] == a.loops[k]) ++k;
      lca.resize(k);
    }
    // Go down the common loops while distinct iterations touch disjoint regions: then no value
    // flows from one iteration to the next and each iteration can have its own (smaller)
    // buffer. A loop whose iterations share elements (a consumer that reads what several
    // iterations wrote) keeps the allocation above it.
    size_t depth = 0;
    std::optional<Region> region = region_at(collector, lca, 0);
    if (!region) return rebuild(n, self, body);
    std::optional<bool> self_contained;  // asked only when some loop's iterations overlap
    while (depth < lca.size()) {
      std::optional<Region> inner = region_at(collector, lca, depth + 1);
      if (!inner) break;
      if (!relaxed(lca[depth]) && !own_copy(lca[depth]) &&
          !iterations_disjoint(*inner, lca[depth])) {
        if (!self_contained) self_contained = written_before_read(collector, lca, buf.get());
        if (!*self_contained) break;
      }
      region = inner;
      ++depth;
    }
    std::vector<ir::Expr> offsets, shape;
    bool smaller = false;
    for (size_t d = 0; d < buf->shape.size(); ++d) {
      auto full = ir::as_const_int(buf->shape[d]);
      if (!full) return rebuild(n, self, body);
      if (region->extent[d] >= *full) {  // the whole dimension: no offset
        offsets.push_back(ir::make_int(0));
        shape.push_back(buf->shape[d]);
        continue;
      }
      smaller = true;
      offsets.push_back(region->min[d]);
      shape.push_back(ir::make_int(region->extent[d], buf->shape[d].dtype()));
    }
    if (!smaller && depth == 0) return rebuild(n, self, body);
    auto node = std::make_shared<ir::BufferNode>(*buf);
    node->shape = shape;
    if (!buf->dim_aligns.empty()) {
      std::vector<int64_t> extents;
      for (const ir::Expr& e : shape) extents.push_back(*ir::as_const_int(e));
      auto strides = ir::aligned_strides(extents, buf->dim_aligns);
      if (!strides) return rebuild(n, self, body);
      node->strides.clear();
      for (int64_t s : *strides) node->strides.push_back(ir::make_int(s, buf->shape[0].dtype()));
    }
    ir::Buffer compact(node);
    Relocator relocate(buf.get(), compact, offsets, depth == 0 ? nullptr : lca[depth - 1]);
    ir::Stmt moved = relocate.mutate_stmt(body);
    return depth == 0 ? ir::allocate(compact, moved) : moved;
  }

 private:
  // The region all accesses touch in one iteration of lca[depth - 1] (depth 0: overall), the
  // loops lca[0, depth) fixed. Nothing if some dimension is unbounded or not of constant size.
  std::optional<Region> region_at(const AccessCollector& c,
                                  const std::vector<const ir::ForNode*>& lca, size_t depth) const {
    arith::Analyzer analyzer;
    bind_outer_loops(&analyzer, lca, depth);
    std::vector<arith::IntervalSet> sets = touched(c.accesses, depth, &analyzer);
    size_t ndim = sets.size();
    Region r;
    for (size_t d = 0; d < ndim; ++d) {
      if (!sets[d].is_bounded()) return std::nullopt;
      // The largest extent over the fixed loops (the simplifier may leave 1 - b when b = 0).
      ir::Expr extent = analyzer.simplify(sets[d].max_value - sets[d].min_value + 1);
      auto e = ir::as_const_int(extent);
      if (!e) {
        int64_t upper = analyzer.const_int_bound(extent).max_value;
        if (upper < arith::ConstIntBound::kPosInf) e = upper;
      }
      if (!e || *e <= 0) return std::nullopt;
      r.min.push_back(sets[d].min_value);
      r.extent.push_back(*e);
    }
    return r;
  }

  void bind_outer_loops(arith::Analyzer* analyzer, const std::vector<const ir::ForNode*>& lca,
                        size_t depth) const {
    for (size_t k = 0; k < depth; ++k)
      if (!relaxed(lca[k]))
        analyzer->bind(lca[k]->loop_var, ir::Range(lca[k]->min, lca[k]->extent));
  }

  // A shared (GPU) buffer belongs to a block of threads: its region covers every thread's
  // accesses, so the loops bound to threadIdx (and vthread, threads of the same block) are never
  // fixed; its allocation moves below them only in the IR (the GPU back end declares it once per
  // block).
  bool relaxed(const ir::ForNode* loop) const {
    return shared_ && loop->for_kind == ir::ForKind::kThreadBinding &&
           !loop->thread_tag.starts_with("blockIdx");
  }
  // Each block has its own shared memory and each thread its own local memory: the iterations of
  // those loops never share such a buffer.
  bool own_copy(const ir::ForNode* loop) const {
    if (loop->for_kind != ir::ForKind::kThreadBinding) return false;
    if (shared_) return loop->thread_tag.starts_with("blockIdx");
    return local_ &&
           (loop->thread_tag.starts_with("blockIdx") || loop->thread_tag.starts_with("threadIdx"));
  }

  // Per dimension, the interval the accesses touch, their loops from `depth` on relaxed.
  std::vector<arith::IntervalSet> touched(const std::vector<Access>& accesses, size_t depth,
                                          arith::Analyzer* analyzer) const {
    size_t ndim = accesses[0].indices.size();
    std::vector<arith::IntervalSet> sets(ndim);
    bool first = true;
    for (const Access& a : accesses) {
      arith::VarRangeMap dom;
      for (size_t k = 0; k < a.loops.size(); ++k)
        if (k >= depth || relaxed(a.loops[k]))
          dom[a.loops[k]->loop_var] = ir::Range(a.loops[k]->min, a.loops[k]->extent);
      for (size_t d = 0; d < ndim; ++d) {
        arith::IntervalSet s = arith::eval_interval(a.indices[d], dom, analyzer);
        sets[d] = first ? s : arith::union_interval(sets[d], s, analyzer);
      }
      first = false;
    }
    return sets;
  }

  // Whether, in one iteration of the innermost common loop (then of every common loop), every
  // element read was written earlier in the same iteration: the loop nests that run before the
  // first read (they share no loop with it below the common ones, so they finish first) store,
  // unconditionally, a region that covers every read. A cache_read under compute_at is such a
  // buffer even when other iterations copy the same elements.
  bool written_before_read(const AccessCollector& c, const std::vector<const ir::ForNode*>& lca,
                           const ir::BufferNode* buf) const {
    size_t depth = lca.size();
    auto first_load = std::find_if(c.accesses.begin(), c.accesses.end(),
                                   [](const Access& a) { return !a.store; });
    if (first_load == c.accesses.end()) return true;  // written only
    std::vector<Access> stores, loads;
    for (auto it = c.accesses.begin(); it != first_load; ++it) {
      bool shares_inner_loop = it->loops.size() > depth && first_load->loops.size() > depth &&
                               it->loops[depth] == first_load->loops[depth];
      // Reads touch existing elements only, so a store guarded by "in bounds" covers them.
      // A shared buffer's stores before its first read are a cache_read's cooperative fetch, which
      // compute_at sized to cover the reads: its guard is the split of the fetch's fused loop.
      bool unconditional =
          shared_ ||
          std::all_of(it->conditions.begin(), it->conditions.end(), [&](const ir::Expr& cond) {
            return is_bounds_guard(cond, it->indices, buf->shape);
          });
      if (!shares_inner_loop && unconditional) stores.push_back(*it);
    }
    for (const Access& a : c.accesses)
      if (!a.store) loads.push_back(a);
    if (stores.empty()) return false;
    arith::Analyzer analyzer;
    bind_outer_loops(&analyzer, lca, depth);
    std::vector<arith::IntervalSet> written = touched(stores, depth, &analyzer);
    std::vector<arith::IntervalSet> read = touched(loads, depth, &analyzer);
    for (size_t d = 0; d < written.size(); ++d) {
      if (!written[d].is_bounded() || !read[d].is_bounded()) return false;
      if (!analyzer.can_prove(written[d].min_value <= read[d].min_value) ||
          !analyzer.can_prove(read[d].max_value <= written[d].max_value))
        return false;
    }
    return true;
  }

  // Whether the iterations of `loop` touch disjoint parts of a region (given relative to one
  // iteration): some dimension's start moves by at least its extent per iteration, or else (a
  // fused loop, whose digits f // c % m drive several dimensions) no two iterations start at the
  // same cell of the dimensions that move by whole extents.
  static bool iterations_disjoint(const Region& r, const ir::ForNode* loop) {
    if (ir::is_const_int(loop->extent, 1)) return true;
    arith::Analyzer analyzer;
    ir::Expr next = loop->loop_var + 1;
    for (size_t d = 0; d < r.min.size(); ++d) {
      ir::Expr shifted = ir::substitute(r.min[d], [&](const ir::Var& v) {
        return v.same_as(loop->loop_var) ? next : ir::Expr();
      });
      auto step = ir::as_const_int(analyzer.simplify(shifted - r.min[d]));
      if (step && (*step >= r.extent[d] || -*step >= r.extent[d])) return true;
    }
    return cells_distinct(r, loop, &analyzer);
  }

  // Each iteration i's start, relative to the first's, per dimension; a dimension counts when
  // every such shift is a constant multiple of its extent (two iterations that differ in it
  // then touch disjoint elements), and the iterations are disjoint when no two agree on all of
  // the dimensions that count. Enumerated: loops of up to kMaxEnumerated iterations.
  static bool cells_distinct(const Region& r, const ir::ForNode* loop, arith::Analyzer* analyzer) {
    constexpr int64_t kMaxEnumerated = 1024;
    auto min = ir::as_const_int(loop->min), extent = ir::as_const_int(loop->extent);
    if (!min || !extent || *extent > kMaxEnumerated) return false;
    auto at = [&](const ir::Expr& e, int64_t i) {
      return ir::substitute(e, [&](const ir::Var& v) {
        return v.same_as(loop->loop_var) ? ir::make_int(i, v.dtype()) : ir::Expr();
      });
    };
    std::vector<std::vector<int64_t>> cells(static_cast<size_t>(*extent));
    for (size_t d = 0; d < r.min.size(); ++d) {
      ir::Expr first = at(r.min[d], *min);
      std::vector<int64_t> shifts;
      for (int64_t i = 0; i < *extent; ++i) {
        auto shift = ir::as_const_int(analyzer->simplify(at(r.min[d], *min + i) - first));
        if (!shift || *shift % r.extent[d] != 0) break;
        shifts.push_back(*shift / r.extent[d]);
      }
      if (static_cast<int64_t>(shifts.size()) != *extent)
        continue;  // this dimension does not count
      for (size_t i = 0; i < shifts.size(); ++i) cells[i].push_back(shifts[i]);
    }
    std::sort(cells.begin(), cells.end());
    return std::adjacent_find(cells.begin(), cells.end()) == cells.end() && !cells.front().empty();
  }

  static ir::Stmt rebuild(const ir::AllocateNode* n, const ir::Stmt& self, const ir::Stmt& body) {
    return body.same_as(n->body) ? self : ir::allocate(n->buffer, body);
  }

  bool shared_ = false, local_ = false;  // the scope of the allocation being placed
};

}  // namespace

ir::PrimFunc compact_buffers(const ir::PrimFunc& func) {
  return func.with_body(Compactor().mutate_stmt(func->body));
}

}  // namespace tyche::lower
