"""Whole ONNX models: compile one into a callable that takes and returns numpy arrays, list its
tuning tasks, tune them into a database, as ``tyche import``, ``tyche tune-model`` and
``tyche run-model`` do (the same tasks and records, so their databases are interchangeable).

``model`` is a path to a .onnx file or an ``onnx.ModelProto`` (this module never imports the
``onnx`` package itself). Inputs with symbolic dimensions need ``input_shapes={"x": (1, 3, 224, 224)}``.
A model file's external data is read from its folder only; a ``ModelProto`` whose tensors keep
their data in external files needs ``base_dir=`` (the folder holding them, as
``onnx.load_external_data_for_model`` takes it): without it such a model is refused, so a model
from elsewhere never reads files relative to the current directory.
A file that is not a model, an unsupported operator or opset, a missing shape: ``tyche.InputError``
with the command line's message.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Mapping

import numpy as np

from . import _check, _tyche
from .tune import _WORKER

__all__ = ["CompiledModel", "compile", "supported_ops", "tasks", "tune"]


def _source(model: Any, base_dir: str | os.PathLike | None = None) -> tuple[str, bytes | None, str, str]:
    """(path, bytes, name for messages, folder of a ModelProto's external data: "" for none) of a
    path or a ModelProto."""
    if base_dir is not None:
        if not isinstance(base_dir, (str, os.PathLike)) or not isinstance(os.fspath(base_dir), str):
            raise _tyche.InputError(f"base_dir must be a folder's path, got {type(base_dir).__name__}")
        base_dir = os.fspath(base_dir)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if isinstance(path, str):
            if base_dir is not None:
                raise _tyche.InputError("base_dir is for a ModelProto: a model file's external data is read from its own folder")
            return path, None, path, ""
    elif hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        if base_dir is not None and not os.path.isdir(base_dir):
            raise _tyche.InputError(f"base_dir '{base_dir}' is not a folder")
        name = getattr(model.graph, "name", "")
        what = f"<onnx.ModelProto {name}>" if name else "<onnx.ModelProto>"
        return "", model.SerializeToString(), what, base_dir or ""
    raise _tyche.InputError(f"model must be a path to a .onnx file or an onnx.ModelProto, got {type(model).__name__}")


def _shapes(input_shapes: Mapping[str, Any] | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if input_shapes is not None and not isinstance(input_shapes, Mapping):
        raise _tyche.InputError(f"input_shapes must be a dict of input name to shape, got {type(input_shapes).__name__}")
    for name, dims in (input_shapes or {}).items():
        if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
            raise _tyche.InputError(f"input_shapes['{name}'] must be a tuple of integers, got {dims!r}")
        # the importer refuses a dimension past 2^31 by name; bigger ones would not reach it
        out[str(name)] = _check.shape(f"input_shapes['{name}']", dims)
    return out


def _bind(bind: Mapping[str, Any] | None) -> dict:
    """{input name: C-contiguous array} of bind= (numpy arrays, or what numpy.asarray takes)."""
    if bind is None:
        return {}
    if not isinstance(bind, Mapping):
        raise _tyche.InputError(f"bind must be a dict of input name to array, got {type(bind).__name__}")
    out = {}
    for name, value in bind.items():
        try:
            out[str(name)] = np.require(np.asarray(value), requirements="C")
        except (TypeError, ValueError) as e:
            raise _tyche.InputError(f"bind['{name}'] is not an array: {e}") from None
    return out


def _threads(threads: int | None) -> int:
    if threads is None:
        return 0
    return _check.integer("threads", threads, 1, _tyche.max_threads())


class CompiledModel:
    """A model compiled by Tyche's graph executor. Call it with numpy arrays by input name,
    ``compiled(x=a)`` or ``compiled({"x": a})``; it returns ``{output name: array}``.

    ``inputs`` gives each input's (shape, dtype); ``tasks`` the model's tuning tasks;
    ``tasks_tuned`` how many run a database's best program (the others a default schedule);
    ``arena_bytes``/``naive_bytes`` the memory plan's size and that of one buffer per value.
    """

    def __init__(self, native: Any) -> None:
        self._native = native

    def __call__(self, inputs: Mapping[str, Any] | None = None, /, **named: Any) -> dict[str, np.ndarray]:
        given = dict(inputs or {})
        for k, v in named.items():
            if k in given:
                raise _tyche.InputError(f"input '{k}' is given twice")
            given[k] = v
        info = self._native.inputs
        arrays = {}
        for k, v in given.items():
            try:
                if not isinstance(v, np.ndarray) and k in info:  # a list or a scalar: the input's dtype
                    v = np.asarray(v, dtype=info[k][1])
                arrays[k] = np.require(v, requirements="C")
            except (TypeError, ValueError) as e:
                raise _tyche.InputError(f"input '{k}' is not an array: {e}") from None
        return self._native.run(arrays)

    @property
    def input_names(self) -> list[str]:
        return self._native.input_names

    @property
    def output_names(self) -> list[str]:
        return self._native.output_names

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """{input name: (shape, dtype name)}."""
        return self._native.inputs

    @property
    def tasks(self) -> list[dict]:
        """The tuning tasks: dicts of name, weight (calls), gflop (one call), hash (16 hex digits)."""
        return self._native.tasks

    @property
    def tasks_tuned(self) -> int:
        return self._native.tasks_tuned

    @property
    def records(self) -> list[dict]:
        """Per task, the record it runs (as ``tyche run-model --json`` lists them): dicts of task,
        hash, program (the structural hash of the program picked) and measured_at; program and
        measured_at are None for a task that runs its default schedule."""
        return self._native.records

    @property
    def arena_bytes(self) -> int:
        return self._native.arena_bytes

    @property
    def naive_bytes(self) -> int:
        return self._native.naive_bytes

    @property
    def compile_seconds(self) -> float:
        return self._native.compile_seconds

    def __repr__(self) -> str:
        return (f"<tyche.onnx.CompiledModel inputs={self.input_names} outputs={self.output_names} "
                f"tasks={len(self.tasks)} tuned={self.tasks_tuned}>")


def compile(model: Any, db: str | os.PathLike | None = None, threads: int | None = None,
            input_shapes: Mapping[str, Any] | None = None, dtype: str = "float32",
            base_dir: str | os.PathLike | None = None, bind: Mapping[str, Any] | None = None) -> CompiledModel:
    """Imports ``model`` and compiles every task: with ``db`` (a tuning database directory) each
    task runs its best record there, the others a default schedule. ``threads`` sets the size of
    Tyche's thread pool (all kernels of the process run on it). ``dtype``: "float32" (the model as
    it is) or "bfloat16" (the convolutions' and matrix products' weights and activations in
    bfloat16, accumulated in float32, as ``tyche run-model --dtype``); tune with the same.
    ``base_dir``: the folder of a ModelProto's external data (see the module's note).
    ``bind``: {input name: array}, inputs bound to values at compile time (as ``tyche run-model
    --bind``): each becomes a constant, so an op that needs its axes, shape or bounds as constants
    can read them, and is no longer given at run time."""
    path, data, what, data_dir = _source(model, base_dir)
    native = _tyche.onnx_compile(path, data, what, os.fspath(db) if db is not None else "", _threads(threads),
                                 _shapes(input_shapes), str(dtype), data_dir, _bind(bind))
    return CompiledModel(native)


def tasks(model: Any, input_shapes: Mapping[str, Any] | None = None, dtype: str = "float32",
          base_dir: str | os.PathLike | None = None, bind: Mapping[str, Any] | None = None) -> list[dict]:
    """The model's tuning tasks (fused groups that compute the same program share one), as
    ``tyche import --json`` lists them: dicts of name, weight, gflop, hash. ``base_dir`` and
    ``bind``: as for ``compile``."""
    path, data, what, data_dir = _source(model, base_dir)
    return _tyche.onnx_tasks(path, data, what, _shapes(input_shapes), str(dtype), data_dir, _bind(bind))


def _print_progress(trials: int, budget: int, task: str, best_seconds: float, estimated_ms: float, measured: int,
                    ntasks: int, elapsed_s: float) -> None:
    best = f"{best_seconds * 1e3:.4f} ms" if best_seconds > 0 else "none"
    print(f"[tyche] [{trials}/{budget}] {task}: best {best}; model ~{estimated_ms:.3f} ms "
          f"({measured} of {ntasks} tasks measured), {elapsed_s:.0f} s", file=sys.stderr, flush=True)


def tune(model: Any, trials: int, db: str | os.PathLike, threads: int | None = None,
         input_shapes: Mapping[str, Any] | None = None, seed: int = 0, progress: bool | Callable = True,
         timing: str = "auto", runner: Any = None, dtype: str = "float32",
         base_dir: str | os.PathLike | None = None, population: int | None = None,
         generations: int | None = None, bind: Mapping[str, Any] | None = None) -> dict:
    """Tunes every task of ``model`` for ``trials`` measured candidates in all, shared by the
    gradient task scheduler, keeping the records in the database directory ``db`` (a rerun
    resumes). ``threads``: for the search and the cost model (default: all). ``timing``: "auto"
    (default: "mixed"), "llc" (before each of 10 runs the cores' private caches are evicted, so the arguments wait in
    the last-level cache, as between a model's calls), "mixed" (as "llc", but the weights are
    evicted from every cache), "cold" (every argument evicted from every cache) or "warm"
    (repeated back to back, as ``tyche.tune``).

    Returns what ``tyche tune-model --json`` writes: model, trials, timing (as chosen), wall_s,
    estimated_latency_ms (sum of weight x best), tasks (name, weight, trials, failed, best_ms,
    share, gflop), interrupted, times. ``progress`` prints a line per round to stderr, or is called as
    ``progress(trials, budget, task, best_seconds, estimated_ms, measured, ntasks, elapsed_s)``.
    Ctrl-C stops the tune after saving what was measured, then raises KeyboardInterrupt.
    ``dtype``: as for ``compile`` (the tasks differ; compile with the same).
    ``runner``: None measures here; a ``tyche.ray.RayRunner`` measures on a Ray cluster, each
    node importing the model (sent once per node) and measuring its share of every batch; nodes
    get the model's bytes alone, so a model with external data is refused there.
    ``base_dir`` and ``bind``: as for ``compile`` (tune and compile with the same bindings: the
    tasks differ). ``population`` and ``generations``: the evolutionary
    search's per round (default 512 and 4, as ``tyche.tune``); smaller is a quicker, coarser search.
    """
    path, data, what, data_dir = _source(model, base_dir)
    trials = _check.integer("tune: trials", trials, 1, 2**31 - 1)
    population = 0 if population is None else _check.integer("tune: population", population, 2, 2**31 - 1)
    generations = 0 if generations is None else _check.integer("tune: generations", generations, 1, 2**31 - 1)
    seed = _check.integer("tune: seed", seed)
    callback = _print_progress if progress is True else (progress or None)
    remote = None
    if runner is not None:
        if not hasattr(runner, "remote_model"):
            raise TypeError(f"runner: expected None or a tyche.ray.RayRunner, got {type(runner).__name__}")
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
            path, data_dir = "", os.path.dirname(os.path.abspath(path))
        runner.start(_tyche.onnx_target())
        remote = runner.remote_model(data, what, _shapes(input_shapes), str(dtype), _bind(bind))
    return _tyche.onnx_tune(path, data, what, trials, os.fspath(db), _threads(threads), _shapes(input_shapes), seed,
                            str(timing), os.environ.get("TYCHE_WORKER", _WORKER), callback, remote, str(dtype), data_dir,
                            population, generations, _bind(bind))


def supported_ops() -> list[tuple[str, str]]:
    """The ONNX default-domain operators Tyche converts, sorted, each with its fusion pattern
    (elementwise, broadcast, injective, reduction, anchor or view)."""
    return [tuple(op) for op in _tyche.onnx_supported_ops()]
