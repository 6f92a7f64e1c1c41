// Vectorized loops -> vector expressions. The loop variable becomes Ramp(min, 1, lanes); every
// expression that depends on it becomes a vector (loads at a Ramp index are contiguous, others
// gathers), the rest stays scalar and is broadcast where it meets a vector. When the body cannot
// be expressed per lane -- a store every lane makes to one element, a lane-dependent if or
// if_then_else, a loop whose range depends on the variable, an allocation, another vectorized
// loop inside -- the loop stays a serial loop and the reason is noted. Loops longer than
// kMaxVectorLanes are strip-mined when their extent is a multiple of 16.
#include <fmt/format.h>

#include "arith/analyzer.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

struct NotVectorizable {
  std::string why;
};
// The lanes cross blocks of `lanes` in a floordiv/floormod (a packed layout's j // 16 over 64
// lanes): vectors of that many lanes, each within one block, keep every access contiguous.
struct FewerLanes {
  int lanes;
};

int lanes_of(const ir::Expr& e) {
  return e.dtype().lanes();
}

class LaneRewriter : public ir::StmtExprMutator {
 public:
  LaneRewriter(const ir::Var& var, ir::Expr min, int lanes)
      : var_(var), ramp_(ir::ramp(std::move(min), ir::make_int(1, var.dtype()), lanes)) {}

 protected:
  ir::Expr mutate_var(const ir::VarNode* n, const ir::Expr& self) override {
    return n == var_.get() ? ramp_ : self;
  }

  ir::Expr mutate_binary(const ir::BinaryNode* n, const ir::Expr& self) override {
    ir::Expr a = mutate_expr(n->a), b = mutate_expr(n->b);
    if (a.same_as(n->a) && b.same_as(n->b)) return self;
    // Keep affine indices as ramps: ramp +- scalar, ramp * constant.
    const auto* ra = a.as<ir::RampNode>();
    const auto* rb = b.as<ir::RampNode>();
    if (n->kind == ir::ExprKind::kAdd && ra && lanes_of(b) == 1)
      return ir::ramp(ra->base + b, ra->stride, ra->lanes);
    if (n->kind == ir::ExprKind::kAdd && rb && lanes_of(a) == 1)
      return ir::ramp(a + rb->base, rb->stride, rb->lanes);
    if (n->kind == ir::ExprKind::kSub && ra && lanes_of(b) == 1)
      return ir::ramp(ra->base - b, ra->stride, ra->lanes);
    // A reversed index (a - lane): the lanes still lie at a constant stride, a negative one.
    if (n->kind == ir::ExprKind::kSub && rb && lanes_of(a) == 1)
      return ir::ramp(a - rb->base, ir::make_int(0, rb->stride.dtype()) - rb->stride, rb->lanes);
    if (n->kind == ir::ExprKind::kSub && ra && rb)
      return ir::ramp(ra->base - rb->base, ra->stride - rb->stride, ra->lanes);
    if (n->kind == ir::ExprKind::kAdd && ra && rb)
      return ir::ramp(ra->base + rb->base, ra->stride + rb->stride, ra->lanes);
    if (n->kind == ir::ExprKind::kMul && ra && ir::as_const_int(b))
      return ir::ramp(ra->base * b, ra->stride * b, ra->lanes);
    if (n->kind == ir::ExprKind::kMul && rb && ir::as_const_int(a))
      return ir::ramp(a * rb->base, a * rb->stride, rb->lanes);
    if ((n->kind == ir::ExprKind::kFloorDiv || n->kind == ir::ExprKind::kFloorMod) && ra &&
        lanes_of(b) == 1)
      if (ir::Expr v = divide_ramp(n->kind, *ra, b); v.defined()) return v;
    return ir::make_binary(n->kind, a, b);  // broadcasts the scalar side
  }

  // A ramp whose lanes fall in one block of a constant c (a packed layout's index, j // 16 and
  // j % 16): the quotient is the same in every lane and the remainder is a ramp again.
  static ir::Expr divide_ramp(ir::ExprKind kind, const ir::RampNode& r, const ir::Expr& c) {
    auto divisor = ir::as_const_int(c);
    auto stride = ir::as_const_int(r.stride);
    if (!divisor || *divisor <= 0 || !stride || *stride < 0) return {};
    arith::Analyzer analyzer;
    ir::Expr rem = analyzer.simplify(ir::floormod(r.base, c));
    arith::ConstIntBound b = analyzer.const_int_bound(rem);
    if (b.min_value < 0 || b.max_value > *divisor - 1 - *stride * (r.lanes - 1)) {
      if (ir::is_const_int(rem, 0) && *stride == 1 && *divisor < r.lanes && r.lanes % *divisor == 0)
        throw FewerLanes{static_cast<int>(*divisor)};
      return {};
    }
    if (kind == ir::ExprKind::kFloorMod) return ir::ramp(rem, r.stride, r.lanes);
    return analyzer.simplify(ir::floordiv(r.base, c));
  }

  ir::Expr mutate_select(const ir::SelectNode* n, const ir::Expr& self) override {
    ir::Expr c = mutate_expr(n->condition), t = mutate_expr(n->true_value),
             f = mutate_expr(n->false_value);
    if (c.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value))
      return self;
    int l = std::max({lanes_of(c), lanes_of(t), lanes_of(f)});
    return ir::select(widen(c, l), widen(t, l), widen(f, l));
  }

  ir::Expr mutate_call(const ir::CallNode* n, const ir::Expr& self) override {
    std::vector<ir::Expr> args;
    if (!mutate_exprs(n->args, &args)) return self;
    if (n->op == ir::CallOp::kIfThenElse && lanes_of(args[0]) > 1)
      throw NotVectorizable{"an if_then_else whose condition differs between lanes"};
    if (n->op == ir::CallOp::kGroupDot || n->op == ir::CallOp::kTileDot)
      throw NotVectorizable{fmt::format("a {} (a tensor instruction) that depends on the loop",
                                        ir::call_op_name(n->op))};
    int l = 1;
    for (const ir::Expr& a : args) l = std::max(l, lanes_of(a));
    for (size_t i = (n->op == ir::CallOp::kIfThenElse ? 1 : 0); i < args.size(); ++i)
      args[i] = widen(args[i], l);
    return ir::Expr(std::make_shared<ir::CallNode>(n->dtype.with_lanes(l), n->op, std::move(args)));
  }

  ir::Expr mutate_cast(const ir::CastNode* n, const ir::Expr& self) override {
    ir::Expr v = mutate_expr(n->value);
    if (v.same_as(n->value)) return self;
    return ir::cast(n->dtype.with_lanes(lanes_of(v)), v);
  }

  ir::Expr mutate_not(const ir::NotNode* n, const ir::Expr& self) override {
    ir::Expr v = mutate_expr(n->a);
    return v.same_as(n->a) ? self : !v;
  }

  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
    ir::Expr index = mutate_expr(n->indices[0]);
    if (index.same_as(n->indices[0])) return self;
    return ir::Expr(std::make_shared<ir::BufferLoadNode>(n->dtype.with_lanes(lanes_of(index)),
                                                         n->buffer, std::vector<ir::Expr>{index}));
  }

  ir::Expr mutate_let(const ir::LetNode* n, const ir::Expr& self) override {
    ir::Expr v = mutate_expr(n->value);
    if (lanes_of(v) > 1) throw NotVectorizable{"a let-bound value that differs between lanes"};
    ir::Expr b = mutate_expr(n->body);
    return v.same_as(n->value) && b.same_as(n->body) ? self : ir::let(n->var, v, b);
  }

  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& self) override {
    ir::Expr index = mutate_expr(n->indices[0]);
    ir::Expr value = mutate_expr(n->value);
    if (index.same_as(n->indices[0]) && value.same_as(n->value)) return self;
    if (lanes_of(index) == 1 && lanes_of(value) > 1)
      throw NotVectorizable{
          fmt::format("every lane stores to the same element of '{}'", n->buffer->name)};
    return ir::buffer_store(n->buffer, widen(value, lanes_of(index)), {index});
  }

  ir::Stmt mutate_if(const ir::IfThenElseNode* n, const ir::Stmt& self) override {
    ir::Expr c = mutate_expr(n->condition);
    if (lanes_of(c) > 1) throw NotVectorizable{"an if whose condition differs between lanes"};
    return StmtExprMutator::mutate_if(n, self);
  }

  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (lanes_of(mutate_expr(n->min)) > 1 || lanes_of(mutate_expr(n->extent)) > 1)
      throw NotVectorizable{fmt::format("the range of loop '{}' depends on the vectorized variable",
                                        n->loop_var.name())};
    return StmtExprMutator::mutate_for(n, self);
  }

  ir::Stmt mutate_allocate(const ir::AllocateNode*, const ir::Stmt&) override {
    throw NotVectorizable{"an allocation inside the loop"};
  }

 private:
  static ir::Expr widen(const ir::Expr& e, int lanes) {
    return lanes > 1 && lanes_of(e) == 1 ? ir::broadcast(e, lanes) : e;
  }

  ir::Var var_;
  ir::Expr ramp_;
};

// Whether a statement already computes on vectors (an inner loop was vectorized).
bool has_vectors(const ir::Stmt& s) {
  struct Finder : ir::StmtExprVisitor {
    bool found = false;
    void visit_expr(const ir::Expr& e) override {
      if (found) return;
      if (e.dtype().lanes() > 1)
        found = true;
      else
        ir::StmtExprVisitor::visit_expr(e);
    }
  } f;
  f.visit_stmt(s);
  return f.found;
}

class Vectorizer : public ir::StmtExprMutator {
 public:
  explicit Vectorizer(std::vector<std::string>* notes) : notes_(notes) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (n->for_kind != ir::ForKind::kVectorized) return StmtExprMutator::mutate_for(n, self);
    ir::Stmt body = mutate_stmt(n->body);  // an inner vectorized loop is handled first
    auto serial = [&](const std::string& why) {
      notes_->push_back(
          fmt::format("vectorized loop '{}' runs as a scalar loop: {}", n->loop_var.name(), why));
      return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial, body, {},
                          n->annotations);
    };
    auto ext = ir::as_const_int(n->extent);
    if (!ext) return serial("its extent is not a constant");
    if (*ext == 1)
      return ir::substitute(
          body, [&](const ir::Var& v) { return v.same_as(n->loop_var) ? n->min : ir::Expr(); });
    if (has_vectors(body))
      return serial("it contains a vectorized loop (one vector dimension per loop nest)");
    // Long loops are strip-mined: a serial loop over vectors of `lanes`.
    auto strip_mined = [&](int lanes) {
      if (lanes == *ext) return LaneRewriter(n->loop_var, n->min, lanes).mutate_stmt(body);
      ir::Var outer(n->loop_var.name() + "_vo", n->loop_var.dtype());
      ir::Stmt vec = LaneRewriter(n->loop_var, n->min + outer * lanes, lanes).mutate_stmt(body);
      return ir::for_loop(outer, ir::make_int(0, outer.dtype()),
                          ir::make_int(*ext / lanes, outer.dtype()), ir::ForKind::kSerial, vec);
    };
    int lanes = static_cast<int>(*ext);
    if (*ext > kMaxVectorLanes) {
      if (*ext % 16 != 0)
        return serial(
            fmt::format("extent {} is above {} and not a multiple of 16", *ext, kMaxVectorLanes));
      lanes = 16;
    }
    try {
      try {
        return strip_mined(lanes);
      } catch (const FewerLanes& f) {
        return strip_mined(f.lanes);  // f.lanes divides lanes, which divides the extent
      }
    } catch (const NotVectorizable& e) {
      return serial(e.why);
    } catch (const FewerLanes&) {
      return serial("its lanes cross the blocks of a division twice over");
    }
  }

 private:
  std::vector<std::string>* notes_;
};

}  // namespace

ir::PrimFunc vectorize_loops(const ir::PrimFunc& func, std::vector<std::string>* notes) {
  return func.with_body(Vectorizer(notes).mutate_stmt(func->body));
}

}  // namespace tyche::lower
