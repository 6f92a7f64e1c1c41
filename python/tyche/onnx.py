"""Whole ONNX models: compile one into a callable that takes and returns numpy arrays, list its
tuning tasks, tune them into a database, as ``tyche import``, ``tyche tune-model`` and
``tyche run-model`` do (the same tasks and records, so their databases are interchangeable).

``model`` is a path to a .onnx file or an ``onnx.ModelProto`` (this module never imports the
``onnx`` package itself). Inputs with symbolic dimensions need ``input_shapes={"x": (1, 3, 224, 224)}``.
A file that is not a model, an unsupported operator or opset, a missing shape: ``tyche.InputError``
with the command line's message.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Mapping

import numpy as np

from . import _tyche
from .tune import _WORKER

__all__ = ["CompiledModel", "compile", "tasks", "tune"]


def _source(model: Any) -> tuple[str, bytes | None, str]:
    """(path, bytes, name for messages) of a path or a ModelProto."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if isinstance(path, str):
            return path, None, path
    elif hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        name = getattr(model.graph, "name", "")
        return "", model.SerializeToString(), f"<onnx.ModelProto {name}>" if name else "<onnx.ModelProto>"
    raise _tyche.InputError(f"model must be a path to a .onnx file or an onnx.ModelProto, got {type(model).__name__}")


def _shapes(input_shapes: Mapping[str, Any] | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, dims in (input_shapes or {}).items():
        try:
            out[str(name)] = [int(d) for d in dims]
        except (TypeError, ValueError):
            raise _tyche.InputError(f"input_shapes['{name}'] must be a tuple of integers, got {dims!r}") from None
    return out


def _threads(threads: int | None) -> int:
    if threads is None:
        return 0
    if int(threads) <= 0:
        raise _tyche.InputError("threads must be positive")
    return int(threads)


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
            input_shapes: Mapping[str, Any] | None = None, dtype: str = "float32") -> CompiledModel:
    """Imports ``model`` and compiles every task: with ``db`` (a tuning database directory) each
    task runs its best record there, the others a default schedule. ``threads`` sets the size of
    Tyche's thread pool (all kernels of the process run on it). ``dtype``: "float32" (the model as
    it is) or "bfloat16" (the convolutions' and matrix products' weights and activations in
    bfloat16, accumulated in float32, as ``tyche run-model --dtype``); tune with the same."""
    path, data, what = _source(model)
    native = _tyche.onnx_compile(path, data, what, os.fspath(db) if db is not None else "", _threads(threads),
                                 _shapes(input_shapes), str(dtype))
    return CompiledModel(native)


def tasks(model: Any, input_shapes: Mapping[str, Any] | None = None, dtype: str = "float32") -> list[dict]:
    """The model's tuning tasks (fused groups that compute the same program share one), as
    ``tyche import --json`` lists them: dicts of name, weight, gflop, hash."""
    path, data, what = _source(model)
    return _tyche.onnx_tasks(path, data, what, _shapes(input_shapes), str(dtype))


def _print_progress(trials: int, budget: int, task: str, best_seconds: float, estimated_ms: float, measured: int,
                    ntasks: int, elapsed_s: float) -> None:
    best = f"{best_seconds * 1e3:.4f} ms" if best_seconds > 0 else "none"
    print(f"[tyche] [{trials}/{budget}] {task}: best {best}; model ~{estimated_ms:.3f} ms "
          f"({measured} of {ntasks} tasks measured), {elapsed_s:.0f} s", file=sys.stderr, flush=True)


def tune(model: Any, trials: int, db: str | os.PathLike, threads: int | None = None,
         input_shapes: Mapping[str, Any] | None = None, seed: int = 0, progress: bool | Callable = True,
         timing: str = "auto", runner: Any = None, dtype: str = "float32") -> dict:
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
    node importing the model (sent once per node) and measuring its share of every batch.
    """
    path, data, what = _source(model)
    callback = _print_progress if progress is True else (progress or None)
    remote = None
    if runner is not None:
        if not hasattr(runner, "remote_model"):
            raise TypeError(f"runner: expected None or a tyche.ray.RayRunner, got {type(runner).__name__}")
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
            path = ""
        runner.start(_tyche.onnx_target())
        remote = runner.remote_model(data, what, _shapes(input_shapes), str(dtype))
    return _tyche.onnx_tune(path, data, what, int(trials), os.fspath(db), _threads(threads), _shapes(input_shapes), int(seed),
                            str(timing), os.environ.get("TYCHE_WORKER", _WORKER), callback, remote, str(dtype))
