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


def calls_per_window(t: Timed, window_s: float) -> tuple[int, float]:
    """How many back-to-back calls fill a window, and the seconds per call, from batches grown
    fourfold until one lasts a twentieth of the window: a single call would include the wake-up
    of a thread pool and make a fast kernel's windows far too short (DEP-3: 300 calls of 15 us
    instead of 13000)."""
    calls = 1
    while True:
        per_call = t.window(calls)
        if per_call * calls >= window_s / 20 or calls >= 1 << 24:
            break
        calls *= 4
    per_call = min(per_call, t.window(calls))
    return max(1, int(window_s / max(per_call, 1e-12))), per_call


def measure_interleaved(timed: list[Timed], rounds: int, window_s: float, min_rounds: int = 3) -> list[Timed]:
    """Calibrates each implementation's calls per window (after a warm-up call), then runs
    ``rounds`` rounds. Each window of a fast implementation starts with one untimed call, which
    wakes its thread pool (asleep, or displaced by the previous implementation's spinning one),
    so every window measures the steady state. An implementation whose single call is far longer
    than the window (the unscheduled floor of a big workload) gets fewer rounds (at least
    ``min_rounds``), so that it does not take more time than the others."""
    for t in timed:
        t.window(1)  # warm-up: caches, thread pools, lazily packed weights
        t.calls, per_call = calls_per_window(t, window_s)
        per_round = per_call * t.calls
        t.rounds = max(min_rounds, min(rounds, int(rounds * window_s * 2 / max(per_round, 1e-9))))
    for r in range(max((t.rounds for t in timed), default=0)):
        for t in timed:
            if r < t.rounds:
                if t.calls > 1:
                    t.window(1)
                t.seconds.append(t.window(t.calls))
    return timed
