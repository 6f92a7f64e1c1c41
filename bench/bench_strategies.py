"""Search strategies written in Python against the native ones: the Bayesian-optimization and
REINFORCE examples (examples/strategies) against `evolutionary` and `replay-trace`, each tuning
the same workloads in a database of its own; the fastest time measured by 64, 128 and 256 trials
(and at the end), and the seconds per trial spent in Python (the strategy's own calls).

    PYTHONPATH=build/python python3 bench/bench_strategies.py --workloads GMM-3,C2D-3 --trials 256 \\
        --threads 2 --json bench/results/strategies-CPU-DATE.json

The by-N figures are the tuner's own timings (the fastest measured so far, on one machine); every
strategy runs with the same thread count, the pre-trained cost model where it uses one, and no
warm start (so the first batch is each strategy's own). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples", "strategies"))
from bench_early import best_by  # noqa: E402
from bench_models import cpu_name  # noqa: E402

CHECKPOINTS = (64, 128, 256)


def timed(strategy):
    """Wraps the strategy's methods to add up the seconds spent in them."""
    strategy.python_s = 0.0
    for name in ("initialize", "generate", "notify"):
        method = getattr(strategy, name)

        def wrapper(*args, _m=method, **kwargs):
            t = time.perf_counter()
            try:
                return _m(*args, **kwargs)
            finally:
                strategy.python_s += time.perf_counter() - t

        setattr(strategy, name, wrapper)
    return strategy


def make_strategy(name: str, seed: int):
    if name == "bayesian":
        import optuna
        from bayesian import BayesianStrategy
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        return timed(BayesianStrategy(seed=seed))
    if name == "reinforce":
        from reinforce import ReinforceStrategy
        return timed(ReinforceStrategy(seed=seed))
    return name


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="GMM-3,C2D-3")
    p.add_argument("--strategies", default="evolutionary,replay-trace,bayesian,reinforce")
    p.add_argument("--trials", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args()
    import tyche
    tyche.set_num_threads(a.threads)
    rows = []
    print(f"{cpu_name()}, {a.threads} threads, {a.trials} trials, batch {a.batch}")
    print("| workload | strategy | " + " | ".join(f"GFLOP/s by {n}" for n in CHECKPOINTS) + " | final | Python s/trial | wall s |")
    print("|---|---|" + "---|" * (len(CHECKPOINTS) + 3))
    for name in a.workloads.split(","):
        w = tyche.workload(name)
        for sname in a.strategies.split(","):
            strategy = make_strategy(sname, a.seed)
            with tempfile.TemporaryDirectory() as db:
                t = time.perf_counter()
                r = tyche.tune(w, trials=a.trials, batch=a.batch, db=db, strategy=strategy, seed=a.seed, threads=a.threads,
                               warm_start=False, progress=False)
                wall = time.perf_counter() - t
            python_s = getattr(strategy, "python_s", 0.0)
            by = {n: best_by(r.history, n) for n in CHECKPOINTS}
            row = dict(workload=name, strategy=sname, flop=r.flop, trials=r.trials, failed=r.failed, wall_s=wall,
                       python_s_per_trial=python_s / max(1, r.trials), final_seconds=r.best_seconds,
                       by={str(n): s for n, s in by.items()}, history=r.history)
            rows.append(row)
            gf = lambda s: f"{r.flop / s / 1e9:.1f}" if s else "—"  # noqa: E731
            print(f"| {name} | {sname} | " + " | ".join(gf(by[n]) for n in CHECKPOINTS) +
                  f" | {gf(r.best_seconds)} | {row['python_s_per_trial'] * 1e3:.1f} ms | {wall:.0f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_name(), "threads": a.threads, "trials": a.trials, "batch": a.batch, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
