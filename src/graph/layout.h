// The layout of conv chains. ONNX activations are NCHW; convolutions and pooling vectorize far
// better over channels, so by default the activations of a conv chain become NHWC: each Conv
// (2-D, constant weights), and the pooling, elementwise/broadcast and Concat nodes reading its
// results, run channels last. Transposes are inserted once at the chain's boundaries (shared by
// every reader), broadcast constants are permuted, and conv weights become (KH, KW, CI/g, CO),
// all at compile time ("weights transformed at load"). Model outputs keep their ONNX layout
// and names.
#pragma once

#include <string>

#include "graph/graph.h"

namespace tyche::graph {

enum class Layout : uint8_t { kNCHW, kNHWC };
// "nchw" or "nhwc" (InputError otherwise).
Layout parse_layout(const std::string& name);

// Rewrites `graph` (after infer_and_fold and fold_batch_norm); nothing changes for kNCHW.
void convert_layout(Graph& graph, Layout layout);

}  // namespace tyche::graph
