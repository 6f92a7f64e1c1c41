// Elementwise and broadcast ops: arithmetic, activations, rounding and sign, Log, IsNaN/IsInf,
// comparisons and logic (bool results), Where, the variadic Max/Min/Sum/Mean, BatchNormalization.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "graph/narrow_types.h"
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

// A constant of type `t`.
Expr tconst(DataType t, double v) {
  return ir::make_const(t, v);
}

// Inputs 0..n-1 of one type, broadcast against each other and combined by `f`.
std::vector<Tensor> same_type_broadcast(ConvertContext& c, const char* name, size_t n,
                                        const std::function<Expr(const std::vector<Expr>&)>& f) {
  if (n == 0) c.fail("needs at least one input");
  for (size_t i = 1; i < n; ++i)
    if (c.dtype(i) != c.dtype(0))
      c.fail(
          fmt::format("inputs of different types ({} and {})", c.dtype(0).str(), c.dtype(i).str()));
  return broadcast(c, name, n, [&f](std::vector<Expr> a) { return f(a); });
}

// A float op: `f` gets the element and its type.
std::vector<Tensor> float_map(ConvertContext& c, const char* name,
                              const std::function<Expr(Expr, DataType)>& f) {
  require_float(c);
  DataType t = c.dtype(0);
  return unary(c, name, [&](Expr x) { return f(x, t); });
}

std::vector<Tensor> binary(ConvertContext& c, const char* name, Expr (*f)(Expr, Expr)) {
  return same_type_broadcast(c, name, 2, [f](const std::vector<Expr>& a) { return f(a[0], a[1]); });
}

std::vector<Tensor> logic(ConvertContext& c, const char* name, Expr (*f)(Expr, Expr)) {
  if (!c.dtype(0).is_bool()) c.fail(fmt::format("needs bool inputs, not {}", c.dtype(0).str()));
  return binary(c, name, f);
}

Expr softplus_of(Expr x, DataType t) {
  // log(1 + exp(x)): x itself to float precision above 20, where exp would soon overflow.
  return ir::select(x > tconst(t, 20), x, ir::log(tconst(t, 1) + ir::exp(x)));
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
      if (!v)
        c.fail(fmt::format("the {} ('{}') must be a one-element constant", i == 1 ? "min" : "max",
                           c.value(i).name));
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

std::vector<Tensor> float_call(ConvertContext& c, ir::CallOp op) {
  require_float(c);
  return unary(c, ir::call_op_name(op), [op](Expr x) { return ir::call(op, {x}); });
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

namespace {

std::vector<Tensor> cast_to(ConvertContext& c, DataType to) {
  return unary(c, "cast", [to](Expr x) {
    if (to.is_bool()) return x != ir::make_const(x.dtype(), 0);
    return ir::cast(to, x);
  });
}

// Cast to ONNX type `code`, through the narrow types' conversions where either side is one.
std::vector<Tensor> cast_to_code(ConvertContext& c, int64_t code) {
  bool saturate = c.node().get_int("saturate", 1) != 0;
  std::optional<NarrowType> from = narrow_type(c.value(0).narrow_code);
  std::optional<NarrowType> to = narrow_type(code);
  if (!from && !to) {
    std::optional<DataType> target = dtype_of_onnx(code);
    if (!target) c.fail(fmt::format("cannot cast to {}", onnx_dtype_name(code)));
    return cast_to(c, *target);
  }
  std::optional<DataType> target = to ? std::optional<DataType>(to->storage) : dtype_of_onnx(code);
  if (!target) c.fail(fmt::format("cannot cast to {}", onnx_dtype_name(code)));
  return unary(c, "cast", [&](Expr x) {
    if (from) x = narrow_decode(x, *from);
    if (to) return narrow_encode(x, *to, saturate);
    if (target->is_bool()) return x != ir::make_const(x.dtype(), 0);
    return ir::cast(*target, x);
  });
}

}  // namespace

std::vector<Tensor> cast(ConvertContext& c) {
  return cast_to_code(c, c.node().get_int("to", 0));
}

std::vector<Tensor> cast_like(ConvertContext& c) {
  int64_t code = c.value(1).narrow_code;
  if (code == 0) code = onnx_code_of(c.dtype(1));
  return cast_to_code(c, code);
}

namespace {

// C's fmod: the remainder of the quotient truncated toward zero, with a's sign. A finite a over an
// infinite b is a itself (the quotient rounds to 0; 0 * inf would be NaN).
Expr truncated_remainder(Expr a, Expr b) {
  if (!a.dtype().is_float()) return a - (a / b) * b;
  Expr q = a / b;
  Expr zero = ir::make_const(q.dtype(), 0);
  q = ir::select(q < zero, ir::call(ir::CallOp::kCeil, {q}), ir::call(ir::CallOp::kFloor, {q}));
  double inf = std::numeric_limits<double>::infinity();
  Expr b_inf = b == ir::make_const(b.dtype(), inf) || b == ir::make_const(b.dtype(), -inf);
  Expr a_finite = a - a == zero;  // false for inf and NaN
  return ir::select(b_inf && a_finite, a, a - q * b);
}

}  // namespace

std::vector<Tensor> mod(ConvertContext& c) {
  bool fmod = c.node().get_int("fmod", 0) != 0;
  DataType t = c.dtype(0);
  if (t.is_bool()) c.fail("needs numeric inputs, not bool");
  if (fmod) return binary(c, "mod", truncated_remainder);
  if (!t.is_float()) return binary(c, "mod", [](Expr a, Expr b) { return ir::floormod(a, b); });
  // Python's (numpy's) float modulo: the remainder takes b's sign.
  return binary(c, "mod", [](Expr a, Expr b) {
    Expr r = truncated_remainder(a, b);
    Expr zero = ir::make_const(r.dtype(), 0);
    return ir::select((r < zero && b > zero) || (r > zero && b < zero), r + b, r);
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
  if (c.dtype(0).is_integer()) {
    // An integer base keeps its type: the power in float64 (exact below 2^53), truncated as
    // onnxruntime's integer pow rounds.
    DataType t = c.dtype(0);
    return broadcast(c, "pow", 2, [t](std::vector<Expr> a) {
      return ir::cast(
          t, ir::call(ir::CallOp::kPow, {ir::cast(kFloat64, a[0]), ir::cast(kFloat64, a[1])}));
    });
  }
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

std::vector<Tensor> abs(ConvertContext& c) {
  DataType t = c.dtype(0);
  if (t.is_float()) return unary(c, "abs", [](Expr x) { return ir::abs(x); });
  if (t.is_bool()) c.fail("needs a numeric input, not bool");
  return unary(c, "abs", [t](Expr x) { return ir::select(x < tconst(t, 0), -x, x); });
}

std::vector<Tensor> sign(ConvertContext& c) {
  DataType t = c.dtype(0);
  if (t.is_bool()) c.fail("needs a numeric input, not bool");
  return unary(c, "sign", [t](Expr x) {
    return ir::select(x > tconst(t, 0), tconst(t, 1),
                      ir::select(x < tconst(t, 0), tconst(t, -1), tconst(t, 0)));
  });
}

std::vector<Tensor> log(ConvertContext& c) {
  return float_map(c, "log", [](Expr x, DataType) { return ir::log(x); });
}
std::vector<Tensor> floor(ConvertContext& c) {
  return float_map(c, "floor", [](Expr x, DataType) { return ir::call(ir::CallOp::kFloor, {x}); });
}
std::vector<Tensor> ceil(ConvertContext& c) {
  return float_map(c, "ceil", [](Expr x, DataType) { return ir::call(ir::CallOp::kCeil, {x}); });
}
std::vector<Tensor> round(ConvertContext& c) {
  return float_map(c, "round", [](Expr x, DataType) { return ir::call(ir::CallOp::kRound, {x}); });
}

std::vector<Tensor> elu(ConvertContext& c) {
  double alpha = c.node().get_float("alpha", 1.0);
  return float_map(c, "elu", [alpha](Expr x, DataType t) {
    return ir::select(x < tconst(t, 0), tconst(t, alpha) * (ir::exp(x) - tconst(t, 1)), x);
  });
}

std::vector<Tensor> celu(ConvertContext& c) {
  double alpha = c.node().get_float("alpha", 1.0);
  if (alpha == 0) c.fail("alpha must not be 0");
  return float_map(c, "celu", [alpha](Expr x, DataType t) {
    Expr neg = tconst(t, alpha) * (ir::exp(x * tconst(t, 1 / alpha)) - tconst(t, 1));
    return ir::max(x, tconst(t, 0)) + ir::min(tconst(t, 0), neg);
  });
}

std::vector<Tensor> selu(ConvertContext& c) {
  double alpha = c.node().get_float("alpha", 1.67326319217681884765625);
  double gamma = c.node().get_float("gamma", 1.05070102214813232421875);
  return float_map(c, "selu", [alpha, gamma](Expr x, DataType t) {
    return tconst(t, gamma) *
           ir::select(x > tconst(t, 0), x, tconst(t, alpha) * (ir::exp(x) - tconst(t, 1)));
  });
}

std::vector<Tensor> softplus(ConvertContext& c) {
  return float_map(c, "softplus", softplus_of);
}

std::vector<Tensor> swish(ConvertContext& c) {
  double alpha = c.node().get_float("alpha", 1.0);
  return float_map(c, "swish",
                   [alpha](Expr x, DataType t) { return x * ir::sigmoid(tconst(t, alpha) * x); });
}

std::vector<Tensor> softsign(ConvertContext& c) {
  return float_map(c, "softsign",
                   [](Expr x, DataType t) { return x / (tconst(t, 1) + ir::abs(x)); });
}

std::vector<Tensor> mish(ConvertContext& c) {
  return float_map(c, "mish", [](Expr x, DataType t) { return x * ir::tanh(softplus_of(x, t)); });
}

std::vector<Tensor> hard_sigmoid(ConvertContext& c) {
  double alpha = c.node().get_float("alpha", 0.2);
  double beta = c.node().get_float("beta", 0.5);
  return float_map(c, "hard_sigmoid", [alpha, beta](Expr x, DataType t) {
    return ir::max(tconst(t, 0), ir::min(tconst(t, 1), tconst(t, alpha) * x + tconst(t, beta)));
  });
}

std::vector<Tensor> thresholded_relu(ConvertContext& c) {
  double alpha = c.node().get_float("alpha", 1.0);
  return float_map(c, "thresholded_relu", [alpha](Expr x, DataType t) {
    return ir::select(x > tconst(t, alpha), x, tconst(t, 0));
  });
}

std::vector<Tensor> shrink(ConvertContext& c) {
  double bias = c.node().get_float("bias", 0.0);
  double lambd = c.node().get_float("lambd", 0.5);
  DataType t = c.dtype(0);
  if (t.is_bool()) c.fail("needs a numeric input, not bool");
  return unary(c, "shrink", [=](Expr x) {
    return ir::select(x < tconst(t, -lambd), x + tconst(t, bias),
                      ir::select(x > tconst(t, lambd), x - tconst(t, bias), tconst(t, 0)));
  });
}

// SwiGLU: A * sigmoid(alpha * A) * B, over inputs of one shape.
std::vector<Tensor> swiglu(ConvertContext& c) {
  DataType t = c.dtype(0);
  if (!t.is_float()) c.fail(fmt::format("needs a float input, not {}", t.str()));
  if (c.shape(0) != c.shape(1))
    c.fail(fmt::format("A and B must have one shape, not {} and {}", shape_text(c.shape(0)),
                       shape_text(c.shape(1))));
  double alpha = c.node().get_float("alpha", 1.0);
  return same_type_broadcast(c, "swiglu", 2, [t, alpha](const std::vector<Expr>& a) {
    return a[0] * ir::sigmoid(tconst(t, alpha) * a[0]) * a[1];
  });
}

std::vector<Tensor> prelu(ConvertContext& c) {
  DataType t = c.dtype(0);
  if (!t.is_float()) c.fail(fmt::format("needs a float input, not {}", t.str()));
  return same_type_broadcast(c, "prelu", 2, [t](const std::vector<Expr>& a) {
    return ir::select(a[0] < tconst(t, 0), a[0] * a[1], a[0]);
  });
}

std::vector<Tensor> is_nan(ConvertContext& c) {
  return float_map(c, "is_nan", [](Expr x, DataType) { return x != x; });
}

std::vector<Tensor> is_inf(ConvertContext& c) {
  bool negative = c.node().get_int("detect_negative", 1) != 0;
  bool positive = c.node().get_int("detect_positive", 1) != 0;
  return float_map(c, "is_inf", [=](Expr x, DataType t) {
    double inf = std::numeric_limits<double>::infinity();
    Expr is = ir::make_bool(false);
    if (positive) is = x == tconst(t, inf);
    if (negative) is = positive ? (is || x == tconst(t, -inf)) : x == tconst(t, -inf);
    return is;
  });
}

std::vector<Tensor> less(ConvertContext& c) {
  return binary(c, "less", [](Expr a, Expr b) { return a < b; });
}
std::vector<Tensor> less_or_equal(ConvertContext& c) {
  return binary(c, "less_or_equal", [](Expr a, Expr b) { return a <= b; });
}
std::vector<Tensor> greater(ConvertContext& c) {
  return binary(c, "greater", [](Expr a, Expr b) { return a > b; });
}
std::vector<Tensor> greater_or_equal(ConvertContext& c) {
  return binary(c, "greater_or_equal", [](Expr a, Expr b) { return a >= b; });
}
std::vector<Tensor> equal(ConvertContext& c) {
  return binary(c, "equal", [](Expr a, Expr b) { return a == b; });
}

std::vector<Tensor> logical_and(ConvertContext& c) {
  return logic(c, "and", [](Expr a, Expr b) { return a && b; });
}
std::vector<Tensor> logical_or(ConvertContext& c) {
  return logic(c, "or", [](Expr a, Expr b) { return a || b; });
}
std::vector<Tensor> logical_xor(ConvertContext& c) {
  return logic(c, "xor", [](Expr a, Expr b) { return a != b; });
}
std::vector<Tensor> logical_not(ConvertContext& c) {
  if (!c.dtype(0).is_bool()) c.fail(fmt::format("needs a bool input, not {}", c.dtype(0).str()));
  return unary(c, "not", [](Expr x) { return !x; });
}

std::vector<Tensor> bit_op(ConvertContext& c, ir::CallOp op) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (!c.dtype(i).is_integer())
      c.fail(fmt::format("needs integer inputs, not {}", c.dtype(i).str()));
  const char* name = ir::call_op_name(op);
  if (op == ir::CallOp::kBitwiseNot)
    return unary(c, name, [](Expr x) { return ir::call(ir::CallOp::kBitwiseNot, {x}); });
  return same_type_broadcast(c, name, 2, [op](const std::vector<Expr>& a) {
    return ir::call(op, {a[0], a[1]});
  });
}

std::vector<Tensor> bit_shift(ConvertContext& c) {
  std::string direction = c.node().get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    c.fail(fmt::format("direction '{}' is neither LEFT nor RIGHT", direction));
  return bit_op(c, direction == "LEFT" ? ir::CallOp::kShiftLeft : ir::CallOp::kShiftRight);
}

std::vector<Tensor> variadic_max(ConvertContext& c) {
  return same_type_broadcast(c, "max", c.num_inputs(), [](const std::vector<Expr>& a) {
    Expr m = a[0];
    for (size_t i = 1; i < a.size(); ++i) m = ir::max(m, a[i]);
    return m;
  });
}
std::vector<Tensor> variadic_min(ConvertContext& c) {
  return same_type_broadcast(c, "min", c.num_inputs(), [](const std::vector<Expr>& a) {
    Expr m = a[0];
    for (size_t i = 1; i < a.size(); ++i) m = ir::min(m, a[i]);
    return m;
  });
}
std::vector<Tensor> variadic_sum(ConvertContext& c) {
  return same_type_broadcast(c, "sum", c.num_inputs(), [](const std::vector<Expr>& a) {
    Expr s = a[0];
    for (size_t i = 1; i < a.size(); ++i) s = s + a[i];
    return s;
  });
}
std::vector<Tensor> variadic_mean(ConvertContext& c) {
  DataType t = c.dtype(0);
  if (!t.is_float()) c.fail(fmt::format("needs float inputs, not {}", t.str()));
  return same_type_broadcast(c, "mean", c.num_inputs(), [t](const std::vector<Expr>& a) {
    Expr s = a[0];
    for (size_t i = 1; i < a.size(); ++i) s = s + a[i];
    return s * tconst(t, 1.0 / static_cast<double>(a.size()));
  });
}

}  // namespace tyche::graph::ops
