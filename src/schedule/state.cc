#include "schedule/state.h"

#include <functional>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/op.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {

const ir::ForNode* SRefNode::as_for() const {
  return stmt && stmt->kind == ir::StmtKind::kFor ? static_cast<const ir::ForNode*>(stmt) : nullptr;
}
const ir::BlockNode* SRefNode::as_block() const {
  return stmt && stmt->kind == ir::StmtKind::kBlock ? static_cast<const ir::BlockNode*>(stmt)
                                                    : nullptr;
}

std::vector<SRefNode*> ancestors(const SRefNode* sref) {
  std::vector<SRefNode*> out;
  for (SRefNode* p = sref->parent; p; p = p->parent) out.push_back(p);
  return {out.rbegin(), out.rend()};
}

SRefNode* scope_block(const SRefNode* sref) {
  for (SRefNode* p = sref->parent; p; p = p->parent)
    if (p->as_block()) return p;
  return nullptr;
}

namespace {

class ChildReplacer : public ir::StmtExprMutator {
 public:
  ChildReplacer(const ir::StmtNode* root, const ir::StmtNode* old_child, ir::Stmt new_child,
                bool through_loops)
      : root_(root), old_(old_child), new_(std::move(new_child)), through_loops_(through_loops) {}
  bool found = false;

  ir::Stmt mutate_stmt(const ir::Stmt& s) override {
    if (s.get() == old_) {
      found = true;
      return new_;
    }
    if (s.get() != root_ &&
        (s.kind() == ir::StmtKind::kBlock || (s.kind() == ir::StmtKind::kFor && !through_loops_)))
      return s;
    return StmtExprMutator::mutate_stmt(s);
  }
  ir::Expr mutate_expr(const ir::Expr& e) override { return e; }

 private:
  const ir::StmtNode* root_;
  const ir::StmtNode* old_;
  ir::Stmt new_;
  bool through_loops_;
};

}  // namespace

ir::Stmt outer_stmt(const ScheduleState& state, const SRefNode* sref) {
  return sref->as_for() ? state.stmt_of(sref) : state.realize_stmt_of(sref);
}

ir::Stmt replace_child(const ir::Stmt& stmt, const ir::StmtNode* old_child, ir::Stmt new_child,
                       bool through_loops) {
  ChildReplacer r(stmt.get(), old_child, std::move(new_child), through_loops);
  ir::Stmt out = r.mutate_stmt(stmt);
  return r.found ? out : ir::Stmt();
}

ScheduleState::ScheduleState(ir::PrimFunc func, bool debug_verify)
    : func_(std::move(func)), debug_verify_(debug_verify) {
  if (!func_->body.defined() || !func_->body.as<ir::BlockRealizeNode>())
    throw_error("a schedule needs a PrimFunc whose body is a root block (use create_prim_func)");
  rebuild({});
  if (debug_verify_) verify();
}

SRef ScheduleState::get_sref(const ir::StmtNode* stmt) const {
  auto it = stmt2ref_.find(stmt);
  return it == stmt2ref_.end() ? nullptr : it->second;
}

ir::Stmt ScheduleState::stmt_of(const SRefNode* sref) const {
  auto it = stmts_.find(sref->stmt);
  TYCHE_CHECK(it != stmts_.end(), "sref points outside the IR");
  return it->second;
}

const ir::BlockRealizeNode* ScheduleState::realize_of(const SRefNode* block_sref) const {
  return realize_stmt_of(block_sref).as<ir::BlockRealizeNode>();
}

ir::Stmt ScheduleState::realize_stmt_of(const SRefNode* block_sref) const {
  auto it = realizes_.find(block_sref->stmt);
  TYCHE_CHECK(it != realizes_.end(), "block without a realize");
  return it->second;
}

void ScheduleState::replace(const SRef& sref, const ir::Stmt& new_stmt, const BlockReuse& reuse) {
  TYCHE_CHECK(sref && sref->valid(), "replace of an invalid sref");
  std::unordered_map<const ir::StmtNode*, const ir::StmtNode*> continues(reuse.begin(),
                                                                         reuse.end());
  // Path-copy: rebuild each ancestor with its changed child; each copy continues its original.
  ir::Stmt child = new_stmt;
  const ir::StmtNode* old_child = sref->stmt;
  for (SRefNode* p = sref->parent; p; p = p->parent) {
    ir::Stmt copy = replace_child(stmt_of(p), old_child, child);
    TYCHE_CHECK(copy.defined(), "child not found under its parent sref");
    continues[copy.get()] = p->stmt;
    old_child = p->stmt;
    child = copy;
  }
  // `child` is now the new root block; put it back into the function's root realize.
  ir::Stmt body = replace_child(func_->body, old_child, child);
  TYCHE_CHECK(body.defined(), "root block not found in the function body");
  func_ = func_.with_body(body);
  rebuild(continues);
  if (debug_verify_) verify();
}

void ScheduleState::replace_root(const ir::Stmt& new_body, const BlockReuse& reuse) {
  std::unordered_map<const ir::StmtNode*, const ir::StmtNode*> continues(reuse.begin(),
                                                                         reuse.end());
  func_ = func_.with_body(new_body);
  rebuild(continues);
  if (debug_verify_) verify();
}

void ScheduleState::rebuild(
    const std::unordered_map<const ir::StmtNode*, const ir::StmtNode*>& continues) {
  // Old srefs of loops keyed by loop variable: a loop that keeps its variable is the same loop.
  std::unordered_map<const ir::VarNode*, SRef> loop_by_var;
  for (auto& [stmt, ref] : stmt2ref_)
    if (auto* f = ref->as_for()) loop_by_var[f->loop_var.get()] = ref;
  auto old = std::move(stmt2ref_);
  stmt2ref_.clear();
  stmts_.clear();
  realizes_.clear();

  std::unordered_set<SRefNode*> reused;
  auto sref_for = [&](const ir::StmtNode* node) -> SRef {
    SRef ref;
    if (auto it = old.find(node); it != old.end())
      ref = it->second;
    else if (auto c = continues.find(node); c != continues.end() && old.count(c->second))
      ref = old.at(c->second);
    else if (node->kind == ir::StmtKind::kFor) {
      auto* f = static_cast<const ir::ForNode*>(node);
      if (auto l = loop_by_var.find(f->loop_var.get()); l != loop_by_var.end()) ref = l->second;
    }
    if (!ref || reused.count(ref.get())) ref = std::make_shared<SRefNode>();
    reused.insert(ref.get());
    ref->stmt = node;
    return ref;
  };

  // Walk the tree; `parent` is the nearest enclosing sref.
  std::function<void(const ir::Stmt&, SRefNode*, int64_t, const ir::Stmt*)> walk =
      [&](const ir::Stmt& s, SRefNode* parent, int64_t seq_index, const ir::Stmt* realize) {
        switch (s.kind()) {
          case ir::StmtKind::kFor:
          case ir::StmtKind::kBlock: {
            SRef ref = sref_for(s.get());
            ref->parent = parent;
            ref->seq_index = seq_index;
            stmt2ref_[s.get()] = ref;
            stmts_[s.get()] = s;
            if (auto* f = s.as<ir::ForNode>()) {
              walk(f->body, ref.get(), -1, nullptr);
            } else {
              auto* b = s.as<ir::BlockNode>();
              if (realize) realizes_[s.get()] = *realize;
              if (!parent) root_ = ref;
              if (b->init.defined()) walk(b->init, ref.get(), -1, nullptr);
              walk(b->body, ref.get(), -1, nullptr);
            }
            return;
          }
          case ir::StmtKind::kBlockRealize: {
            walk(s.as<ir::BlockRealizeNode>()->block, parent, seq_index, &s);
            return;
          }
          case ir::StmtKind::kSeqStmt: {
            auto* q = s.as<ir::SeqStmtNode>();
            for (size_t i = 0; i < q->seq.size(); ++i)
              walk(q->seq[i], parent, static_cast<int64_t>(i), nullptr);
            return;
          }
          case ir::StmtKind::kIfThenElse: {
            auto* n = s.as<ir::IfThenElseNode>();
            walk(n->then_case, parent, seq_index, nullptr);
            if (n->else_case.defined()) walk(n->else_case, parent, seq_index, nullptr);
            return;
          }
          case ir::StmtKind::kAllocate:
            walk(s.as<ir::AllocateNode>()->body, parent, seq_index, nullptr);
            return;
          default:
            return;
        }
      };
  walk(func_->body, nullptr, -1, nullptr);
  for (auto& [stmt, ref] : old)
    if (!reused.count(ref.get())) ref->stmt = nullptr, ref->parent = nullptr;
}

void ScheduleState::verify() const {
  std::unordered_set<const ir::VarNode*> loop_vars;
  std::unordered_set<std::string> block_names;
  for (auto& [stmt, ref] : stmt2ref_) {
    TYCHE_CHECK(ref->stmt == stmt, "sref does not point back at its statement");
    if (auto* f = ref->as_for()) {
      TYCHE_CHECK(loop_vars.insert(f->loop_var.get()).second, "loop variable {} is bound twice",
                  f->loop_var.name());
    } else if (auto* b = ref->as_block()) {
      TYCHE_CHECK(block_names.insert(b->name).second, "block name {} is used twice", b->name);
      if (ref.get() != root_.get()) {
        auto* r = realize_of(ref.get());
        TYCHE_CHECK(r->iter_values.size() == b->iter_vars.size(), "block {} binding count",
                    b->name);
      }
    }
    if (ref->parent) TYCHE_CHECK(stmt2ref_.count(ref->parent->stmt), "dangling parent sref");
  }
  TYCHE_CHECK(root_ && root_->as_block(), "the root sref is not a block");
}

}  // namespace tyche::schedule
