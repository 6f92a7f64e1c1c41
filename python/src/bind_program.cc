// Programs from Python: PrimFunc (printed as its IR script), the preset workloads and index
// notation, and the tensor-expression front-end (placeholder, compute, reduce_axis, reductions,
// element-wise math) building the same PrimFunc as the C++ front-end.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include "bindings.h"
#include "ir/printer.h"
#include "te/tensor.h"
#include "workloads/workloads.h"

namespace tyche::python {
namespace {

using ir::Expr;

// An expression from a Python value: an Expr, an iterator (its variable), a bool, an int (int32,
// the index type, when it fits) or a float (float32).
Expr to_expr(nb::handle v) {
  if (nb::isinstance<Expr>(v)) return nb::cast<Expr>(v);
  if (nb::isinstance<ir::IterVar>(v)) return nb::cast<ir::IterVar>(v).var;
  if (nb::isinstance<nb::bool_>(v)) return ir::make_bool(nb::cast<bool>(v));
  if (nb::isinstance<nb::int_>(v)) {
    int64_t x = nb::cast<int64_t>(v);
    return x >= INT32_MIN && x <= INT32_MAX ? Expr(static_cast<int>(x)) : Expr(x);
  }
  if (nb::isinstance<nb::float_>(v)) return Expr(nb::cast<double>(v));
  throw InputError(
      fmt::format("expected an expression, an iterator or a number, got {}", python_type_name(v)));
}

std::vector<Expr> to_exprs(nb::handle v) {
  std::vector<Expr> out;
  if (nb::isinstance<nb::tuple>(v) || nb::isinstance<nb::list>(v)) {
    for (nb::handle x : v) out.push_back(to_expr(x));
  } else {
    out.push_back(to_expr(v));
  }
  return out;
}

std::vector<ir::IterVar> to_axes(nb::handle v) {
  std::vector<ir::IterVar> out;
  if (nb::isinstance<ir::IterVar>(v)) return {nb::cast<ir::IterVar>(v)};
  for (nb::handle x : v) {
    if (!nb::isinstance<ir::IterVar>(x)) throw InputError("axis: expected reduce_axis iterators");
    out.push_back(nb::cast<ir::IterVar>(x));
  }
  return out;
}

te::ComputeBody to_body(nb::handle v) {
  if (nb::isinstance<te::Reduction>(v)) return nb::cast<te::Reduction>(v);
  return to_expr(v);
}

Expr self_expr(const Expr& e) {
  return e;
}
Expr self_expr(const ir::IterVar& v) {
  return v.var;
}

// Python's operators on expressions and iterators alike.
template <typename C>
void def_operators(C& cls) {
  using T = typename C::Type;
  auto self = [](const T& x) { return self_expr(x); };
  cls.def("__add__", [self](const T& a, nb::handle b) { return self(a) + to_expr(b); })
      .def("__radd__", [self](const T& a, nb::handle b) { return to_expr(b) + self(a); })
      .def("__sub__", [self](const T& a, nb::handle b) { return self(a) - to_expr(b); })
      .def("__rsub__", [self](const T& a, nb::handle b) { return to_expr(b) - self(a); })
      .def("__mul__", [self](const T& a, nb::handle b) { return self(a) * to_expr(b); })
      .def("__rmul__", [self](const T& a, nb::handle b) { return to_expr(b) * self(a); })
      .def("__truediv__", [self](const T& a, nb::handle b) { return self(a) / to_expr(b); })
      .def("__rtruediv__", [self](const T& a, nb::handle b) { return to_expr(b) / self(a); })
      .def("__floordiv__",
           [self](const T& a, nb::handle b) { return ir::floordiv(self(a), to_expr(b)); })
      .def("__rfloordiv__",
           [self](const T& a, nb::handle b) { return ir::floordiv(to_expr(b), self(a)); })
      .def("__mod__",
           [self](const T& a, nb::handle b) { return ir::floormod(self(a), to_expr(b)); })
      .def("__rmod__",
           [self](const T& a, nb::handle b) { return ir::floormod(to_expr(b), self(a)); })
      .def("__neg__", [self](const T& a) { return -self(a); })
      .def("__lt__", [self](const T& a, nb::handle b) { return self(a) < to_expr(b); })
      .def("__le__", [self](const T& a, nb::handle b) { return self(a) <= to_expr(b); })
      .def("__gt__", [self](const T& a, nb::handle b) { return self(a) > to_expr(b); })
      .def("__ge__", [self](const T& a, nb::handle b) { return self(a) >= to_expr(b); })
      .def("__eq__", [self](const T& a, nb::handle b) { return self(a) == to_expr(b); })
      .def("__ne__", [self](const T& a, nb::handle b) { return self(a) != to_expr(b); })
      // `x if A[i] > 0 else y` or Python's max() would decide on the expression object itself
      .def("__bool__",
           [](const T&) -> bool {
             throw nb::type_error(
                 "an expression has no truth value: use te.if_then_else, te.select, te.max or "
                 "te.min");
           })
      .def("__hash__", [self](const T& a) { return reinterpret_cast<intptr_t>(self(a).get()); })
      .def("__repr__", [self](const T& a) { return ir::to_string(self(a)); })
      .def_prop_ro("dtype", [self](const T& a) { return self(a).dtype().str(); });
}

workloads::Workload make_scaled(const workloads::Workload& w, bool scale_down) {
  return scale_down ? workloads::scaled_down(w) : w;
}

}  // namespace

ir::PrimFunc as_func(nb::handle value) {
  if (nb::isinstance<ir::PrimFunc>(value)) return nb::cast<ir::PrimFunc>(value);
  if (nb::isinstance<workloads::Workload>(value))
    return nb::cast<const workloads::Workload&>(value).func;
  if (nb::isinstance<ScheduleHolder>(value))
    return nb::cast<const ScheduleHolder&>(value).get().func();
  if (nb::hasattr(value, "_native")) return as_func(value.attr("_native"));
  throw InputError(fmt::format("expected a PrimFunc, a Workload or a Schedule, got {}",
                               python_type_name(value)));
}

void bind_program(nb::module_& m) {
  nb::class_<ir::PrimFunc>(m, "PrimFunc",
                           "An unscheduled or scheduled tensor program (a loop nest of blocks).")
      .def("__str__", [](const ir::PrimFunc& f) { return ir::to_string(f); })
      .def(
          "script", [](const ir::PrimFunc& f) { return ir::to_string(f); }, "The IR script.")
      .def_prop_ro("name", [](const ir::PrimFunc& f) { return f->name; })
      .def_prop_ro("num_outputs", [](const ir::PrimFunc& f) { return f->num_outputs; })
      .def_prop_ro("params",
                   [](const ir::PrimFunc& f) {
                     // (name, shape, dtype) per parameter buffer: inputs, then outputs
                     nb::list out;
                     for (const ir::Buffer& b : f->params)
                       out.append(nb::make_tuple(b->name, ir::const_shape(b), b->dtype.str()));
                     return out;
                   })
      .def("__repr__", [](const ir::PrimFunc& f) { return fmt::format("<PrimFunc {}>", f->name); });

  nb::class_<workloads::Workload>(
      m, "Workload", "A program with a reference implementation: a preset or index notation.")
      .def_ro("name", &workloads::Workload::name)
      .def_ro("op", &workloads::Workload::op)
      .def_ro("params", &workloads::Workload::params,
              "The op family's parameter tuple (docs/workloads.md's order; empty for a formula).")
      .def_ro("shape", &workloads::Workload::shape)
      .def_ro("precision", &workloads::Workload::precision,
              "A preset's typed variant: '' (float32), 'U8S8' or 'BF16'.")
      .def_ro("dtypes", &workloads::Workload::dtypes,
              "A formula's element types that are not float32 ('A=uint8,B=int8,C=int32').")
      .def_ro("flop", &workloads::Workload::flop)
      .def_ro("func", &workloads::Workload::func)
      .def("__str__", [](const workloads::Workload& w) { return ir::to_string(w.func); })
      .def("__repr__", [](const workloads::Workload& w) {
        return fmt::format("<Workload {} [{}]>", w.name, w.shape);
      });

  m.def(
      "workload",
      [](const std::string& name, bool scale_down) {
        return make_scaled(workloads::get_preset(name), scale_down);
      },
      nb::arg("name"), nb::arg("scale_down") = false);
  m.def("formula", &workloads::from_index_notation, nb::arg("formula"), nb::arg("extents"),
        nb::arg("dtypes") = "");
  m.def("preset_names", &workloads::preset_names);
  m.def("op_names", &workloads::op_names);

  // ---- the tensor-expression front-end ----
  auto expr = nb::class_<Expr>(m, "Expr", "An expression of the IR.");
  def_operators(expr);
  nb::class_<ir::Var, Expr>(m, "Var", "An index variable.")
      .def_prop_ro("name", [](const ir::Var& v) { return v.name(); });
  auto iter = nb::class_<ir::IterVar>(m, "IterVar", "A reduction iterator (reduce_axis).")
                  .def_prop_ro("var", [](const ir::IterVar& v) { return v.var; })
                  .def_prop_ro("name", [](const ir::IterVar& v) { return v.var.name(); });
  def_operators(iter);
  nb::class_<te::Reduction>(m, "Reduction", "A reduction: the body of a compute.")
      .def("__repr__", [](const te::Reduction& r) {
        return fmt::format("{}({})", te::reducer_name(r.reducer), ir::to_string(r.source));
      });
  nb::class_<te::Tensor>(m, "Tensor", "A placeholder or a computed tensor.")
      .def("__getitem__",
           [](const te::Tensor& t, nb::handle index) {
             std::vector<Expr> idx = to_exprs(index);
             if (static_cast<int>(idx.size()) != t.ndim())
               throw InputError(fmt::format("tensor '{}' has {} dimensions, indexed with {}",
                                            t.name(), t.ndim(), idx.size()));
             return t(idx);
           })
      .def_prop_ro("name", &te::Tensor::name)
      .def_prop_ro("shape", &te::Tensor::shape)
      .def_prop_ro("ndim", &te::Tensor::ndim)
      .def_prop_ro("dtype", [](const te::Tensor& t) { return t.dtype().str(); })
      .def("__repr__", [](const te::Tensor& t) {
        return fmt::format("<Tensor {} {} {}>", t.name(), fmt::join(t.shape(), "x"),
                           t.dtype().str());
      });

  m.def("te_placeholder",
        [](std::vector<int64_t> shape, const std::string& dtype, std::string name) {
          return te::placeholder(std::move(shape), DataType::parse(dtype), std::move(name));
        });
  m.def("te_reduce_axis",
        [](int64_t extent, std::string name) { return te::reduce_axis(extent, std::move(name)); });
  m.def("te_compute", [](std::vector<int64_t> shape, nb::callable fcompute, std::string name,
                         std::vector<std::string> axis_names) {
    return te::compute(
        std::move(shape),
        [&](const std::vector<ir::Var>& vars) {
          nb::list args;
          for (const ir::Var& v : vars) args.append(nb::cast(v));
          return to_body(fcompute(*nb::tuple(args)));
        },
        std::move(name), std::move(axis_names));
  });
  m.def("te_reduce", [](const std::string& reducer, nb::handle source, nb::handle axis) {
    Expr s = to_expr(source);
    std::vector<ir::IterVar> axes = to_axes(axis);
    if (reducer == "sum") return te::sum(s, axes);
    if (reducer == "max") return te::max(s, axes);
    if (reducer == "min") return te::min(s, axes);
    if (reducer == "prod") return te::prod(s, axes);
    throw InputError(fmt::format("unknown reducer '{}'", reducer));
  });
  m.def("te_math", [](const std::string& fn, nb::args args) {
    std::vector<Expr> a;
    for (nb::handle x : args) a.push_back(to_expr(x));
    auto want = [&](size_t n) {
      if (a.size() != n)
        throw InputError(fmt::format("{} takes {} arguments, got {}", fn, n, a.size()));
    };
    if (fn == "exp") return want(1), te::exp(a[0]);
    if (fn == "log") return want(1), te::log(a[0]);
    if (fn == "sqrt") return want(1), te::sqrt(a[0]);
    if (fn == "tanh") return want(1), te::tanh(a[0]);
    if (fn == "sigmoid") return want(1), te::sigmoid(a[0]);
    if (fn == "abs") return want(1), te::abs(a[0]);
    if (fn == "max") return want(2), ir::max(a[0], a[1]);
    if (fn == "min") return want(2), ir::min(a[0], a[1]);
    if (fn == "if_then_else") return want(3), te::if_then_else(a[0], a[1], a[2]);
    if (fn == "select") return want(3), te::select(a[0], a[1], a[2]);
    if (fn == "equal") return want(2), a[0] == a[1];
    if (fn == "not_equal") return want(2), a[0] != a[1];
    if (fn == "logical_and") return want(2), a[0] && a[1];
    if (fn == "logical_or") return want(2), a[0] || a[1];
    if (fn == "logical_not") return want(1), !a[0];
    throw InputError(fmt::format("unknown function '{}'", fn));
  });
  m.def("te_cast", [](const std::string& dtype, nb::handle value) {
    return te::cast(DataType::parse(dtype), to_expr(value));
  });
  m.def("te_const", [](nb::handle value, const std::string& dtype) {
    return ir::make_const(DataType::parse(dtype), nb::cast<double>(value));
  });
  m.def("te_create_prim_func", [](const std::vector<te::Tensor>& args, std::string name) {
    return te::create_prim_func(args, std::move(name));
  });
}

}  // namespace tyche::python
