"""Measuring several implementations of one workload interleaved: round after round, each runs for
one window (its calls timed natively, by its own library), so all see the same periods of a
shared host; the figure of each is the median over its windows, with the windows' CV.

Fair by construction:
  - the order of the implementations rotates by one every round (``schedule``), so none always
    follows the same neighbour (the one whose caches or spinning threads it inherits);
  - before every window the parent sleeps ``settle_s``, longer than any library's spin-wait
    (Tyche's pool ~100 us, libgomp's GOMP_SPINCOUNT ~ms, TVM's pool ~ms, OpenBLAS's thread timeout
    2^28 cycles ~0.1 s), so the previous implementation's threads are asleep when the next
    starts; the CPU time every other worker process burns during a window is recorded
    (``foreign_cpu_s``), which shows it.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass
class Timed:
    name: str
    window: Callable[[int], float]  # window(calls) -> mean seconds per call over `calls` back-to-back calls
    cpu_seconds: Optional[Callable[[], float]] = None  # CPU time the implementation's process has used so far
    calls: int = 1
    rounds: int = 0
    seconds: list[float] = field(default_factory=list)
    # CPU seconds this implementation's process used while the others were timed, and the
    # window-seconds of those others' windows (the ratio: how much of a core it stole).
    foreign_cpu_s: float = 0.0
    foreign_window_s: float = 0.0

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
    # The fastest of three: one batch slowed by the host (a vCPU descheduled for ~20 ms after the
    # settle's idle) made C2D-2's windows 39 calls long instead of 30000.
    per_call = min(per_call, t.window(calls), t.window(calls))
    return max(1, int(window_s / max(per_call, 1e-12))), per_call


def schedule(rounds: list[int]) -> list[tuple[int, int]]:
    """The windows to run, as (round, implementation index): implementation i runs ``rounds[i]``
    rounds; round r visits them in the order rotated left by r (0 1 2, then 1 2 0, then 2 0 1...),
    skipping those whose rounds are done."""
    k = len(rounds)
    out = []
    for r in range(max(rounds, default=0)):
        for j in range(k):
            i = (r + j) % k
            if r < rounds[i]:
                out.append((r, i))
    return out


def measure_interleaved(timed: list[Timed], rounds: int, window_s: float, min_rounds: int = 3, settle_s: float = 0.0,
                        sleep: Callable[[float], None] = time.sleep) -> list[Timed]:
    """Calibrates each implementation's calls per window (after a warm-up call), then runs the
    rotated ``schedule``. Each window is preceded by ``settle_s`` of sleep and, for a fast
    implementation, by one untimed call that wakes its (sleeping) thread pool, so every window
    measures the steady state. An implementation whose single call is far longer than the window
    (the unscheduled floor of a big workload) gets fewer rounds (at least ``min_rounds``), so
    that it does not take more time than the others."""
    for t in timed:
        sleep(settle_s)
        t.window(1)  # warm-up: caches, thread pools, lazily packed weights
        t.calls, per_call = calls_per_window(t, window_s)
        per_round = per_call * t.calls
        t.rounds = max(min_rounds, min(rounds, int(rounds * window_s * 2 / max(per_round, 1e-9))))
    for _, i in schedule([t.rounds for t in timed]):
        t = timed[i]
        sleep(settle_s)
        others = [o for o in timed if o is not t and o.cpu_seconds is not None]
        before = [o.cpu_seconds() for o in others]
        if t.calls > 1:
            t.window(1)
        start = time.perf_counter()
        t.seconds.append(t.window(t.calls))
        elapsed = time.perf_counter() - start
        for o, b in zip(others, before):
            o.foreign_cpu_s += max(0.0, o.cpu_seconds() - b)
            o.foreign_window_s += elapsed
    return timed


def _resampled_ratio(rng: random.Random, over: list[float], under: list[float]) -> float:
    """One bootstrap sample of median(over) / median(under). Lists of equal length are windows of
    the same rounds, timed side by side: resampled by round, so a slow spell of the host stays
    paired; otherwise each list is resampled on its own."""
    if len(over) == len(under):
        idx = rng.choices(range(len(over)), k=len(over))
        return statistics.median(over[i] for i in idx) / statistics.median(under[i] for i in idx)
    return statistics.median(rng.choices(over, k=len(over))) / statistics.median(rng.choices(under, k=len(under)))


def bootstrap_ratio(over: list[float], under: list[float], samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% interval of median(over) / median(under) over resampled rounds."""
    rng = random.Random(seed)
    ratios = sorted(_resampled_ratio(rng, over, under) for _ in range(samples))
    return ratios[int(0.025 * samples)], ratios[int(0.975 * samples) - 1]


def bootstrap_geomean(pairs: list[tuple[list[float], list[float]]], samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% interval of the geometric mean over workloads of median(over) / median(under), every
    workload's rounds resampled in each sample."""
    rng = random.Random(seed)
    values = sorted(math.exp(sum(math.log(_resampled_ratio(rng, o, u)) for o, u in pairs) / len(pairs))
                    for _ in range(samples))
    return values[int(0.025 * samples)], values[int(0.975 * samples) - 1]
