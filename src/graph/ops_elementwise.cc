// Elementwise and broadcast ops.
#include <cmath>
#include <functional>
#include <numbers>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

std::vector<Tensor> unary(ConvertContext& c, const char* name, const std::function<Expr(Expr)>& f) {
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody { return f(c.load(0, exprs(v))); },
      c.name(name))};
}

Expr fconst(double v) {
  return ir::make_float(v);
}

// Inputs 0..n-1 broadcast against each other, combined by `f`.
std::vector<Tensor> broadcast(ConvertContext& c, const char* name, size_t n,
                              const std::function<Expr(std::vector<Expr>)>& f) {
  std::vector<int64_t> shape = c.shape(0);
  for (size_t i = 1; i < n; ++i) shape = broadcast_shapes(c.node(), shape, c.shape(i));
  return {te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> args;
        for (size_t i = 0; i < n; ++i) args.push_back(c.load_broadcast(i, exprs(v), shape));
        return f(std::move(args));
      },
      c.name(name))};
}

std::vector<Tensor> binary(ConvertContext& c, const char* name, Expr (*f)(Expr, Expr)) {
  if (c.dtype(0) != c.dtype(1))
    c.fail(
        fmt::format("inputs of different types ({} and {})", c.dtype(0).str(), c.dtype(1).str()));
  return broadcast(c, name, 2, [f](std::vector<Expr> a) { return f(a[0], a[1]); });
}

void require_float(ConvertContext& c) {
  if (!c.dtype(0).is_float()) c.fail(fmt::format("needs a float input, not {}", c.dtype(0).str()));
}

}  // namespace

std::vector<Tensor> relu(ConvertContext& c) {
  DataType t = c.dtype(0);
  return unary(c, "relu", [t](Expr x) { return ir::max(x, ir::make_const(t, 0)); });
}

std::vector<Tensor> clip(ConvertContext& c) {
  std::optional<double> lo, hi;
  if (c.opset() < 11) {
    lo = c.node().has("min") ? std::optional(c.node().get_float("min", 0)) : std::nullopt;
    hi = c.node().has("max") ? std::optional(c.node().get_float("max", 0)) : std::nullopt;
  } else {
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!c.has_input(i)) continue;
      std::optional<double> v = c.scalar(i);
      if (!v) c.fail(fmt::format("the {} must be a one-element constant", i == 1 ? "min" : "max"));
      (i == 1 ? lo : hi) = v;
    }
  }
  DataType t = c.dtype(0);
  return unary(c, "clip", [&](Expr x) {
    if (lo) x = ir::max(x, ir::make_const(t, *lo));
    if (hi) x = ir::min(x, ir::make_const(t, *hi));
    return x;
  });
}

std::vector<Tensor> leaky_relu(ConvertContext& c) {
  require_float(c);
  double alpha = c.node().get_float("alpha", 0.01);
  return unary(c, "leaky_relu",
               [alpha](Expr x) { return ir::select(x > fconst(0), x, x * fconst(alpha)); });
}

std::vector<Tensor> sigmoid(ConvertContext& c) {
  require_float(c);
  return unary(c, "sigmoid", [](Expr x) { return ir::sigmoid(x); });
}

std::vector<Tensor> tanh(ConvertContext& c) {
  require_float(c);
  return unary(c, "tanh", [](Expr x) { return ir::tanh(x); });
}

std::vector<Tensor> erf(ConvertContext& c) {
  require_float(c);
  return unary(c, "erf", [](Expr x) { return ir::call(ir::CallOp::kErf, {x}); });
}

std::vector<Tensor> gelu(ConvertContext& c) {
  require_float(c);
  std::string approximate = c.node().get_string("approximate", "none");
  if (approximate == "tanh") {
    double k = std::sqrt(2 / std::numbers::pi);
    return unary(c, "gelu", [k](Expr x) {
      return fconst(0.5) * x *
             (fconst(1) + ir::tanh(fconst(k) * (x + fconst(0.044715) * x * x * x)));
    });
  }
  if (approximate != "none")
    c.fail(fmt::format("unknown approximate '{}' (none or tanh)", approximate));
  return unary(c, "gelu", [](Expr x) {
    return fconst(0.5) * x *
           (fconst(1) + ir::call(ir::CallOp::kErf, {x * fconst(1 / std::numbers::sqrt2)}));
  });
}

std::vector<Tensor> hard_swish(ConvertContext& c) {
  require_float(c);
  return unary(c, "hard_swish", [](Expr x) {
    return x * ir::max(fconst(0), ir::min(fconst(1), x * fconst(1.0 / 6) + fconst(0.5)));
  });
}

std::vector<Tensor> sqrt(ConvertContext& c) {
  require_float(c);
  return unary(c, "sqrt", [](Expr x) { return ir::sqrt(x); });
}

std::vector<Tensor> exp(ConvertContext& c) {
  require_float(c);
  return unary(c, "exp", [](Expr x) { return ir::exp(x); });
}

std::vector<Tensor> neg(ConvertContext& c) {
  return unary(c, "neg", [](Expr x) { return -x; });
}

std::vector<Tensor> reciprocal(ConvertContext& c) {
  require_float(c);
  DataType t = c.dtype(0);
  return unary(c, "reciprocal", [t](Expr x) { return ir::make_const(t, 1) / x; });
}

std::vector<Tensor> cast(ConvertContext& c) {
  int64_t code = c.node().get_int("to", 0);
  std::optional<DataType> target = dtype_of_onnx(code);
  if (!target) c.fail(fmt::format("cannot cast to {}", onnx_dtype_name(code)));
  DataType to = *target;
  return unary(c, "cast", [to](Expr x) {
    if (to.is_bool()) return x != ir::make_const(x.dtype(), 0);
    return ir::cast(to, x);
  });
}

std::vector<Tensor> add(ConvertContext& c) {
  return binary(c, "add", [](Expr a, Expr b) { return a + b; });
}
std::vector<Tensor> sub(ConvertContext& c) {
  return binary(c, "sub", [](Expr a, Expr b) { return a - b; });
}
std::vector<Tensor> mul(ConvertContext& c) {
  return binary(c, "mul", [](Expr a, Expr b) { return a * b; });
}
std::vector<Tensor> div(ConvertContext& c) {
  return binary(c, "div", [](Expr a, Expr b) { return a / b; });
}

std::vector<Tensor> pow(ConvertContext& c) {
  require_float(c);
  if (std::optional<double> e = c.scalar(1)) {
    // The exponents models use, without a call.
    if (*e == 1) return unary(c, "pow", [](Expr x) { return x; });
    if (*e == 2) return unary(c, "pow", [](Expr x) { return x * x; });
    if (*e == 3) return unary(c, "pow", [](Expr x) { return x * x * x; });
    if (*e == 0.5) return unary(c, "pow", [](Expr x) { return ir::sqrt(x); });
  }
  DataType t = c.dtype(0);
  return broadcast(c, "pow", 2, [t](std::vector<Expr> a) {
    Expr y = a[1].dtype() == t ? a[1] : ir::cast(t, a[1]);
    return ir::call(ir::CallOp::kPow, {a[0], y});
  });
}

std::vector<Tensor> where(ConvertContext& c) {
  if (!c.dtype(0).is_bool())
    c.fail(fmt::format("the condition must be bool, not {}", c.dtype(0).str()));
  if (c.dtype(1) != c.dtype(2)) c.fail("the two branches have different types");
  return broadcast(c, "where", 3, [](std::vector<Expr> a) { return ir::select(a[0], a[1], a[2]); });
}

std::vector<Tensor> batch_norm(ConvertContext& c) {
  require_float(c);
  if (c.rank(0) < 2) c.fail("needs an input of rank 2 or more (N, C, ...)");
  if (c.node().get_int("training_mode", 0) != 0)
    c.fail("training_mode is not supported (inference only)");
  double eps = c.node().get_float("epsilon", 1e-5);
  for (size_t i = 1; i <= 4; ++i)
    if (c.shape(i) != std::vector<int64_t>{c.shape(0)[1]})
      c.fail(fmt::format("input {} must have C elements", i + 1));
  return {te::compute(
      c.shape(0),
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::vector<Expr> ch = {v[1]};
        Expr scale = c.load(1, ch) / ir::sqrt(c.load(4, ch) + fconst(eps));
        return (c.load(0, exprs(v)) - c.load(3, ch)) * scale + c.load(2, ch);
      },
      c.name("batch_norm"))};
}

}  // namespace tyche::graph::ops
