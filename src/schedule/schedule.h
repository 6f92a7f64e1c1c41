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

  // ---- compute location (compute_at.cc, compute_inline.cc) ----
  // Moves a producer block under `loop` (of one of its consumers' loop nests), computing only
  // the region the consumers under `loop` need. preserve_unit_loops keeps extent-1 loops.
  Status compute_at(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops = false);
  // Moves a consumer block under `loop` of its producer's loop nest.
  Status reverse_compute_at(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops = false);
  // Substitutes a complete block's computation into its consumers and removes it.
  Status compute_inline(const BlockRV& block);
  // Substitutes a consumer's computation into its single producer and removes the consumer.
  Status reverse_compute_inline(const BlockRV& block);

  // ---- caches (cache.cc) ----
  // A new block copying the block's read_buffer_index-th read buffer into a `storage_scope`
  // buffer just before the block's loop nest; the block then reads the copy.
  Result<BlockRV> cache_read(const BlockRV& block, int read_buffer_index, const std::string& storage_scope);
  // The block writes a `storage_scope` copy of its write_buffer_index-th written buffer; a new
  // block after it copies the result back.
  Result<BlockRV> cache_write(const BlockRV& block, int write_buffer_index, const std::string& storage_scope);
  // Changes the storage scope of an intermediate buffer written by the block.
  Status set_scope(const BlockRV& block, int buffer_index, const std::string& storage_scope);
  // Pads the stride of `axis` of the block's buffer_index-th written buffer so that
  // stride % factor == offset (bank-conflict avoidance); only intermediate buffers.
  Status storage_align(const BlockRV& block, int buffer_index, int axis, int factor, int offset);

  // ---- reductions (reduction.cc) ----
  // Splits the reduction's init into its own block placed before `loop`; returns the init block.
  Result<BlockRV> decompose_reduction(const BlockRV& block, const LoopRV& loop);
  // Factorizes a reduction over the reduction loop `loop`: a new block computes partial results
  // into a buffer with a new axis at `factor_axis`, the original block reduces them. Returns the
  // new (rfactor) block.
  Result<BlockRV> rfactor(const LoopRV& loop, int factor_axis);

  // ---- blocks (blockize_tensorize.cc) ----
  // Turns the subtree under `loop` into a new outer block whose body is that subtree.
  Result<BlockRV> blockize(const LoopRV& loop);
  // Blockizes `loop` and replaces its computation by the named tensor intrinsic's implementation
  // when it matches the intrinsic's description.
  Status tensorize(const LoopRV& loop, const std::string& intrin_name);

  // The sref behind a handle, or the stale-handle error.
  Result<SRef> block_sref(const BlockRV& block) const;
  Result<SRef> loop_sref(const LoopRV& loop) const;

 private:
  BlockRV issue_block(const SRef& sref);
  LoopRV issue_loop(const SRef& sref);
  // Marks a handle consumed (its sref is gone).
  void consume(const LoopRV& loop) { loops_.erase(loop.id); }
  void consume(const BlockRV& block) { blocks_.erase(block.id); }

  ScheduleState state_;
  int64_t next_id_ = 0;
  std::unordered_map<int64_t, SRef> blocks_, loops_;
};

}  // namespace tyche::schedule
