// How a model runs, computed once from its graph and task table: the calls in order (the table's),
// where each value's bytes are (a graph input, a constant, or an offset of one arena planned by
// memory_plan.h; a view's are its input's), and so each call's buffers. The executor (executor.h)
// runs it in-process; export_model.h writes it as the entry of an exported library.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/memory_plan.h"
#include "graph/graph.h"
#include "graph/tasks.h"

namespace tyche::executor {

// The model as the front and middle end left it (graph/).
using graph::Call;
using graph::FusedGroup;
using graph::Graph;
using graph::Node;
using graph::TaskTable;
using graph::Value;

struct Location {
  enum class Kind { kNone, kInput, kConstant, kArena };
  Kind kind = Kind::kNone;
  int index = -1;  // kInput: the position in graph.inputs; kConstant: the value holding the data;
                   // kArena: the buffer
  int64_t offset = 0;  // kArena: the byte offset in the arena (a multiple of 64)
};

struct ExecutionPlan {
  std::vector<int> root;  // per value: the value whose bytes it has (itself, or what a view shows)
  std::vector<Location>
      location;  // per value (kNone: neither computed nor given, e.g. a dead optional)
  std::vector<BufferLifetime> buffers;       // the arena's: one per root that a call writes
  std::vector<std::vector<int>> dies_after;  // per call, and one past the last (the outputs read
                                             // back): buffers last used there
  MemoryPlan memory;                         // the buffers' offsets
  std::vector<std::vector<Location>>
      call_args;  // per call: its inputs' locations, then its outputs'
};

// Throws InternalError when a call reads a value that has no location.
ExecutionPlan plan_execution(const Graph& graph, const TaskTable& table);

}  // namespace tyche::executor
