"""Checks of the plain values Python hands to the native library (extents, shapes, counts), so a
wrong one is a one-line ``tyche.InputError`` naming it: never nanobind's "incompatible function
arguments" (an int past 64 bits), never a float truncated or a string spliced into a native text
format (``formula(..., i='4,j=8')`` once set two extents)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _tyche

INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def integer(what: str, value: Any, lo: int | None = None, hi: int | None = INT64_MAX) -> int:
    """``value`` as a Python int: an int or anything with ``__index__`` (numpy integer scalars),
    not a bool (True is a mistake, not 1), not a float or a string; within [lo, hi]."""
    if isinstance(value, (bool, np.bool_)):
        raise _tyche.InputError(f"{what} must be an integer, got a bool ({value!r})")
    try:
        v = operator.index(value)
    except TypeError:
        raise _tyche.InputError(f"{what} must be an integer, got {type(value).__name__} {_show(value)}") from None
    if lo is not None and v < lo:
        raise _tyche.InputError(f"{what} must be at least {lo}, got {v}")
    if hi is not None and v > hi:
        raise _tyche.InputError(f"{what} must be at most {hi}, got {_show(v)}")
    return v


def shape(what: str, dims: Any) -> list[int]:
    """A shape as a list of non-negative int64 dimensions (an int alone is a 1-d shape)."""
    if isinstance(dims, (str, bytes)):
        raise _tyche.InputError(f"{what} must be a sequence of integers, got {type(dims).__name__} {_show(dims)}")
    try:
        items = list(dims)
    except TypeError:
        items = [dims]
    return [integer(f"{what}[{i}]", d, 0) for i, d in enumerate(items)]


def name(what: str, value: Any) -> str:
    """A name spliced into a native "a=b,c=d" list: a string holding neither separator."""
    if not isinstance(value, str):
        raise _tyche.InputError(f"{what} must be a string, got {type(value).__name__} {_show(value)}")
    if any(c in value for c in ",="):
        raise _tyche.InputError(f"{what} must not contain ',' or '=': {_show(value)}")
    return value
