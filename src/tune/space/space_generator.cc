#include "tune/space/space_generator.h"

#include <fmt/format.h>

#include <cstdint>

#include "ir/functor.h"
#include "support/error.h"

namespace tyche::tune {

using schedule::Schedule;

namespace {

// Block names in pre-order (a block before the blocks nested in it).
std::vector<std::string> block_names(const ir::PrimFunc& func) {
  std::vector<std::string> names;
  class Collector : public ir::StmtExprVisitor {
   public:
    std::vector<std::string>* out;
    void visit_block(const ir::BlockNode* n) override {
      out->push_back(n->name);
      ir::StmtExprVisitor::visit_block(n);
    }
  } collector;
  collector.out = &names;
  collector.visit_stmt(func->body);
  return names;
}

// Past this many design spaces a task's later blocks take each rule's first variant only.
constexpr size_t kMaxDesignSpaces = 16;

class PostOrderApply : public SpaceGenerator {
 public:
  explicit PostOrderApply(std::vector<ScheduleRulePtr> rules) : rules_(std::move(rules)) {}

  void initialize(const TuneContext& context) override {
    for (const ScheduleRulePtr& r : rules_) r->initialize(context);
  }

  std::vector<Schedule> generate(const TuneContext& context, int64_t seed) override {
    initialize(context);
    Schedule first(context.func, schedule::ScheduleOptions{.seed = seed});
    // Handles for every block up front (copies keep them): later blocks (consumers) first,
    // nested blocks before the block holding them, the root last.
    std::vector<std::string> names = block_names(context.func);
    std::reverse(names.begin(), names.end());
    std::vector<schedule::BlockRV> blocks;
    for (const std::string& name : names) {
      auto block = first.get_block(name);
      if (!block.ok())
        throw InputError(
            fmt::format("PostOrderApply: {}", block.error().reason()));  // ambiguous name
      blocks.push_back(block.value());
    }
    std::vector<Schedule> current;
    current.push_back(std::move(first));
    // Rule by rule (TVM's order): a rule sees every block as the earlier rules left it, e.g. the
    // GPU epilogue inlines into the write cache MultiLevelTiling made.
    for (const ScheduleRulePtr& rule : rules_) {
      std::vector<Schedule> next;
      for (Schedule& sch : current) {
        std::vector<Schedule> states;
        states.push_back(std::move(sch));
        for (const schedule::BlockRV& block : blocks) {
          // A rule's variants multiply block after block (a recurrence's task has dozens of
          // products): once there are kMaxDesignSpaces, each state keeps its first variant.
          bool full = next.size() + states.size() >= kMaxDesignSpaces;
          std::vector<Schedule> applied;
          for (Schedule& s : states) {
            if (!s.block_sref(block).ok()) {  // removed by an earlier rule (inlined)
              applied.push_back(std::move(s));
              continue;
            }
            std::vector<Schedule> variants = rule->apply(std::move(s), block);
            if (full && variants.size() > 1) variants.erase(variants.begin() + 1, variants.end());
            for (Schedule& r : variants) applied.push_back(std::move(r));
          }
          states = std::move(applied);
        }
        for (Schedule& s : states) next.push_back(std::move(s));
      }
      current = std::move(next);
    }
    return current;
  }

 private:
  std::vector<ScheduleRulePtr> rules_;
};

class ScheduleFn : public SpaceGenerator {
 public:
  explicit ScheduleFn(std::function<schedule::Status(Schedule&)> fn) : fn_(std::move(fn)) {}
  std::vector<Schedule> generate(const TuneContext& context, int64_t seed) override {
    Schedule sch(context.func, schedule::ScheduleOptions{.seed = seed});
    schedule::Status st = [&]() -> schedule::Status {
      try {
        return fn_(sch);
      } catch (const schedule::ScheduleException& e) {  // a Result's value() on a refusal
        return e.error();
      }
    }();
    if (!st.ok())
      throw InputError(fmt::format("schedule function failed: {}", st.error().reason()));
    std::vector<Schedule> out;
    out.push_back(std::move(sch));
    return out;
  }

 private:
  std::function<schedule::Status(Schedule&)> fn_;
};

class Union : public SpaceGenerator {
 public:
  explicit Union(std::vector<SpaceGeneratorPtr> gens) : gens_(std::move(gens)) {}
  void initialize(const TuneContext& context) override {
    for (const SpaceGeneratorPtr& g : gens_) g->initialize(context);
  }
  std::vector<Schedule> generate(const TuneContext& context, int64_t seed) override {
    std::vector<Schedule> out;
    for (size_t i = 0; i < gens_.size(); ++i)
      // Seeds stay non-negative (a negative one means nondeterministic) and never overflow.
      for (Schedule& s : gens_[i]->generate(
               context, seed < 0
                            ? seed
                            : static_cast<int64_t>((static_cast<uint64_t>(seed) + i) & INT64_MAX)))
        out.push_back(std::move(s));
    return out;
  }

 private:
  std::vector<SpaceGeneratorPtr> gens_;
};

}  // namespace

SpaceGeneratorPtr post_order_apply(std::vector<ScheduleRulePtr> rules) {
  return std::make_shared<PostOrderApply>(std::move(rules));
}
SpaceGeneratorPtr schedule_fn(std::function<schedule::Status(Schedule&)> fn) {
  return std::make_shared<ScheduleFn>(std::move(fn));
}
SpaceGeneratorPtr space_union(std::vector<SpaceGeneratorPtr> generators) {
  return std::make_shared<Union>(std::move(generators));
}

}  // namespace tyche::tune
