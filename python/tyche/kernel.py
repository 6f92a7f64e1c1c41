"""Compiled kernels: call them on numpy arrays (or anything that exports DLPack), time them, read
their code."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _check, _tyche


ALIGNMENT = 64  # bytes: generated code assumes every array it is passed starts at such an address
PAGE, HUGE_PAGE = 4096, 2 << 20


def empty(shape, dtype: str = "float32") -> np.ndarray:
    """An uninitialized numpy array whose data is 64-byte aligned, so a kernel takes it without a
    copy; from a page (4 KiB) up it starts a page and from 2 MiB up a huge page, as Tyche's own
    buffers do: a streamed read's speed depends on where in a page its data starts."""
    try:
        dtype = np.dtype(dtype)
    except TypeError as e:
        raise _tyche.InputError(f"empty: {e}") from None
    shape = tuple(_check.shape("empty: shape", shape))
    # Python ints do not wrap; the native check refuses what the machine cannot hold, in one line.
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _check.INT64_MAX:
        raise _tyche.InputError(f"empty: shape {list(shape)} of {dtype} takes {nbytes} bytes, beyond 64 bits")
    if dtype.kind in "biuf" and dtype.itemsize <= 8:  # a dtype Tyche names as numpy does
        _tyche.tensor_bytes("empty: an array", list(shape), dtype.name)
    else:
        _tyche.tensor_bytes(f"empty: an array of {dtype}", [nbytes], "uint8")
    alignment = buffer_alignment(nbytes)
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    offset = (-raw.ctypes.data) % alignment
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def buffer_alignment(nbytes: int) -> int:
    """Where an array of ``nbytes`` starts: what the native runtime's allocator gives."""
    return HUGE_PAGE if nbytes >= HUGE_PAGE else PAGE if nbytes >= PAGE else ALIGNMENT


def zeros(shape, dtype: str = "float32") -> np.ndarray:
    """A zero-filled, 64-byte aligned numpy array."""
    a = empty(shape, dtype)
    a[...] = 0
    return a


@dataclass
class TimeResult:
    """Seconds per call: one entry per repeat, each the mean of ``number`` calls."""
    seconds: list[float]
    number: int
    median: float
    min: float
    mean: float
    cv: float  # standard deviation / mean

    def __str__(self) -> str:
        return (f"{self.median * 1e3:.4f} ms median ({self.min * 1e3:.4f} min, cv {self.cv * 100:.1f}%, "
                f"{len(self.seconds)} repeats x {self.number})")


class Kernel:
    """A compiled program. ``kernel(*inputs, *outputs)`` writes the outputs in place;
    ``kernel(*inputs)`` allocates them and returns them (one array, or a tuple).

    Arrays are passed without copying when they are C-contiguous, 64-byte aligned (``tyche.empty``
    makes such arrays; numpy's own are often only 16-byte aligned) and of the parameter's dtype
    and shape; another layout is copied in (and, for an output, back out).
    """

    def __init__(self, native: Any):
        self._native = native
        self.params = native.func.params  # (name, shape, dtype) per parameter: inputs, then outputs
        self.num_outputs = native.func.num_outputs
        self.num_inputs = len(self.params) - self.num_outputs
        self.last_call_copies = 0  # arrays the last call could not pass without a copy

    @property
    def func(self) -> _tyche.PrimFunc:
        """The scheduled program it was compiled from."""
        return self._native.func

    @property
    def cpu(self) -> str:
        return self._native.cpu

    @property
    def compile_seconds(self) -> float:
        return self._native.compile_seconds

    @property
    def layout_rewrites(self) -> list[int]:
        """The weights (input indices) the schedule reads in a layout of its own (RewriteLayout):
        a call lays them out anew before the kernel runs; ``time`` does it once, untimed."""
        return list(self._native.layout_rewrites)

    @property
    def notes(self) -> list[str]:
        """Loops that were not lowered as asked (a vectorized loop that became serial, ...)."""
        return self._native.notes

    def _arguments(self, args: tuple) -> tuple[list, list, bool]:
        if len(args) == self.num_inputs:
            outs = [empty(shape, dtype) for _, shape, dtype in self.params[self.num_inputs:]]
            args = tuple(args) + tuple(outs)
            allocated = True
        elif len(args) == len(self.params):
            allocated = False
        else:
            raise _tyche.InputError(f"{self.func.name} takes {self.num_inputs} inputs (and optionally "
                                    f"{self.num_outputs} outputs), got {len(args)} arrays")
        passed, copies = [], []
        for i, a in enumerate(args):
            if not isinstance(a, np.ndarray) and not hasattr(a, "__dlpack__"):
                raise _tyche.InputError(f"argument {i} ('{self.params[i][0]}') must be an array (numpy or DLPack), "
                                        f"got {type(a).__name__}")
            if isinstance(a, np.ndarray):
                if not a.dtype.isnative:
                    raise _tyche.InputError(f"argument {i} ('{self.params[i][0]}') is not in this machine's byte order")
                is_output = i >= self.num_inputs
                if is_output and not a.flags.writeable:
                    raise _tyche.InputError(f"argument {i} ('{self.params[i][0]}') is an output but read-only")
                if not a.flags.c_contiguous:
                    c = np.ascontiguousarray(a)
                    copies.append((a, c, is_output))
                    a = c
            passed.append(a)
        return passed, copies, allocated

    def __call__(self, *args):
        passed, copies, allocated = self._arguments(args)
        self.last_call_copies = self._native.run(passed) + len(copies)
        for original, contiguous, is_output in copies:
            if is_output:
                original[...] = contiguous
        if allocated:
            outs = passed[self.num_inputs:]
            return outs[0] if len(outs) == 1 else tuple(outs)
        return None

    def time(self, *args, warmup: int = 1, number: int = 1, repeat: int = 10, min_repeat_ms: int = 50,
             flush_cache: bool = False) -> TimeResult:
        """Latency statistics as TVM's time_evaluator measures them (outputs are allocated when
        only the inputs are given). Weights in ``layout_rewrites`` are laid out once before the
        timing, as a model lays them out when it loads."""
        counts = [_check.integer(f"time: {n}", v, lo, 2**31 - 1)
                  for n, v, lo in (("warmup", warmup, 0), ("number", number, 1), ("repeat", repeat, 1),
                                   ("min_repeat_ms", min_repeat_ms, 0))]
        passed, _, _ = self._arguments(args)
        return TimeResult(**self._native.time(passed, *counts, bool(flush_cache)))

    def source(self, kind: str = "c") -> str:
        """The code: "c" (portable C of the lowered program), "llvm" (optimized LLVM IR), "asm",
        "ir" (the lowered IR) or "tir" (the scheduled IR)."""
        return self._native.source(kind)

    def __repr__(self) -> str:
        return f"<Kernel {self.func.name} for {self.cpu}>"


def build(program: Any, target: str = "llvm", cpu: str = "") -> Kernel:
    """Lowers and compiles a PrimFunc, a Workload, a Schedule (its program) or a tuning result (its
    best program) with LLVM, for ``cpu`` ("host", "x86-64-v3", ...; default: TYCHE_CPU or the host).
    ``target`` may also name the CPU: "llvm -mcpu=NAME"."""
    if not target.split() or target.split()[0] != "llvm":
        raise _tyche.InputError(f"build: unknown target '{target}' (this build generates code for llvm, the CPU)")
    cpu = _tyche.parse_target(target)["cpu"] or cpu
    if hasattr(program, "best_schedule"):  # a tuning result: its best program, for the CPU it was tuned for
        cpu = cpu or _tyche.parse_target(program.target)["cpu"]
        program = program.best_schedule()
    if hasattr(program, "_native") and not isinstance(program, Kernel):
        program = program._native
    return Kernel(_tyche.build(program, cpu))


def export(program: Any, name: str, out_dir: str, target: str = "llvm", cpu: str = "", threads: int = 0,
           library: str = "") -> list[str]:
    """Writes the program (a PrimFunc, Workload, Schedule or tuning result, as ``build`` takes) as
    ``out_dir/name.h`` and a static library ``out_dir/lib<library or name>.a`` for ``cpu`` (target
    "llvm"), or as portable C (target "c"): code a C program links with nothing of Tyche at run
    time, as ``tyche export`` writes it (docs/export.md). ``threads=1`` exports serial code.
    Returns the paths written; a bad name, CPU, target or directory raises InputError."""
    if threads not in (0, 1):
        raise _tyche.InputError("export: threads takes 1 (serial code) or 0 (the library's thread pool)")
    if hasattr(program, "best_schedule"):  # a tuning result: its best program, for the CPU it was tuned for
        if not cpu and target == "llvm":
            cpu = _tyche.parse_target(program.target)["cpu"]
        program = program.best_schedule()
    if hasattr(program, "_native") and not isinstance(program, Kernel):
        program = program._native
    return list(_tyche.export_kernel(program, str(out_dir), name, target, cpu, threads != 1, library))


def interpret(program: Any, *inputs) -> list:
    """Runs the program in the reference interpreter on numpy inputs; returns the outputs."""
    if hasattr(program, "_native"):
        program = program._native
    return _tyche.interpret(program, list(inputs))
