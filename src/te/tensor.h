// The compute front-end: tensors defined by index expressions, as in TVM's te. A placeholder is
// an input; compute() defines an output element by element, possibly as a reduction over
// reduce_axis() iterators. create_prim_func() turns a set of tensors into a PrimFunc with one
// block per compute, so every computation enters the scheduler the same way.
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "ir/function.h"
#include "ir/op.h"

namespace tyche::te {

using ir::Expr;
using ir::IterVar;
using ir::Var;

// A reduction's combining operator and its identity.
enum class ReducerKind : uint8_t { kSum, kMax, kMin, kProd };
const char* reducer_name(ReducerKind k);
Expr reducer_identity(ReducerKind k, DataType dtype);
Expr reducer_combine(ReducerKind k, Expr acc, Expr value);

// `source` combined over every point of `axes` (the reduce iterators).
struct Reduction {
  ReducerKind reducer;
  Expr source;
  std::vector<IterVar> axes;
};

// What a compute defines its elements as: a plain expression or a reduction.
class ComputeBody {
 public:
  ComputeBody(Expr e) : value_(std::move(e)) {}       // NOLINT(google-explicit-constructor)
  ComputeBody(Reduction r) : value_(std::move(r)) {}  // NOLINT(google-explicit-constructor)
  ComputeBody(double v) : value_(Expr(v)) {}          // NOLINT(google-explicit-constructor)
  const Expr* expr() const { return std::get_if<Expr>(&value_); }
  const Reduction* reduction() const { return std::get_if<Reduction>(&value_); }
  DataType dtype() const;

 private:
  std::variant<Expr, Reduction> value_;
};

struct OperationNode;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const OperationNode> op) : op_(std::move(op)) {}

  const OperationNode* op() const { return op_.get(); }
  const ir::Buffer& buffer() const;
  const std::string& name() const;
  std::vector<int64_t> shape() const;
  DataType dtype() const;
  int ndim() const;
  bool defined() const { return op_ != nullptr; }
  bool same_as(const Tensor& o) const { return op_ == o.op_; }

  // An element of this tensor inside another tensor's definition.
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... Ts>
  Expr operator()(Ts... indices) const {
    return (*this)(std::vector<Expr>{Expr(indices)...});
  }

 private:
  std::shared_ptr<const OperationNode> op_;
};

struct OperationNode {
  std::string name;
  ir::Buffer buffer;  // where the tensor lives once it is a PrimFunc buffer
  bool is_placeholder = true;
  std::vector<IterVar> axis;        // compute only: one spatial iterator per output dimension
  std::optional<ComputeBody> body;  // compute only, written in terms of `axis` vars
  std::vector<Tensor> inputs;       // tensors the body reads, in order of first use
};

// An input tensor.
// While one is alive on this thread, placeholders, computes and reduce axes may have extent 0:
// the graph's shape inference gives an empty tensor its shape (graph/passes.h). Such a tensor
// has no elements and is never lowered; elsewhere an extent of 0 is refused.
class AllowEmptyExtents {
 public:
  AllowEmptyExtents();
  ~AllowEmptyExtents();
  AllowEmptyExtents(const AllowEmptyExtents&) = delete;
  AllowEmptyExtents& operator=(const AllowEmptyExtents&) = delete;
};

Tensor placeholder(std::vector<int64_t> shape, DataType dtype, std::string name);
// A reduction iterator over [0, extent) (or [min, min+extent)).
IterVar reduce_axis(int64_t extent, std::string name);
IterVar reduce_axis(ir::Range range, std::string name);

// Element-wise definition; `fcompute` receives one index var per output dimension. The var names
// default to i, j, k, l, ... unless `axis_names` gives them.
Tensor compute(std::vector<int64_t> shape,
               const std::function<ComputeBody(const std::vector<Var>&)>& fcompute,
               std::string name, std::vector<std::string> axis_names = {});
// Convenience overloads for lambdas over 1..6 index vars.
template <typename F>
Tensor compute(
    std::vector<int64_t> shape, F&& f, std::string name,
    std::vector<std::string> axis_names =
        {}) requires(!std::is_convertible_v<F,
                                            std::function<ComputeBody(const std::vector<Var>&)>>) {
  return compute(std::move(shape),
                 std::function<ComputeBody(const std::vector<Var>&)>(
                     [&f](const std::vector<Var>& v) -> ComputeBody {
                       if constexpr (std::is_invocable_v<F, Var>)
                         return f(v.at(0));
                       else if constexpr (std::is_invocable_v<F, Var, Var>)
                         return f(v.at(0), v.at(1));
                       else if constexpr (std::is_invocable_v<F, Var, Var, Var>)
                         return f(v.at(0), v.at(1), v.at(2));
                       else if constexpr (std::is_invocable_v<F, Var, Var, Var, Var>)
                         return f(v.at(0), v.at(1), v.at(2), v.at(3));
                       else if constexpr (std::is_invocable_v<F, Var, Var, Var, Var, Var>)
                         return f(v.at(0), v.at(1), v.at(2), v.at(3), v.at(4));
                       else
                         return f(v.at(0), v.at(1), v.at(2), v.at(3), v.at(4), v.at(5));
                     }),
                 std::move(name), std::move(axis_names));
}

// Reductions of `source` over `axes`.
Reduction sum(Expr source, std::vector<IterVar> axes);
Reduction max(Expr source, std::vector<IterVar> axes);
Reduction min(Expr source, std::vector<IterVar> axes);
Reduction prod(Expr source, std::vector<IterVar> axes);

// Element-wise math, re-exported from the IR so front-end code reads naturally.
using ir::abs;
using ir::cast;
using ir::exp;
using ir::if_then_else;
using ir::log;
using ir::max;  // element-wise max(a, b) beside the reduction max(source, axes)
using ir::min;
using ir::select;
using ir::sigmoid;
using ir::sqrt;
using ir::tanh;

// Builds a PrimFunc whose params are `args` (placeholders first, computed outputs last, in the
// given order). Every compute reachable from an output becomes a block named after it, in
// dependency order; computes that are not params become intermediate buffers of the root block.
ir::PrimFunc create_prim_func(const std::vector<Tensor>& args, std::string name = "main");

}  // namespace tyche::te
