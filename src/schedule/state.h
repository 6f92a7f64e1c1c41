// The schedule state: the PrimFunc being transformed plus an sref tree, a stable handle for every
// block and loop. Every IR change goes through replace(), which path-copies the immutable IR and
// carries each sref over to the node that continues it (loops by their loop variable, blocks by an
// explicit reuse map), so handles stay valid across primitives unless a primitive consumed them.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/function.h"

namespace tyche::schedule {

struct SRefNode {
  const ir::StmtNode* stmt = nullptr;  // a ForNode or a BlockNode; nullptr once invalidated
  SRefNode* parent = nullptr;          // nearest enclosing loop or block
  int64_t seq_index = -1;              // position among the parent's statements, -1 if alone

  bool valid() const { return stmt != nullptr; }
  const ir::ForNode* as_for() const;
  const ir::BlockNode* as_block() const;
};
using SRef = std::shared_ptr<SRefNode>;

// New block node -> the old block it continues (keeps the old block's sref).
using BlockReuse = std::unordered_map<const ir::BlockNode*, const ir::BlockNode*>;

class ScheduleState {
 public:
  explicit ScheduleState(ir::PrimFunc func, bool debug_verify = false);
  // Not copyable: the srefs point into this state's tree (replay a Trace to duplicate a schedule).
  ScheduleState(const ScheduleState&) = delete;
  ScheduleState& operator=(const ScheduleState&) = delete;
  ScheduleState(ScheduleState&&) = default;
  ScheduleState& operator=(ScheduleState&&) = default;

  const ir::PrimFunc& func() const { return func_; }
  bool debug_verify() const { return debug_verify_; }
  // The sref of a block or loop node of the current IR; nullptr if there is none.
  SRef get_sref(const ir::StmtNode* stmt) const;
  const SRef& root() const { return root_; }

  // Replaces the statement at `sref` (a loop or block) by `new_stmt`. `reuse` maps blocks of
  // new_stmt to old blocks they continue. Loops continue when they keep their loop variable.
  void replace(const SRef& sref, const ir::Stmt& new_stmt, const BlockReuse& reuse = {});
  // Replaces the whole function body (used when a change spans several subtrees).
  void replace_root(const ir::Stmt& new_body, const BlockReuse& reuse = {});

  // The statement an sref points at, as a handle (shares ownership with the IR).
  ir::Stmt stmt_of(const SRefNode* sref) const;
  // The BlockRealize that executes `block_sref`'s block.
  const ir::BlockRealizeNode* realize_of(const SRefNode* block_sref) const;
  ir::Stmt realize_stmt_of(const SRefNode* block_sref) const;
  // Throws InternalError if the sref tree and the IR disagree or invariants are broken.
  void verify() const;

 private:
  void rebuild(const std::unordered_map<const ir::StmtNode*, const ir::StmtNode*>& continues);

  ir::PrimFunc func_;
  bool debug_verify_;
  SRef root_;
  std::unordered_map<const ir::StmtNode*, SRef> stmt2ref_;
  // Keep every node the srefs point at alive, with handles to rebuild paths.
  std::unordered_map<const ir::StmtNode*, ir::Stmt> stmts_;
  std::unordered_map<const ir::StmtNode*, ir::Stmt> realizes_;  // block -> its BlockRealize
};

// Ancestor srefs of `sref` from the outermost down to its parent.
std::vector<SRefNode*> ancestors(const SRefNode* sref);
// The nearest enclosing block (the scope) of a loop or block.
SRefNode* scope_block(const SRefNode* sref);

}  // namespace tyche::schedule
