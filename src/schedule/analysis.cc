#include "schedule/analysis.h"

#include <algorithm>
#include <functional>

namespace tyche::schedule {

void visit_scope(const ir::Stmt& stmt, const ScopeVisitor& v) {
  std::function<void(const ir::Stmt&)> walk = [&](const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kBlockRealize:
        if (v.on_realize) v.on_realize(s.as<ir::BlockRealizeNode>());
        return;
      case ir::StmtKind::kFor:
        if (v.on_loop) v.on_loop(s.as<ir::ForNode>(), true);
        walk(s.as<ir::ForNode>()->body);
        if (v.on_loop) v.on_loop(s.as<ir::ForNode>(), false);
        return;
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) walk(c);
        return;
      case ir::StmtKind::kIfThenElse: {
        auto* n = s.as<ir::IfThenElseNode>();
        walk(n->then_case);
        if (n->else_case.defined()) walk(n->else_case);
        return;
      }
      case ir::StmtKind::kAllocate:
        walk(s.as<ir::AllocateNode>()->body);
        return;
      default:
        return;
    }
  };
  walk(stmt);
}

std::vector<const ir::BlockRealizeNode*> realizes_under(const ir::Stmt& stmt) {
  std::vector<const ir::BlockRealizeNode*> out;
  visit_scope(stmt, {.on_loop = nullptr,
                     .on_realize = [&](const ir::BlockRealizeNode* r) { out.push_back(r); }});
  return out;
}

std::vector<const ir::ForNode*> loops_under(const ir::Stmt& stmt) {
  std::vector<const ir::ForNode*> out;
  visit_scope(stmt, {.on_loop =
                         [&](const ir::ForNode* f, bool entering) {
                           if (entering) out.push_back(f);
                         },
                     .on_realize = nullptr});
  return out;
}

std::vector<SRefNode*> loop_path(const SRefNode* top, const SRefNode* bottom) {
  std::vector<SRefNode*> path;
  for (SRefNode* p = const_cast<SRefNode*>(bottom); p; p = p->parent) {
    if (!p->as_for()) return {};
    path.push_back(p);
    if (p == top) return {path.rbegin(), path.rend()};
  }
  return {};
}

bool touches(const std::vector<ir::BufferRegion>& regions, const ir::BufferNode* buffer) {
  return std::any_of(regions.begin(), regions.end(),
                     [&](const ir::BufferRegion& r) { return r.buffer.get() == buffer; });
}

bool touches_any(const std::vector<ir::BufferRegion>& regions,
                 const std::vector<ir::BufferRegion>& others) {
  return std::any_of(others.begin(), others.end(),
                     [&](const ir::BufferRegion& r) { return touches(regions, r.buffer.get()); });
}

}  // namespace tyche::schedule
