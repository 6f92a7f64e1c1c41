#include "tune/search/transfer.h"

#include <algorithm>
#include <unordered_map>

#include "support/error.h"

#include "ir/op.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tyche::tune {

namespace {

// The same instructions in the same order, each with arguments of the same kinds (the handles
// and literals may differ).
bool same_instructions(const schedule::Trace& a, const schedule::Trace& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const schedule::Instruction& x = a.instructions()[i];
    const schedule::Instruction& y = b.instructions()[i];
    if (x.kind != y.kind || x.args.size() != y.args.size() || x.outputs.size() != y.outputs.size()) return false;
    for (size_t k = 0; k < x.args.size(); ++k)
      if (x.args[k].kind != y.args[k].kind) return false;
  }
  return true;
}

int64_t largest_divisor_up_to(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, std::max<int64_t>(cap, 1)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

std::vector<int64_t> adapt_tile(const std::vector<int64_t>& factors, int64_t extent, int64_t max_innermost) {
  std::vector<int64_t> out(factors.size(), 1);
  if (factors.empty()) return out;
  int64_t rest = extent;
  for (size_t i = factors.size(); i-- > 1;) {
    int64_t cap = factors[i];
    if (i + 1 == factors.size() && max_innermost > 0) cap = std::min(cap, max_innermost);
    out[i] = largest_divisor_up_to(rest, cap);
    rest /= out[i];
  }
  out[0] = rest;
  return out;
}

std::optional<schedule::Trace> transfer_decisions(const TuneContext& ctx, const schedule::Trace& space,
                                                  const schedule::Trace& measured) {
  if (!same_instructions(space, measured)) return std::nullopt;
  const schedule::InstructionKind& perfect_tile = schedule::kind_sample_perfect_tile();
  schedule::Trace out = space;
  try {
    for (const auto& [index, decision] : measured.decisions()) {
      const schedule::Instruction& inst = measured.instructions()[index];
      if (!inst.is(perfect_tile)) {
        out = out.with_decision(index, decision);
        continue;
      }
      // The loop's extent in this workload: replay what comes before, then look.
      schedule::Schedule sch(ctx.func, schedule::ScheduleOptions{.seed = 0});
      std::unordered_map<int64_t, schedule::Value> handles;
      if (!out.apply_to(sch, {.stop_before = index, .handles = &handles}).ok()) return std::nullopt;
      auto loop = handles.find(out.instructions()[index].arg("loop").i);
      if (loop == handles.end()) return std::nullopt;
      auto sref = sch.loop_sref(schedule::LoopRV{loop->second.i});
      if (!sref.ok()) return std::nullopt;
      std::optional<int64_t> extent = ir::as_const_int(sref.value()->as_for()->extent);
      if (!extent) return std::nullopt;
      std::vector<int64_t> factors;
      for (const schedule::Value& v : decision.list) factors.push_back(v.i);
      std::vector<int64_t> adapted = adapt_tile(factors, *extent, out.instructions()[index].arg("max_innermost_factor").i);
      std::vector<schedule::Value> list;
      for (int64_t f : adapted) list.push_back(schedule::Value::integer(f));
      out = out.with_decision(index, schedule::Value::of_list(std::move(list)));
    }
    schedule::Schedule check(ctx.func, schedule::ScheduleOptions{.seed = 0});
    if (!out.apply_to(check).ok()) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;  // a decision of the wrong shape for this instruction
  }
  return out;
}

}  // namespace tyche::tune
