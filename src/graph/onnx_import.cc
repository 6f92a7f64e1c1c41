#include "graph/onnx_import.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "graph/external_data.h"
#include "graph/narrow_types.h"
#include "graph/onnx_schemas.h"
#include "graph/op_registry.h"
#include "graph/passes.h"
#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::graph {

namespace {

// Nesting deeper than this is refused (each level is a Loop, Scan or If inside another's body).
constexpr int kMaxSubgraphDepth = 16;

// The model file: a regular file protobuf can parse (under 2 GiB), so /dev/zero or a FIFO is
// refused instead of read forever.
std::string read_file(const std::string& path) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw_input_error("cannot open '{}'", path);
  if (!std::filesystem::is_regular_file(st)) throw_input_error("'{}' is not a regular file", path);
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw_input_error("cannot open '{}'", path);
  if (size > (uintmax_t{2} << 30) - 1)
    throw_input_error(
        "'{}' is {} bytes: an ONNX file holds less than 2 GiB (larger weights go in external data)",
        path, size);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_input_error("cannot open '{}'", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename T>
void copy_out(runtime::NDArray& a, const T* src, int64_t i) {
  if constexpr (std::is_floating_point_v<T>)
    a.set_flat(i, static_cast<double>(src[i]));
  else
    a.set_flat_int(i, static_cast<int64_t>(src[i]));
}

// Copies n values of a typed field (float_data, int32_data...) into a. ONNX keeps 16-bit floats'
// bits in int32_data, so those are copied as bits, not converted as numbers.
template <typename T>
void copy_typed(runtime::NDArray& a, const T* src) {
  bool bits16 = a.dtype().is_float() && a.dtype().bits() == 16;
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (bits16)
      a.data_as<uint16_t>()[i] = static_cast<uint16_t>(src[i]);
    else
      copy_out(a, src, i);
  }
}

// A TensorProto's contents (raw bytes, typed fields or an external file). Its size is checked
// (no overflow, within the tensor limit) and the data's length matched to it before the tensor
// is allocated, so a crafted shape costs nothing.
runtime::NDArray tensor_of(const onnx::TensorProto& t, const std::string& what,
                           const std::string& dir);

// An initializer of a narrow type (narrow_types.h), a byte per element: ONNX packs the 4- and
// 2-bit types two and four to a byte, the lowest bits first, in raw_data (or int32_data).
runtime::NDArray narrow_tensor_of(const onnx::TensorProto& t, const NarrowType& type,
                                  const std::string& what, const std::string& dir) {
  onnx::TensorProto bytes = t;  // the packed bytes read as uint8
  bytes.set_data_type(onnx::TensorProto::UINT8);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  std::string name = fmt::format("{}: tensor '{}'", what, t.name());
  TensorSize size = tensor_size(name, shape, type.storage);
  int bits = type.is_float ? type.exponent_bits + type.mantissa_bits + 1 : type.bits;
  int per_byte = 8 / bits;
  bytes.clear_dims();
  bytes.add_dims((size.elements + per_byte - 1) / per_byte);
  runtime::NDArray packed = tensor_of(bytes, what, dir);
  runtime::NDArray out(shape, type.storage);
  for (int64_t i = 0; i < size.elements; ++i) {
    auto byte = static_cast<uint32_t>(packed.get_flat_int(i / per_byte));
    uint32_t v = (byte >> ((i % per_byte) * bits)) & ((1u << bits) - 1);
    int64_t value = v;
    if (!type.is_float && type.is_signed && (v >> (bits - 1)) != 0) value -= int64_t{1} << bits;
    out.set_flat_int(i, value);
  }
  return out;
}

runtime::NDArray tensor_of(const onnx::TensorProto& t, const std::string& what,
                           const std::string& dir) {
  std::optional<DataType> dtype = dtype_of_onnx(t.data_type());
  if (!dtype)
    throw_input_error("{}: tensor '{}' has type {}, which Tyche does not support", what, t.name(),
                      onnx_dtype_name(t.data_type()));
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  std::string name = fmt::format("{}: tensor '{}'", what, t.name());
  TensorSize size = tensor_size(name, shape, *dtype);
  std::string external;
  const std::string* data = nullptr;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& kv : t.external_data()) entries.emplace_back(kv.key(), kv.value());
    external = read_external_data(entries, dir, size.bytes, name);
    data = &external;
  } else if (t.has_raw_data()) {
    data = &t.raw_data();
  }
  if (data) {
    if (data->size() != size.bytes)
      throw_input_error("{} holds {} bytes, its shape {} needs {}", name, data->size(),
                        shape_text(shape), size.bytes);
    runtime::NDArray a(shape, *dtype);
    if (dtype->is_bool()) {
      for (int64_t i = 0; i < a.numel(); ++i)
        a.set_flat_int(i, (*data)[static_cast<size_t>(i)] != 0);
    } else if (size.bytes) {
      std::memcpy(a.data(), data->data(), size.bytes);
    }
    return a;
  }
  auto check = [&](int n) {
    if (n != size.elements)
      throw_input_error("{} holds {} values, its shape {} needs {}", name, n, shape_text(shape),
                        size.elements);
  };
  // ONNX's typed fields: uint32 and uint64 in uint64_data, the narrower integers (and 16-bit
  // floats' bits) in int32_data.
  bool is_float = *dtype == kFloat32, is_double = *dtype == kFloat64, is_int64 = *dtype == kInt64;
  bool is_wide_uint = dtype->is_uint() && dtype->bits() >= 32;
  if (is_float)
    check(t.float_data_size());
  else if (is_double)
    check(t.double_data_size());
  else if (is_int64)
    check(t.int64_data_size());
  else if (is_wide_uint)
    check(t.uint64_data_size());
  else
    check(t.int32_data_size());
  runtime::NDArray a(shape, *dtype);
  if (is_float)
    copy_typed(a, t.float_data().data());
  else if (is_double)
    copy_typed(a, t.double_data().data());
  else if (is_int64)
    copy_typed(a, t.int64_data().data());
  else if (is_wide_uint)
    copy_typed(a, t.uint64_data().data());
  else
    copy_typed(a, t.int32_data().data());
  return a;
}

Attribute attribute_of(const onnx::AttributeProto& a, const std::string& what,
                       const std::string& dir) {
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_INT:
      return a.i();
    case onnx::AttributeProto_AttributeType_FLOAT:
      return static_cast<double>(a.f());
    case onnx::AttributeProto_AttributeType_STRING:
      return a.s();
    case onnx::AttributeProto_AttributeType_INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto_AttributeType_FLOATS:
      return std::vector<double>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto_AttributeType_STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto_AttributeType_TENSOR:
      return tensor_of(a.t(), what, dir);
    default:
      throw_input_error(
          "{}: attribute '{}' is of a kind Tyche does not support (graphs, sparse tensors)", what,
          a.name());
  }
}

// The value of a Constant node.
runtime::NDArray constant_node_value(const Node& n) {
  if (n.has("value")) {
    if (const auto* a = std::get_if<runtime::NDArray>(&n.attributes.at("value"))) return *a;
  }
  if (n.has("value_float")) {
    runtime::NDArray a({}, kFloat32);
    a.set_flat(0, n.get_float("value_float", 0));
    return a;
  }
  if (n.has("value_int")) {
    runtime::NDArray a({}, kInt64);
    a.set_flat_int(0, n.get_int("value_int", 0));
    return a;
  }
  if (n.has("value_ints")) {
    std::vector<int64_t> v = n.get_ints("value_ints");
    runtime::NDArray a({static_cast<int64_t>(v.size())}, kInt64);
    for (size_t i = 0; i < v.size(); ++i) a.set_flat_int(static_cast<int64_t>(i), v[i]);
    return a;
  }
  if (n.has("value_floats")) {
    const auto& v = std::get<std::vector<double>>(n.attributes.at("value_floats"));
    runtime::NDArray a({static_cast<int64_t>(v.size())}, kFloat32);
    for (size_t i = 0; i < v.size(); ++i) a.set_flat(static_cast<int64_t>(i), v[i]);
    return a;
  }
  throw_input_error(
      "node '{}' (Constant): no value Tyche can read (value, value_float(s), value_int(s))",
      n.name);
}

// The model's default-domain opset, as stamped.
int model_opset(const onnx::ModelProto& m, const std::string& what) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      int64_t v = o.version();
      if (v < 1) throw_input_error("{}: opset {} is not an ONNX opset", what, v);
      if (v > newest_known_opset())
        throw_input_error("{}: opset {} is newer than the newest Tyche knows ({})", what, v,
                          newest_known_opset());
      return static_cast<int>(v);
    }
  std::vector<std::string> domains;
  for (const auto& o : m.opset_import())
    domains.push_back(fmt::format("{} {}", o.domain(), o.version()));
  throw_input_error("{}: the model imports no ai.onnx opset{}: Tyche reads ONNX's default domain",
                    what,
                    domains.empty() ? "" : fmt::format(" (only {})", fmt::join(domains, ", ")));
}

// Before opset 7, PRelu's 1-D slope of X's channel count applies per channel (axis 1), as Caffe2
// and the PyTorch exporters of the time wrote it; from opset 7 it broadcasts from the right.
// ONNX's converter leaves the slope as it is, so a slope initializer read only by such PRelus is
// given the shape [C, 1, ..., 1] here, which broadcasts from the right as the old op did.
void prelu_slopes_per_channel(onnx::GraphProto& g) {
  std::map<std::string, int64_t> rank;  // of the values whose shapes are known
  auto note = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      rank[v.name()] = v.type().tensor_type().shape().dim_size();
  };
  for (const auto& v : g.input()) note(v);
  for (const auto& v : g.value_info()) note(v);
  std::map<std::string, std::set<int64_t>> wanted;  // slope -> ranks of the X's it scales
  std::set<std::string> other_readers;
  for (const auto& n : g.node()) {
    bool prelu = (n.domain().empty() || n.domain() == "ai.onnx") && n.op_type() == "PRelu";
    for (int i = 0; i < n.input_size(); ++i) {
      if (prelu && i == 1 && n.input_size() == 2 && rank.count(n.input(0)))
        wanted[n.input(1)].insert(rank.at(n.input(0)));
      else
        other_readers.insert(n.input(i));
    }
  }
  for (auto& init : *g.mutable_initializer()) {
    auto it = wanted.find(init.name());
    if (it == wanted.end() || other_readers.count(init.name()) || it->second.size() != 1 ||
        init.dims_size() != 1 || init.dims(0) <= 1 || *it->second.begin() < 3)
      continue;
    for (int64_t k = 2; k < *it->second.begin(); ++k) init.add_dims(1);
    for (auto& in : *g.mutable_input())  // an initializer that old models also list as an input
      if (in.name() == init.name() && in.type().tensor_type().has_shape()) {
        auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
        shape->clear_dim();
        for (int64_t d : init.dims()) shape->add_dim()->set_dim_value(d);
      }
  }
}

// libonnx's converter trusts the graph: it crashes on a value read before anything defines it
// or defined twice, and its shape inference on a zero stride. Those are refused first, in one
// line, as the import would; a subgraph sees the values defined around it before its node.
void check_defined(const onnx::GraphProto& g, std::set<std::string> defined,
                   const std::string& what, int depth) {
  auto shown = [](std::string name) {  // a name as one line of text
    for (char& c : name)
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    return name;
  };
  if (depth > kMaxSubgraphDepth)
    throw_input_error("{}: subgraphs nest deeper than {} levels", what, kMaxSubgraphDepth);
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& in : g.input()) defined.insert(in.name());
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    for (const auto& in : n.input())
      if (!in.empty() && !defined.count(in))
        throw_input_error("{}: node {} ({}) reads '{}', which nothing defines before it", what, i,
                          shown(n.op_type()), shown(in));
    // The converter's adapters expect control flow's graphs (and a Loop's two first inputs).
    std::vector<std::string> graphs;
    if (n.op_type() == "If") graphs = {"then_branch", "else_branch"};
    if (n.op_type() == "Loop" || n.op_type() == "Scan") graphs = {"body"};
    for (const std::string& name : graphs)
      if (std::none_of(n.attribute().begin(), n.attribute().end(),
                       [&](const auto& a) { return a.name() == name && a.has_g(); }))
        throw_input_error("{}: node {} ({}) has no '{}' graph", what, i, n.op_type(), name);
    if (n.op_type() == "Loop" && n.input_size() < 2)
      throw_input_error(
          "{}: node {} (Loop) needs a trip count and a condition input (either may "
          "be empty)",
          what, i);
    for (const auto& a : n.attribute()) {
      // ONNX's shape inference, run before the converter, divides by these.
      static const std::set<std::string> kDivisors = {"strides", "dilations", "kernel_shape",
                                                      "blocksize", "group"};
      if (kDivisors.count(a.name()) &&
          (std::any_of(a.ints().begin(), a.ints().end(), [](int64_t v) { return v < 1; }) ||
           (a.type() == onnx::AttributeProto_AttributeType_INT && a.i() < 1)))
        throw_input_error("{}: node {} ({}): attribute '{}' must be positive", what, i,
                          shown(n.op_type()), shown(a.name()));
      if (a.has_g()) check_defined(a.g(), defined, what, depth + 1);
      for (const auto& sub : a.graphs()) check_defined(sub, defined, what, depth + 1);
    }
    for (const auto& out : n.output())
      if (!out.empty() && !defined.insert(out).second)
        throw_input_error("{}: value '{}' is defined twice", what, shown(out));
  }
  for (const auto& out : g.output())
    if (!defined.count(out.name()))
      throw_input_error("{}: output '{}' is not defined by any node", what, shown(out.name()));
}

// Opset 8's Scan has a batch axis (and sequence_lens), which opset 9's lacks: ONNX's converter
// only drops the axis from the shapes. Each such Scan is split here into one Scan per batch
// element, on that element's slices (Gather), whose outputs are stacked back (Unsqueeze,
// Concat); each of those is then an opset-9 Scan in all but its version, which the converter
// renames the attributes of.
void split_batched_scans(onnx::GraphProto& g, const std::string& what) {
  // The types of the values whose shapes are known (the converter keeps a Scan input whose
  // shape it knows, which each slice is given: the batched one, whose leading axis it drops).
  std::map<std::string, onnx::TypeProto> types;
  for (const auto& v : g.input()) types[v.name()] = v.type();
  for (const auto& v : g.value_info()) types[v.name()] = v.type();
  for (const auto& t : g.initializer()) {
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(t.data_type());
    for (int64_t d : t.dims())
      type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    types[t.name()] = type;
  }
  auto batch_of = [&](const std::string& value) -> int64_t {
    auto it = types.find(value);
    if (it == types.end() || !it->second.tensor_type().has_shape()) return -1;
    const auto& shape = it->second.tensor_type().shape();
    return shape.dim_size() > 0 && shape.dim(0).has_dim_value() ? shape.dim(0).dim_value() : -1;
  };
  std::vector<onnx::ValueInfoProto> slices;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& n : g.node()) {
    if (n.op_type() != "Scan" || !(n.domain().empty() || n.domain() == "ai.onnx")) {
      *nodes.Add() = n;
      continue;
    }
    std::string name = n.name().empty() ? n.output_size() ? n.output(0) : "Scan" : n.name();
    if (n.input_size() < 2 || !n.input(0).empty())
      throw_input_error("{}: node '{}' (Scan, opset 8): sequence_lens is not supported", what,
                        name);
    int64_t batch = batch_of(n.input(1));
    for (int i = 1; i < n.input_size(); ++i)
      if (batch < 1 || batch > 4096 || batch_of(n.input(i)) != batch)
        throw_input_error("{}: node '{}' (Scan, opset 8): its inputs' batch size is unknown", what,
                          name);
    for (int64_t b = 0; b < batch; ++b) {
      std::string tag = fmt::format("{}/batch{}", name, b);
      onnx::NodeProto* index = nodes.Add();
      index->set_op_type("Constant");
      index->add_output(tag + "/index");
      auto* a = index->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
      a->mutable_t()->add_int64_data(b);
      onnx::NodeProto scan = n;
      scan.set_name(tag);
      for (int i = 1; i < n.input_size(); ++i) {
        onnx::NodeProto* gather = nodes.Add();
        gather->set_op_type("Gather");
        gather->add_input(n.input(i));
        gather->add_input(tag + "/index");
        gather->add_output(fmt::format("{}/{}", tag, n.input(i)));
        scan.set_input(i, gather->output(0));
        slices.emplace_back();
        slices.back().set_name(gather->output(0));
        *slices.back().mutable_type() = types.at(n.input(i));
      }
      for (int o = 0; o < n.output_size(); ++o)
        scan.set_output(o, fmt::format("{}/{}", tag, n.output(o)));
      *nodes.Add() = scan;
    }
    for (int o = 0; o < n.output_size(); ++o) {
      onnx::NodeProto concat;
      concat.set_op_type("Concat");
      auto* axis = concat.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto_AttributeType_INT);
      axis->set_i(0);
      concat.add_output(n.output(o));
      for (int64_t b = 0; b < batch; ++b) {
        std::string tag = fmt::format("{}/batch{}", name, b);
        onnx::NodeProto* unsqueeze = nodes.Add();
        unsqueeze->set_op_type("Unsqueeze");
        auto* axes = unsqueeze->add_attribute();
        axes->set_name("axes");
        axes->set_type(onnx::AttributeProto_AttributeType_INTS);
        axes->add_ints(0);
        unsqueeze->add_input(fmt::format("{}/{}", tag, n.output(o)));
        unsqueeze->add_output(fmt::format("{}/{}/stacked", tag, n.output(o)));
        concat.add_input(unsqueeze->output(0));
      }
      *nodes.Add() = std::move(concat);
    }
  }
  *g.mutable_node() = std::move(nodes);
  for (auto& v : slices) *g.add_value_info() = std::move(v);
}

// The model with its default-domain opset raised to kUpgradeToOpset by ONNX's own version
// converter (its adapters rewrite each node whose op changed in between). Some adapters need
// their node's input shapes (Softmax's flattening): ONNX's shape inference gives them first, from
// the inputs' shapes as `options` binds them.
onnx::ModelProto upgrade(const onnx::ModelProto& model, int from, const ImportOptions& options,
                         const std::string& what) {
  check_defined(model.graph(), {}, what, 0);
  try {
    onnx::ModelProto shaped = model;
    for (auto& in : *shaped.mutable_graph()->mutable_input()) {
      auto given = options.input_shapes.find(in.name());
      if (given == options.input_shapes.end()) continue;
      auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d : given->second) shape->add_dim()->set_dim_value(d);
    }
    onnx::shape_inference::InferShapes(shaped);
    if (from < 7) prelu_slopes_per_channel(*shaped.mutable_graph());
    if (from < 9) split_batched_scans(*shaped.mutable_graph(), what);
    return onnx::version_conversion::ConvertVersion(shaped, kUpgradeToOpset);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    throw_input_error("{}: opset {} could not be upgraded to {} by ONNX's version converter: {}",
                      what, from, kUpgradeToOpset, why);
  }
}

// The attributes of op versions newer than kConvertersOpset that the converters read.
bool converter_reads(const std::string& op, const std::string& attribute) {
  static const std::set<std::pair<std::string, std::string>> read = {
      {"SpaceToDepth", "mode"},  // 28: DCR or CRD, as DepthToSpace's
  };
  return read.count({op, attribute}) > 0;
}

// Every op type the model uses that Tyche lacks, with counts, and every node whose op's schema at
// `opset` Tyche cannot read, as one message.
void find_op_problems(const onnx::GraphProto& g, int opset, std::map<std::string, int>& missing,
                      std::vector<std::string>& nodes) {
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    for (const auto& a : n.attribute())  // the ops of If, Loop and Scan bodies too
      if (a.has_g()) find_op_problems(a.g(), opset, missing, nodes);
    bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    std::string type = default_domain ? n.op_type() : n.domain() + ":" + n.op_type();
    if (type != "Constant" && !find_op(type)) {
      ++missing[type];
      continue;
    }
    if (!default_domain) continue;
    std::string name = n.name().empty() ? fmt::format("{}_{}", n.op_type(), i) : n.name();
    const OpSchemaVersion* schema = schema_at(n.op_type(), opset);
    if (!schema) {
      nodes.push_back(
          fmt::format("node '{}' ({}): no such operator at opset {}", name, n.op_type(), opset));
      continue;
    }
    if (schema->since_version <= kConvertersOpset) continue;
    // A version newer than the converters': read as the one before it where the node uses
    // nothing that version lacks (most such versions only allow more types).
    const OpSchemaVersion* known = schema_at(n.op_type(), kConvertersOpset);
    if (!known) continue;  // an op that first appeared after it: its converter reads it
    std::string why;
    for (const auto& a : n.attribute())
      if (!known->has_attribute(a.name()) && !converter_reads(n.op_type(), a.name()))
        why = fmt::format("attribute '{}' is newer than opset {}", a.name(), kConvertersOpset);
    if (known->max_inputs >= 0 && n.input_size() > known->max_inputs)
      why = fmt::format("{} inputs, more than opset {}'s {}", n.input_size(), kConvertersOpset,
                        known->max_inputs);
    if (!why.empty())
      nodes.push_back(fmt::format("node '{}' ({}, version {} at opset {}): {}", name, n.op_type(),
                                  schema->since_version, opset, why));
  }
}

void check_ops(const onnx::GraphProto& g, int opset, const std::string& what) {
  std::map<std::string, int> missing;
  std::vector<std::string> nodes;
  find_op_problems(g, opset, missing, nodes);
  if (missing.empty() && nodes.empty()) return;
  std::vector<std::string> parts;
  if (!missing.empty()) {
    std::vector<std::string> ops;
    for (const auto& [op, count] : missing) ops.push_back(fmt::format("{} ({})", op, count));
    parts.push_back(fmt::format("unsupported operators: {}", fmt::join(ops, ", ")));
  }
  if (!nodes.empty()) parts.push_back(fmt::format("{}", fmt::join(nodes, "; ")));
  throw_input_error("{}: {}", what, fmt::join(parts, "; "));
}

std::vector<int64_t> input_shape(const onnx::ValueInfoProto& in, const ImportOptions& options,
                                 const std::string& what) {
  auto given = options.input_shapes.find(in.name());
  const auto& tt = in.type().tensor_type();
  if (given != options.input_shapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(given->second.size()))
      throw_input_error("{}: --input-shape {} has rank {}, the input has rank {}", what, in.name(),
                        given->second.size(), tt.shape().dim_size());
    return given->second;
  }
  if (!tt.has_shape())
    throw_input_error("{}: input '{}' has no shape: give --input-shape {}=...", what, in.name(),
                      in.name());
  std::vector<int64_t> shape;
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto& dim = tt.shape().dim(d);
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      continue;
    }
    std::string sym = dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "unknown";
    throw_input_error(
        "{}: input '{}' has a symbolic dimension {} (dimension {}): give --input-shape {}=...",
        what, in.name(), sym, d, in.name());
  }
  return shape;
}

// An input bound to `array` (ImportOptions::bound_inputs) as a constant value: of the input's type
// and of its static dimensions.
Value bound_value(const onnx::ValueInfoProto& in, const runtime::NDArray& array,
                  const std::string& what) {
  int code = in.type().tensor_type().elem_type();
  std::optional<DataType> dtype = dtype_of_onnx(code);
  if (!dtype || *dtype != array.dtype())
    throw_input_error("{}: --bind {}: the value is {}, the input is {}", what, in.name(),
                      array.dtype().str(), dtype ? dtype->str() : onnx_dtype_name(code));
  const auto& tt = in.type().tensor_type();
  if (tt.has_shape()) {
    bool fits = tt.shape().dim_size() == static_cast<int>(array.shape().size());
    for (int d = 0; fits && d < tt.shape().dim_size(); ++d)
      fits = !tt.shape().dim(d).has_dim_value() ||
             tt.shape().dim(d).dim_value() == array.shape()[static_cast<size_t>(d)];
    if (!fits)
      throw_input_error("{}: --bind {}: the value's shape {} does not fit the input's", what,
                        in.name(), fmt::join(array.shape(), "x"));
  }
  Value v{in.name(), array.shape(), array.dtype(), array};
  return v;
}

// An optional output of a node that nothing reads (a Dropout's mask, a LayerNormalization's mean)
// is left out, as if the model had not named it: the converters refuse only what is used.
void leave_out_unread_optional_outputs(Graph& graph) {
  std::vector<bool> read(graph.values.size(), false);
  for (const Node& n : graph.nodes)
    for (int v : n.inputs)
      if (v >= 0) read[static_cast<size_t>(v)] = true;
  for (int v : graph.outputs) read[static_cast<size_t>(v)] = true;
  for (Node& n : graph.nodes)
    for (size_t o = 1; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0 && !read[static_cast<size_t>(n.outputs[o])]) n.outputs[o] = -1;
}

// The names a graph's nodes can read: its own values, then (in a subgraph) those of the graphs
// around it, which it captures (Graph::captures) the first time it reads them.
struct Scope {
  Graph& graph;
  Scope* outer = nullptr;
  std::map<std::string, int> ids;
  std::vector<std::string> captured;

  bool visible(const std::string& name) const {
    return ids.count(name) || (outer && outer->visible(name));
  }
  int find(const std::string& name) {
    if (auto it = ids.find(name); it != ids.end()) return it->second;
    if (!outer || outer->find(name) < 0) return -1;
    int id = graph.add_value({name, {}, {}, {}});  // typed by the outer value on expansion
    ids[name] = id;
    captured.push_back(name);
    graph.captures.push_back(id);
    return id;
  }
};

void read_nodes(const onnx::GraphProto& g, Scope& scope, const std::string& what,
                const std::string& dir, int depth);

// An If branch or a Loop or Scan body: its inputs (typed where the model says), initializers and
// nodes; the outer values it reads become its captures.
std::shared_ptr<const Graph> read_subgraph(const onnx::GraphProto& g, Scope& outer,
                                           const std::string& what, const std::string& dir,
                                           int depth) {
  auto body = std::make_shared<Graph>();
  body->name = g.name();
  body->opset = outer.graph.opset;
  body->opset_read = outer.graph.opset_read;
  Scope scope{*body, &outer, {}, {}};
  for (const auto& init : g.initializer()) {
    if (scope.visible(init.name()))
      throw_input_error("{}: value '{}' is defined twice", what, init.name());
    Value v{init.name(), {}, {}, tensor_of(init, what, dir)};
    v.shape = v.constant.shape();
    v.dtype = v.constant.dtype();
    scope.ids[init.name()] = body->add_value(std::move(v));
  }
  for (const auto& in : g.input()) {
    if (scope.ids.count(in.name())) continue;
    if (outer.visible(in.name()))
      throw_input_error("{}: value '{}' is defined twice", what, in.name());
    int id = body->add_value({in.name(), {}, {}, {}});  // given by the node on expansion
    scope.ids[in.name()] = id;
    body->inputs.push_back(id);
  }
  read_nodes(g, scope, what, dir, depth);
  for (const auto& out : g.output()) {
    int id = scope.find(out.name());
    if (id < 0) throw_input_error("{}: output '{}' is not defined by any node", what, out.name());
    body->outputs.push_back(id);
  }
  return body;
}

void read_nodes(const onnx::GraphProto& g, Scope& scope, const std::string& what,
                const std::string& dir, int depth) {
  Graph& graph = scope.graph;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& p = g.node(i);
    Node n{p.op_type(), p.name().empty() ? fmt::format("{}_{}", p.op_type(), i) : p.name(),
           {},          {},
           {},          {}};
    for (const auto& in : p.input()) {
      if (in.empty()) {
        n.inputs.push_back(-1);
        continue;
      }
      int id = scope.find(in);
      if (id < 0)
        throw_input_error("{}: node '{}' reads '{}', which nothing defines before it", what, n.name,
                          in);
      n.inputs.push_back(id);
    }
    std::vector<std::string> captured;  // by all of the node's subgraphs, once each
    for (const auto& a : p.attribute()) {
      if (a.type() != onnx::AttributeProto_AttributeType_GRAPH) {
        n.attributes[a.name()] = attribute_of(a, fmt::format("{}: node '{}'", what, n.name), dir);
        continue;
      }
      if (depth + 1 > kMaxSubgraphDepth)
        throw_input_error("{}: node '{}' ({}): subgraphs nest deeper than {} levels", what, n.name,
                          n.op, kMaxSubgraphDepth);
      auto body = read_subgraph(a.g(), scope, what, dir, depth + 1);
      for (int c : body->captures) {
        const std::string& name = body->value(c).name;
        if (std::find(captured.begin(), captured.end(), name) == captured.end())
          captured.push_back(name);
      }
      n.subgraphs[a.name()] = std::move(body);
    }
    if (!captured.empty()) {
      for (const std::string& name : captured) n.inputs.push_back(scope.find(name));
      n.attributes[kCapturesAttribute] = captured;
    }
    if (n.op == "Constant") {
      if (p.output_size() != 1)
        throw_input_error("{}: node '{}' (Constant) must have one output", what, n.name);
      Value v{p.output(0), {}, {}, constant_node_value(n)};
      v.shape = v.constant.shape();
      v.dtype = v.constant.dtype();
      scope.ids[p.output(0)] = graph.add_value(std::move(v));
      continue;
    }
    for (const auto& out : p.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      if (scope.visible(out)) throw_input_error("{}: value '{}' is defined twice", what, out);
      int id = graph.add_value({out, {}, {}, {}});
      scope.ids[out] = id;
      n.outputs.push_back(id);
    }
    graph.nodes.push_back(std::move(n));
  }
}
}  // namespace

void parse_input_shape(const std::string& text, ImportOptions& options) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw_input_error("--input-shape '{}' is not NAME=DIMS (e.g. input=1x3x224x224)", text);
  std::vector<int64_t> dims;
  std::string given = text.substr(eq + 1);
  char sep = given.find(',') != std::string::npos ? ',' : 'x';  // 1x3x224x224 or 1,3,224,224
  std::stringstream s(given);
  std::string part;
  while (std::getline(s, part, sep)) {
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > (1LL << 31))
      throw_input_error("--input-shape '{}': '{}' is not a dimension", text, part);
    dims.push_back(v);
  }
  options.input_shapes[text.substr(0, eq)] = dims;
}

Graph import_onnx(const std::string& path, const ImportOptions& options) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return import_onnx_bytes(read_file(path), path, dir.empty() ? "." : dir, options);
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& what, const std::string& dir,
                        const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph() ||
      model.ir_version() <= 0)
    throw_input_error("'{}' is not an ONNX model (it does not parse as one)", what);
  Graph graph;
  graph.opset_read = model_opset(model, what);
  graph.opset = graph.opset_read;
  if (graph.opset < kUpgradeToOpset) {
    model = upgrade(model, graph.opset, options, what);
    graph.opset = kUpgradeToOpset;
  }
  const onnx::GraphProto& g = model.graph();
  graph.name = g.name().empty() ? "model" : g.name();
  check_ops(g, graph.opset, what);
  Scope scope{graph, nullptr, {}, {}};
  std::map<std::string, int>& ids = scope.ids;
  for (const auto& init : g.initializer()) {
    std::optional<NarrowType> narrow = narrow_type(init.data_type());
    Value v{init.name(),
            {},
            {},
            narrow ? narrow_tensor_of(init, *narrow, what, dir) : tensor_of(init, what, dir)};
    if (narrow) v.narrow_code = narrow->code;
    v.shape = v.constant.shape();
    v.dtype = v.constant.dtype();
    ids[init.name()] = graph.add_value(std::move(v));
  }
  for (const auto& entry : options.input_shapes) {
    const std::string& name = entry.first;
    bool found = !ids.count(name) && std::any_of(g.input().begin(), g.input().end(),
                                                 [&](const auto& in) { return in.name() == name; });
    if (!found)
      throw_input_error("{}: --input-shape names '{}', which is not an input of the model", what,
                        name);
  }
  for (const auto& entry : options.bound_inputs) {
    const std::string& name = entry.first;
    bool found = !ids.count(name) && std::any_of(g.input().begin(), g.input().end(),
                                                 [&](const auto& in) { return in.name() == name; });
    if (!found)
      throw_input_error("{}: --bind names '{}', which is not an input of the model", what, name);
  }
  for (const auto& in : g.input()) {
    if (ids.count(in.name())) continue;  // an initializer listed as an input (older exporters)
    int code = in.type().tensor_type().elem_type();
    std::optional<DataType> dtype = dtype_of_onnx(code);
    std::optional<NarrowType> narrow = narrow_type(code);
    if (narrow) dtype = narrow->storage;
    if (auto bound = options.bound_inputs.find(in.name()); bound != options.bound_inputs.end()) {
      ids[in.name()] = graph.add_value(bound_value(in, bound->second, what));
      continue;
    }
    if (!dtype)
      throw_input_error("{}: input '{}' has type {}, which Tyche does not support", what, in.name(),
                        onnx_dtype_name(code));
    std::vector<int64_t> shape = input_shape(in, options, what);
    tensor_size(fmt::format("{}: input '{}'", what, in.name()), shape,
                *dtype);  // before anything is sized from it
    int id = graph.add_value({in.name(), std::move(shape), *dtype, {}});
    if (narrow) graph.value(id).narrow_code = narrow->code;
    ids[in.name()] = id;
    graph.inputs.push_back(id);
  }
  read_nodes(g, scope, what, dir, 0);
  for (const auto& out : g.output()) {
    auto it = ids.find(out.name());
    if (it == ids.end())
      throw_input_error("{}: output '{}' is not defined by any node", what, out.name());
    graph.outputs.push_back(it->second);
  }
  if (graph.outputs.empty()) throw_input_error("{}: the model has no outputs", what);
  leave_out_unread_optional_outputs(graph);
  fuse_qdq(graph);
  infer_and_fold(graph);
  fold_zero_points(graph);
  graph.remove_dead();
  return graph;
}

}  // namespace tyche::graph
