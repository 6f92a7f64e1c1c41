"""Tyche: tensor-program optimization with probabilistic programs.

Programs come from the preset workloads (``tyche.workload("GMM-4")``), index notation
(``tyche.formula(...)``) or the tensor-expression API (``tyche.te``); ``tyche.Schedule``
transforms them with TVM's primitive names; ``tyche.build`` compiles them into kernels that take
numpy arrays; ``tyche.tune`` searches a design space natively; ``tyche.export`` writes a program
as a C header and a static library.
"""

from . import _tyche
from ._check import integer as _integer, name as _name
from ._tyche import (BlockRV, ExprRV, InputError, LoopRV, PrimFunc, ScheduleError, TycheError, Workload,
                     num_threads, op_names, preset_names)
from .kernel import Kernel, TimeResult, build, empty, export, interpret, zeros
from .schedule import Schedule, Trace
from .strategy import CostModel, Result, SearchStrategy, Task, features
from .tune import TuneResult, tune
from . import rules, te
from . import onnx

__all__ = [
    "BlockRV", "CostModel", "ExprRV", "InputError", "Kernel", "LoopRV", "PrimFunc", "Result", "Schedule", "ScheduleError", "SearchStrategy",
    "Task", "TimeResult", "Trace", "TuneResult", "TycheError", "Workload", "build", "cpu", "empty", "export", "features", "formula",
    "interpret", "num_threads", "op_names", "preset_names",
    "rules", "set_num_threads", "te", "tune", "workload", "zeros",
]


def workload(name: str, scale_down: bool = False) -> Workload:
    """A preset of the operator suite ("GMM-4", "C2D-1", ...; see ``preset_names()``).

    ``scale_down=True`` shrinks every dimension (keeping kernel sizes, strides, padding and groups)
    so the interpreter checks it in well under a second. The workload carries its reference:
    ``workload.inputs()`` and ``workload.reference(*inputs)`` give numpy arrays.
    """
    return _tyche.workload(name, scale_down)


def formula(text: str, dtypes: dict[str, str] | str | None = None, **extents: int) -> Workload:
    """A program in index notation, e.g. ``formula("C[i,j] += A[i,k] * B[k,j]", i=64, j=64, k=64)``.

    ``dtypes`` gives tensors other element types than float32, as a dict or a string:
    ``dtypes={"A": "uint8", "B": "int8", "C": "int32"}`` or ``dtypes="A=uint8,B=int8,C=int32"``;
    each statement computes in its output's type (docs/cli.md, "Element types")."""
    if not extents:
        raise InputError("formula: give every index's extent as a keyword, e.g. i=64")
    if not isinstance(text, str):
        raise InputError(f"formula: the formula must be a string, got {type(text).__name__}")
    # Integers only: the native side reads "i=4,j=8", so a string extent could add extents of its own.
    checked = {k: _integer(f"formula: extent '{k}'", v, hi=None) for k, v in extents.items()}
    if isinstance(dtypes, dict):
        dtypes = ",".join(f"{_name('formula: a dtypes key', k)}={_name(f'formula: dtypes[{k!r}]', v)}" for k, v in dtypes.items())
    elif dtypes is not None and not isinstance(dtypes, str):
        raise InputError(f"formula: dtypes must be a dict or a string, got {type(dtypes).__name__}")
    return _tyche.formula(text, ",".join(f"{k}={v}" for k, v in checked.items()), dtypes or "")


def set_num_threads(n: int) -> None:
    """Sets the size of Tyche's thread pool (every kernel of the process runs on it): from 1 to
    4 x the CPUs this process may use."""
    _tyche.set_num_threads(_integer("set_num_threads: the count", n, 1, _tyche.max_threads()))


def cpu(name: str = "") -> str:
    """The CPU code is generated for (``name``: "host", "x86-64-v3", ...; default: TYCHE_CPU or the
    host) and its vector width, e.g. "host: znver3 (256-bit vectors)"."""
    return _tyche.describe_cpu(name)


def _workload_inputs(self, seed: int = 42):
    """The inputs the tuner checks with: seeded, uniform in [-1, 1)."""
    return _tyche.workload_inputs(self, _integer("inputs: seed", seed, 0, 2**64 - 1))


def _workload_reference(self, *inputs):
    """The reference outputs for ``inputs`` (numpy arrays), computed without the IR."""
    return _tyche.workload_reference(self, list(inputs))


Workload.inputs = _workload_inputs
Workload.reference = _workload_reference
