#include "arith/region.h"

#include <unordered_set>

#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/op.h"

namespace tyche::arith {

using namespace ir;

namespace {

IntervalSet relax_range(const Range& r, const VarRangeMap& dom, Analyzer* a) {
  if (is_const_int(r.extent, 1)) return eval_interval(r.min, dom, a);
  IntervalSet lo = eval_interval(r.min, dom, a);
  IntervalSet hi = eval_interval(r.min + r.extent - make_int(1, r.extent.dtype()), dom, a);
  return {lo.min_value, hi.max_value};
}

// Back to [min, min + extent); an unbounded side is clipped to the buffer's shape.
BufferRegion to_region(const Buffer& buffer, const std::vector<IntervalSet>& dims, Analyzer* a) {
  std::vector<Range> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    const Expr& dim = buffer->shape[d];
    Expr lo = dims[d].has_lower_bound() ? dims[d].min_value : make_int(0, dim.dtype());
    Expr hi = dims[d].has_upper_bound() ? dims[d].max_value : dim - make_int(1, dim.dtype());
    if (expr_equal(lo, hi))
      out.emplace_back(lo, make_int(1, lo.dtype()));
    else
      out.emplace_back(lo, a->simplify(hi - lo + make_int(1, lo.dtype())));
  }
  return {buffer, std::move(out)};
}

class AccessCollector : public StmtExprVisitor {
 public:
  struct Access {
    Buffer buffer;
    std::vector<IntervalSet> dims;
  };
  std::vector<Access> reads, writes;

  explicit AccessCollector(Analyzer* a) : a_(a) {}

 protected:
  void visit_buffer_load(const BufferLoadNode* n) override {
    StmtExprVisitor::visit_buffer_load(n);
    record(&reads, n->buffer, points(n->indices));
  }
  void visit_buffer_store(const BufferStoreNode* n) override {
    StmtExprVisitor::visit_buffer_store(n);
    record(&writes, n->buffer, points(n->indices));
  }
  void visit_let(const LetNode* n) override {
    visit_expr(n->value);
    lets_.emplace_back(n->var.get(), with_lets(n->value));
    visit_expr(n->body);
    lets_.pop_back();
  }
  void visit_for(const ForNode* n) override {
    visit_expr(n->min);
    visit_expr(n->extent);
    Range r(with_lets(n->min), with_lets(n->extent));
    dom_[n->loop_var] = r;
    a_->bind(n->loop_var, r);
    visit_stmt(n->body);
    dom_.erase(n->loop_var);
  }
  void visit_block_realize(const BlockRealizeNode* n) override {
    for (const Expr& v : n->iter_values) visit_expr(v);
    visit_expr(n->predicate);
    const BlockNode* b = n->block.get();
    std::unordered_map<const VarNode*, Expr> values;
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      values[b->iter_vars[i].var.get()] = with_lets(n->iter_values[i]);
    nested(b, [&](const Var& v) {
      auto it = values.find(v.get());
      return it != values.end() ? it->second : Expr();
    });
  }
  // A bare nested block (no realize) has no bindings: its iter vars stay symbolic.
  void visit_block(const BlockNode* n) override {
    nested(n, [](const Var&) { return Expr(); });
  }

 private:
  Analyzer* a_;
  VarRangeMap dom_;
  std::vector<std::pair<const VarNode*, Expr>> lets_;

  Expr with_lets(const Expr& e) {
    if (lets_.empty()) return e;
    return substitute(e, [&](const Var& v) {
      for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
        if (it->first == v.get()) return it->second;
      return Expr();
    });
  }

  std::vector<IntervalSet> points(const std::vector<Expr>& indices) {
    std::vector<IntervalSet> dims;
    for (const Expr& i : indices) dims.push_back(eval_interval(with_lets(i), dom_, a_));
    return dims;
  }

  template <typename F>
  void nested(const BlockNode* b, const F& vmap) {
    auto add = [&](std::vector<Access>* list, const std::vector<BufferRegion>& regions) {
      for (const BufferRegion& r : regions) {
        std::vector<IntervalSet> dims;
        for (const Range& rg : r.region) {
          Range s(with_lets(substitute(rg.min, vmap)), with_lets(substitute(rg.extent, vmap)));
          dims.push_back(relax_range(s, dom_, a_));
        }
        record(list, r.buffer, std::move(dims));
      }
    };
    add(&reads, b->reads);
    add(&writes, b->writes);
  }

  void record(std::vector<Access>* list, const Buffer& buffer, std::vector<IntervalSet> dims) {
    for (Access& acc : *list) {
      if (!acc.buffer.same_as(buffer)) continue;
      for (size_t d = 0; d < dims.size() && d < acc.dims.size(); ++d)
        acc.dims[d] = union_interval(acc.dims[d], dims[d], a_);
      return;
    }
    list->push_back({buffer, std::move(dims)});
  }
};

}  // namespace

AccessRegions infer_access_regions(const BlockNode& block, Analyzer* analyzer) {
  Analyzer local = *analyzer;
  for (const IterVar& iv : block.iter_vars)
    if (!local.is_bound(iv.var)) local.bind(iv.var, iv.dom);
  AccessCollector c(&local);
  if (block.init.defined()) c.visit_stmt(block.init);
  c.visit_stmt(block.body);

  std::unordered_set<const BufferNode*> internal, written;
  for (const Buffer& b : block.alloc_buffers) internal.insert(b.get());
  AccessRegions out;
  for (const auto& w : c.writes) {
    if (internal.count(w.buffer.get())) continue;
    written.insert(w.buffer.get());
    out.writes.push_back(to_region(w.buffer, w.dims, &local));
  }
  for (const auto& r : c.reads) {
    if (internal.count(r.buffer.get())) continue;
    if (block.init.defined() && written.count(r.buffer.get())) continue;
    out.reads.push_back(to_region(r.buffer, r.dims, &local));
  }
  return out;
}

BufferRegion relax_region(const BufferRegion& region, const VarRangeMap& dom_map,
                          Analyzer* analyzer) {
  std::vector<IntervalSet> dims;
  for (const Range& r : region.region) dims.push_back(relax_range(r, dom_map, analyzer));
  return to_region(region.buffer, dims, analyzer);
}

std::vector<BufferRegion> relax_regions(const std::vector<BufferRegion>& regions,
                                        const VarRangeMap& dom_map, Analyzer* analyzer) {
  std::vector<BufferRegion> out;
  out.reserve(regions.size());
  for (const BufferRegion& r : regions) out.push_back(relax_region(r, dom_map, analyzer));
  return out;
}

}  // namespace tyche::arith
