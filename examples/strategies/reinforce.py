"""A policy-gradient (REINFORCE) search strategy: a categorical distribution over the design
spaces and, per space, one over each decision's values (those seen in fresh samples:
decision_space.py). Programs are drawn from the policy; each measured one moves the policy
towards its choices in proportion to how much faster than the running baseline it ran.

    python3 examples/strategies/reinforce.py [--workload GMM-3] [--trials 64]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

import numpy as np

import tyche

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decision_space import DecisionSpace  # noqa: E402


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()


class ReinforceStrategy(tyche.SearchStrategy):
    def __init__(self, seed: int = 0, pool: int = 256, learning_rate: float = 0.5, baseline_decay: float = 0.9):
        self.rng = np.random.default_rng(seed)
        self.seed, self.pool, self.lr, self.decay = seed, pool, learning_rate, baseline_decay

    def initialize(self, task: tyche.Task) -> None:
        super().initialize(task)
        self.space = DecisionSpace(task, self.pool, self.seed)
        self.space_logits = np.zeros(len(self.space.spaces))
        self.logits = [[np.zeros(len(c)) for c in s.choices] for s in self.space.spaces]
        self.drawn: dict[str, tuple[int, list[int]]] = {}  # trace text -> (space, picks)
        self.baseline: float | None = None

    def generate(self, n: int) -> list[tyche.Trace]:
        self.drawn.clear()
        out = []
        for _ in range(4 * n):  # repeats and refusals are skipped; stop at n distinct proposals
            if len(out) == n:
                break
            s = int(self.rng.choice(len(self.space_logits), p=softmax(self.space_logits)))
            picks = [int(self.rng.choice(len(l), p=softmax(l))) for l in self.logits[s]]
            trace = self.space.trace(s, picks)
            if str(trace) not in self.drawn:
                self.drawn[str(trace)] = (s, picks)
                out.append(trace)
        return out

    def notify(self, traces: list[tyche.Trace], results: list[tyche.Result]) -> None:
        rewards = [(self.drawn.get(str(t)), -math.log(r.seconds) if r.ok else None) for t, r in zip(traces, results)]
        ran = [rw for _, rw in rewards if rw is not None]
        if not ran:
            return
        floor = min(ran) - 1.0  # a failure: worse than anything that ran
        mean = float(np.mean(ran))
        self.baseline = mean if self.baseline is None else self.decay * self.baseline + (1 - self.decay) * mean
        scale = float(np.std(ran)) or 1.0
        for drawn, reward in rewards:
            if drawn is None:
                continue
            advantage = ((reward if reward is not None else floor) - self.baseline) / scale
            s, picks = drawn
            self._step(self.space_logits, s, advantage)
            for logits, p in zip(self.logits[s], picks):
                self._step(logits, p, advantage)

    def _step(self, logits: np.ndarray, chosen: int, advantage: float) -> None:
        """One policy-gradient step on a categorical: d log p(chosen) / d logits = onehot - p."""
        grad = -softmax(logits)
        grad[chosen] += 1.0
        logits += self.lr * advantage * grad / max(1, len(self.drawn))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="GMM-3")
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--scale-down", action="store_true")
    p.add_argument("--quick", action="store_true", help="time each candidate briefly (tests)")
    a = p.parse_args()
    quick = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2) if a.quick else {}
    with tempfile.TemporaryDirectory() as db:
        r = tyche.tune(tyche.workload(a.workload, scale_down=a.scale_down), trials=a.trials, batch=a.batch, db=db,
                       strategy=ReinforceStrategy(), progress=False, **quick)
    print(f"reinforce: {r}")


if __name__ == "__main__":
    main()
