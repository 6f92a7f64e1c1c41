// Sampling instructions: their outputs are random variables drawn from the schedule's engine, and
// the draw is recorded as the instruction's decision so a trace can be replayed or mutated.
#include <fmt/format.h>

#include <optional>

#include <limits>

#include "ir/op.h"
#include "schedule/instruction_impl.h"

namespace tyche::schedule {

namespace {

std::vector<int64_t> divisors(int64_t x) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= x; ++d)
    if (x % d == 0) {
      small.push_back(d);
      if (d * d != x) large.push_back(x / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

// Ordered factorizations of x into k positive factors, memoized; saturates at UINT64_MAX.
class FactorizationCounter {
 public:
  uint64_t count(int64_t x, int k) {
    if (k == 1) return 1;
    auto key = std::make_pair(x, k);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    uint64_t total = 0;
    for (int64_t d : divisors(x)) total = saturating_add(total, count(x / d, k - 1));
    memo_[key] = total;
    return total;
  }
  static uint64_t saturating_add(uint64_t a, uint64_t b) {
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                        : a + b;
  }

 private:
  std::map<std::pair<int64_t, int>, uint64_t> memo_;
};

// Draws d among `options` with probability weight(d) / sum; weights must not saturate.
template <typename W>
Result<int64_t> draw_weighted(RandomEngine& rng, const std::vector<int64_t>& options, W weight) {
  std::vector<uint64_t> w;
  uint64_t total = 0;
  for (int64_t d : options) {
    w.push_back(weight(d));
    if (w.back() == std::numeric_limits<uint64_t>::max() || total + w.back() < total)
      return ScheduleError(ErrorCode::kUnsupported,
                           "sample_perfect_tile: too many factorizations to sample uniformly");
    total += w.back();
  }
  uint64_t x = rng.uniform_below(total);
  for (size_t i = 0; i < options.size(); ++i) {
    if (x < w[i]) return options[i];
    x -= w[i];
  }
  return options.back();
}

std::string list_text(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

Result<std::vector<int64_t>> perfect_tile(RandomEngine& rng, const SRef& loop, int64_t n,
                                          int64_t max_innermost, const Value& decision) {
  const ir::ForNode* f = loop->as_for();
  auto extent = ir::as_const_int(f->extent);
  if (!extent)
    return ScheduleError(
        ErrorCode::kNonConstantExtent,
        fmt::format("sample_perfect_tile: loop '{}' has a non-constant extent", f->loop_var.name()),
        f);
  if (n < 1 || n > 16)
    return ScheduleError(ErrorCode::kInvalidArgument,
                         fmt::format("sample_perfect_tile: n must be in 1..16, got {}", n), f);
  if (max_innermost == 0 || max_innermost < -1)
    return ScheduleError(
        ErrorCode::kInvalidArgument,
        fmt::format("sample_perfect_tile: max_innermost_factor must be positive or -1, got {}",
                    max_innermost),
        f);
  int64_t limit = max_innermost == -1 ? *extent : max_innermost;
  if (decision.kind != Value::Kind::kNone) {
    std::vector<int64_t> d;
    int64_t product = 1;  // saturates at extent + 1 (or -1 for a non-positive factor)
    for (const Value& v : decision.list) {
      d.push_back(v.i);
      if (v.i < 1 || product < 0)
        product = -1;
      else
        product = product > *extent / v.i ? *extent + 1 : product * v.i;
    }
    std::string why;
    if (static_cast<int64_t>(d.size()) != n)
      why = fmt::format("it has {} factors, n is {}", d.size(), n);
    else if (product != *extent)
      why = fmt::format("its product is not the extent {}", *extent);
    else if (d.back() > limit)
      why = fmt::format("the innermost factor exceeds max_innermost_factor {}", limit);
    if (!why.empty())
      return ScheduleError(
          ErrorCode::kIllegalDecision,
          fmt::format("sample_perfect_tile: decision {} is not legal for loop '{}': {}",
                      list_text(d), f->loop_var.name(), why),
          f);
    return d;
  }
  // Uniform over all factorizations: draw the innermost factor weighted by how many ways the
  // rest can be split, then each outer factor likewise.
  FactorizationCounter counter;
  std::vector<int64_t> inner_options;
  for (int64_t d : divisors(*extent))
    if (d <= limit) inner_options.push_back(d);
  std::vector<int64_t> factors(n);
  if (n == 1) {
    if (*extent > limit)
      return ScheduleError(
          ErrorCode::kInvalidFactors,
          fmt::format("sample_perfect_tile: extent {} exceeds max_innermost_factor {} with n = 1",
                      *extent, limit),
          f);
    factors[0] = *extent;
    return factors;
  }
  TYCHE_TRY_ASSIGN(inner, draw_weighted(rng, inner_options, [&](int64_t d) {
                     return counter.count(*extent / d, static_cast<int>(n - 1));
                   }));
  factors[n - 1] = inner;
  int64_t rest = *extent / inner;
  for (int64_t i = 0; i + 1 < n - 1; ++i) {
    int remaining = static_cast<int>(n - 2 - i);
    TYCHE_TRY_ASSIGN(d, draw_weighted(rng, divisors(rest), [&](int64_t x) {
                       return counter.count(rest / x, remaining);
                     }));
    factors[i] = d;
    rest /= d;
  }
  factors[n - 2] = rest;
  return factors;
}

struct ComputeLocations {
  std::vector<SRef> loops;   // where compute_at is legal, in pre-order
  std::vector<bool> useful;  // per loop: the block's region there varies with the loop
  bool can_inline = false;
};

// Legality is exactly what compute_at and compute_inline decide: compute_at is planned without
// applying it, compute_inline tried on a scratch state over the same (immutable) IR.
ComputeLocations compute_locations(const ScheduleState& state, const SRef& block) {
  ComputeLocations out;
  const SRefNode* scope = scope_block(block.get());
  if (!scope) return out;
  std::vector<SRefNode*> ancestors_of_block = ancestors(block.get());
  for (const ir::ForNode* loop : loops_under(scope->as_block()->body)) {
    SRef loop_ref = state.get_sref(loop);
    if (!loop_ref || std::find(ancestors_of_block.begin(), ancestors_of_block.end(),
                               loop_ref.get()) != ancestors_of_block.end())
      continue;
    if (auto varies = compute_at_varies_with_loop(state, block, loop_ref)) {
      out.loops.push_back(loop_ref);
      out.useful.push_back(varies.value());
    }
  }
  ScheduleState scratch(state.func());
  out.can_inline = compute_inline(scratch, scratch.get_sref(block->stmt)).ok();
  return out;
}

}  // namespace

namespace {

Result<std::vector<ExprRV>> apply_sample_perfect_tile(InstructionContext& ctx, LoopRV loop,
                                                      int64_t n, int64_t max_innermost_factor) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  TYCHE_TRY_ASSIGN(factors, perfect_tile(ctx.rng(), sref, n, max_innermost_factor, ctx.decision()));
  std::vector<Value> d;
  std::vector<ExprRV> out;
  for (int64_t x : factors) {
    d.push_back(Value::integer(x));
    out.push_back(ctx.issue_expr(x));
  }
  ctx.decision() = Value::of_list(std::move(d));
  return out;
}

Result<ExprRV> apply_sample_categorical(InstructionContext& ctx, std::vector<int64_t> candidates,
                                        std::vector<double> probs) {
  if (candidates.empty() || candidates.size() != probs.size())
    return ScheduleError(ErrorCode::kInvalidArgument,
                         fmt::format("sample_categorical: {} candidates but {} probabilities",
                                     candidates.size(), probs.size()));
  double total = 0;
  for (double p : probs) {
    if (!(p >= 0) || std::isinf(p))
      return ScheduleError(ErrorCode::kInvalidArgument,
                           fmt::format("sample_categorical: invalid probability {}", p));
    total += p;
  }
  if (!(total > 0))
    return ScheduleError(ErrorCode::kInvalidArgument,
                         "sample_categorical: the probabilities sum to 0");
  int64_t index;
  if (ctx.decision().kind != Value::Kind::kNone) {
    index = ctx.decision().i;
    if (index < 0 || index >= static_cast<int64_t>(candidates.size()) || probs[index] <= 0)
      return ScheduleError(
          ErrorCode::kIllegalDecision,
          fmt::format("sample_categorical: decision {} is not legal: it must index one of the {} "
                      "candidates with a positive probability",
                      index, candidates.size()));
  } else {
    index = ctx.rng().weighted_index(probs);
  }
  ctx.decision() = Value::integer(index);
  return ctx.issue_expr(candidates[index]);
}

Result<LoopRV> apply_sample_compute_location(InstructionContext& ctx, BlockRV block) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  ComputeLocations locs = compute_locations(ctx.state(), sref);
  int64_t n = static_cast<int64_t>(locs.loops.size());
  int64_t choice;
  if (ctx.decision().kind != Value::Kind::kNone) {
    choice = ctx.decision().i;
    bool legal = (choice >= 0 && choice < n) || choice == kComputeLocationRoot ||
                 (choice == kComputeLocationInline && locs.can_inline);
    if (!legal)
      return ScheduleError(ErrorCode::kIllegalDecision,
                           fmt::format("sample_compute_location: decision {} is not legal for "
                                       "block '{}': {} loops are legal locations{}",
                                       choice, sref->as_block()->name, n,
                                       locs.can_inline ? " and inlining" : ", inlining is not"));
  } else {
    // Uniform over: stay, inline (when legal), and each legal loop where the block's region
    // varies. The others only recompute what their enclosing loop would compute once; replays
    // and edits may still name them (the decision indexes every legal loop).
    std::vector<int64_t> options;
    for (int64_t i = 0; i < n; ++i)
      if (locs.useful[static_cast<size_t>(i)]) options.push_back(i);
    options.push_back(kComputeLocationRoot);
    if (locs.can_inline) options.push_back(kComputeLocationInline);
    choice = options[static_cast<size_t>(
        ctx.rng().uniform_int(0, static_cast<int64_t>(options.size())))];
  }
  ctx.decision() = Value::integer(choice);
  if (choice < 0) return ctx.issue_location_mark(choice);
  return ctx.issue_loop(locs.loops[choice]);
}

}  // namespace

TYCHE_INSTRUCTION(sample_perfect_tile, apply_sample_perfect_tile,
                  {{"loop"}, {"n"}, {"max_innermost_factor", false, Value::integer(16)}},
                  {.decision = DecisionType::kIntList, .pure = true})
TYCHE_INSTRUCTION(sample_categorical, apply_sample_categorical, {{"candidates"}, {"probs"}},
                  {.decision = DecisionType::kInt, .pure = true})
TYCHE_INSTRUCTION(sample_compute_location, apply_sample_compute_location, {{"block"}},
                  {.decision = DecisionType::kInt, .pure = true})

Result<std::vector<ExprRV>> Schedule::sample_perfect_tile(
    const LoopRV& loop, int n, int64_t max_innermost_factor,
    std::optional<std::vector<int64_t>> decision) {
  return sample_perfect_tile_kind().sample(*this, to_value(decision), loop, n,
                                           max_innermost_factor);
}

Result<ExprRV> Schedule::sample_categorical(const std::vector<int64_t>& candidates,
                                            const std::vector<double>& probs,
                                            std::optional<int64_t> decision) {
  return sample_categorical_kind().sample(*this, to_value(decision), candidates, probs);
}

Result<LoopRV> Schedule::sample_compute_location(const BlockRV& block,
                                                 std::optional<int64_t> decision) {
  return sample_compute_location_kind().sample(*this, to_value(decision), block);
}

Result<std::vector<int64_t>> Schedule::compute_location_choices(const BlockRV& block,
                                                                bool useful_only) const {
  TYCHE_TRY_ASSIGN(sref, block_sref(block));
  ComputeLocations locs = compute_locations(state_, sref);
  std::vector<int64_t> choices = {kComputeLocationRoot};
  if (locs.can_inline) choices.push_back(kComputeLocationInline);
  for (size_t i = 0; i < locs.loops.size(); ++i)
    if (!useful_only || locs.useful[i]) choices.push_back(static_cast<int64_t>(i));
  return choices;
}

}  // namespace tyche::schedule
