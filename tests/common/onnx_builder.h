// Builds small ONNX models in C++ (libonnx's protobuf classes) for the graph tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tyche::graph::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 17) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  OnnxBuilder& input(const std::string& name, const std::vector<int64_t>& shape,
                     int type = onnx::TensorProto::FLOAT,
                     const std::vector<std::string>& symbolic = {}) {
    auto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (size_t d = 0; d < shape.size(); ++d) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d < symbolic.size() && !symbolic[d].empty())
        dim->set_dim_param(symbolic[d]);
      else
        dim->set_dim_value(shape[d]);
    }
    return *this;
  }

  OnnxBuilder& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }

  // A float initializer with values from a fixed seed in [-scale, scale).
  OnnxBuilder& weight(const std::string& name, const std::vector<int64_t>& shape,
                      float scale = 0.5f, unsigned seed = 1) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_dims(d);
      n *= d;
    }
    std::mt19937 rng(seed + static_cast<unsigned>(model_.graph().initializer_size()));
    std::uniform_real_distribution<float> u(-scale, scale);
    for (int64_t i = 0; i < n; ++i) t->add_float_data(u(rng));
    return *this;
  }

  // An integer initializer (UINT8, INT8 or INT32) with values from a fixed seed in [lo, hi].
  OnnxBuilder& integers(const std::string& name, const std::vector<int64_t>& shape, int type,
                        int lo, int hi, unsigned seed = 1) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_dims(d);
      n *= d;
    }
    std::mt19937 rng(seed + static_cast<unsigned>(model_.graph().initializer_size()));
    std::uniform_int_distribution<int> u(lo, hi);
    for (int64_t i = 0; i < n; ++i) t->add_int32_data(u(rng));
    return *this;
  }

  OnnxBuilder& ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }

  OnnxBuilder& scalar(const std::string& name, float value) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return *this;
  }

  // An initializer stored elsewhere: external data with these key-value entries (location,
  // offset, length), or raw bytes (which need not match the dims: the importer's checks).
  OnnxBuilder& external(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<std::pair<std::string, std::string>>& entries,
                        int type = onnx::TensorProto::FLOAT) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : shape) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : entries) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    return *this;
  }
  OnnxBuilder& raw(const std::string& name, const std::vector<int64_t>& shape,
                   const std::string& bytes, int type = onnx::TensorProto::FLOAT) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : shape) t->add_dims(d);
    t->set_raw_data(bytes);
    return *this;
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(outputs.empty() ? op : outputs[0]);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  onnx::ModelProto model_;
};

// A quantized residual block as onnxruntime's quantizer writes it (QDQ, u8 activations, s8
// weights): x -> Q -> DQ feeds a 3x3 conv (Q -> DQ after it) and, unless `projection`, the residual
// Add; with `projection`, a second conv of x's is the residual. Then Add -> Q -> DQ -> MaxPool 2x2
// -> Q -> DQ -> y. The quantized sum `sq` is an output too when `sum_is_output`.
inline OnnxBuilder qdq_residual_block(bool projection, bool sum_is_output = false) {
  OnnxBuilder m;
  m.input("x", {1, 4, 6, 6})
      .scalar("s", 0.02f)
      .integers("z", {}, onnx::TensorProto::UINT8, 100, 100)
      .scalar("ws", 0.005f);
  m.scalar("bs", 0.02f * 0.005f);  // a bias' scale: the activation's times the weights'
  m.node("QuantizeLinear", {"x", "s", "z"}, {"xq"});
  m.node("DequantizeLinear", {"xq", "s", "z"}, {"xf"});
  auto conv = [&m](const std::string& name, unsigned seed) {
    m.integers(name + "w", {4, 4, 3, 3}, onnx::TensorProto::INT8, -100, 100, seed)
        .integers(name + "b", {4}, onnx::TensorProto::INT32, -500, 500, seed);
    m.node("DequantizeLinear", {name + "w", "ws"}, {name + "wf"});
    m.node("DequantizeLinear", {name + "b", "bs"}, {name + "bf"});
    auto& c = m.node("Conv", {"xf", name + "wf", name + "bf"}, {name});
    OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
    m.node("QuantizeLinear", {name, "s", "z"}, {name + "q"});
    m.node("DequantizeLinear", {name + "q", "s", "z"}, {name + "f"});
    return name + "f";
  };
  std::string main = conv("c", 1);
  std::string residual = projection ? conv("p", 2) : "xf";
  m.node("Add", {main, residual}, {"sum"});
  m.node("QuantizeLinear", {"sum", "s", "z"}, {"sq"});
  m.node("DequantizeLinear", {"sq", "s", "z"}, {"sf"});
  auto& pool = m.node("MaxPool", {"sf"}, {"mp"});
  OnnxBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(pool, "strides", std::vector<int64_t>{2, 2});
  m.node("QuantizeLinear", {"mp", "s", "z"}, {"mq"});
  m.node("DequantizeLinear", {"mq", "s", "z"}, {"y"});
  m.output("y");
  if (sum_is_output) m.output("sq");
  return m;
}

// The layers of a small CNN on `x` ([N, 3, H, W]): a padded convolution, BatchNormalization (its
// variance made positive by a Relu) and Relu give "r1"; a second convolution with a residual add
// and Relu, a 2x2 max pool, a global average pool and Flatten give "f"; a Gemm (transB) gives
// "logits", whose name it returns.
inline std::string add_conv_residual_gemm(OnnxBuilder& b, const std::string& x) {
  b.weight("w1", {6, 3, 3, 3})
      .weight("scale", {6})
      .weight("shift", {6})
      .weight("mean", {6})
      .weight("var", {6}, 0.5f);
  b.weight("w2", {6, 6, 3, 3}).weight("fc", {5, 6}).weight("fcb", {5});
  auto& c1 = b.node("Conv", {x, "w1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"var"}, {"vpos"});
  b.node("BatchNormalization", {"c1", "scale", "shift", "mean", "vpos"}, {"bn"});
  b.node("Relu", {"bn"}, {"r1"});
  auto& c2 = b.node("Conv", {"r1", "w2"}, {"c2"});
  OnnxBuilder::attr(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Add", {"c2", "r1"}, {"s2"});
  b.node("Relu", {"s2"}, {"r2"});
  auto& mp = b.node("MaxPool", {"r2"}, {"p"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  b.node("GlobalAveragePool", {"p"}, {"gap"});
  b.node("Flatten", {"gap"}, {"f"});
  auto& gemm = b.node("Gemm", {"f", "fc", "fcb"}, {"logits"});
  OnnxBuilder::attr(gemm, "transB", int64_t{1});
  return "logits";
}

}  // namespace tyche::graph::testing
