"""Bayesian optimization over a task's decisions, as a Tyche search strategy: optuna's TPE sampler
proposes a design space and a value for each of its decisions (among those seen in fresh
samples: decision_space.py), and learns from the measured log-time of each proposal.

    python3 examples/strategies/bayesian.py [--workload GMM-3] [--trials 64]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import warnings

import optuna

import tyche

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decision_space import DecisionSpace  # noqa: E402


class BayesianStrategy(tyche.SearchStrategy):
    def __init__(self, seed: int = 0, pool: int = 256, startup: int = 16):
        self.seed, self.pool, self.startup = seed, pool, startup

    def initialize(self, task: tyche.Task) -> None:
        super().initialize(task)
        self.space = DecisionSpace(task, self.pool, self.seed)
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=self.startup, multivariate=True, group=True)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.pending: dict[str, optuna.trial.Trial] = {}  # trace text -> the optuna trial that proposed it
        self.worst = 0.0

    def generate(self, n: int) -> list[tyche.Trace]:
        self._fail_unmeasured()
        out = []
        for _ in range(n):
            trial = self.study.ask()
            s = trial.suggest_categorical("space", list(range(len(self.space.spaces))))
            picks = [trial.suggest_categorical(f"s{s}.d{k}", list(range(len(c))))
                     for k, c in enumerate(self.space.spaces[s].choices)]
            trace = self.space.trace(s, picks)
            key = str(trace)
            if key in self.pending:  # proposed twice in this batch: one measurement serves both
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            self.pending[key] = trial
            out.append(trace)
        return out

    def notify(self, traces: list[tyche.Trace], results: list[tyche.Result]) -> None:
        for trace, result in zip(traces, results):
            trial = self.pending.pop(str(trace), None)
            if trial is None:
                continue
            if result.ok:
                value = math.log(result.seconds)
                self.worst = max(self.worst, value) if self.worst else value
                self.study.tell(trial, value)
            else:
                self.study.tell(trial, self.worst + 1.0)  # a failure: worse than anything that ran

    def _fail_unmeasured(self) -> None:
        """Proposals the tuner dropped (refused by the postprocessors, or measured before) are
        never notified: they are failures to TPE."""
        for trial in self.pending.values():
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        self.pending.clear()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="GMM-3")
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--scale-down", action="store_true")
    p.add_argument("--quick", action="store_true", help="time each candidate briefly (tests)")
    a = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # multivariate TPE
    quick = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2) if a.quick else {}
    with tempfile.TemporaryDirectory() as db:
        r = tyche.tune(tyche.workload(a.workload, scale_down=a.scale_down), trials=a.trials, batch=a.batch, db=db,
                       strategy=BayesianStrategy(), progress=False, **quick)
    print(f"bayesian: {r}")


if __name__ == "__main__":
    main()
