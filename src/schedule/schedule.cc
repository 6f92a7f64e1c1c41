#include "schedule/schedule.h"

#include <fmt/format.h>

#include "schedule/primitive.h"

namespace tyche::schedule {

namespace {

template <typename T, typename F>
auto map_refs(const std::vector<SRef>& refs, F issue) {
  std::vector<T> out;
  for (const SRef& r : refs) out.push_back(issue(r));
  return out;
}

}  // namespace

Schedule::Schedule(ir::PrimFunc func, bool debug_verify) : state_(std::move(func), debug_verify) {}

BlockRV Schedule::issue_block(const SRef& sref) {
  BlockRV rv{next_id_++};
  blocks_[rv.id] = sref;
  return rv;
}

LoopRV Schedule::issue_loop(const SRef& sref) {
  LoopRV rv{next_id_++};
  loops_[rv.id] = sref;
  return rv;
}

Result<SRef> Schedule::block_sref(const BlockRV& block) const {
  auto it = blocks_.find(block.id);
  if (it == blocks_.end() || !it->second->valid() || !it->second->as_block())
    return ScheduleError(ErrorCode::kStaleHandle, fmt::format("block handle b{} is stale or was never issued", block.id));
  return it->second;
}

Result<SRef> Schedule::loop_sref(const LoopRV& loop) const {
  auto it = loops_.find(loop.id);
  if (it == loops_.end() || !it->second->valid() || !it->second->as_for())
    return ScheduleError(ErrorCode::kStaleHandle,
                         fmt::format("loop handle l{} is stale (consumed by an earlier primitive) or was never issued", loop.id));
  return it->second;
}

Result<BlockRV> Schedule::get_block(const std::string& name) {
  TYCHE_TRY_ASSIGN(sref, schedule::get_block(state_, name));
  return issue_block(sref);
}

Result<std::vector<LoopRV>> Schedule::get_loops(const BlockRV& block) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  return map_refs<LoopRV>(schedule::get_loops(state_, sref), [&](const SRef& r) { return issue_loop(r); });
}

Result<std::vector<BlockRV>> Schedule::get_child_blocks(const BlockRV& block) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  return map_refs<BlockRV>(schedule::get_child_blocks(state_, sref), [&](const SRef& r) { return issue_block(r); });
}

Result<std::vector<BlockRV>> Schedule::get_child_blocks(const LoopRV& loop) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return map_refs<BlockRV>(schedule::get_child_blocks(state_, sref), [&](const SRef& r) { return issue_block(r); });
}

Result<std::vector<BlockRV>> Schedule::get_producers(const BlockRV& block) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  return map_refs<BlockRV>(schedule::get_producers(state_, sref), [&](const SRef& r) { return issue_block(r); });
}

Result<std::vector<BlockRV>> Schedule::get_consumers(const BlockRV& block) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  return map_refs<BlockRV>(schedule::get_consumers(state_, sref), [&](const SRef& r) { return issue_block(r); });
}

Result<std::vector<LoopRV>> Schedule::split(const LoopRV& loop, const std::vector<std::optional<int64_t>>& factors) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  TYCHE_TRY_ASSIGN(loops, schedule::split(state_, sref, factors));
  loops_.erase(loop.id);  // consumed
  return map_refs<LoopRV>(loops, [&](const SRef& r) { return issue_loop(r); });
}

Result<LoopRV> Schedule::fuse(const std::vector<LoopRV>& loops) {
  std::vector<SRef> refs;
  for (const LoopRV& l : loops) {
    TYCHE_TRY_ASSIGN(sref, loop_sref(l));
    refs.push_back(sref);
  }
  TYCHE_TRY_ASSIGN(fused, schedule::fuse(state_, refs));
  for (const LoopRV& l : loops) loops_.erase(l.id);
  return issue_loop(fused);
}

Status Schedule::reorder(const std::vector<LoopRV>& ordered_loops) {
  std::vector<SRef> refs;
  for (const LoopRV& l : ordered_loops) {
    TYCHE_TRY_ASSIGN(sref, loop_sref(l));
    refs.push_back(sref);
  }
  return schedule::reorder(state_, refs);
}

Result<LoopRV> Schedule::add_unit_loop(const BlockRV& block) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  TYCHE_TRY_ASSIGN(loop, schedule::add_unit_loop(state_, sref));
  return issue_loop(loop);
}

Result<LoopRV> Schedule::add_unit_loop(const LoopRV& loop) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  TYCHE_TRY_ASSIGN(unit, schedule::add_unit_loop(state_, sref));
  return issue_loop(unit);
}

Status Schedule::parallel(const LoopRV& loop) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return schedule::parallel(state_, sref);
}
Status Schedule::vectorize(const LoopRV& loop) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return schedule::vectorize(state_, sref);
}
Status Schedule::unroll(const LoopRV& loop) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return schedule::unroll(state_, sref);
}
Status Schedule::bind(const LoopRV& loop, const std::string& thread_axis) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return schedule::bind(state_, sref, thread_axis);
}

Status Schedule::annotate(const LoopRV& loop, const std::string& key, const ir::AnnotationValue& value) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return schedule::annotate(state_, sref, key, value);
}
Status Schedule::annotate(const BlockRV& block, const std::string& key, const ir::AnnotationValue& value) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  return schedule::annotate(state_, sref, key, value);
}
Status Schedule::unannotate(const LoopRV& loop, const std::string& key) {
  TYCHE_TRY_ASSIGN(sref, loop_sref(loop));
  return schedule::unannotate(state_, sref, key);
}
Status Schedule::unannotate(const BlockRV& block, const std::string& key) {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  return schedule::unannotate(state_, sref, key);
}

}  // namespace tyche::schedule
