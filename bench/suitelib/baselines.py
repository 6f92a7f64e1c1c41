"""The native baselines (oneDNN, OpenBLAS) and roofline probes of libtyche_baselines.so, through ctypes."""

from __future__ import annotations

import ctypes
import os

import numpy as np

SYSTEMS = ("onednn", "openblas")


class BaselineError(RuntimeError):
    pass


class Library:
    """libtyche_baselines.so, built beside the Python package (``<build>/bench``)."""

    def __init__(self, path: str):
        if not os.path.exists(path):
            raise BaselineError(f"the baselines library {path} is missing (build the target tyche_baselines)")
        lib = ctypes.CDLL(path)
        lib.tyche_baseline_supports.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.tyche_baseline_create.restype = ctypes.c_void_p
        lib.tyche_baseline_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.tyche_baseline_window.restype = ctypes.c_double
        lib.tyche_baseline_window.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int]
        lib.tyche_baseline_destroy.argtypes = [ctypes.c_void_p]
        lib.tyche_baseline_describe.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.tyche_peak_gflops.restype = ctypes.c_double
        lib.tyche_peak_gflops.argtypes = [ctypes.c_int, ctypes.c_double]
        lib.tyche_memory_bandwidth.restype = ctypes.c_double
        lib.tyche_memory_bandwidth.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int]
        self._lib = lib

    def supports(self, system: str, family: str) -> bool:
        return bool(self._lib.tyche_baseline_supports(system.encode(), family.encode()))

    def baseline(self, system: str, family: str, params, arrays) -> "Baseline":
        return Baseline(self._lib, system, family, params, arrays)

    def peak_gflops(self, threads: int, seconds: float) -> float:
        return self._lib.tyche_peak_gflops(threads, seconds)

    def memory_bandwidth(self, threads: int, array_bytes: int, repeats: int) -> float:
        return self._lib.tyche_memory_bandwidth(threads, array_bytes, repeats)

    def vector_bits(self) -> int:
        return self._lib.tyche_peak_vector_bits()


class Baseline:
    """One library's implementation of a workload on ``arrays`` (inputs, then the output: float32,
    C-contiguous, in Tyche's layouts). The arrays are kept alive as long as the baseline."""

    def __init__(self, lib, system: str, family: str, params, arrays):
        for a in arrays:
            if not (isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous):
                raise BaselineError(f"{system} {family}: every array must be a C-contiguous float32 numpy array")
        self._lib, self._arrays, self.name = lib, list(arrays), system
        p = (ctypes.c_int64 * len(params))(*[int(v) for v in params])
        bufs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        err = ctypes.create_string_buffer(512)
        self._handle = lib.tyche_baseline_create(system.encode(), family.encode(), p, len(params), bufs, len(arrays), err, 512)
        if not self._handle:
            raise BaselineError(err.value.decode())

    def window(self, calls: int) -> float:
        """Mean seconds per call of ``calls`` calls back to back (timed natively)."""
        err = ctypes.create_string_buffer(512)
        s = self._lib.tyche_baseline_window(self._handle, calls, err, 512)
        if s < 0:
            raise BaselineError(err.value.decode())
        return s

    def run(self) -> None:
        self.window(1)

    def describe(self) -> str:
        """Which implementation of the library runs (oneDNN's "jit:avx2", "ref:any", ...)."""
        text = ctypes.create_string_buffer(256)
        self._lib.tyche_baseline_describe(self._handle, text, 256)
        return text.value.decode()

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.tyche_baseline_destroy(self._handle)
            self._handle = None
