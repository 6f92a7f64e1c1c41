#include "schedule/schedule.h"

#include <fmt/format.h>

#include "schedule/instruction_impl.h"

namespace tyche::schedule {

Schedule::Schedule(ir::PrimFunc func, bool debug_verify)
    : Schedule(std::move(func), ScheduleOptions{.debug_verify = debug_verify}) {}

Schedule::Schedule(ir::PrimFunc func, const ScheduleOptions& options)
    : state_(std::move(func), options.debug_verify), rng_(options.seed) {
  if (options.trace) trace_.emplace();
}

Schedule Schedule::copy() {
  Schedule out(state_.func(),
               ScheduleOptions{.seed = 0, .trace = false, .debug_verify = state_.debug_verify()});
  out.rng_ = rng_.fork();
  out.trace_ = trace_;
  out.next_id_ = next_id_;
  out.exprs_ = exprs_;
  out.location_marks_ = location_marks_;
  // The copy's sref tree is built over the same nodes, so a handle maps by the node it points at;
  // a stale handle stays stale.
  auto carry = [&](const std::unordered_map<int64_t, SRef>& from,
                   std::unordered_map<int64_t, SRef>& to) {
    for (const auto& [id, sref] : from) {
      SRef mapped = sref->valid() ? out.state_.get_sref(sref->stmt) : nullptr;
      to[id] = mapped ? mapped : std::make_shared<SRefNode>();
    }
  };
  carry(blocks_, out.blocks_);
  carry(loops_, out.loops_);
  return out;
}

BlockRV Schedule::issue_block(const SRef& sref) {
  BlockRV rv{next_id_++};
  blocks_[rv.id] = sref;
  return rv;
}

LoopRV Schedule::issue_loop(const SRef& sref) {
  LoopRV rv{next_id_++};
  loops_[rv.id] = sref;
  return rv;
}

ExprRV Schedule::issue_expr(int64_t value) {
  ExprRV rv{next_id_++};
  exprs_[rv.id] = value;
  return rv;
}

LoopRV Schedule::issue_location_mark(int64_t mark) {
  LoopRV rv{next_id_++};
  location_marks_[rv.id] = mark;
  return rv;
}

Result<int64_t> Schedule::get(const ExprRV& expr) const {
  auto it = exprs_.find(expr.id);
  if (it == exprs_.end())
    return ScheduleError(ErrorCode::kStaleHandle,
                         fmt::format("expression handle v{} was never issued", expr.id));
  return it->second;
}

Result<SRef> Schedule::block_sref(const BlockRV& block) const {
  auto it = blocks_.find(block.id);
  if (it == blocks_.end() || !it->second->valid() || !it->second->as_block())
    return ScheduleError(ErrorCode::kStaleHandle,
                         fmt::format("block handle b{} is stale or was never issued", block.id));
  return it->second;
}

Result<SRef> Schedule::loop_sref(const LoopRV& loop) const {
  if (location_marks_.count(loop.id))
    return ScheduleError(
        ErrorCode::kWrongHandleKind,
        fmt::format(
            "loop handle l{} is a compute-location mark (root or inline), which only compute_at "
            "and reverse_compute_at accept",
            loop.id));
  auto it = loops_.find(loop.id);
  if (it == loops_.end() || !it->second->valid() || !it->second->as_for())
    return ScheduleError(
        ErrorCode::kStaleHandle,
        fmt::format(
            "loop handle l{} is stale (consumed by an earlier primitive) or was never issued",
            loop.id));
  return it->second;
}

Result<SRef> InstructionContext::sref(const BlockOrLoopRV& rv) const {
  return std::visit([&](const auto& x) { return sref(x); }, rv);
}

Result<std::vector<SRef>> InstructionContext::srefs(const std::vector<LoopRV>& loops) const {
  std::vector<SRef> out;
  for (const LoopRV& l : loops) {
    TYCHE_TRY_ASSIGN(sref, sch_.loop_sref(l));
    out.push_back(sref);
  }
  return out;
}

Result<int64_t> InstructionContext::value(const ExprArg& arg) const {
  if (const ExprRV* rv = std::get_if<ExprRV>(&arg.v)) return sch_.get(*rv);
  return std::get<int64_t>(arg.v);
}

std::optional<int64_t> InstructionContext::location_mark(const LoopRV& loop) const {
  auto it = sch_.location_marks_.find(loop.id);
  if (it == sch_.location_marks_.end()) return std::nullopt;
  return it->second;
}

std::vector<BlockRV> InstructionContext::issue_blocks(const std::vector<SRef>& blocks) {
  std::vector<BlockRV> out;
  for (const SRef& b : blocks) out.push_back(sch_.issue_block(b));
  return out;
}

std::vector<LoopRV> InstructionContext::issue_loops(const std::vector<SRef>& loops) {
  std::vector<LoopRV> out;
  for (const SRef& l : loops) out.push_back(sch_.issue_loop(l));
  return out;
}

Result<std::vector<Value>> Schedule::apply_instruction(const InstructionKind& kind,
                                                       std::vector<Value> args, Value decision) {
  if (args.size() != kind.params.size())
    return ScheduleError(
        ErrorCode::kInvalidArgument,
        fmt::format("{} takes {} arguments, got {}", kind.name, kind.params.size(), args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!value_matches(args[i], kind.params[i].type))
      return ScheduleError(
          ErrorCode::kInvalidArgument,
          fmt::format("{}: argument '{}' must be {}, got {}", kind.name, kind.params[i].name,
                      param_type_name(kind.params[i].type), value_kind_name(args[i].kind)));
  if (decision.kind != Value::Kind::kNone && !decision_matches(decision, kind.decision))
    return ScheduleError(ErrorCode::kInvalidArgument,
                         kind.is_sampling()
                             ? fmt::format("{}: the decision has the wrong form", kind.name)
                             : fmt::format("{} takes no decision", kind.name));
  InstructionContext context(*this, &decision);
  auto out = kind.apply(context, args);
  if (!out) return out;
  if (trace_) trace_->append(Instruction{&kind, std::move(args), out.value()}, std::move(decision));
  return out;
}

Value to_value(const ExprArg& v) {
  if (const ExprRV* rv = std::get_if<ExprRV>(&v.v)) return to_value(*rv);
  return Value::integer(std::get<int64_t>(v.v));
}

Value to_value(const AnnArg& v) {
  return std::visit([](const auto& x) { return to_value(x); }, v);
}

Value to_value(const BlockOrLoopRV& v) {
  return std::visit([](const auto& x) { return to_value(x); }, v);
}

}  // namespace tyche::schedule
