// Unrolled loops -> copies of the body with the loop variable replaced by each value; nested
// parallel loops -> serial inner ones.
#include <fmt/format.h>

#include "ir/functor.h"
#include "ir/op.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

class Unroller : public ir::StmtExprMutator {
 public:
  explicit Unroller(std::vector<std::string>* notes) : notes_(notes) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    ir::Stmt body = mutate_stmt(n->body);  // inner loops first
    if (n->for_kind != ir::ForKind::kUnrolled) {
      return body.same_as(n->body) ? self
                                   : ir::for_loop(n->loop_var, n->min, n->extent, n->for_kind, body, n->thread_tag, n->annotations);
    }
    auto mn = ir::as_const_int(n->min);
    auto ext = ir::as_const_int(n->extent);
    if (!mn || !ext || *ext > kMaxUnrollExtent) {
      notes_->push_back(fmt::format("unrolled loop '{}' {}: kept as a loop", n->loop_var.name(),
                                    ext ? fmt::format("has {} iterations (more than {})", *ext, kMaxUnrollExtent)
                                        : std::string("has a non-constant extent")));
      return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial, body, {}, n->annotations);
    }
    std::vector<ir::Stmt> copies;
    for (int64_t i = 0; i < *ext; ++i) {
      ir::Expr value = ir::make_int(*mn + i, n->loop_var.dtype());
      copies.push_back(ir::substitute(body, [&](const ir::Var& v) { return v.same_as(n->loop_var) ? value : ir::Expr(); }));
    }
    return ir::seq(std::move(copies));
  }

 private:
  std::vector<std::string>* notes_;
};

class NestedParallel : public ir::StmtExprMutator {
 public:
  explicit NestedParallel(std::vector<std::string>* notes) : notes_(notes) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    bool parallel = n->for_kind == ir::ForKind::kParallel;
    if (parallel && depth_ > 0) {
      notes_->push_back(fmt::format("parallel loop '{}' is inside another parallel loop: runs serially", n->loop_var.name()));
      return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial, mutate_stmt(n->body), {}, n->annotations);
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
