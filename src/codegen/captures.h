// What the body of a parallel loop captures when a backend outlines it into a function of its
// own (the LLVM and C backends both do, for the thread pool): the variables and buffers it uses
// but does not define, in the order first met.
#pragma once

#include <unordered_set>
#include <vector>

#include "ir/functor.h"

namespace tyche::codegen::detail {

struct FreeVars : ir::StmtExprVisitor {
  std::vector<const ir::VarNode*> vars;
  std::vector<const ir::BufferNode*> buffers;
  std::unordered_set<const ir::VarNode*> defined, seen_vars;
  std::unordered_set<const ir::BufferNode*> allocated, seen_buffers;

  void visit_var(const ir::VarNode* v) override {
    if (!defined.count(v) && seen_vars.insert(v).second) vars.push_back(v);
  }
  void use(const ir::Buffer& b) {
    if (!allocated.count(b.get()) && seen_buffers.insert(b.get()).second)
      buffers.push_back(b.get());
  }
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    use(n->buffer);
    StmtExprVisitor::visit_buffer_load(n);
  }
  void visit_buffer_store(const ir::BufferStoreNode* n) override {
    use(n->buffer);
    StmtExprVisitor::visit_buffer_store(n);
  }
  void visit_for(const ir::ForNode* n) override {
    visit_expr(n->min);
    visit_expr(n->extent);
    defined.insert(n->loop_var.get());
    visit_stmt(n->body);
  }
  void visit_let(const ir::LetNode* n) override {
    visit_expr(n->value);
    defined.insert(n->var.get());
    visit_expr(n->body);
  }
  void visit_allocate(const ir::AllocateNode* n) override {
    allocated.insert(n->buffer.get());
    visit_stmt(n->body);
  }

  // The captures of a parallel loop's body, its min included (evaluated inside the outlined
  // function, which gets the iteration range).
  void add_parallel_body(const ir::ForNode* loop) {
    visit_expr(loop->min);
    defined.insert(loop->loop_var.get());
    visit_stmt(loop->body);
  }
};

}  // namespace tyche::codegen::detail
