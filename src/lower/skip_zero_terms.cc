// Skipping loop iterations whose every contribution is zero. A convolution over a padded input
// (the pad block computed per tile into a local buffer under a reduction loop) adds products
// with the padding's zeros at the border rows: about 10% of a 14x14 3x3 convolution's work,
// which oneDNN does not do (it bounds the kernel loop per output row). The gather form of a
// transposed convolution adds -0.0 where the stride does not divide the position.
//
// For a loop whose body stores only
//   - into buffers allocated inside the body (dead once the iteration ends), and
//   - accumulations  acc[i] = acc[i] + t  whose term t is zero unless a guard holds
// (t a product with a factor  if_then_else(g, x, 0)  or a load of a local buffer every store of
// which is  if_then_else(g, x, 0)),
// (or  acc[i] = group_dot(acc[i], a, b) , tile_dot likewise: zero when a or b is),
// the guards' conjuncts common to every accumulation that the body does not change become
// `if (those) body` (or, those not using the loop's own variable, an if around the loop). Loops
// of one iteration count as their variable's value. Top-down: a conjunct already guarded
// outside is not guarded again. Dropping a term a*0 differs from adding it only when a is not
// finite, which the references (gathers over the real taps) do not add either.
//
// A padded buffer the function allocates at its top, filled once for all the tiles (the
// intrinsic rule's convolutions pad so), is a zero source too: skip_padding_taps runs before
// the buffers are flattened, where every store of it is  P[e0, e1, ..] = if_then_else(g, x, 0)
// with g's conjuncts bounds on single indices (e1 >= 1, e1 < 15), so a load P[l0, l1, ..] is
// zero unless the same bounds hold for l0, l1, ...; the loop guards are then found as above.
#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>

#include "arith/analyzer.h"
#include "arith/linear.h"
#include "ir/buffer.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "lower/invariant.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

using Conjuncts = std::vector<ir::Expr>;

bool contains(const Conjuncts& set, const ir::Expr& e) {
  return std::any_of(set.begin(), set.end(),
                     [&](const ir::Expr& x) { return arith::expr_equal(x, e); });
}

void split_and(const ir::Expr& e, Conjuncts& out) {
  if (e.kind() == ir::ExprKind::kAnd) {
    const ir::BinaryNode* b = e.as_binary();
    split_and(b->a, out);
    split_and(b->b, out);
  } else if (!contains(out, e)) {
    out.push_back(e);
  }
}

Conjuncts intersect(const Conjuncts& a, const Conjuncts& b) {
  Conjuncts out;
  for (const ir::Expr& e : a)
    if (contains(b, e)) out.push_back(e);
  return out;
}

bool is_zero(const ir::Expr& e) {
  if (const auto* b = e.as<ir::BroadcastNode>()) return is_zero(b->value);
  if (const auto* f = e.as<ir::FloatImmNode>()) return f->value == 0.0;
  return ir::is_const_int(e, 0);
}

// `value` if_then_else(c, x, 0) or select(c, x, 0) with a scalar c: c; else undefined.
ir::Expr zero_unless(const ir::Expr& value) {
  ir::Expr cond, zero;
  if (const auto* c = value.as<ir::CallNode>(); c && c->op == ir::CallOp::kIfThenElse)
    cond = c->args[0], zero = c->args[2];
  else if (const auto* s = value.as<ir::SelectNode>())
    cond = s->condition, zero = s->false_value;
  if (!cond.defined() || cond.dtype().lanes() != 1 || !is_zero(zero)) return {};
  return cond;
}

// group_dot(acc, a, b) or tile_dot(acc, a, b, rows): acc plus products of a's and b's elements.
const ir::CallNode* dot_product(const ir::Expr& e) {
  const auto* c = e.as<ir::CallNode>();
  return c && (c->op == ir::CallOp::kGroupDot || c->op == ir::CallOp::kTileDot) ? c : nullptr;
}

// Whether `s` holds a loop of more than one iteration.
bool has_loop(const ir::Stmt& s) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Stmt& x) {
    if (const auto* f = x.as<ir::ForNode>(); f && !ir::is_const_int(f->extent, 1)) found = true;
  });
  return found;
}

// A comparison's operator applied to (a, b).
ir::Expr compare(ir::ExprKind kind, ir::Expr a, ir::Expr b) {
  return ir::make_binary(kind, std::move(a), std::move(b));
}

// Buffers allocated at the function's top whose every store is  P[e..] = if_then_else(g, x, 0):
// per buffer, the conjuncts of g that bound one scalar index e_k (up to a constant), written in
// terms of index variables d0, d1, ... (e_k >= 1 becomes d_k >= 1), and kept where every store
// has them. A load P[l..] is zero unless they hold with l_k substituted for d_k.
struct PaddedBuffer {
  std::vector<ir::Var> dims;
  std::optional<Conjuncts> bounds;  // nullopt until a store is seen
  bool qualifies = true;
};

class PaddedBufferScan : public ir::StmtExprVisitor {
 public:
  std::unordered_map<const ir::BufferNode*, PaddedBuffer> buffers;

  void scan_top(const ir::Stmt& s) {
    // Only allocations outside every loop: filled before the loops that read them.
    const ir::Stmt* at = &s;
    while (const auto* a = at->as<ir::AllocateNode>()) {
      PaddedBuffer b;
      for (size_t k = 0; k < a->buffer->shape.size(); ++k)
        b.dims.emplace_back(fmt::format("d{}", k), kInt64);
      buffers.emplace(a->buffer.get(), std::move(b));
      at = &a->body;
    }
    if (buffers.empty()) return;
    visit_stmt(s);
    std::erase_if(buffers, [](const auto& kv) {
      return !kv.second.qualifies || !kv.second.bounds || kv.second.bounds->empty();
    });
  }

 protected:
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    StmtExprVisitor::visit_buffer_store(n);
    auto it = buffers.find(n->buffer.get());
    if (it == buffers.end() || !it->second.qualifies) return;
    PaddedBuffer& b = it->second;
    ir::Expr cond = zero_unless(n->value);
    if (!cond.defined()) {
      b.qualifies = false;
      return;
    }
    Conjuncts conjuncts, here;
    split_and(cond, conjuncts);
    arith::Analyzer analyzer;
    for (const ir::Expr& c : conjuncts) {
      if (!ir::is_comparison(c.kind()) || c.as_binary()->a.dtype().lanes() != 1) continue;
      ir::Expr d = analyzer.simplify(c.as_binary()->a - c.as_binary()->b);
      for (size_t k = 0; k < n->indices.size(); ++k) {
        const ir::Expr& e = n->indices[k];
        if (e.dtype().lanes() != 1 || ir::as_const_int(e)) continue;
        ir::Expr v = ir::cast(e.dtype(), b.dims[k]);
        ir::Expr bound;
        if (auto off = ir::as_const_int(analyzer.simplify(d - e)))
          bound =
              compare(c.kind(), v + ir::make_const(e.dtype(), *off), ir::make_const(e.dtype(), 0));
        else if (auto off = ir::as_const_int(analyzer.simplify(d + e)))
          bound =
              compare(c.kind(), ir::make_const(e.dtype(), *off) - v, ir::make_const(e.dtype(), 0));
        if (bound.defined()) {
          here.push_back(analyzer.simplify(bound));
          break;
        }
      }
    }
    b.bounds = b.bounds ? intersect(*b.bounds, here) : here;
  }
};

// What one loop's body stores and binds, for deciding whether an iteration can be skipped. Runs
// at every loop of a nest, so it stops descending once the body is known not to qualify.
class BodyScan : public ir::StmtExprVisitor {
 public:
  bool skippable = true;
  std::unordered_map<const ir::BufferNode*, std::optional<Conjuncts>>
      local_guards;  // per local buffer
  std::vector<const ir::BufferStoreNode*> local_stores, accumulations;
  std::unordered_map<const ir::VarNode*, ir::Expr>
      unit_loops;    // loops of one iteration: var -> min
  ir::VarSet bound;  // variables of the other loops and lets inside

  void visit_stmt(const ir::Stmt& s) override {
    if (skippable) StmtExprVisitor::visit_stmt(s);
  }

 protected:
  void visit_allocate(const ir::AllocateNode* n) override {
    local_guards.emplace(n->buffer.get(), std::nullopt);
    StmtExprVisitor::visit_allocate(n);
  }
  void visit_for(const ir::ForNode* n) override {
    if (ir::is_const_int(n->extent, 1))
      unit_loops.emplace(n->loop_var.get(), n->min);
    else
      bound.insert(n->loop_var.get());
    StmtExprVisitor::visit_for(n);
  }
  void visit_let(const ir::LetNode* n) override {
    bound.insert(n->var.get());
    StmtExprVisitor::visit_let(n);
  }
  void visit_evaluate(const ir::EvaluateNode*) override { skippable = false; }
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    if (local_guards.count(n->buffer.get()))
      local_stores.push_back(n);
    else if (is_accumulation(n))
      accumulations.push_back(n);
    else
      skippable = false;
  }

 private:
  static bool is_accumulation(const ir::BufferStoreNode* n) {
    auto same_element = [&](const ir::Expr& e) {
      const auto* load = e.as<ir::BufferLoadNode>();
      if (!load || load->buffer.get() != n->buffer.get() ||
          load->indices.size() != n->indices.size())
        return false;
      for (size_t i = 0; i < load->indices.size(); ++i)
        if (!arith::expr_equal(load->indices[i], n->indices[i])) return false;
      return true;
    };
    if (const ir::CallNode* dot = dot_product(n->value)) return same_element(dot->args[0]);
    if (n->value.kind() != ir::ExprKind::kAdd) return false;
    const ir::BinaryNode* add = n->value.as_binary();
    return same_element(add->a) || same_element(add->b);
  }
};

// Two modes: before flattening, only the function's padded buffers are zero sources (their
// bounds are on multi-dimensional indices); after, the loop's own local buffers and guarded terms.
class ZeroTermSkipper : public ir::StmtExprMutator {
 public:
  ZeroTermSkipper() = default;
  explicit ZeroTermSkipper(std::unordered_map<const ir::BufferNode*, PaddedBuffer> padded)
      : padded_(std::move(padded)), padded_only_(true) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (ir::is_const_int(n->extent, 1)) {
      enclosing_unit_loops_[n->loop_var.get()] = n->min;
      ir::Stmt out = StmtExprMutator::mutate_for(n, self);
      enclosing_unit_loops_.erase(n->loop_var.get());
      return out;
    }
    Conjuncts guard = loop_guard(n);
    if (guard.empty()) return StmtExprMutator::mutate_for(n, self);
    Conjuncts on_loop, outside;
    for (const ir::Expr& c : guard)
      (ir::uses_var(c, n->loop_var.get()) ? on_loop : outside).push_back(c);
    if (n->for_kind == ir::ForKind::kVectorized || n->for_kind == ir::ForKind::kThreadBinding)
      on_loop.clear();  // no branch per lane
    // Before unrolling, a guard per iteration of a loop around straight-line code would become a
    // branch per unrolled copy: a register tile split into pieces (measured 1.4x slower on a
    // 3x3 int8 convolution). Only loops of loops are guarded there.
    if (padded_only_ && !has_loop(n->body)) on_loop.clear();
    if (on_loop.empty() && outside.empty()) return StmtExprMutator::mutate_for(n, self);
    size_t known = known_.size();
    known_.insert(known_.end(), on_loop.begin(), on_loop.end());
    known_.insert(known_.end(), outside.begin(), outside.end());
    ir::Stmt body = mutate_stmt(n->body);
    known_.resize(known);
    if (!on_loop.empty()) body = ir::if_then_else(conjunction(on_loop), body);
    ir::Stmt loop = ir::for_loop(n->loop_var, n->min, n->extent, n->for_kind, body, n->thread_tag,
                                 n->annotations);
    return outside.empty() ? loop : ir::if_then_else(conjunction(outside), loop);
  }

 private:
  static ir::Expr conjunction(const Conjuncts& cs) {
    ir::Expr all = cs[0];
    for (size_t i = 1; i < cs.size(); ++i) all = all && cs[i];
    return all;
  }

  // The conjuncts under which some accumulation of the loop's body may add a nonzero term, that
  // the body does not change and no enclosing guard already holds; empty when there are none.
  Conjuncts loop_guard(const ir::ForNode* n) const {
    BodyScan scan;
    scan.visit_stmt(n->body);
    if (!scan.skippable || scan.accumulations.empty()) return {};
    arith::Analyzer analyzer;
    auto as_bound = [&](const ir::Expr& e) {  // a loop of one iteration's variable is its min
      return analyzer.simplify(ir::substitute(e, [&](const ir::Var& v) -> ir::Expr {
        if (auto it = scan.unit_loops.find(v.get()); it != scan.unit_loops.end()) return it->second;
        auto it = enclosing_unit_loops_.find(v.get());
        return it == enclosing_unit_loops_.end() ? ir::Expr() : it->second;
      }));
    };
    auto conjuncts_of = [&](const ir::Expr& cond) {
      Conjuncts out;
      split_and(as_bound(cond), out);
      std::erase_if(out, [](const ir::Expr& c) { return ir::is_const_int(c, 1); });
      return out;
    };
    for (const ir::BufferStoreNode* s : scan.local_stores) {
      std::optional<Conjuncts>& g = scan.local_guards[s->buffer.get()];
      ir::Expr cond = zero_unless(s->value);
      Conjuncts here = cond.defined() ? conjuncts_of(cond) : Conjuncts{};
      g = g ? intersect(*g, here) : here;
    }
    // The conjuncts that must hold for `e` to be nonzero.
    std::function<Conjuncts(const ir::Expr&)> nonzero_needs = [&](const ir::Expr& e) -> Conjuncts {
      if (e.kind() == ir::ExprKind::kMul) {
        Conjuncts out = nonzero_needs(e.as_binary()->a);
        for (const ir::Expr& c : nonzero_needs(e.as_binary()->b))
          if (!contains(out, c)) out.push_back(c);
        return out;
      }
      if (const auto* b = e.as<ir::BroadcastNode>()) return nonzero_needs(b->value);
      if (const auto* c = e.as<ir::CastNode>()) return nonzero_needs(c->value);
      if (const auto* load = e.as<ir::BufferLoadNode>()) {
        if (padded_only_) {
          auto it = padded_.find(load->buffer.get());
          if (it == padded_.end()) return {};
          const PaddedBuffer& b = it->second;
          Conjuncts out;
          for (const ir::Expr& bound : *b.bounds) {
            bool vector_index = false;  // its lanes may differ
            ir::Expr at = ir::substitute(bound, [&](const ir::Var& v) -> ir::Expr {
              for (size_t k = 0; k < b.dims.size(); ++k)
                if (v.get() == b.dims[k].get()) {
                  vector_index = vector_index || load->indices[k].dtype().lanes() != 1;
                  return load->indices[k];
                }
              return ir::Expr();
            });
            if (vector_index) continue;
            for (const ir::Expr& c : conjuncts_of(at))
              if (!contains(out, c)) out.push_back(c);
          }
          return out;
        }
        auto it = scan.local_guards.find(load->buffer.get());
        return it != scan.local_guards.end() && it->second ? *it->second : Conjuncts{};
      }
      if (padded_only_) return {};
      ir::Expr cond = zero_unless(e);
      if (!cond.defined()) return {};
      Conjuncts out = conjuncts_of(cond);
      const ir::Expr& x =
          e.as<ir::CallNode>() ? e.as<ir::CallNode>()->args[1] : e.as<ir::SelectNode>()->true_value;
      for (const ir::Expr& c : nonzero_needs(x))
        if (!contains(out, c)) out.push_back(c);
      return out;
    };
    std::optional<Conjuncts> common;
    for (const ir::BufferStoreNode* s : scan.accumulations) {
      Conjuncts needs;
      if (const ir::CallNode* dot = dot_product(s->value)) {  // zero when either operand is
        needs = nonzero_needs(dot->args[1]);
        for (const ir::Expr& c : nonzero_needs(dot->args[2]))
          if (!contains(needs, c)) needs.push_back(c);
      } else {
        const ir::BinaryNode* add = s->value.as_binary();
        const auto* first = add->a.as<ir::BufferLoadNode>();
        bool first_is_acc = first && first->buffer.get() == s->buffer.get();
        needs = nonzero_needs(first_is_acc ? add->b : add->a);
      }
      common = common ? intersect(*common, needs) : needs;
      if (common->empty()) return {};
    }
    Conjuncts out;
    for (const ir::Expr& c : *common)
      if (c.dtype().lanes() == 1 && !unsafe_to_hoist(c) && !ir::uses_any(c, scan.bound) &&
          !contains(known_, c))
        out.push_back(c);
    return out;
  }

  std::unordered_map<const ir::BufferNode*, PaddedBuffer> padded_;
  bool padded_only_ = false;
  Conjuncts known_;  // the conjuncts enclosing guards already hold
  std::unordered_map<const ir::VarNode*, ir::Expr> enclosing_unit_loops_;  // var -> min
};

}  // namespace

ir::PrimFunc skip_zero_terms(const ir::PrimFunc& func) {
  return func.with_body(ZeroTermSkipper().mutate_stmt(func->body));
}

ir::PrimFunc skip_padding_taps(const ir::PrimFunc& func) {
  PaddedBufferScan scan;
  scan.scan_top(func->body);
  if (scan.buffers.empty()) return func;
  return func.with_body(ZeroTermSkipper(std::move(scan.buffers)).mutate_stmt(func->body));
}

}  // namespace tyche::lower
