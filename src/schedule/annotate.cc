#include <fmt/format.h>

#include "ir/op.h"
#include "schedule/primitive.h"

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

}  // namespace tyche::schedule
