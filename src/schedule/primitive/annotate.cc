#include <fmt/format.h>

#include "ir/op.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"

namespace tyche::schedule {

namespace {

ir::Stmt with_annotations(const SRefNode* sref, ir::Annotations ann) {
  if (auto* l = sref->as_for())
    return ir::for_loop(l->loop_var, l->min, l->extent, l->for_kind, l->body, l->thread_tag,
                        std::move(ann));
  auto* b = sref->as_block();
  return ir::make_block(b->name, b->iter_vars, b->reads, b->writes, b->init, b->body,
                        b->alloc_buffers, std::move(ann));
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

Status annotate(ScheduleState& state, const SRef& sref, const std::string& key,
                const ir::AnnotationValue& value) {
  if (key.empty())
    return ScheduleError(ErrorCode::kInvalidAnnotation, "annotate: the key is empty", sref->stmt);
  ir::Annotations ann = annotations_of(sref.get());
  ann[key] = value;
  replace_annotated(state, sref, std::move(ann));
  return ok_status();
}

Status unannotate(ScheduleState& state, const SRef& sref, const std::string& key) {
  ir::Annotations ann = annotations_of(sref.get());
  if (!ann.erase(key))
    return ScheduleError(ErrorCode::kInvalidAnnotation,
                         fmt::format("unannotate: no annotation '{}'", key), sref->stmt);
  replace_annotated(state, sref, std::move(ann));
  return ok_status();
}

// ---- instructions ----

namespace {

Status apply_annotate(InstructionContext& ctx, BlockOrLoopRV block_or_loop, std::string ann_key,
                      AnnArg ann_val) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block_or_loop));
  ir::AnnotationValue value;
  if (const ExprRV* rv = std::get_if<ExprRV>(&ann_val)) {
    TYCHE_TRY_ASSIGN(x, ctx.value(*rv));
    value = x;
  } else if (const double* f = std::get_if<double>(&ann_val)) {
    value = *f;
  } else if (const std::string* text = std::get_if<std::string>(&ann_val)) {
    value = *text;
  } else {
    value = std::get<int64_t>(ann_val);
  }
  return annotate(ctx.state(), sref, ann_key, value);
}

Status apply_unannotate(InstructionContext& ctx, BlockOrLoopRV block_or_loop, std::string ann_key) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block_or_loop));
  return unannotate(ctx.state(), sref, ann_key);
}

}  // namespace

TYCHE_INSTRUCTION(annotate, apply_annotate, {{"block_or_loop"}, {"ann_key"}, {"ann_val"}})
TYCHE_INSTRUCTION(unannotate, apply_unannotate, {{"block_or_loop"}, {"ann_key"}})

Status Schedule::annotate(const LoopRV& loop, const std::string& key, const AnnArg& value) {
  return annotate_kind()(*this, loop, key, value);
}
Status Schedule::annotate(const BlockRV& block, const std::string& key, const AnnArg& value) {
  return annotate_kind()(*this, block, key, value);
}
Status Schedule::unannotate(const LoopRV& loop, const std::string& key) {
  return unannotate_kind()(*this, loop, key);
}
Status Schedule::unannotate(const BlockRV& block, const std::string& key) {
  return unannotate_kind()(*this, block, key);
}

}  // namespace tyche::schedule
