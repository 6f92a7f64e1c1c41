// Graph passes, each a whole-graph rewrite run once after import:
//   infer_and_fold    every node's output shapes and types (from its converter, run on
//                     placeholders), and nodes whose inputs are all known computed at compile
//                     time (by the interpreter) and replaced by their results; Shape always folds;
//   fold_batch_norm   BatchNormalization after a Conv or Gemm (whose weights are constants and
//                     whose output nothing else reads) folded into its weights and bias;
//   fuse_qdq          (before infer_and_fold) a QDQ model's QuantizeLinear(Conv or MatMul of
//                     DequantizeLinear inputs) as QLinearConv / QLinearMatMul on the integers
//                     (qdq.cc).
#pragma once

#include "graph/graph.h"

namespace tyche::graph {

void infer_and_fold(Graph& graph);
void fold_batch_norm(Graph& graph);
void fuse_qdq(Graph& graph);

}  // namespace tyche::graph
