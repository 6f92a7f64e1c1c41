// Graph passes, each a whole-graph rewrite run once after import:
//   infer_and_fold    every node's output shapes and types (from its converter, run on
//                     placeholders), and nodes whose inputs are all known computed at compile
//                     time (by the interpreter) and replaced by their results; Shape always folds;
//   fold_batch_norm   BatchNormalization after a Conv or Gemm (whose weights are constants and
//                     whose output nothing else reads) folded into its weights and bias;
//   fuse_qdq          (before infer_and_fold) a QDQ model's QuantizeLinear(Conv or MatMul of
//                     DequantizeLinear inputs) as QLinearConv / QLinearMatMul on the integers
//                     (qdq.cc);
//   fold_zero_points  (after infer_and_fold) the activation zero point's term of a quantized
//                     product with constant weights, -xz * sum w per channel, folded into an
//                     int32 bias at import (qdq.cc): the kernel then reads the weights once, in
//                     its packed layout, and nothing reads them in their original one.
//   convert_to_bfloat16  (after the layout pass; --dtype bfloat16) the products' weights and
//                     activations in bfloat16, accumulated in float32 (bfloat16.cc).
#pragma once

#include <string>

#include "graph/graph.h"

namespace tyche::graph {

void infer_and_fold(Graph& graph);
void fold_batch_norm(Graph& graph);
void fuse_qdq(Graph& graph);
void fold_zero_points(Graph& graph);
void convert_to_bfloat16(Graph& graph);
// The model in `dtype` ("float32": as it is; "bfloat16": convert_to_bfloat16); InputError
// otherwise. The CLI's --dtype and Python's dtype= both go through it (task hashes key the
// database).
void apply_dtype(Graph& graph, const std::string& dtype);

}  // namespace tyche::graph
