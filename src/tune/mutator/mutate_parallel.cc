// MutateParallel: another meta_schedule.parallel limit on the root block. Only limits that change
// how many outer loops some block fuses into its parallel loop are worth a candidate, so the
// trace is replayed and each block's fusable outer loops are found with the rule of the
// RewriteParallelVectorizeUnroll postprocessor.
#include <algorithm>
#include <limits>
#include <set>

#include "arith/linear.h"
#include "ir/op.h"
#include "schedule/primitive.h"
#include "schedule/schedule.h"
#include "tune/mutator/mutator.h"
#include "tune/space/annotations.h"

namespace tyche::tune {

namespace {

using schedule::SRef;
using schedule::Value;

// A loop the postprocessor may fuse into the parallel loop: serial, constant, unannotated, and
// driving only spatial iterators of the blocks under it.
std::optional<int64_t> fusable_extent(const schedule::ScheduleState& state, const SRef& loop) {
  const ir::ForNode* f = loop->as_for();
  auto extent = ir::as_const_int(f->extent);
  if (f->for_kind != ir::ForKind::kSerial || !extent || *extent < 1 || !f->annotations.empty()) return std::nullopt;
  const ir::VarNode* var = f->loop_var.get();
  for (const ir::BlockRealizeNode* r : schedule::realizes_under(state.stmt_of(loop.get())))
    for (size_t k = 0; k < r->iter_values.size(); ++k)
      if (r->block->iter_vars[k].kind != ir::IterKind::kSpatial &&
          arith::uses_var(r->iter_values[k], [&](const ir::VarNode* v) { return v == var; }))
        return std::nullopt;
  return extent;
}

// Extents of a block's leading fusable loops; each after the first must be the whole body of the
// one before it.
std::vector<int64_t> fusable_prefix(const schedule::ScheduleState& state, const SRef& block) {
  std::vector<SRef> loops = schedule::get_loops(state, block);
  std::vector<int64_t> out;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (i > 0 && loops[i - 1]->as_for()->body.get() != loops[i]->stmt) break;
    auto e = fusable_extent(state, loops[i]);
    if (!e) break;
    out.push_back(*e);
  }
  return out;
}

// How many loops of `prefix` the postprocessor fuses under `limit`: as many as keep the fused
// extent within it, but at least one.
size_t plan(const std::vector<int64_t>& prefix, int64_t limit) {
  size_t n = 0;
  int64_t product = 1;
  while (n < prefix.size() && product <= limit / prefix[n]) product *= prefix[n++];
  return prefix.empty() ? 0 : std::max<size_t>(n, 1);
}

class MutateParallel : public Mutator {
 public:
  std::string name() const override { return "MutateParallel"; }

  std::optional<schedule::Trace> mutate(const schedule::Trace& trace, RandomEngine& rng) override {
    // The last parallel annotation is the one in force.
    std::optional<size_t> index;
    for (size_t i = 0; i < trace.size(); ++i) {
      const schedule::Instruction& inst = trace.instructions()[i];
      if (inst.kind->name == "annotate" && inst.args[1].s == ann::kParallel && inst.args[2].kind == Value::Kind::kInt) index = i;
    }
    if (!index) return std::nullopt;
    int64_t current = trace.instructions()[*index].args[2].i;
    schedule::Schedule sch(context_.func, schedule::ScheduleOptions{.seed = 0, .trace = false});
    if (!trace.apply_to(sch).ok()) return std::nullopt;
    const schedule::ScheduleState& state = sch.state();
    std::vector<std::vector<int64_t>> prefixes;
    std::set<int64_t> limits;  // ordered, so the draw is deterministic
    for (const SRef& block : schedule::get_child_blocks(state, state.root())) {
      prefixes.push_back(fusable_prefix(state, block));
      int64_t product = 1;
      for (int64_t e : prefixes.back()) {
        if (product > std::numeric_limits<int64_t>::max() / e) break;
        limits.insert(product *= e);
      }
    }
    auto plans = [&](int64_t limit) {
      std::vector<size_t> out;
      for (const auto& p : prefixes) out.push_back(plan(p, limit));
      return out;
    };
    std::vector<size_t> now = plans(current);
    std::vector<int64_t> candidates;
    for (int64_t limit : limits)
      if (limit != current && plans(limit) != now) candidates.push_back(limit);
    if (candidates.empty()) return std::nullopt;
    int64_t chosen = candidates[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(candidates.size())))];
    return trace.with_argument(*index, 2, Value::integer(chosen));
  }
};

}  // namespace

MutatorPtr mutate_parallel() { return std::make_shared<MutateParallel>(); }

}  // namespace tyche::tune
