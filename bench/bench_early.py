"""Fast early: how near each family's tune is, after 64, 128 and 256 trials, to the best it finds
by the end, with and without what starts it warm.

    PYTHONPATH=build/python python3 bench/bench_early.py --trials 1000 --threads 2 \\
        --json bench/results/early-CPU-DATE.json [--workloads C2D-3,TBG-3] [--variants cold,pretrained,default,warm] [--seeds 0,1,2]

Variants, each tuning the workload in a database of its own:
  cold        the cost model untrained (model="none"), no warm start: the first rounds are
              ranked at random, as before the pre-trained model;
  pretrained  the default cost model, pre-trained on bench/data (docs/cost_model.md), no warm start;
  default     tyche.tune's defaults: the pre-trained model, and the first batch led by the fastest
              programs of bench/data's shapes of the family, their decisions carried over
              (docs/tuning.md);
  warm        the same, in a database that already holds --neighbor-trials records of another
              shape of the family (preset 2 for preset 3, else preset 3), whose best programs
              lead instead.
For each: the fastest time measured by 64 / 128 / 256 / 512 / all trials (as measured while
tuning, the search's own figures), the share of the variant's own final best reached at 128
trials, against the cold variant's final best and, with --reference, against the best of a
suite run's 1000-trial tune (then --trials 128 is enough). Timing is the tuner's (one machine);
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
    db = os.path.join(work, f"{variant}-seed{a.seed}", name)
    options = dict(trials=a.trials, db=db, seed=a.seed, threads=a.threads, progress=False)
    if variant == "cold":
        options.update(model="none", warm_start=False)
    elif variant == "pretrained":
        options.update(warm_start=False)
    elif variant == "default":
        pass
    elif variant == "warm":
        other = neighbor(tyche, name)
        if other != name:
            tyche.tune(tyche.workload(other), trials=a.neighbor_trials, db=db, seed=a.seed, threads=a.threads, progress=False)
    else:
        raise SystemExit(f"bench_early: unknown variant '{variant}' (cold, pretrained, default, warm)")
    t0 = time.monotonic()
    r = tyche.tune(w, **options)
    wall = time.monotonic() - t0
    final = best_by(r.history, 1 << 30)
    row = {"workload": name, "variant": variant, "seed": a.seed, "flop": w.flop, "wall_s": wall, "model": r.model, "final_seconds": final,
           "by": {str(t): best_by(r.history, t) for t in CHECKPOINTS}, "history": r.history}
    return row


def gflops(flop: float, seconds: float | None) -> str:
    return f"{flop / seconds / 1e9:.1f}" if seconds else "—"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", help="comma-separated presets (default: one per family, <OP>-3)")
    p.add_argument("--variants", default="cold,pretrained,default,warm")
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--neighbor-trials", type=int, default=256)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--seeds", default="0", help="comma-separated tuning seeds, each a tune of its own (default 0)")
    p.add_argument("--work", help="databases (default: a temporary directory)")
    p.add_argument("--reference", metavar="SUITE_JSON",
                   help="a suite results file: each workload's Tyche best of its (1000-trial) tune is the target's "
                        "reference, so the variants can run --trials 128 only")
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args()
    import tyche

    names = [n.strip().upper() for n in a.workloads.split(",")] if a.workloads else [f"{op}-3" for op in tyche.op_names()]
    work = a.work or tempfile.mkdtemp(prefix="tyche_early_")
    rows = []
    print(f"{cpu_name()}, {a.threads} threads, {a.trials} trials; databases in {work}", file=sys.stderr)
    reference = {}
    if a.reference:
        with open(a.reference) as f:
            for e in json.load(f)["workloads"]:
                t = e.get("tuning", {}).get("tyche", {})
                if t.get("measured_best_seconds"):
                    reference[e["name"]] = t["measured_best_seconds"]
    head = ("| workload | variant | seed | " + " | ".join(f"by {t}" for t in CHECKPOINTS) +
            " | final | at 128 / own final | at 128 / cold final |" + (" at 128 / reference |" if a.reference else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    for name in names:
        for seed in seeds:
            a.seed = seed
            cold_final = None
            for variant in a.variants.split(","):
                row = tune_variant(tyche, name, variant.strip(), a, work)
                rows.append(row)
                if variant == "cold":
                    cold_final = row["final_seconds"]
                at128 = row["by"]["128"]
                own = f"{row['final_seconds'] / at128:.2f}" if at128 and row["final_seconds"] else "—"
                vs_cold = f"{cold_final / at128:.2f}" if at128 and cold_final else "—"
                ref = reference.get(name)
                row["reference_seconds"] = ref
                vs_ref = (f" {ref / at128:.2f} |" if at128 and ref else " — |") if a.reference else ""
                lines.append(f"| {name} | {variant} | {seed} | " +
                             " | ".join(gflops(row["flop"], row["by"][str(t)]) for t in CHECKPOINTS) +
                             f" | {gflops(row['flop'], row['final_seconds'])} | {own} | {vs_cold} |{vs_ref}")
                print(lines[-1], file=sys.stderr, flush=True)
                if a.json:
                    with open(a.json, "w") as f:
                        json.dump({"cpu": cpu_name(), "threads": a.threads, "trials": a.trials, "rows": rows}, f, indent=1)
    print("GFLOP/s of the fastest time measured by N trials (as timed while tuning)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
