// Operator fusion in MetaSchedule's (TVM's) manner. Every node lands in one group, and each group
// but a view becomes one te function, so one kernel:
//   - an anchor (conv, matmul, gemm) or a reduction (softmax, normalization, pooling, reduce)
//     takes the elementwise/broadcast ops that follow it (its epilogue: bias, residual add,
//     activation) while each intermediate value has no other reader;
//   - an anchor or reduction takes, as its prologue, the injective/elementwise groups whose only
//     reader it is (a transpose before a matmul, a padding);
//   - elementwise ops that lead into a Softmax wait to be its prologue (its scale and mask);
//   - a view (reshape, flatten, squeeze, unsqueeze, identity, dropout) is a group of its own and
//     no kernel: the executor gives its output the input's bytes.
// A group's external result is its last node's output(s), so running groups in the order of
// their last nodes respects every dependence.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace tyche::graph {

struct FusedGroup {
  std::vector<int> nodes;  // node indices, in graph order
  int anchor = -1;         // the anchor or reduction node, -1 when there is none
  bool is_view = false;    // a single view node: no kernel
  std::string name;        // "fused_conv_bias_add_add_relu": the ops' compute names in order
  int last() const { return nodes.back(); }
};

// The groups, in execution order.
std::vector<FusedGroup> fuse(const Graph& graph);

}  // namespace tyche::graph
