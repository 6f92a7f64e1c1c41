#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "schedule/block_scope.h"
#include "schedule/primitive.h"
#include "schedule/instruction_impl.h"

namespace tyche::schedule {

namespace {

std::vector<SRef> scope_children(const ScheduleState& state, const SRefNode* under) { return child_blocks(state, under); }

bool touches(const std::vector<ir::BufferRegion>& regions, const ir::BufferNode* buffer) {
  return std::any_of(regions.begin(), regions.end(), [&](const ir::BufferRegion& r) { return r.buffer.get() == buffer; });
}

}  // namespace

Result<SRef> get_block(const ScheduleState& state, const std::string& name) {
  SRef found;
  int count = 0;
  std::vector<SRef> stack = {state.root()};
  while (!stack.empty()) {
    SRef s = stack.back();
    stack.pop_back();
    if (s->as_block() && s->as_block()->name == name) found = s, ++count;
    auto kids = scope_children(state, s.get());
    stack.insert(stack.end(), kids.rbegin(), kids.rend());
  }
  if (count == 0) return ScheduleError(ErrorCode::kUnknownBlock, fmt::format("no block named '{}'", name));
  if (count > 1) return ScheduleError(ErrorCode::kAmbiguousBlock, fmt::format("{} blocks are named '{}'", count, name));
  return found;
}

std::vector<SRef> get_loops(const ScheduleState& state, const SRef& block) {
  std::vector<SRef> out;
  for (SRefNode* p = block->parent; p && p->as_for(); p = p->parent) out.push_back(state.get_sref(p->stmt));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<SRef> get_child_blocks(const ScheduleState& state, const SRef& sref) {
  return scope_children(state, sref.get());
}

std::vector<SRef> get_producers(const ScheduleState& state, const SRef& block) {
  std::vector<SRef> siblings = scope_children(state, scope_block(block.get()));
  const ir::BlockNode* b = block->as_block();
  std::vector<SRef> out;
  for (const SRef& s : siblings) {
    if (s.get() == block.get()) break;
    const ir::BlockNode* p = s->as_block();
    if (std::any_of(p->writes.begin(), p->writes.end(), [&](const ir::BufferRegion& w) { return touches(b->reads, w.buffer.get()); }))
      out.push_back(s);
  }
  return out;
}

std::vector<SRef> get_consumers(const ScheduleState& state, const SRef& block) {
  std::vector<SRef> siblings = scope_children(state, scope_block(block.get()));
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
    if (std::any_of(b->writes.begin(), b->writes.end(), [&](const ir::BufferRegion& w) { return touches(c->reads, w.buffer.get()); }))
      out.push_back(s);
  }
  return out;
}

// ---- instructions ----

const InstructionKind& kind_get_block() {
  static const InstructionKind k{
      .name = "get_block",
      .params = {{"name", ParamType::kString}},
      .output = OutputType::kBlock,
      .pure = true,
      .apply = [](Schedule& sch, Args a, Value*) -> Result<Values> {
        TYCHE_TRY_ASSIGN(block, get_block(sch.state(), a[0].s));
        return issued_block(sch, block);
      }};
  return k;
}

namespace {

// The lookups from a block to a list of loops or blocks share one shape.
template <std::vector<SRef> (*Lookup)(const ScheduleState&, const SRef&), Values (*Issue)(Schedule&, const std::vector<SRef>&)>
Result<Values> apply_block_lookup(Schedule& sch, Args a, Value*) {
  TYCHE_TRY_ASSIGN(block, sch.block_arg(a[0]));
  return Issue(sch, Lookup(sch.state(), block));
}

template <std::vector<SRef> (*Lookup)(const ScheduleState&, const SRef&), Values (*Issue)(Schedule&, const std::vector<SRef>&)>
InstructionKind block_lookup_kind(std::string_view name, OutputType output) {
  return {.name = name, .params = {{"block", ParamType::kBlock}}, .output = output, .pure = true,
          .apply = apply_block_lookup<Lookup, Issue>};
}

}  // namespace

const InstructionKind& kind_get_loops() {
  static const InstructionKind k = block_lookup_kind<get_loops, issued_loops>("get_loops", OutputType::kLoops);
  return k;
}
const InstructionKind& kind_get_producers() {
  static const InstructionKind k = block_lookup_kind<get_producers, issued_blocks>("get_producers", OutputType::kBlocks);
  return k;
}
const InstructionKind& kind_get_consumers() {
  static const InstructionKind k = block_lookup_kind<get_consumers, issued_blocks>("get_consumers", OutputType::kBlocks);
  return k;
}

const InstructionKind& kind_get_child_blocks() {
  static const InstructionKind k{
      .name = "get_child_blocks",
      .params = {{"block_or_loop", ParamType::kBlockOrLoop}},
      .output = OutputType::kBlocks,
      .pure = true,
      .apply = [](Schedule& sch, Args a, Value*) -> Result<Values> {
        TYCHE_TRY_ASSIGN(sref, sch.block_or_loop_arg(a[0]));
        return issued_blocks(sch, get_child_blocks(sch.state(), sref));
      }};
  return k;
}

Result<BlockRV> Schedule::get_block(const std::string& name) { return forward<BlockRV>(*this, kind_get_block(), name); }
Result<std::vector<LoopRV>> Schedule::get_loops(const BlockRV& block) {
  return forward<std::vector<LoopRV>>(*this, kind_get_loops(), block);
}
Result<std::vector<BlockRV>> Schedule::get_child_blocks(const BlockRV& block) {
  return forward<std::vector<BlockRV>>(*this, kind_get_child_blocks(), block);
}
Result<std::vector<BlockRV>> Schedule::get_child_blocks(const LoopRV& loop) {
  return forward<std::vector<BlockRV>>(*this, kind_get_child_blocks(), loop);
}
Result<std::vector<BlockRV>> Schedule::get_producers(const BlockRV& block) {
  return forward<std::vector<BlockRV>>(*this, kind_get_producers(), block);
}
Result<std::vector<BlockRV>> Schedule::get_consumers(const BlockRV& block) {
  return forward<std::vector<BlockRV>>(*this, kind_get_consumers(), block);
}

}  // namespace tyche::schedule
