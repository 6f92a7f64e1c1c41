#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {

Result<SRef> get_block(const ScheduleState& state, const std::string& name) {
  SRef found;
  int count = 0;
  std::vector<SRef> stack = {state.root()};
  while (!stack.empty()) {
    SRef s = stack.back();
    stack.pop_back();
    if (s->as_block() && s->as_block()->name == name) found = s, ++count;
    auto kids = child_blocks(state, s.get());
    stack.insert(stack.end(), kids.rbegin(), kids.rend());
  }
  if (count == 0)
    return ScheduleError(ErrorCode::kUnknownBlock, fmt::format("no block named '{}'", name));
  if (count > 1)
    return ScheduleError(ErrorCode::kAmbiguousBlock,
                         fmt::format("{} blocks are named '{}'", count, name));
  return found;
}

std::vector<SRef> get_loops(const ScheduleState& state, const SRef& block) {
  std::vector<SRef> out;
  for (SRefNode* p = block->parent; p && p->as_for(); p = p->parent)
    out.push_back(state.get_sref(p->stmt));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<SRef> get_producers(const ScheduleState& state, const SRef& block) {
  std::vector<SRef> siblings = child_blocks(state, scope_block(block.get()));
  const ir::BlockNode* b = block->as_block();
  std::vector<SRef> out;
  for (const SRef& s : siblings) {
    if (s.get() == block.get()) break;
    const ir::BlockNode* p = s->as_block();
    if (std::any_of(p->writes.begin(), p->writes.end(),
                    [&](const ir::BufferRegion& w) { return touches(b->reads, w.buffer.get()); }))
      out.push_back(s);
  }
  return out;
}

std::vector<SRef> get_consumers(const ScheduleState& state, const SRef& block) {
  std::vector<SRef> siblings = child_blocks(state, scope_block(block.get()));
  const ir::BlockNode* b = block->as_block();
  std::vector<SRef> out;
  bool after = false;
  for (const SRef& s : siblings) {
    if (s.get() == block.get()) {
      after = true;
      continue;
    }
    if (!after) continue;
    const ir::BlockNode* c = s->as_block();
    if (std::any_of(b->writes.begin(), b->writes.end(),
                    [&](const ir::BufferRegion& w) { return touches(c->reads, w.buffer.get()); }))
      out.push_back(s);
  }
  return out;
}

// ---- instructions ----

namespace {

Result<BlockRV> apply_get_block(InstructionContext& ctx, std::string name) {
  TYCHE_TRY_ASSIGN(block, get_block(ctx.state(), name));
  return ctx.issue_block(block);
}

Result<std::vector<LoopRV>> apply_get_loops(InstructionContext& ctx, BlockRV block) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  return ctx.issue_loops(get_loops(ctx.state(), sref));
}

Result<std::vector<BlockRV>> apply_get_child_blocks(InstructionContext& ctx,
                                                    BlockOrLoopRV block_or_loop) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block_or_loop));
  return ctx.issue_blocks(child_blocks(ctx.state(), sref.get()));
}

template <std::vector<SRef> (*Lookup)(const ScheduleState&, const SRef&)>
Result<std::vector<BlockRV>> apply_block_lookup(InstructionContext& ctx, BlockRV block) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  return ctx.issue_blocks(Lookup(ctx.state(), sref));
}

constexpr KindFlags kLookup = {.pure = true};

}  // namespace

TYCHE_INSTRUCTION(get_block, apply_get_block, {{"name"}}, kLookup)
TYCHE_INSTRUCTION(get_loops, apply_get_loops, {{"block"}}, kLookup)
TYCHE_INSTRUCTION(get_child_blocks, apply_get_child_blocks, {{"block_or_loop"}}, kLookup)
TYCHE_INSTRUCTION(get_producers, apply_block_lookup<get_producers>, {{"block"}}, kLookup)
TYCHE_INSTRUCTION(get_consumers, apply_block_lookup<get_consumers>, {{"block"}}, kLookup)

Result<BlockRV> Schedule::get_block(const std::string& name) {
  return get_block_kind()(*this, name);
}
Result<std::vector<LoopRV>> Schedule::get_loops(const BlockRV& block) {
  return get_loops_kind()(*this, block);
}
Result<std::vector<BlockRV>> Schedule::get_child_blocks(const BlockRV& block) {
  return get_child_blocks_kind()(*this, block);
}
Result<std::vector<BlockRV>> Schedule::get_child_blocks(const LoopRV& loop) {
  return get_child_blocks_kind()(*this, loop);
}
Result<std::vector<BlockRV>> Schedule::get_producers(const BlockRV& block) {
  return get_producers_kind()(*this, block);
}
Result<std::vector<BlockRV>> Schedule::get_consumers(const BlockRV& block) {
  return get_consumers_kind()(*this, block);
}

}  // namespace tyche::schedule
