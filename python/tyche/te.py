"""The tensor-expression front-end, as TVM's ``te``: placeholders, computes, reductions.

    A = te.placeholder((64, 32), name="A")
    B = te.placeholder((32, 48), name="B")
    k = te.reduce_axis(32, name="k")
    C = te.compute((64, 48), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])

builds the same PrimFunc as the C++ front-end (one block per compute).
"""

from __future__ import annotations

from typing import Callable, Sequence

from . import _check, _tyche
from ._tyche import Expr, IterVar, Reduction, Tensor, Var

__all__ = ["Expr", "IterVar", "Reduction", "Tensor", "Var", "abs", "cast", "compute", "const", "create_prim_func",
           "equal", "exp", "if_then_else", "log", "max", "min", "not_equal", "placeholder", "prod", "reduce_axis",
           "select", "sigmoid", "sqrt", "sum", "tanh"]


def placeholder(shape: Sequence[int], dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor."""
    return _tyche.te_placeholder(_check.shape(f"placeholder '{name}': shape", shape), dtype, name)


def reduce_axis(dom: int | tuple[int, int], name: str = "k") -> IterVar:
    """A reduction iterator over [0, dom) (a (0, n) pair is accepted, as TVM writes it)."""
    if isinstance(dom, (tuple, list)):
        lo, hi = dom
        if lo != 0:
            raise _tyche.InputError("reduce_axis: only ranges starting at 0 are supported")
        dom = hi
    return _tyche.te_reduce_axis(_check.integer(f"reduce_axis '{name}': extent", dom, -_check.INT64_MAX), name)


def compute(shape: Sequence[int], fcompute: Callable, name: str = "compute", axis_names: Sequence[str] = ()) -> Tensor:
    """A tensor defined element by element: ``fcompute(i, j, ...)`` returns an expression or a reduction."""
    return _tyche.te_compute(_check.shape(f"compute '{name}': shape", shape), fcompute, name, list(axis_names))


def create_prim_func(args: Sequence[Tensor], name: str = "main") -> _tyche.PrimFunc:
    """The PrimFunc whose parameters are ``args`` (inputs first, outputs last)."""
    return _tyche.te_create_prim_func(list(args), name)


def sum(expr, axis) -> Reduction:  # noqa: A001 - TVM's name
    """The sum of ``expr`` over ``axis`` (an IterVar or a list of them)."""
    return _tyche.te_reduce("sum", expr, axis)


def prod(expr, axis) -> Reduction:
    return _tyche.te_reduce("prod", expr, axis)


def max(a, b=None, axis=None):  # noqa: A001
    """With ``axis``: the maximum of ``a`` over it (a reduction); else ``max(a, b)`` element-wise."""
    if axis is not None:
        return _tyche.te_reduce("max", a, axis)
    return _tyche.te_math("max", a, b)


def min(a, b=None, axis=None):  # noqa: A001
    """With ``axis``: the minimum of ``a`` over it (a reduction); else ``min(a, b)`` element-wise."""
    if axis is not None:
        return _tyche.te_reduce("min", a, axis)
    return _tyche.te_math("min", a, b)


def _unary(fn: str):
    def f(x):
        return _tyche.te_math(fn, x)
    f.__name__ = fn
    f.__doc__ = f"Element-wise {fn}."
    return f


exp, log, sqrt, tanh, sigmoid, abs = (_unary(n) for n in ("exp", "log", "sqrt", "tanh", "sigmoid", "abs"))  # noqa: A001


def if_then_else(cond, t, f) -> Expr:
    """``t`` where ``cond`` holds, else ``f``; only the chosen side is evaluated (padding reads)."""
    return _tyche.te_math("if_then_else", cond, t, f)


def select(cond, t, f) -> Expr:
    """``t`` where ``cond`` holds, else ``f``; both sides evaluated."""
    return _tyche.te_math("select", cond, t, f)


def equal(a, b) -> Expr:
    return _tyche.te_math("equal", a, b)


def not_equal(a, b) -> Expr:
    return _tyche.te_math("not_equal", a, b)


def cast(dtype: str, value) -> Expr:
    return _tyche.te_cast(dtype, value)


def const(value, dtype: str = "float32") -> Expr:
    return _tyche.te_const(value, dtype)
