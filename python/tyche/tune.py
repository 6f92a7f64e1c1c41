"""Tuning from Python; the search, building, measuring and the cost model run natively with
the GIL released."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from . import _tyche
from .rules import native_space
from .schedule import Schedule, Trace
from .strategy import CostModel, SearchStrategy, Task, _CostModelAdapter, _StrategyAdapter

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tyche-worker")


@dataclass
class TuneResult:
    """What a tune found: the best program's latency and trace, and how the search went."""
    name: str
    program: Any
    best_seconds: float             # the fastest program (timed again at the end); 0: nothing ran
    best_trace: Trace | None        # its full trace (design space, decisions, postprocessors)
    trials: int
    failed: int
    flop: float
    history: list[dict] = field(default_factory=list)  # after every round: trials, best_seconds, elapsed_s
    refusals: dict[str, int] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)
    target: str = "llvm"
    resumed_records: int = 0      # records of this program the database already held
    warm_start: int = 0           # programs of similar workloads the search started from
    model: str = ""               # what the cost model started from: a saved model's path, or "untrained"
    warnings: list[str] = field(default_factory=list)  # database lines that were skipped

    @property
    def best_gflops(self) -> float:
        return self.flop / self.best_seconds / 1e9 if self.best_seconds > 0 and self.flop > 0 else 0.0

    def best_schedule(self) -> Schedule:
        """The best program's schedule, replayed onto the tuned program."""
        if self.best_trace is None:
            raise _tyche.TycheError(f"tune of {self.name}: no program ran correctly, so there is no best schedule")
        sch = Schedule(self.program)
        self.best_trace.apply_to(sch)
        return sch

    def __str__(self) -> str:
        if self.best_seconds <= 0:
            return f"{self.name}: {self.trials} trials, nothing ran"
        rate = f", {self.best_gflops:.1f} GFLOP/s" if self.flop > 0 else ""
        return f"{self.name}: best {self.best_seconds * 1e3:.4f} ms{rate} after {self.trials} trials ({self.failed} failed)"


def _print_progress(trials: int, budget: int, task: str, best_seconds: float, elapsed_s: float) -> None:
    best = f"{best_seconds * 1e3:.4f} ms" if best_seconds > 0 else "-"
    print(f"[tyche] {task}: {trials}/{budget} trials, best {best}, {elapsed_s:.1f} s", file=sys.stderr, flush=True)


def tune(program: Any, trials: int = 64, db: str = "tyche_db", space: Any = None, target: str = "llvm",
         strategy: "str | SearchStrategy" = "evolutionary", cost_model: "str | CostModel" = "xgb", seed: int = 0, batch: int | None = None,
         progress: bool | Callable = True, runner: Any = None, **options: Any) -> TuneResult:
    """Tunes ``program`` (a Workload, a PrimFunc or a Schedule's program) for ``trials`` measured
    candidates, keeping every record in the database directory ``db`` (a rerun resumes from it).

    ``space`` is None (the default rules), a list of rules (``tyche.rules`` and Python rules), or a
    function ``space(sch)`` that writes a probabilistic schedule: it runs once to make the space's
    trace, which the search then replays and mutates natively. ``progress`` prints a line per
    round (or is called as ``progress(trials, budget, task, best_seconds, elapsed_s)``, with the
    fastest time measured so far). Further
    options: threads, timeout_s, repeat and min_repeat_ms (how each candidate is timed), confirm_top,
    confirm_rounds, population, generations, model (a saved cost model to start from; default the
    one pre-trained on bench/data, "none" an untrained one), warm_start (default True: a program the
    database has few records of starts from the best of similar workloads' records).
    A program without a reference (TE, a PrimFunc) is checked against the interpreter.
    ``strategy`` and ``cost_model`` are native names ("evolutionary", "replay-trace",
    "local-search"; "xgb", "random") or objects written in Python (tyche.SearchStrategy,
    tyche.CostModel: tyche/strategy.py); an exception raised in one stops the tune and is raised
    here, the records measured before it kept. ``runner`` None measures here; a
    ``tyche.ray.RayRunner`` measures every batch on a Ray cluster's nodes (tyche/ray.py).
    """
    native_program = program._native if hasattr(program, "_native") else program
    strategy_adapter = None if isinstance(strategy, str) else _StrategyAdapter(strategy)
    model_adapter = None if isinstance(cost_model, str) else _CostModelAdapter(cost_model)
    opts = dict(trials=trials, db=str(db), seed=seed, target=target, **options)
    if strategy_adapter is None:
        opts["strategy"] = strategy
    if model_adapter is None:
        opts["cost_model"] = cost_model
    opts.setdefault("worker", os.environ.get("TYCHE_WORKER", _WORKER))
    if batch is not None:
        opts["batch"] = batch
    callback = _print_progress if progress is True else (progress or None)
    remote = None
    if runner is not None:
        if not hasattr(runner, "remote"):
            raise TypeError(f"runner: expected None or a tyche.ray.RayRunner, got {type(runner).__name__}")
        runner.start(target)
        remote = runner.remote(program, opts)
    r = _tyche.tune(native_program, native_space(space), opts, callback, strategy_adapter, model_adapter, Task, remote)
    t = r["task"]
    func = program.func if isinstance(program, (_tyche.Workload, Schedule)) else program
    return TuneResult(name=t["name"], program=func, best_seconds=t["best_seconds"],
                      best_trace=Trace.parse(t["best_trace"]) if t["best_trace"] else None, trials=t["trials"],
                      failed=t["failed"], flop=t["flop"], history=t["history"], refusals=t["refusals"],
                      times=r["times"], target=r["target"], resumed_records=r["resumed_records"], model=r["model"],
                      warnings=r["warnings"], warm_start=t["warm_start"])
