"""Measuring several implementations of one workload interleaved: round after round, each runs for
one window (its calls timed natively, by its own library), so all see the same periods of a
shared host; the figure of each is the median over its windows, with the windows' CV."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Timed:
    name: str
    window: Callable[[int], float]  # window(calls) -> mean seconds per call over `calls` back-to-back calls
    calls: int = 1
    rounds: int = 0
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cv(self) -> float:
        if len(self.seconds) < 2:
            return 0.0
        return statistics.stdev(self.seconds) / statistics.fmean(self.seconds)


def measure_interleaved(timed: list[Timed], rounds: int, window_s: float, min_rounds: int = 3) -> list[Timed]:
    """Calibrates each implementation's calls per window (after a warm-up call, from the fastest
    of three single calls), then runs ``rounds`` rounds. Each window of a fast implementation
    starts with one untimed call, which wakes its thread pool (asleep, or displaced by the previous
    implementation's spinning one), so every window measures the steady state. An implementation
    whose single call is far longer than the window (the unscheduled floor of a big workload) gets
    fewer rounds (at least ``min_rounds``), so that it does not take more time than the others."""
    for t in timed:
        t.window(1)  # warm-up: caches, thread pools, lazily packed weights
        one = min(t.window(1) for _ in range(3))
        t.calls = max(1, int(window_s / max(one, 1e-9)))
        per_round = one * t.calls
        t.rounds = max(min_rounds, min(rounds, int(rounds * window_s * 2 / max(per_round, 1e-9))))
    for r in range(max((t.rounds for t in timed), default=0)):
        for t in timed:
            if r < t.rounds:
                if t.calls > 1:
                    t.window(1)
                t.seconds.append(t.window(t.calls))
    return timed
