// Blocks -> plain loops. A block's iter vars are replaced by their bindings; its init runs when
// every reduce iterator is at its domain minimum (as the interpreter and TensorIR define it);
// its predicate becomes an if; its alloc_buffers become Allocate statements around it.
#include <fmt/format.h>

#include <unordered_map>

#include "ir/functor.h"
#include "ir/op.h"
#include "lower/lower.h"

namespace tyche::lower {

namespace {

class BlockLowerer : public ir::StmtExprMutator {
 public:
  BlockLowerer(std::vector<std::string>* notes, bool keep_thread_bindings)
      : notes_(notes), keep_thread_bindings_(keep_thread_bindings) {}

 protected:
  ir::Stmt mutate_block_realize(const ir::BlockRealizeNode* n, const ir::Stmt&) override {
    const ir::BlockNode* b = n->block.get();
    std::unordered_map<const ir::VarNode*, ir::Expr> binding;
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      binding[b->iter_vars[i].var.get()] = n->iter_values[i];
    auto bind = [&](const ir::Var& v) -> ir::Expr {
      auto it = binding.find(v.get());
      return it == binding.end() ? ir::Expr() : it->second;
    };
    ir::Stmt body = mutate_stmt(ir::substitute(b->body, bind));
    if (b->init.defined()) {
      ir::Expr first;  // all reduce iterators at their minimum
      for (size_t i = 0; i < b->iter_vars.size(); ++i) {
        const ir::IterVar& iv = b->iter_vars[i];
        if (iv.kind != ir::IterKind::kReduce) continue;
        ir::Expr c = n->iter_values[i] == iv.dom.min;
        first = first.defined() ? (first && c) : c;
      }
      ir::Stmt init = mutate_stmt(ir::substitute(b->init, bind));
      body = ir::seq({first.defined() ? ir::if_then_else(first, init) : init, body});
    }
    for (auto it = b->alloc_buffers.rbegin(); it != b->alloc_buffers.rend(); ++it)
      body = ir::allocate(*it, body);
    if (!ir::is_true(n->predicate)) body = ir::if_then_else(mutate_expr(n->predicate), body);
    return body;
  }

  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    if (n->for_kind != ir::ForKind::kThreadBinding || keep_thread_bindings_)
      return StmtExprMutator::mutate_for(n, self);
    notes_->push_back(fmt::format("loop '{}' bound to {} runs as a serial loop on the CPU",
                                  n->loop_var.name(), n->thread_tag));
    return ir::for_loop(n->loop_var, n->min, n->extent, ir::ForKind::kSerial, mutate_stmt(n->body),
                        {}, n->annotations);
  }

 private:
  std::vector<std::string>* notes_;
  bool keep_thread_bindings_;
};

}  // namespace

ir::PrimFunc lower_blocks(const ir::PrimFunc& func, std::vector<std::string>* notes,
                          bool keep_thread_bindings) {
  return func.with_body(BlockLowerer(notes, keep_thread_bindings).mutate_stmt(func->body));
}

}  // namespace tyche::lower
