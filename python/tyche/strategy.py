"""Search strategies and cost models written in Python.

``tyche.tune(..., strategy=obj, cost_model=obj)`` takes, besides the native names, instances of
:class:`SearchStrategy` and :class:`CostModel`. The native tuning loop calls them between batches:
the strategy proposes traces, which are replayed, validated, built, measured and recorded
natively, then the model and the strategy are told how they ran. An exception raised in either
stops the tune; what was measured before is in the database, and ``tyche.tune`` raises it.

A trace's decisions are its search space: ``trace.decisions`` (by sampling instruction, in order)
and ``trace.with_decisions(values)`` give and replace all of them at once, so a strategy can search
decision vectors, while ``task.sample(n)`` draws fresh programs of the task's design spaces.
"""

from __future__ import annotations

import abc
import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .schedule import Trace


@dataclass(frozen=True)
class Result:
    """How a proposed program ran: its time in seconds, or None with the error when it failed
    (did not build, crashed, timed out or computed a wrong result)."""
    seconds: Optional[float]
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.seconds is not None


class Task:
    """One tuning task as strategies and cost models see it, while its tune runs."""

    def __init__(self, native: Any):
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def workload(self) -> str:
        """The workload's structural hash (hex): the key of its records in the database."""
        return self._native.workload

    @property
    def spaces(self) -> list[Trace]:
        """The design spaces: one trace each, its sampling instructions still undecided."""
        return [Trace(t) for t in self._native.spaces()]

    def sample(self, n: int, seed: Optional[int] = None) -> list[Trace]:
        """Up to ``n`` fresh programs of the design spaces (those the postprocessors accept),
        each a trace with its decisions."""
        seed = random.getrandbits(62) if seed is None else seed
        return [Trace(t) for t in self._native.sample(n, seed)]

    @property
    def measured(self) -> list[tuple[float, Trace]]:
        """(seconds, trace) of every program of this task that ran, the database's included."""
        return [(s, Trace(t)) for s, t in self._native.measured()]

    def __repr__(self) -> str:
        return f"<Task {self.name}>"


def features(task: Task, traces: Sequence[Trace]) -> list:
    """Tyche's per-store features of each trace's program (a numpy array, one row per buffer
    store): what the native XGBoost model learns from. A trace that does not replay on the task
    raises InputError."""
    import numpy as np
    rows = task._native.features([_native_trace(t, "features") for t in traces])
    return [np.frombuffer(values, dtype=np.float32).reshape(n, cols).copy() for values, n, cols in rows]


class SearchStrategy(abc.ABC):
    """What to measure next. ``initialize`` is called once per task before the first batch;
    ``generate(n)`` returns up to ``n`` traces: those the postprocessors refuse, those measured
    before and repeats are dropped, a proposal of which nothing is left is asked for again (up to
    four times), and an empty list ends the task's search; ``notify`` gets the traces measured and
    their Results, in order."""

    task: Task

    def initialize(self, task: Task) -> None:
        self.task = task

    @abc.abstractmethod
    def generate(self, n: int) -> list[Trace]:
        ...

    def notify(self, traces: list[Trace], results: list[Result]) -> None:
        pass


class CostModel(abc.ABC):
    """Which programs to expect fast. ``predict`` scores traces of a task (higher: expected
    faster); ``update`` learns from measured ones (Result.seconds None: failed)."""

    @abc.abstractmethod
    def predict(self, task: Task, traces: list[Trace]) -> list[float]:
        ...

    def update(self, task: Task, traces: list[Trace], results: list[Result]) -> None:
        pass


def _native_trace(t: Any, where: str) -> Any:
    if not isinstance(t, Trace):
        raise TypeError(f"{where}: expected tyche.Trace, got {type(t).__name__}")
    return t._native


class _StrategyAdapter:
    """What the native loop calls: converts between natives and the package's types."""

    def __init__(self, strategy: SearchStrategy):
        if not isinstance(strategy, SearchStrategy):
            raise TypeError(f"strategy: expected a name or a tyche.SearchStrategy, got {type(strategy).__name__}")
        self.strategy = strategy
        self.name = type(strategy).__name__

    def initialize(self, task: Task) -> None:
        self.strategy.initialize(task)

    def generate(self, n: int) -> list:
        proposed = self.strategy.generate(n)
        if proposed is None:
            raise TypeError(f"{self.name}.generate returned None (expected a list of tyche.Trace)")
        return [_native_trace(t, f"{self.name}.generate") for t in proposed]

    def notify(self, traces: list, results: list) -> None:
        self.strategy.notify([Trace(t) for t in traces], [Result(s, e) for s, e in results])


class _CostModelAdapter:
    def __init__(self, model: CostModel):
        if not isinstance(model, CostModel):
            raise TypeError(f"cost_model: expected a name or a tyche.CostModel, got {type(model).__name__}")
        self.model = model
        self.name = type(model).__name__

    def predict(self, task: Task, traces: list) -> list[float]:
        return [float(s) for s in self.model.predict(task, [Trace(t) for t in traces])]

    def update(self, task: Task, traces: list, seconds: list) -> None:
        self.model.update(task, [Trace(t) for t in traces], [Result(s, "" if s is not None else "failed") for s in seconds])
