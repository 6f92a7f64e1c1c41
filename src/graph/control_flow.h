// ONNX's control flow (If, Loop, Scan) expanded on import into the nodes it runs, as Tyche
// compiles static graphs: an If whose condition is a constant becomes the branch it takes; a
// Loop whose trip count and condition are constants is unrolled one iteration at a time (each
// iteration's condition folds before the next is expanded); a Scan is unrolled over its
// sequence, whose length is static. Anything else is refused in one line naming the node and the
// value to bind. infer_and_fold (passes.h) expands each such node when it reaches it, when every
// value the node reads has its shape.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace tyche::graph {

bool is_control_flow(const std::string& op);

// The nodes that replace `node` (an If, Loop or Scan of `graph`), in order; the values they
// define are added to `graph`. A Loop's expansion ends with the rest of the loop as a node of
// its own, expanded in turn.
std::vector<Node> expand_control_flow(Graph& graph, const Node& node);

}  // namespace tyche::graph
