// The user-facing schedule: primitives addressed through random-variable handles (TVM's names
// and argument names). BlockRV and LoopRV name blocks and loops; a handle that a primitive
// consumed (the loop that split replaces) is invalidated, and using it again is a ScheduleError
// of kind stale_handle, never undefined behaviour. Every primitive returns Result<T>: either its
// outputs or the reason it refused, with the program unchanged.
//
// Each method is a one-line forward to its InstructionKind (instruction.h, defined from the
// primitive's typed function: instruction_impl.h), which applies it and, when tracing is on,
// records it in the schedule's Trace. Sampling instructions draw from the
// schedule's seeded engine; their outputs are ExprRVs (integers) or, for
// sample_compute_location, a LoopRV that compute_at accepts.
#pragma once

#include <concepts>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "schedule/error.h"
#include "schedule/instruction.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "support/random.h"

namespace tyche::schedule {

struct BlockRV {
  int64_t id = -1;
  bool operator==(const BlockRV&) const = default;
};
struct LoopRV {
  int64_t id = -1;
  bool operator==(const LoopRV&) const = default;
};
// A sampled integer.
struct ExprRV {
  int64_t id = -1;
  bool operator==(const ExprRV&) const = default;
};
// Where either is accepted (get_child_blocks, annotate).
using BlockOrLoopRV = std::variant<BlockRV, LoopRV>;
// Where an ExprRV is accepted, so is an integer literal.
struct ExprArg {
  template <std::integral I>
  ExprArg(I literal) : v(static_cast<int64_t>(literal)) {}  // NOLINT(google-explicit-constructor)
  ExprArg(ExprRV rv) : v(rv) {}                             // NOLINT(google-explicit-constructor)
  std::variant<int64_t, ExprRV> v;
};
// An annotation value: a literal, or an ExprRV read as its integer when applied.
using AnnArg = std::variant<int64_t, double, std::string, ExprRV>;

struct ScheduleOptions {
  int64_t seed = -1;  // < 0: a nondeterministic seed
  bool trace = true;  // record a Trace
  bool debug_verify = false;
};

// What sample_compute_location's decision means besides a loop index.
inline constexpr int64_t kComputeLocationRoot = -1;    // stay where the block is
inline constexpr int64_t kComputeLocationInline = -2;  // compute_inline the block

class Schedule {
 public:
  explicit Schedule(ir::PrimFunc func, bool debug_verify = false);
  Schedule(ir::PrimFunc func, const ScheduleOptions& options);

  Schedule(Schedule&&) = default;
  Schedule& operator=(Schedule&&) = default;
  // An independent schedule at the same point: same IR (shared, immutable), same trace, and
  // every handle of this one valid in the copy with the same id. Its random engine is forked
  // from this one's, so the two draw different decisions from here on.
  Schedule copy();

  const ir::PrimFunc& func() const { return state_.func(); }
  const ScheduleState& state() const { return state_; }
  // The instructions applied so far; nullptr when tracing is off.
  const Trace* trace() const { return trace_ ? &*trace_ : nullptr; }
  RandomEngine& rng() { return rng_; }
  // The integer an ExprRV holds.
  Result<int64_t> get(const ExprRV& expr) const;

  // ---- sampling (sampling.cc) ----
  // Uniform over the ordered factorizations of the loop's extent into n factors whose innermost
  // is <= max_innermost_factor (-1: unlimited). A given decision is checked and used.
  Result<std::vector<ExprRV>> sample_perfect_tile(
      const LoopRV& loop, int n, int64_t max_innermost_factor,
      std::optional<std::vector<int64_t>> decision = std::nullopt);
  // One of `candidates` with the given probabilities; the decision is the chosen index.
  Result<ExprRV> sample_categorical(const std::vector<int64_t>& candidates,
                                    const std::vector<double>& probs,
                                    std::optional<int64_t> decision = std::nullopt);
  // A loop where compute_at(block, loop) is legal now, uniformly among "stay"
  // (kComputeLocationRoot), "inline" when compute_inline is legal, and the legal loops where
  // the block's region varies with the loop (at any other it would recompute the same values on
  // every iteration). The decision is the loop's index among all legal loops in pre-order, or
  // one of the two constants; a given decision may name any legal loop.
  Result<LoopRV> sample_compute_location(const BlockRV& block,
                                         std::optional<int64_t> decision = std::nullopt);

  // The decisions sample_compute_location could take for `block` now: kComputeLocationRoot,
  // kComputeLocationInline when legal, and the index of each legal loop; with `useful_only`,
  // only the loops a fresh draw picks from (MutateComputeLocation draws another one of those).
  Result<std::vector<int64_t>> compute_location_choices(const BlockRV& block,
                                                        bool useful_only = false) const;

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
  Result<std::vector<LoopRV>> split(const LoopRV& loop,
                                    const std::vector<std::optional<ExprArg>>& factors);
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
  Status annotate(const LoopRV& loop, const std::string& key, const AnnArg& value);
  Status annotate(const BlockRV& block, const std::string& key, const AnnArg& value);
  Status unannotate(const LoopRV& loop, const std::string& key);
  Status unannotate(const BlockRV& block, const std::string& key);

  // ---- compute location (compute_at.cc, compute_inline.cc) ----
  // Moves a producer block under `loop` (of one of its consumers' loop nests), computing only
  // the region the consumers under `loop` need. preserve_unit_loops keeps extent-1 loops. The
  // location marks sample_compute_location returns mean: stay (no change) and compute_inline.
  Status compute_at(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops = false);
  // Moves a consumer block under `loop` of its producer's loop nest.
  Status reverse_compute_at(const BlockRV& block, const LoopRV& loop,
                            bool preserve_unit_loops = false);
  // Substitutes a complete block's computation into its consumers and removes it.
  Status compute_inline(const BlockRV& block);
  // Substitutes a consumer's computation into its single producer and removes the consumer.
  Status reverse_compute_inline(const BlockRV& block);

  // ---- caches (cache.cc) ----
  // A new block copying the block's read_buffer_index-th read buffer into a `storage_scope`
  // buffer just before the block's loop nest; the block then reads the copy.
  Result<BlockRV> cache_read(const BlockRV& block, int read_buffer_index,
                             const std::string& storage_scope);
  // The block writes a `storage_scope` copy of its write_buffer_index-th written buffer; a new
  // block after it copies the result back.
  Result<BlockRV> cache_write(const BlockRV& block, int write_buffer_index,
                              const std::string& storage_scope);
  // Changes the storage scope of an intermediate buffer written by the block.
  Status set_scope(const BlockRV& block, int buffer_index, const std::string& storage_scope);
  // Pads the stride of `axis` of the block's buffer_index-th written buffer so that
  // stride % factor == offset (bank-conflict avoidance); only intermediate buffers.
  Status storage_align(const BlockRV& block, int buffer_index, int axis, int factor, int offset);
  // Re-lays out the block's buffer_index-th written buffer (an intermediate one) by an index map
  // in TVM's notation, `lambda k, j: (j // 16, k, j % 16)`: dimensions split by constant factors
  // and permuted, every access rewritten (packing a panel so a register tile reads it in order).
  Status transform_layout(const BlockRV& block, int buffer_index, const std::string& index_map);

  // ---- padding (pad_einsum.cc) ----
  // Rounds each iterator's extent up to a multiple of padding[i] (1: unchanged): the block
  // computes on zero-padded copies of the buffers those iterators index (stages before its loop
  // nest) and writes a padded output that a stage after the nest copies back. The block must sit
  // alone in its loop nest, each padded iterator bound to a whole loop, and its update must add
  // nothing when the padded reads are zero (a sum of products).
  Status pad_einsum(const BlockRV& block, const std::vector<int64_t>& padding);

  // ---- reductions (reduction.cc) ----
  // Splits the reduction's init into its own block placed before `loop`; returns the init block.
  Result<BlockRV> decompose_reduction(const BlockRV& block, const LoopRV& loop);
  // Factorizes a reduction over the reduction loop `loop`: a new block computes partial results
  // into a buffer with a new axis at `factor_axis`, the original block reduces them. Returns the
  // new (rfactor) block.
  Result<BlockRV> rfactor(const LoopRV& loop, int factor_axis);

  // ---- blocks (blockize.cc, tensorize.cc) ----
  // Turns the subtree under `loop` into a new outer block whose body is that subtree.
  Result<BlockRV> blockize(const LoopRV& loop);
  // Blockizes `loop` and replaces its computation by the named tensor intrinsic's implementation
  // when it matches the intrinsic's description.
  Status tensorize(const LoopRV& loop, const std::string& tensor_intrin);

  // The sref behind a handle, or the stale-handle error.
  Result<SRef> block_sref(const BlockRV& block) const;
  Result<SRef> loop_sref(const LoopRV& loop) const;

  // Applies one instruction (args in this schedule's handle ids) and records it when tracing:
  // the one way anything outside src/schedule/ changes the IR.
  // Checks the arguments against the kind's parameters first, so a hand-written trace with a
  // wrong argument is refused, never misread.
  Result<std::vector<Value>> apply_instruction(const InstructionKind& kind, std::vector<Value> args,
                                               Value decision = Value::none());

 private:
  friend class InstructionContext;  // how instruction implementations change the schedule
  BlockRV issue_block(const SRef& sref);
  LoopRV issue_loop(const SRef& sref);
  ExprRV issue_expr(int64_t value);
  // A location mark (sample_compute_location's root/inline outcome) as a loop handle.
  LoopRV issue_location_mark(int64_t mark);

  ScheduleState state_;
  RandomEngine rng_;
  std::optional<Trace> trace_;
  int64_t next_id_ = 0;
  std::unordered_map<int64_t, SRef> blocks_, loops_;
  std::unordered_map<int64_t, int64_t> exprs_, location_marks_;
};

// Typed <-> Value conversions used by the one-line forwards.
inline Value to_value(const BlockRV& b) {
  return Value::block(b.id);
}
inline Value to_value(const LoopRV& l) {
  return Value::loop(l.id);
}
inline Value to_value(const ExprRV& e) {
  return Value::expr(e.id);
}
inline Value to_value(int64_t v) {
  return Value::integer(v);
}
inline Value to_value(int v) {
  return Value::integer(v);
}
inline Value to_value(double v) {
  return Value::real(v);
}
inline Value to_value(bool v) {
  return Value::boolean(v);
}
inline Value to_value(const std::string& v) {
  return Value::string(v);
}
Value to_value(const ExprArg& v);
Value to_value(const AnnArg& v);
Value to_value(const BlockOrLoopRV& v);
template <typename T>
Value to_value(const std::vector<T>& v);
template <typename T>
Value to_value(const std::optional<T>& v) {
  return v ? to_value(*v) : Value::none();
}
template <typename T>
Value to_value(const std::vector<T>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (const T& x : v) items.push_back(to_value(x));
  return Value::of_list(std::move(items));
}

}  // namespace tyche::schedule
