// Reading an ONNX model into a Graph, with libonnx's protobuf classes, then inferring every shape
// and folding what is constant (passes.h). A model older than opset 13 is first upgraded to 13 by
// ONNX's version converter; a newer one is read node by node at its ops' versions
// (onnx_schemas.h). Every problem a user can have
// with a file is one InputError line: not a model, an unsupported opset or operators (all of them
// listed with their counts), a symbolic dimension without --input-shape, an unsupported type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/ndarray.h"

namespace tyche::graph {

struct ImportOptions {
  // Static shapes for inputs whose dimensions are symbolic (or to override them), by name.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Inputs bound to values at compile time, as TVM's frontend freezes params: each becomes a
  // constant (an op that needs its axes, shape or bounds as constants can then read them), and
  // is no longer an input of the graph. Its type and static dimensions must match the model's.
  std::map<std::string, runtime::NDArray> bound_inputs;
};

// Parses "NAME=1x3x224x224" (several may be given); InputError on a malformed one.
void parse_input_shape(const std::string& text, ImportOptions& options);

Graph import_onnx(const std::string& path, const ImportOptions& options = {});
// The same from the bytes of a model (`what` names it in messages); external data is read from
// below `dir` only (external_data.h); with `dir` empty, a tensor with external data is refused.
Graph import_onnx_bytes(const std::string& bytes, const std::string& what, const std::string& dir,
                        const ImportOptions& options = {});

}  // namespace tyche::graph
