// AutoBind (GPU): every kernel needs its outer loops bound to blocks and threads. A block in the
// root scope none of whose loops is bound gets its leading spatial loops fused and split by a
// sampled thread count; the outer part becomes blockIdx.x, the inner threadIdx.x. A block whose
// reduction is already bound to threadIdx (CrossThreadReduction) gets only blockIdx.x.
#include <fmt/format.h>

#include "support/error.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::LoopRV;
using schedule::Schedule;

namespace {

class AutoBind : public ScheduleRule {
 public:
  explicit AutoBind(std::vector<int64_t> extents) : all_extents_(std::move(extents)) {}
  std::string name() const override { return "AutoBind"; }
  void initialize(const TuneContext& context) override {
    gpu_ = context.target.is_gpu();
    extents_.clear();
    for (int64_t e : all_extents_)
      if (e <= context.target.max_threads_per_block) extents_.push_back(e);
  }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    std::vector<Schedule> out;
    if (gpu_ && !extents_.empty() && !is_root_block(sch, block) && is_subroot_block(sch, block))
      bind(sch, block);
    out.push_back(std::move(sch));
    return out;
  }

 private:
  // Binds on a copy and keeps it only if every step worked, so a refusal leaves `sch` as it was.
  void bind(Schedule& sch, const BlockRV& block) const {
    auto loops = sch.get_loops(block);
    if (!loops.ok()) return;
    const schedule::SRef block_sref = sch.block_sref(block).value();
    bool has_block_idx = false, has_thread_idx = false;
    for (const LoopRV& l : loops.value()) {
      const ir::ForNode* f = sch.loop_sref(l).value()->as_for();
      if (f->for_kind != ir::ForKind::kThreadBinding) continue;
      has_block_idx |= f->thread_tag.starts_with("blockIdx");
      has_thread_idx |= f->thread_tag.starts_with("threadIdx");
    }
    if (has_block_idx) return;    // already a kernel
    std::vector<LoopRV> leading;  // outer spatial loops, perfectly nested
    for (const LoopRV& l : loops.value()) {
      const ir::ForNode* f = sch.loop_sref(l).value()->as_for();
      if (!leading.empty() && sch.loop_sref(leading.back()).value()->as_for()->body.get() != f)
        break;
      if (f->for_kind != ir::ForKind::kSerial ||
          loop_iter_type(sch.state(), block_sref.get(), sch.loop_sref(l).value().get()) !=
              LoopIterType::kSpatial)
        break;
      leading.push_back(l);
    }
    Schedule trial = sch.copy();
    LoopRV outer;
    if (leading.empty()) {
      auto unit = trial.add_unit_loop(block);  // a pure reduction: a single thread block
      if (!unit.ok()) return;
      outer = unit.value();
    } else if (leading.size() == 1) {
      outer = leading[0];
    } else {
      auto fused = trial.fuse(leading);
      if (!fused.ok()) return;
      outer = fused.value();
    }
    if (has_thread_idx) {
      // Threads already share the work (CrossThreadReduction): the spatial loops become blocks.
      if (!trial.bind(outer, "blockIdx.x").ok()) return;
    } else {
      auto threads = trial.sample_categorical(extents_, uniform_probs(extents_.size()));
      if (!threads.ok()) return;
      auto parts = trial.split(outer, {std::nullopt, threads.value()});
      if (!parts.ok() || !trial.bind(parts.value()[0], "blockIdx.x").ok() ||
          !trial.bind(parts.value()[1], "threadIdx.x").ok())
        return;
    }
    sch = std::move(trial);
  }

  std::vector<int64_t> all_extents_, extents_;
  bool gpu_ = false;
};

}  // namespace

ScheduleRulePtr auto_bind(std::vector<int64_t> thread_extents) {
  return std::make_shared<AutoBind>(std::move(thread_extents));
}

ir::PrimFunc auto_bind_blocks(const ir::PrimFunc& func, const target::Target& target,
                              int64_t seed) {
  if (!target.is_gpu())
    throw Error(
        fmt::format("AutoBind binds loops to GPU threads: target '{}' is not a GPU", target.str()));
  ScheduleRulePtr rule = auto_bind();
  rule->initialize(TuneContext{func, target});
  Schedule sch(func, schedule::ScheduleOptions{.seed = seed, .trace = true});
  auto root = sch.get_block("root");
  if (!root.ok()) throw Error(root.error().reason());
  auto blocks = sch.get_child_blocks(root.value());
  if (!blocks.ok()) throw Error(blocks.error().reason());
  for (const BlockRV& b : blocks.value()) sch = std::move(rule->apply(std::move(sch), b).front());
  return sch.func();
}

}  // namespace tyche::tune
