#include "graph/graph.h"

#include <fmt/format.h>

#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::graph {

int64_t Value::numel() const {
  if (std::optional<int64_t> n = checked_numel(shape))
    return *n;  // the passes ask often: no message built
  return tensor_size(fmt::format("value '{}'", name), shape, dtype)
      .elements;  // throws, naming the value
}

uint64_t Value::bytes() const {
  return tensor_size(fmt::format("value '{}'", name), shape, dtype).bytes;
}

namespace {

template <typename T>
const T* typed(const Node& node, const std::string& attr, const char* kind) {
  auto it = node.attributes.find(attr);
  if (it == node.attributes.end()) return nullptr;
  if (const T* v = std::get_if<T>(&it->second)) return v;
  throw_input_error("node '{}' ({}): attribute '{}' is not {}", node.name, node.op, attr, kind);
}

}  // namespace

int64_t Node::get_int(const std::string& attr, int64_t fallback) const {
  const int64_t* v = typed<int64_t>(*this, attr, "an integer");
  return v ? *v : fallback;
}

double Node::get_float(const std::string& attr, double fallback) const {
  auto it = attributes.find(attr);
  if (it != attributes.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  const double* v = typed<double>(*this, attr, "a float");
  return v ? *v : fallback;
}

std::string Node::get_string(const std::string& attr, const std::string& fallback) const {
  const std::string* v = typed<std::string>(*this, attr, "a string");
  return v ? *v : fallback;
}

std::vector<int64_t> Node::get_ints(const std::string& attr, std::vector<int64_t> fallback) const {
  const auto* v = typed<std::vector<int64_t>>(*this, attr, "a list of integers");
  return v ? *v : fallback;
}

std::vector<double> Node::get_floats(const std::string& attr) const {
  const auto* v = typed<std::vector<double>>(*this, attr, "a list of floats");
  return v ? *v : std::vector<double>{};
}

std::vector<std::string> Node::get_strings(const std::string& attr) const {
  const auto* v = typed<std::vector<std::string>>(*this, attr, "a list of strings");
  return v ? *v : std::vector<std::string>{};
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> users(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int in : nodes[n].inputs)
      if (in >= 0 && (users[static_cast<size_t>(in)].empty() ||
                      users[static_cast<size_t>(in)].back() != static_cast<int>(n)))
        users[static_cast<size_t>(in)].push_back(static_cast<int>(n));
  return users;
}

void Graph::remove_dead() {
  std::vector<bool> live(values.size(), false);
  for (int o : outputs) live[static_cast<size_t>(o)] = true;
  std::vector<bool> keep(nodes.size(), false);
  for (size_t n = nodes.size(); n-- > 0;) {
    for (int o : nodes[n].outputs)
      if (o >= 0 && live[static_cast<size_t>(o)]) keep[n] = true;
    if (!keep[n]) continue;
    for (int in : nodes[n].inputs)
      if (in >= 0) live[static_cast<size_t>(in)] = true;
  }
  for (int in : inputs) live[static_cast<size_t>(in)] = true;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (keep[n])
      for (int o : nodes[n].outputs)
        if (o >= 0) live[static_cast<size_t>(o)] = true;
  std::vector<int> remap(values.size(), -1);
  std::vector<Value> kept_values;
  for (size_t v = 0; v < values.size(); ++v) {
    if (!live[v]) continue;
    remap[v] = static_cast<int>(kept_values.size());
    kept_values.push_back(std::move(values[v]));
  }
  auto renumber = [&](std::vector<int>& ids) {
    for (int& id : ids)
      if (id >= 0) id = remap[static_cast<size_t>(id)];
  };
  std::vector<Node> kept_nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!keep[n]) continue;
    renumber(nodes[n].inputs);
    renumber(nodes[n].outputs);
    kept_nodes.push_back(std::move(nodes[n]));
  }
  renumber(inputs);
  renumber(outputs);
  values = std::move(kept_values);
  nodes = std::move(kept_nodes);
}

std::optional<DataType> dtype_of_onnx(int64_t code) {
  switch (code) {
    case 1:
      return kFloat32;
    case 2:
      return DataType::UInt(8);
    case 3:
      return DataType::Int(8);
    case 4:
      return DataType::UInt(16);
    case 5:
      return DataType::Int(16);
    case 6:
      return kInt32;
    case 7:
      return kInt64;
    case 9:
      return kBool;
    case 10:
      return DataType::Float(16);
    case 11:
      return kFloat64;
    case 12:
      return DataType::UInt(32);
    case 13:
      return DataType::UInt(64);
    case 16:
      return DataType::BFloat16();
    default:
      return std::nullopt;
  }
}

int64_t onnx_code_of(DataType t) {
  for (int64_t code = 1; code <= 16; ++code)
    if (dtype_of_onnx(code) == t) return code;
  return 0;
}

std::string onnx_dtype_name(int64_t code) {
  static const char* kNames[] = {
      "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
      "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
      "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
      "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
      "UINT2",          "INT2"};
  if (code >= 0 && code < static_cast<int64_t>(std::size(kNames))) return kNames[code];
  return fmt::format("number {} (not an ONNX type)", code);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  return fmt::format("{}", fmt::join(shape, "x"));
}

}  // namespace tyche::graph
