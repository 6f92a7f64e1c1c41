// From fused groups to tuning tasks. Each group but a view becomes one te function (its external
// inputs, weights included, as placeholders p0, p1, ... in order of first use; its results as
// outputs) and so one PrimFunc; groups whose PrimFuncs are structurally equal share a task,
// whose weight is how many groups use it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/fusion.h"
#include "graph/graph.h"
#include "ir/function.h"

namespace tyche::graph {

// One kernel call of the model: which values it reads and writes, in the PrimFunc's parameter
// order.
struct Call {
  int task = -1;             // index into CompiledModel-independent task list
  int group = -1;            // index into the groups
  std::vector<int> inputs;   // value ids bound to the PrimFunc's input params
  std::vector<int> outputs;  // value ids bound to its output params
};

struct Task {
  std::string name;  // the first group's name, made unique ("fused_conv_relu", "fused_conv_relu_1")
  ir::PrimFunc func;  // unscheduled
  uint64_t hash = 0;  // ir::structural_hash(func)
  int weight = 0;     // groups that call it
  double flop = 0;    // floating-point operations of one call
};

struct TaskTable {
  std::vector<FusedGroup> groups;  // every group, views included, in execution order
  std::vector<Task> tasks;         // in order of first use
  std::vector<Call> calls;         // one per non-view group, in execution order
};

// Fuses `graph` and builds its tasks.
TaskTable extract_tasks(const Graph& graph);

// The te function of one group and how its params bind to values (what extract_tasks does for
// each group).
ir::PrimFunc group_function(const Graph& graph, const FusedGroup& group, const std::string& name,
                            Call& call);

// Floating-point operations of an unscheduled PrimFunc: each block's float arithmetic (a
// reduction's combine counts as one) times its iteration count. Index arithmetic does not count.
double count_flop(const ir::PrimFunc& func);

}  // namespace tyche::graph
