// The user-facing schedule: primitives addressed through random-variable handles (TVM's names
// and argument names). BlockRV and LoopRV name blocks and loops; a handle that a primitive
// consumed (the loop that split replaces) is invalidated, and using it again is a ScheduleError
// of kind stale_handle, never undefined behaviour. Every primitive returns Result<T>: either its
// outputs or the reason it refused, with the program unchanged.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "schedule/error.h"
#include "schedule/state.h"

namespace tyche::schedule {

struct BlockRV {
  int64_t id = -1;
  bool operator==(const BlockRV&) const = default;
};
struct LoopRV {
  int64_t id = -1;
  bool operator==(const LoopRV&) const = default;
};

class Schedule {
 public:
  explicit Schedule(ir::PrimFunc func, bool debug_verify = false);

  const ir::PrimFunc& func() const { return state_.func(); }
  const ScheduleState& state() const { return state_; }

  // ---- lookup ----
  Result<BlockRV> get_block(const std::string& name);
  Result<std::vector<LoopRV>> get_loops(const BlockRV& block);
  Result<std::vector<BlockRV>> get_child_blocks(const BlockRV& block);
  Result<std::vector<BlockRV>> get_child_blocks(const LoopRV& loop);
  Result<std::vector<BlockRV>> get_producers(const BlockRV& block);
  Result<std::vector<BlockRV>> get_consumers(const BlockRV& block);

  // ---- loops ----
  // `factors` may hold one std::nullopt, inferred as ceil(extent / product of the others). A
  // product larger than the extent adds a predicate; a smaller one is refused.
  Result<std::vector<LoopRV>> split(const LoopRV& loop, const std::vector<std::optional<int64_t>>& factors);
  Result<LoopRV> fuse(const std::vector<LoopRV>& loops);
  Status reorder(const std::vector<LoopRV>& ordered_loops);
  Result<LoopRV> add_unit_loop(const BlockRV& block);
  Result<LoopRV> add_unit_loop(const LoopRV& loop);

  // ---- loop kinds ----
  Status parallel(const LoopRV& loop);
  Status vectorize(const LoopRV& loop);
  Status unroll(const LoopRV& loop);
  Status bind(const LoopRV& loop, const std::string& thread_axis);

  // ---- annotations ----
  Status annotate(const LoopRV& loop, const std::string& key, const ir::AnnotationValue& value);
  Status annotate(const BlockRV& block, const std::string& key, const ir::AnnotationValue& value);
  Status unannotate(const LoopRV& loop, const std::string& key);
  Status unannotate(const BlockRV& block, const std::string& key);

  // The sref behind a handle, or the stale-handle error.
  Result<SRef> block_sref(const BlockRV& block) const;
  Result<SRef> loop_sref(const LoopRV& loop) const;

 private:
  BlockRV issue_block(const SRef& sref);
  LoopRV issue_loop(const SRef& sref);

  ScheduleState state_;
  int64_t next_id_ = 0;
  std::unordered_map<int64_t, SRef> blocks_, loops_;
};

}  // namespace tyche::schedule
