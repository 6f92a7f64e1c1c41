#include "tune/search/transfer.h"

#include <algorithm>
#include <unordered_map>

#include "support/error.h"

#include "ir/op.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tyche::tune {

namespace {

// Where each handle of a trace is made: (instruction, output position); lists flattened in order.
using DefinitionSites = std::unordered_map<int64_t, std::pair<size_t, size_t>>;

DefinitionSites definition_sites(const schedule::Trace& t) {
  DefinitionSites out;
  for (size_t i = 0; i < t.size(); ++i) {
    size_t k = 0;
    for (const schedule::Value& o : t.instructions()[i].outputs) {
      if (o.kind == schedule::Value::Kind::kList)
        for (const schedule::Value& e : o.list) out[e.i] = {i, k++};
      else
        out[o.i] = {i, k++};
    }
  }
  return out;
}

// Same shape of argument: handles made at the same place, equal strings (block names,
// annotation keys), lists alike element by element; numbers may differ (extents, limits).
bool same_argument(const schedule::Value& x, const DefinitionSites& xs, const schedule::Value& y,
                   const DefinitionSites& ys) {
  if (x.kind != y.kind) return false;
  if (x.is_rv()) {
    auto a = xs.find(x.i), b = ys.find(y.i);
    return a != xs.end() && b != ys.end() && a->second == b->second;
  }
  if (x.kind == schedule::Value::Kind::kString) return x.s == y.s;
  if (x.kind != schedule::Value::Kind::kList) return true;
  if (x.list.size() != y.list.size()) return false;
  for (size_t k = 0; k < x.list.size(); ++k)
    if (!same_argument(x.list[k], xs, y.list[k], ys)) return false;
  return true;
}

// The same instructions in the same order, on the same handles: two spaces of one workload may
// differ only in which loop an instruction takes (AddRFactor's spaces rfactor the outer or the
// inner loop of one split), and a program must land on the space it was measured in.
bool same_instructions(const schedule::Trace& a, const schedule::Trace& b) {
  if (a.size() != b.size()) return false;
  const DefinitionSites as = definition_sites(a), bs = definition_sites(b);
  for (size_t i = 0; i < a.size(); ++i) {
    const schedule::Instruction& x = a.instructions()[i];
    const schedule::Instruction& y = b.instructions()[i];
    if (x.kind != y.kind || x.args.size() != y.args.size() || x.outputs.size() != y.outputs.size())
      return false;
    for (size_t k = 0; k < x.args.size(); ++k)
      if (!same_argument(x.args[k], as, y.args[k], bs)) return false;
  }
  return true;
}

int64_t largest_divisor_up_to(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, std::max<int64_t>(cap, 1)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

std::vector<int64_t> adapt_tile(const std::vector<int64_t>& factors, int64_t extent,
                                int64_t max_innermost) {
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

std::optional<schedule::Trace> transfer_decisions(const TuneContext& ctx,
                                                  const schedule::Trace& space,
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
      std::vector<int64_t> adapted =
          adapt_tile(factors, *extent, out.instructions()[index].arg("max_innermost_factor").i);
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
