// Unrolled loops -> copies of the body with the loop variable replaced by each value; nested
// parallel loops -> serial inner ones.
//
// Auto-unroll (TVM's UnrollLoop with auto_max_step): a loop annotated
// pragma_auto_unroll_max_step = N with pragma_unroll_explicit = 1 (or absent) makes every serial
// loop under it, itself included, of constant extent whose step count is at most N, unrolled.
// step count(loop) = extent x step count(body); a SeqStmt sums its statements, ifs and
// allocations count their contents, any other statement (a store, a vector store made from a
// vectorized loop) counts 1. Inner loops decide first, and a loop that still contains a loop is
// never unrolled (TVM's normal_loop_depth rule). With pragma_unroll_explicit = 0 (implicit) the
// choice is left to the back-end compiler, so nothing changes here (TVM's LLVM back end ignores
// its unroll hint too). An inner annotated loop overrides the limit for its subtree.
#include <fmt/format.h>

#include <limits>

#include "arith/const_int_bound.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

int64_t int_annotation(const ir::Annotations& ann, const char* key, int64_t absent) {
  auto it = ann.find(key);
  if (it == ann.end()) return absent;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  if (const auto* d = std::get_if<double>(&it->second)) return static_cast<int64_t>(*d);
  return absent;
}

// Statements executed by `s` if every loop in it ran as straight-line code (saturating).
int64_t step_count(const ir::Stmt& s) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
    case ir::StmtKind::kFor: {
      const auto* f = s.as<ir::ForNode>();
      auto ext = ir::as_const_int(f->extent);
      return ext ? arith::sat_mul(std::max<int64_t>(*ext, 0), step_count(f->body))
                 : arith::ConstIntBound::kPosInf;
    }
    case ir::StmtKind::kSeqStmt: {
      int64_t n = 0;
      for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) n = arith::sat_add(n, step_count(c));
      return n;
    }
    case ir::StmtKind::kIfThenElse:
      return arith::sat_add(step_count(s.as<ir::IfThenElseNode>()->then_case),
                            step_count(s.as<ir::IfThenElseNode>()->else_case));
    case ir::StmtKind::kAllocate:
      return step_count(s.as<ir::AllocateNode>()->body);
    default:
      return 1;
  }
}

bool contains_loop(const ir::Stmt& s) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Stmt& x) { found |= x.kind() == ir::StmtKind::kFor; });
  return found;
}

class Unroller : public ir::StmtExprMutator {
 public:
  explicit Unroller(std::vector<std::string>* notes) : notes_(notes) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    int64_t outer_max_step = auto_max_step_;
    if (n->annotations.count(ir::ann::kAutoUnrollMaxStep))
      auto_max_step_ = int_annotation(n->annotations, ir::ann::kUnrollExplicitPragma, 1) != 0
                           ? int_annotation(n->annotations, ir::ann::kAutoUnrollMaxStep, 0)
                           : 0;
    int64_t max_step = auto_max_step_;
    ir::Stmt body = mutate_stmt(n->body);  // inner loops first
    auto_max_step_ = outer_max_step;
    auto mn = ir::as_const_int(n->min);
    auto ext = ir::as_const_int(n->extent);
    if (n->for_kind == ir::ForKind::kSerial && max_step > 0 && ext && !contains_loop(body) &&
        arith::sat_mul(std::max<int64_t>(*ext, 0), step_count(body)) <= max_step)
      return copies(n, body, *ext);
    if (n->for_kind != ir::ForKind::kUnrolled) {
      return body.same_as(n->body) ? self
                                   : ir::for_loop(n->loop_var, n->min, n->extent, n->for_kind, body,
                                                  n->thread_tag, n->annotations);
    }
    if (!mn || !ext || *ext > kMaxUnrollExtent) {
      notes_->push_back(
          fmt::format("unrolled loop '{}' {}: kept as a loop", n->loop_var.name(),
                      ext ? fmt::format("has {} iterations (more than {})", *ext, kMaxUnrollExtent)
                          : std::string("has a non-constant extent")));
      return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial, body, {},
                          n->annotations);
    }
    return copies(n, body, *ext);
  }

 private:
  // The body once per iteration, the loop variable replaced by min + i.
  static ir::Stmt copies(const ir::ForNode* n, const ir::Stmt& body, int64_t extent) {
    auto mn = ir::as_const_int(n->min);
    std::vector<ir::Stmt> out;
    for (int64_t i = 0; i < extent; ++i) {
      ir::Expr value = mn ? ir::make_int(*mn + i, n->loop_var.dtype())
                          : n->min + ir::make_int(i, n->loop_var.dtype());
      out.push_back(ir::substitute(
          body, [&](const ir::Var& v) { return v.same_as(n->loop_var) ? value : ir::Expr(); }));
    }
    return ir::seq(std::move(out));
  }

  std::vector<std::string>* notes_;
  int64_t auto_max_step_ = 0;  // 0: no auto-unroll here
};

class NestedParallel : public ir::StmtExprMutator {
 public:
  explicit NestedParallel(std::vector<std::string>* notes) : notes_(notes) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    bool parallel = n->for_kind == ir::ForKind::kParallel;
    if (parallel && depth_ > 0) {
      notes_->push_back(fmt::format(
          "parallel loop '{}' is inside another parallel loop: runs serially", n->loop_var.name()));
      return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial,
                          mutate_stmt(n->body), {}, n->annotations);
    }
    depth_ += parallel;
    ir::Stmt out = StmtExprMutator::mutate_for(n, self);
    depth_ -= parallel;
    return out;
  }

 private:
  std::vector<std::string>* notes_;
  int depth_ = 0;
};

}  // namespace

ir::PrimFunc unroll_loops(const ir::PrimFunc& func, std::vector<std::string>* notes) {
  return func.with_body(Unroller(notes).mutate_stmt(func->body));
}

ir::PrimFunc serialize_nested_parallel(const ir::PrimFunc& func, std::vector<std::string>* notes) {
  return func.with_body(NestedParallel(notes).mutate_stmt(func->body));
}

}  // namespace tyche::lower
