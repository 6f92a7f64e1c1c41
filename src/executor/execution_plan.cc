#include "executor/execution_plan.h"

#include <fmt/format.h>

#include "support/error.h"

namespace tyche::executor {

ExecutionPlan plan_execution(const Graph& graph, const TaskTable& table) {
  ExecutionPlan p;
  const size_t nv = graph.values.size();
  p.root.resize(nv);
  for (size_t v = 0; v < nv; ++v) p.root[v] = static_cast<int>(v);
  // Views: the output's bytes are the input's.
  for (const FusedGroup& g : table.groups) {
    if (!g.is_view) continue;
    const Node& n = graph.nodes[static_cast<size_t>(g.nodes[0])];
    p.root[static_cast<size_t>(n.outputs[0])] = p.root[static_cast<size_t>(n.inputs[0])];
  }
  // Lifetimes of the roots written by calls, in calls.
  const int end = static_cast<int>(table.calls.size());
  std::vector<int> buffer_of(nv, -1);
  auto root_buffer = [&](int value) {
    return buffer_of[static_cast<size_t>(p.root[static_cast<size_t>(value)])];
  };
  for (size_t c = 0; c < table.calls.size(); ++c) {
    for (int o : table.calls[c].outputs) {
      int root = p.root[static_cast<size_t>(o)];
      buffer_of[static_cast<size_t>(root)] = static_cast<int>(p.buffers.size());
      const Value& v = graph.value(root);
      p.buffers.push_back(
          {static_cast<int64_t>(v.bytes()), static_cast<int>(c), static_cast<int>(c)});
    }
    for (int in : table.calls[c].inputs) {
      int b = root_buffer(in);
      if (b >= 0) p.buffers[static_cast<size_t>(b)].last = static_cast<int>(c);
    }
  }
  for (int o : graph.outputs) {
    int b = root_buffer(o);
    if (b >= 0) p.buffers[static_cast<size_t>(b)].last = end;  // read back after the last call
  }
  p.dies_after.assign(static_cast<size_t>(end) + 1, {});
  for (size_t b = 0; b < p.buffers.size(); ++b)
    p.dies_after[static_cast<size_t>(p.buffers[b].last)].push_back(static_cast<int>(b));
  p.memory = plan_memory(p.buffers);

  std::vector<int> input_index(nv, -1);
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    input_index[static_cast<size_t>(graph.inputs[i])] = static_cast<int>(i);
  p.location.resize(nv);
  for (size_t v = 0; v < nv; ++v) {
    int root = p.root[v];
    Location& l = p.location[v];
    if (int b = buffer_of[static_cast<size_t>(root)]; b >= 0) {
      l = {Location::Kind::kArena, b, p.memory.offsets[static_cast<size_t>(b)]};
    } else if (graph.value(root).is_constant()) {
      l = {Location::Kind::kConstant, root, 0};
    } else if (int i = input_index[static_cast<size_t>(root)]; i >= 0) {
      l = {Location::Kind::kInput, i, 0};
    }
  }
  auto located = [&](int value) {
    const Location& l = p.location[static_cast<size_t>(value)];
    if (l.kind == Location::Kind::kNone)
      throw InternalError(fmt::format("value '{}' has no storage", graph.value(value).name));
    return l;
  };
  for (const Call& call : table.calls) {
    std::vector<Location>& args = p.call_args.emplace_back();
    for (int in : call.inputs) args.push_back(located(in));
    for (int out : call.outputs) args.push_back(located(out));
  }
  for (int o : graph.outputs) located(o);
  return p;
}

}  // namespace tyche::executor
