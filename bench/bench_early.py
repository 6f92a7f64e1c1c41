"""Fast early: how near each family's tune is, after 64, 128 and 256 trials, to the best it finds
by the end, with and without what starts it warm.

    PYTHONPATH=build/python python3 bench/bench_early.py --trials 1000 --threads 2 \\
        --json bench/results/early-CPU-DATE.json [--workloads C2D-3,TBG-3] [--variants cold,pretrained,warm]

Variants, each tuning the workload in a database of its own:
  cold        the cost model untrained (model="none"), no warm start: the first rounds are
              ranked at random, as before the pre-trained model;
  pretrained  the default cost model, pre-trained on bench/data (docs/cost_model.md);
  warm        the same, in a database that already holds --neighbor-trials records of another
              shape of the family (preset 2 for preset 3, else preset 3), so the tune starts
              from their best programs with their decisions carried over (docs/tuning.md).
For each: the fastest time measured by 64 / 128 / 256 / 512 / all trials (as measured while
tuning, the search's own figures), the share of the variant's own final best reached at 128
trials, and against the cold variant's final best. Timing is the tuner's (one machine, one run);
a tune takes minutes per workload and variant: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import cpu_name  # noqa: E402

CHECKPOINTS = (64, 128, 256, 512)


def best_by(history: list[dict], trials: int) -> float | None:
    """The fastest time measured within the first `trials` trials (None before any ran)."""
    best = None
    for h in history:
        if h["trials"] > trials:
            break
        s = h.get("measured_best_seconds") or h.get("best_seconds") or 0
        if s > 0:
            best = s if best is None else min(best, s)
    return best


def neighbor(tyche, name: str) -> str:
    op, index = name.rsplit("-", 1)
    other = f"{op}-2" if index != "2" else f"{op}-3"
    return other if other in tyche.preset_names() else name


def tune_variant(tyche, name: str, variant: str, a, work: str) -> dict:
    w = tyche.workload(name)
    db = os.path.join(work, variant, name)
    options = dict(trials=a.trials, db=db, seed=a.seed, threads=a.threads, progress=False)
    if variant == "cold":
        options.update(model="none", warm_start=False)
    elif variant == "pretrained":
        options.update(warm_start=False)
    elif variant == "warm":
        other = neighbor(tyche, name)
        if other != name:
            tyche.tune(tyche.workload(other), trials=a.neighbor_trials, db=db, seed=a.seed, threads=a.threads, progress=False)
    else:
        raise SystemExit(f"bench_early: unknown variant '{variant}' (cold, pretrained, warm)")
    t0 = time.monotonic()
    r = tyche.tune(w, **options)
    wall = time.monotonic() - t0
    final = best_by(r.history, 1 << 30)
    row = {"workload": name, "variant": variant, "flop": w.flop, "wall_s": wall, "model": r.model, "final_seconds": final,
           "by": {str(t): best_by(r.history, t) for t in CHECKPOINTS}, "history": r.history}
    return row


def gflops(flop: float, seconds: float | None) -> str:
    return f"{flop / seconds / 1e9:.1f}" if seconds else "—"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", help="comma-separated presets (default: one per family, <OP>-3)")
    p.add_argument("--variants", default="cold,pretrained,warm")
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--neighbor-trials", type=int, default=256)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", help="databases (default: a temporary directory)")
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args()
    import tyche

    names = [n.strip().upper() for n in a.workloads.split(",")] if a.workloads else [f"{op}-3" for op in tyche.op_names()]
    work = a.work or tempfile.mkdtemp(prefix="tyche_early_")
    rows = []
    print(f"{cpu_name()}, {a.threads} threads, {a.trials} trials; databases in {work}", file=sys.stderr)
    head = "| workload | variant | " + " | ".join(f"by {t}" for t in CHECKPOINTS) + " | final | at 128 / own final | at 128 / cold final |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name in names:
        cold_final = None
        for variant in a.variants.split(","):
            row = tune_variant(tyche, name, variant.strip(), a, work)
            rows.append(row)
            if variant == "cold":
                cold_final = row["final_seconds"]
            at128 = row["by"]["128"]
            own = f"{row['final_seconds'] / at128:.2f}" if at128 and row["final_seconds"] else "—"
            vs_cold = f"{cold_final / at128:.2f}" if at128 and cold_final else "—"
            lines.append(f"| {name} | {variant} | " + " | ".join(gflops(row["flop"], row["by"][str(t)]) for t in CHECKPOINTS) +
                         f" | {gflops(row['flop'], row['final_seconds'])} | {own} | {vs_cold} |")
            print(lines[-1], file=sys.stderr, flush=True)
            if a.json:
                with open(a.json, "w") as f:
                    json.dump({"cpu": cpu_name(), "threads": a.threads, "trials": a.trials, "rows": rows}, f, indent=1)
    print("GFLOP/s of the fastest time measured by N trials (as timed while tuning)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
