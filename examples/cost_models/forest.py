"""A cost model written in Python: scikit-learn's random forest on Tyche's per-store features
(tyche.features), summed and maxed over a program's stores, learning each program's throughput
relative to the fastest of its task (1 for the fastest, 0 for a failure: the native model's
target). Until it has seen enough programs it scores at random.

    python3 examples/cost_models/forest.py [--workload GMM-3] [--trials 64]
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
from sklearn.ensemble import RandomForestRegressor

import tyche


def program_vector(rows: np.ndarray) -> np.ndarray:
    """One vector per program from its store rows: their sum and their maximum."""
    return np.concatenate([rows.sum(axis=0), rows.max(axis=0)])


class ForestModel(tyche.CostModel):
    def __init__(self, seed: int = 0, min_programs: int = 16, trees: int = 64):
        self.rng = np.random.default_rng(seed)
        self.seed, self.min_programs, self.trees = seed, min_programs, trees
        self.data: dict[str, tuple[list[np.ndarray], list[float | None]]] = {}  # per task: features, seconds
        self.forest: RandomForestRegressor | None = None

    def update(self, task: tyche.Task, traces: list[tyche.Trace], results: list[tyche.Result]) -> None:
        x, y = self.data.setdefault(task.workload, ([], []))
        x += [program_vector(f) for f in tyche.features(task, traces)]
        y += [r.seconds for r in results]
        xs, ys = [], []
        for fx, fy in self.data.values():
            best = min((s for s in fy if s), default=None)
            xs += fx
            ys += [best / s if s and best else 0.0 for s in fy]
        if len(xs) >= self.min_programs:
            self.forest = RandomForestRegressor(n_estimators=self.trees, random_state=self.seed, n_jobs=1)
            self.forest.fit(np.stack(xs), np.array(ys))

    def predict(self, task: tyche.Task, traces: list[tyche.Trace]) -> list[float]:
        if self.forest is None:
            return list(self.rng.random(len(traces)))
        x = np.stack([program_vector(f) for f in tyche.features(task, traces)])
        return list(self.forest.predict(x))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="GMM-3")
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--scale-down", action="store_true")
    p.add_argument("--quick", action="store_true", help="time each candidate briefly, a small population (tests)")
    a = p.parse_args()
    quick = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2, population=64) if a.quick else {}
    with tempfile.TemporaryDirectory() as db:
        r = tyche.tune(tyche.workload(a.workload, scale_down=a.scale_down), trials=a.trials, batch=a.batch, db=db,
                       cost_model=ForestModel(), progress=False, **quick)
    print(f"forest: {r} (model {r.model})")


if __name__ == "__main__":
    main()
