// A model as Tyche holds it: a dataflow graph of operator nodes over named values, in the
// order the nodes run (ONNX keeps nodes topologically sorted). Every value has a static shape
// and a dtype once imported; a value whose contents are known at compile time (a weight, a
// folded shape computation) carries them. Attributes keep ONNX's kinds.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/ndarray.h"

namespace tyche::graph {

struct Value {
  std::string name;
  std::vector<int64_t> shape;
  DataType dtype;
  runtime::NDArray constant;  // defined for weights and folded values
  // The ONNX element type of a narrow value (float8, float4, int4, int2: narrow_types.h), which
  // `dtype` stores a byte per element; 0 for every other value.
  int64_t narrow_code = 0;
  bool is_constant() const { return constant.defined(); }
  // Checked: a count past 64 bits throws, naming the value; bytes() also applies the tensor limit.
  int64_t numel() const;
  uint64_t bytes() const;
};

struct Graph;

// The names of the outer values a node's subgraphs read (Node::subgraphs), as a list of strings.
inline constexpr const char* kCapturesAttribute = "tyche.captures";

using Attribute = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, runtime::NDArray>;

struct Node {
  std::string op;            // ONNX op type: "Conv", "MatMul", ...
  std::string name;          // the node's name in the model, or "<op>_<index>" when it has none
  std::vector<int> inputs;   // value ids; -1 for an optional input left out
  std::vector<int> outputs;  // value ids; -1 for an optional output left out
  std::map<std::string, Attribute> attributes;
  // The bodies of If (then_branch, else_branch), Loop and Scan (body), by attribute name. The
  // outer values a body reads are extra inputs of the node, after its own, in the order that the
  // kCapturesAttribute attribute names them; control_flow.h expands such nodes on import.
  std::map<std::string, std::shared_ptr<const Graph>> subgraphs;

  bool has(const std::string& attr) const { return attributes.count(attr) > 0; }
  // Typed lookups; a present attribute of another kind throws InputError naming the node.
  int64_t get_int(const std::string& attr, int64_t fallback) const;
  double get_float(const std::string& attr, double fallback) const;
  std::string get_string(const std::string& attr, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& attr, std::vector<int64_t> fallback = {}) const;
  std::vector<double> get_floats(const std::string& attr) const;        // empty when absent
  std::vector<std::string> get_strings(const std::string& attr) const;  // empty when absent
};

struct Graph {
  std::string name;
  int opset = 0;       // of the default ("ai.onnx") domain, after an upgrade on import
  int opset_read = 0;  // as the model was stamped
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // values the caller supplies (never constants)
  std::vector<int> outputs;  // values the caller gets back
  // In a subgraph: the values it reads from the graph around it, each named as it is there.
  std::vector<int> captures;

  int add_value(Value v);
  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(int id) { return values.at(static_cast<size_t>(id)); }
  // For each value, the nodes that read it (in node order).
  std::vector<std::vector<int>> consumers() const;
  // Drops nodes whose outputs nobody reads (graph outputs count as read) and values no node or
  // graph input/output refers to, renumbering both.
  void remove_dead();
};

// The Tyche type of an ONNX TensorProto data type code, or nothing for one Tyche does not hold
// (strings, complex, float8, 4-bit and 2-bit types).
std::optional<DataType> dtype_of_onnx(int64_t code);
// The ONNX code of a type dtype_of_onnx gives (the inverse), 0 for another.
int64_t onnx_code_of(DataType t);
// Its ONNX name ("FLOAT16") for messages.
std::string onnx_dtype_name(int64_t code);

// "1x3x224x224" style text for messages and tables; "scalar" for rank 0.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace tyche::graph
