#include "te/tensor.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/op.h"
#include "support/tensor_size.h"

namespace tyche::te {

namespace {

// Tensors read while a compute body is being built; Tensor::operator() reports to the innermost
// active collector so compute() learns its inputs without a global registry.
thread_local std::vector<std::vector<Tensor>*> g_collectors;

class LoadCollector : public ir::StmtExprVisitor {
 public:
  std::vector<const ir::BufferNode*> buffers;

 protected:
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    buffers.push_back(n->buffer.get());
    StmtExprVisitor::visit_buffer_load(n);
  }
};

std::string default_axis_name(size_t i) {
  static const char* kNames[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
  return i < std::size(kNames) ? kNames[i] : "ax" + std::to_string(i);
}

Reduction make_reduction(ReducerKind k, Expr source, std::vector<IterVar> axes) {
  for (const IterVar& iv : axes) {
    if (iv.kind != ir::IterKind::kReduce)
      throw_input_error("{} over '{}', which is not a reduce_axis", reducer_name(k), iv.var.name());
  }
  if (axes.empty()) throw_input_error("{} needs at least one reduce_axis", reducer_name(k));
  return Reduction{k, std::move(source), std::move(axes)};
}

}  // namespace

const char* reducer_name(ReducerKind k) {
  switch (k) {
    case ReducerKind::kSum:
      return "sum";
    case ReducerKind::kMax:
      return "max";
    case ReducerKind::kMin:
      return "min";
    case ReducerKind::kProd:
      return "prod";
  }
  return "?";
}

Expr reducer_identity(ReducerKind k, DataType dtype) {
  switch (k) {
    case ReducerKind::kSum:
      return ir::make_const(dtype, 0);
    case ReducerKind::kProd:
      return ir::make_const(dtype, 1);
    case ReducerKind::kMax:
      return ir::min_value(dtype);
    case ReducerKind::kMin:
      return ir::max_value(dtype);
  }
  return Expr();
}

Expr reducer_combine(ReducerKind k, Expr acc, Expr value) {
  switch (k) {
    case ReducerKind::kSum:
      return acc + value;
    case ReducerKind::kProd:
      return acc * value;
    case ReducerKind::kMax:
      return ir::max(acc, value);
    case ReducerKind::kMin:
      return ir::min(acc, value);
  }
  return Expr();
}

DataType ComputeBody::dtype() const {
  if (auto* e = expr()) return e->dtype();
  return reduction()->source.dtype();
}

const ir::Buffer& Tensor::buffer() const {
  return op_->buffer;
}
const std::string& Tensor::name() const {
  return op_->name;
}
std::vector<int64_t> Tensor::shape() const {
  return ir::const_shape(op_->buffer);
}
DataType Tensor::dtype() const {
  return op_->buffer->dtype;
}
int Tensor::ndim() const {
  return static_cast<int>(op_->buffer->shape.size());
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  if (!op_) throw_input_error("use of an undefined tensor");
  if (indices.size() != op_->buffer->shape.size())
    throw_input_error("tensor '{}' has {} dimension(s) but is indexed with {}", name(), ndim(),
                      indices.size());
  for (Expr& i : indices) {
    if (!i.dtype().is_int_like())
      throw_input_error("index of tensor '{}' has type {}, expected an integer", name(),
                        i.dtype().str());
  }
  if (!g_collectors.empty()) {
    auto& c = *g_collectors.back();
    if (std::none_of(c.begin(), c.end(), [&](const Tensor& t) { return t.same_as(*this); }))
      c.push_back(*this);
  }
  return ir::buffer_load(op_->buffer, std::move(indices));
}

thread_local int g_allow_empty = 0;

AllowEmptyExtents::AllowEmptyExtents() {
  ++g_allow_empty;
}
AllowEmptyExtents::~AllowEmptyExtents() {
  --g_allow_empty;
}

// Extents are int32 in the IR (make_int): a larger one would wrap.
static void check_extent(int64_t extent, const char* what, const std::string& name) {
  if (extent < 0 || (extent == 0 && g_allow_empty == 0))
    throw_input_error("{} '{}' has non-positive extent {}", what, name, extent);
  if (extent > INT32_MAX)
    throw_input_error("{} '{}' has extent {}, larger than 2^31 - 1", what, name, extent);
}

Tensor placeholder(std::vector<int64_t> shape, DataType dtype, std::string name) {
  if (name.empty()) throw_input_error("a placeholder needs a name");
  std::vector<Expr> dims;
  for (int64_t s : shape) {
    check_extent(s, "placeholder", name);
    dims.push_back(ir::make_int(s));
  }
  tensor_size(fmt::format("placeholder '{}'", name), shape,
              dtype);  // its bytes fit 64 bits and the limit
  auto op = std::make_shared<OperationNode>();
  op->name = name;
  op->buffer = ir::make_buffer(std::move(name), dtype, std::move(dims));
  return Tensor(std::move(op));
}

IterVar reduce_axis(int64_t extent, std::string name) {
  check_extent(extent, "reduce_axis", name);
  return reduce_axis(ir::Range(ir::make_int(0), ir::make_int(extent)), std::move(name));
}
IterVar reduce_axis(ir::Range range, std::string name) {
  return IterVar{Var(std::move(name)), std::move(range), ir::IterKind::kReduce};
}

Tensor compute(std::vector<int64_t> shape,
               const std::function<ComputeBody(const std::vector<Var>&)>& fcompute,
               std::string name, std::vector<std::string> axis_names) {
  if (name.empty()) throw_input_error("a compute needs a name");
  auto op = std::make_shared<OperationNode>();
  op->name = name;
  op->is_placeholder = false;
  std::vector<Var> vars;
  std::vector<Expr> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    check_extent(shape[i], "compute", name);
    Var v(i < axis_names.size() ? axis_names[i] : default_axis_name(i));
    vars.push_back(v);
    dims.push_back(ir::make_int(shape[i]));
    op->axis.push_back(
        IterVar{v, ir::Range(ir::make_int(0), ir::make_int(shape[i])), ir::IterKind::kSpatial});
  }
  std::vector<Tensor> inputs;
  g_collectors.push_back(&inputs);
  std::optional<ComputeBody> body;
  try {
    body.emplace(fcompute(vars));
  } catch (...) {
    g_collectors.pop_back();
    throw;
  }
  g_collectors.pop_back();
  if (const Reduction* r = body->reduction();
      r && std::any_of(r->axes.begin(), r->axes.end(),
                       [](const IterVar& a) { return ir::as_const_int(a.dom.extent) == 0; })) {
    // A reduction over nothing (an empty tensor's axis, where the compute allows empty extents)
    // is its identity; a float max or min over nothing is -inf or +inf, as ONNX and numpy's
    // initial values give it.
    DataType t = r->source.dtype();
    double inf = std::numeric_limits<double>::infinity();
    Expr v = !t.is_float() || (r->reducer != ReducerKind::kMax && r->reducer != ReducerKind::kMin)
                 ? reducer_identity(r->reducer, t)
                 : ir::make_const(t, r->reducer == ReducerKind::kMax ? -inf : inf);
    body.emplace(v);
  }
  // Every load must come from a tensor seen while building, or the dataflow graph is incomplete.
  LoadCollector loads;
  if (auto* e = body->expr())
    loads.visit_expr(*e);
  else
    loads.visit_expr(body->reduction()->source);
  for (const ir::BufferNode* b : loads.buffers) {
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const Tensor& t) { return t.buffer().get() == b; }))
      throw_input_error(
          "compute '{}' reads '{}' through an expression built outside its definition", name,
          b->name);
  }
  tensor_size(fmt::format("compute '{}'", name), shape,
              body->dtype());  // its bytes fit 64 bits and the limit
  op->buffer = ir::make_buffer(name, body->dtype(), std::move(dims));
  op->body = std::move(body);
  op->inputs = std::move(inputs);
  return Tensor(std::move(op));
}

Reduction sum(Expr source, std::vector<IterVar> axes) {
  return make_reduction(ReducerKind::kSum, std::move(source), std::move(axes));
}
Reduction max(Expr source, std::vector<IterVar> axes) {
  return make_reduction(ReducerKind::kMax, std::move(source), std::move(axes));
}
Reduction min(Expr source, std::vector<IterVar> axes) {
  return make_reduction(ReducerKind::kMin, std::move(source), std::move(axes));
}
Reduction prod(Expr source, std::vector<IterVar> axes) {
  return make_reduction(ReducerKind::kProd, std::move(source), std::move(axes));
}

}  // namespace tyche::te
