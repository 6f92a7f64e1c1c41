#include <fmt/format.h>

#include "ir/op.h"
#include "schedule/primitive.h"
#include "schedule/instruction_impl.h"

namespace tyche::schedule {

namespace {

ir::Stmt with_annotations(const SRefNode* sref, ir::Annotations ann) {
  if (auto* l = sref->as_for())
    return ir::for_loop(l->loop_var, l->min, l->extent, l->for_kind, l->body, l->thread_tag, std::move(ann));
  auto* b = sref->as_block();
  return ir::make_block(b->name, b->iter_vars, b->reads, b->writes, b->init, b->body, b->alloc_buffers, std::move(ann));
}

const ir::Annotations& annotations_of(const SRefNode* sref) {
  return sref->as_for() ? sref->as_for()->annotations : sref->as_block()->annotations;
}

void replace_annotated(ScheduleState& state, const SRef& sref, ir::Annotations ann) {
  ir::Stmt s = with_annotations(sref.get(), std::move(ann));
  BlockReuse reuse;
  if (auto* b = sref->as_block()) reuse[static_cast<const ir::BlockNode*>(s.get())] = b;
  state.replace(sref, s, reuse);
}

}  // namespace

Status annotate(ScheduleState& state, const SRef& sref, const std::string& key, const ir::AnnotationValue& value) {
  if (key.empty()) return ScheduleError(ErrorCode::kInvalidAnnotation, "annotate: the key is empty", sref->stmt);
  ir::Annotations ann = annotations_of(sref.get());
  ann[key] = value;
  replace_annotated(state, sref, std::move(ann));
  return ok_status();
}

Status unannotate(ScheduleState& state, const SRef& sref, const std::string& key) {
  ir::Annotations ann = annotations_of(sref.get());
  if (!ann.erase(key)) return ScheduleError(ErrorCode::kInvalidAnnotation, fmt::format("unannotate: no annotation '{}'", key), sref->stmt);
  replace_annotated(state, sref, std::move(ann));
  return ok_status();
}

// ---- instructions ----

const InstructionKind& kind_annotate() {
  static const InstructionKind k{
      .name = "annotate",
      .params = {{"block_or_loop", ParamType::kBlockOrLoop}, {"ann_key", ParamType::kString}, {"ann_val", ParamType::kAnnValue}},
      .apply = [](Schedule& sch, Args a, Value*) -> Result<Values> {
        TYCHE_TRY_ASSIGN(sref, sch.block_or_loop_arg(a[0]));
        ir::AnnotationValue value;
        switch (a[2].kind) {
          case Value::Kind::kFloat: value = a[2].f; break;
          case Value::Kind::kString: value = a[2].s; break;
          default: {
            TYCHE_TRY_ASSIGN(x, sch.int_arg(a[2]));
            value = x;
          }
        }
        TYCHE_APPLY_STATUS(annotate(sch.mutable_state(), sref, a[1].s, value));
      }};
  return k;
}

const InstructionKind& kind_unannotate() {
  static const InstructionKind k{
      .name = "unannotate",
      .params = {{"block_or_loop", ParamType::kBlockOrLoop}, {"ann_key", ParamType::kString}},
      .apply = [](Schedule& sch, Args a, Value*) -> Result<Values> {
        TYCHE_TRY_ASSIGN(sref, sch.block_or_loop_arg(a[0]));
        TYCHE_APPLY_STATUS(unannotate(sch.mutable_state(), sref, a[1].s));
      }};
  return k;
}

Status Schedule::annotate(const LoopRV& loop, const std::string& key, const AnnArg& value) {
  return forward<Unit>(*this, kind_annotate(), loop, key, value);
}
Status Schedule::annotate(const BlockRV& block, const std::string& key, const AnnArg& value) {
  return forward<Unit>(*this, kind_annotate(), block, key, value);
}
Status Schedule::unannotate(const LoopRV& loop, const std::string& key) {
  return forward<Unit>(*this, kind_unannotate(), loop, key);
}
Status Schedule::unannotate(const BlockRV& block, const std::string& key) {
  return forward<Unit>(*this, kind_unannotate(), block, key);
}

}  // namespace tyche::schedule
