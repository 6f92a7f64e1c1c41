// AutoInline: removes element-wise and constant blocks by inlining them into their consumers
// (compute_inline) or, optionally, an element-wise consumer into its single producer
// (reverse_compute_inline), so later rules tile fewer, larger blocks.
#include "arith/linear.h"
#include "ir/functor.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::Schedule;

namespace {

bool calls_any(const ir::BlockNode* block, const std::vector<std::string>& ops) {
  if (ops.empty()) return false;
  class Finder : public ir::StmtExprVisitor {
   public:
    const std::vector<std::string>* ops;
    bool found = false;
    void visit_call(const ir::CallNode* n) override {
      if (std::find(ops->begin(), ops->end(), ir::call_op_name(n->op)) != ops->end()) found = true;
      ir::StmtExprVisitor::visit_call(n);
    }
  } finder;
  finder.ops = &ops;
  finder.visit_stmt(block->body);
  return finder.found;
}

// Every read indexes with the block's iter vars in their declared order (no transposition), so
// inlining keeps the consumer's access order.
bool reads_in_order(const ir::BlockNode* block) {
  for (const ir::BufferRegion& r : block->reads) {
    int last = -1;
    for (const ir::Range& range : r.region) {
      for (size_t i = 0; i < block->iter_vars.size(); ++i) {
        const ir::VarNode* v = block->iter_vars[i].var.get();
        if (!ir::uses_var(range.min, v)) continue;
        if (static_cast<int>(i) < last) return false;
        last = static_cast<int>(i);
      }
    }
  }
  return true;
}

bool pure_spatial(const ir::BlockNode* block) {
  if (block->init.get()) return false;
  for (const ir::IterVar& iv : block->iter_vars)
    if (iv.kind != ir::IterKind::kSpatial) return false;
  return true;
}

class AutoInline : public ScheduleRule {
 public:
  explicit AutoInline(AutoInlineConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "AutoInline"; }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    std::vector<Schedule> out;
    const ir::BlockNode* b = block_node(sch, block);
    if (b && !is_root_block(sch, block) && pure_spatial(b) && !calls_any(b, config_.disallow_op)) {
      bool is_const = b->reads.empty();
      bool shape_ok =
          !(config_.disallow_if_then_else && has_if_then_else(b)) &&
          !(config_.require_injective &&
            !schedule::check_injective_block(sch.state(), sch.block_sref(block).value().get())
                 .ok()) &&
          !(config_.require_ordered && !reads_in_order(b));
      bool output = writes_output(sch, block);
      // A refused primitive leaves the schedule unchanged and records nothing.
      if (!output &&
          ((config_.inline_const_tensor && is_const) || (config_.into_consumer && shape_ok))) {
        if (sch.compute_inline(block).ok()) {
          out.push_back(std::move(sch));
          return out;
        }
      }
      if (config_.into_producer && shape_ok) (void)sch.reverse_compute_inline(block);
    }
    out.push_back(std::move(sch));
    return out;
  }

 private:
  AutoInlineConfig config_;
};

}  // namespace

ScheduleRulePtr auto_inline(AutoInlineConfig config) {
  return std::make_shared<AutoInline>(std::move(config));
}

}  // namespace tyche::tune
