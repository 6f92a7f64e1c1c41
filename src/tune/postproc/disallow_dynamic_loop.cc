// DisallowDynamicLoop: a loop whose extent is not a constant cannot be measured meaningfully
// (nor tiled, fused or unrolled by the later postprocessors), so such a candidate is invalid.
#include <fmt/format.h>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

class DisallowDynamicLoop : public Postproc {
 public:
  std::string name() const override { return "DisallowDynamicLoop"; }

  schedule::Status apply(schedule::Schedule& sch) override {
    const ir::ForNode* dynamic = nullptr;
    // Post-order: the innermost offending loop is reported first; any one will do.
    ir::post_order_visit(sch.func()->body, [&](const ir::Stmt& s) {
      const auto* loop = s.as<ir::ForNode>();
      if (loop && !dynamic && !ir::as_const_int(loop->extent)) dynamic = loop;
    });
    if (!dynamic) return schedule::ok_status();
    return schedule::ScheduleError(
        schedule::ErrorCode::kNonConstantExtent,
        fmt::format("loop '{}' has a non-constant extent ({})", dynamic->loop_var.name(),
                    ir::to_string(dynamic->extent)),
        dynamic);
  }
};

}  // namespace

PostprocPtr disallow_dynamic_loop() {
  return std::make_shared<DisallowDynamicLoop>();
}

}  // namespace tyche::tune
