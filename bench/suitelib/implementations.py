"""The implementations the suite measures for one workload, each with its own output array and a
native timing window: Tyche's kernels (the tuned best and the unscheduled floor), the libraries'
(oneDNN, OpenBLAS) and TVM's tuned kernel. Each is built in a worker process of its own
(isolated.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import tyche


@dataclass
class Implementation:
    name: str
    output: np.ndarray
    run: Callable[[], None]
    window: Callable[[int], float]
    implementation: str = ""  # for a library: which of its implementations runs


def aligned_copies(arrays) -> list[np.ndarray]:
    """Copies in 64-byte-aligned arrays, which every implementation reads in place."""
    out = []
    for a in arrays:
        c = tyche.empty(a.shape, str(a.dtype))
        c[...] = a
        out.append(c)
    return out


def output_like(func) -> np.ndarray:
    _, shape, dtype = func.params[-1]
    out = tyche.empty(shape, dtype)
    out[...] = np.nan
    return out


def tyche_kernel(name: str, kernel, inputs, func) -> Implementation:
    out = output_like(func)
    args = list(inputs) + [out]
    return Implementation(name, out, lambda: kernel(*args),
                          lambda calls: kernel.time(*args, warmup=0, number=calls, repeat=1, min_repeat_ms=0).seconds[0])


def library_kernel(library, system: str, workload, inputs) -> Implementation:
    out = output_like(workload.func)
    baseline = library.baseline(system, workload.op, workload.params, list(inputs) + [out])
    return Implementation(system, out, baseline.run, baseline.window, baseline.describe())


def tvm_kernel(library_path: str, family: str, inputs, func) -> Implementation:
    from .tvm_driver import TvmKernel, tvm_arguments
    out = output_like(func)
    kernel = TvmKernel(library_path)
    kernel.bind(tvm_arguments(family, list(inputs), [out]))
    return Implementation("tvm", out, kernel.run_bound, kernel.window)


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / max |ref|: relative to the result's scale, however small (a softmax's
    values are ~1/N); NaN (an output never written) counts as infinite."""
    diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    if not np.all(np.isfinite(diff)):
        return float("inf")
    return float(diff.max() / max(float(np.abs(ref).max()), np.finfo(np.float64).tiny))
