"""Fast early: how near each family's tune is, after 64, 128 and 256 trials, to the best it finds
by the end, with and without what starts it warm.

    PYTHONPATH=build/python python3 bench/bench_early.py --trials 1000 --threads 2 \\
        --json bench/results/early-CPU-DATE.json [--workloads C2D-3,TBG-3] [--variants cold,pretrained,default,warm] [--seeds 0,1,2]
        [--reference bench/results/SUITE.json [--retime]]

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
suite run's 1000-trial tune (then --trials 128 is enough). With --retime, the tune's best program
(after its leaders are confirmed) and the reference's best program are also timed against each
other, interleaved in one process with the order rotated (the suite's measure.py), the ratio with
a bootstrap 95 % interval: the fastest time seen while tuning is the minimum of many noisy timings,
so for a kernel of a few microseconds (DEP-3) a tune of more trials looks faster by luck alone.
The by-N figures are the tuner's timing (one machine); a tune takes minutes per workload and
variant: run it on an otherwise idle machine.
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
           "by": {str(t): best_by(r.history, t) for t in CHECKPOINTS}, "history": r.history,
           "best_seconds": r.best_seconds, "best_trace": str(r.best_trace) if r.best_trace else None}
    return row


def retime(tyche, name: str, early_trace: str, reference_trace: str, rounds: int, window_s: float) -> dict:
    """The early best against the reference best, interleaved in this process: median seconds of
    each, and the ratio reference / early with its bootstrap 95 % interval."""
    from suitelib.implementations import aligned_copies, tyche_kernel
    from suitelib.measure import Timed, bootstrap_ratio, measure_interleaved

    w = tyche.workload(name)
    inputs = aligned_copies(w.inputs())
    timed = []
    for label, text in (("early", early_trace), ("reference", reference_trace)):
        sch = tyche.Schedule(w.func)
        tyche.Trace.parse(text).apply_to(sch)
        impl = tyche_kernel(label, tyche.build(sch), inputs, w.func)
        timed.append(Timed(label, impl.window))
    measure_interleaved(timed, rounds, window_s, settle_s=0.01)
    early, ref = timed
    lo, hi = bootstrap_ratio(ref.seconds, early.seconds)
    return {"early_seconds": early.median, "reference_seconds": ref.median, "ratio": ref.median / early.median,
            "interval": [lo, hi], "rounds": len(early.seconds)}


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
    p.add_argument("--retime", action="store_true",
                   help="with --reference: time each tune's best against the reference's best program, interleaved "
                        "in one process (the ratio and its bootstrap interval)")
    p.add_argument("--retime-rounds", type=int, default=21)
    p.add_argument("--retime-window", type=float, default=0.1, help="seconds per timing window")
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args()
    import tyche

    names = [n.strip().upper() for n in a.workloads.split(",")] if a.workloads else [f"{op}-3" for op in tyche.op_names()]
    work = a.work or tempfile.mkdtemp(prefix="tyche_early_")
    rows = []
    print(f"{cpu_name()}, {a.threads} threads, {a.trials} trials; databases in {work}", file=sys.stderr)
    if a.retime and not a.reference:
        raise SystemExit("bench_early: --retime needs --reference (the suite results whose best programs it times against)")
    reference, reference_trace = {}, {}
    if a.reference:
        with open(a.reference) as f:
            for e in json.load(f)["workloads"]:
                t = e.get("tuning", {}).get("tyche", {})
                if t.get("measured_best_seconds"):
                    reference[e["name"]] = t["measured_best_seconds"]
                if t.get("best_trace"):
                    reference_trace[e["name"]] = t["best_trace"]
    head = ("| workload | variant | seed | " + " | ".join(f"by {t}" for t in CHECKPOINTS) +
            " | final | at 128 / own final | at 128 / cold final |" + (" at 128 / reference |" if a.reference else "") +
            (" retimed: reference / best [95 %] |" if a.retime else ""))
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
                if a.retime:
                    if row.get("best_trace") and name in reference_trace:
                        row["retimed"] = retime(tyche, name, row["best_trace"], reference_trace[name], a.retime_rounds, a.retime_window)
                        x = row["retimed"]
                        vs_ref += f" {x['ratio']:.2f} [{x['interval'][0]:.2f}, {x['interval'][1]:.2f}] |"
                    else:
                        vs_ref += " — |"
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
