"""Whole models, Tyche against onnxruntime, in one process and one run.

    PYTHONPATH=build/python python3 bench/bench_models.py --models resnet50,mobilenetv2,bert_base \\
        --db-dir dbs --threads 2 --json bench/results/models.json

Each model is built by scripts/make_models.py (fixed seeds), compiled by Tyche with the best
records of DB_DIR/<model>.db (tasks without one run the default schedule; the count is printed)
and loaded by onnxruntime (CPU provider, all graph optimizations). Fair by construction:
  - the same explicit thread count for both (Tyche's pool, onnxruntime's intra-op threads, one
    inter-op thread);
  - interleaved rounds with the order rotated every round, so a slow spell of a shared host falls
    on both; each system keeps its own threads' spinning within its window (onnxruntime's default:
    turning it off made each of MobileNet-v2's ~100 operator launches wake a sleeping thread, 5.1
    against 3.2 ms), and the process sleeps 200 ms before each window, so every pool's spinning
    threads (Tyche's spin ~100 us, onnxruntime's a bounded count) have parked and steal nothing
    from the next system;
  - each window is a number of back-to-back calls calibrated to about --window seconds, after
    one untimed call;
  - the ratio is Tyche's median over onnxruntime's, with a 95% bootstrap interval (rounds
    resampled with replacement);
  - FLOPs are the tasks' own counts (padding taps of convolutions included: a model is the same
    work for both, so the ratio does not depend on them; GFLOP/s is shown only as a guide).
With --agreement N, the top-1 class of the first output is compared on N more fixed inputs (seeds
100..) and the number of classes onnxruntime predicted among them is stated. The tuning gap is stated for Tyche: the tuner's estimate (sum over tasks of weight x best
measured latency, from tune-model's JSON when --tune-json-dir has it) against the whole model
timed here; onnxruntime is not tuned. With --tvm-dir, TVM's model tuned by bench/suitelib/tvm_model.py
runs as a third system in the same rotation (its tuner estimate and gap stated too).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import random
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


def cpu_name() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def window(fn, calls: int) -> float:
    fn()  # untimed: wakes the thread pool
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def calibrate(fn, seconds: float) -> int:
    per_call = window(fn, 1)
    return max(1, int(seconds / max(per_call, 1e-9)))


def bootstrap_ratio(a: list[float], b: list[float], samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(a)
    ratios = []
    for _ in range(samples):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(a[i] for i in idx) / statistics.median(b[i] for i in idx))
    ratios.sort()
    return ratios[int(0.025 * samples)], ratios[int(0.975 * samples) - 1]


def load_tvm(args, name: str):
    """TVM's tuned model (suitelib/tvm_model.py's work dir TVM_DIR/<model>), or None."""
    if not args.tvm_dir or not (pathlib.Path(args.tvm_dir) / name / "model.so").exists():
        return None
    sys.path.insert(0, str(ROOT / "bench" / "suitelib"))
    import tvm_model

    return tvm_model.TvmModel(str(pathlib.Path(args.tvm_dir) / name), threads=args.threads)


def bench_model(name: str, args, tyche, ort, make_models) -> dict:
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / f"{name}.onnx"
        onnx.save(make_models.build_model(name), str(path))
        inputs = make_models.example_inputs(name, seed=1)
        db = pathlib.Path(args.db_dir) / f"{name}.db" if args.db_dir else None
        t = time.perf_counter()
        compiled = tyche.onnx.compile(str(path), db=str(db) if db and db.is_dir() else None, threads=args.threads)
        compile_s = time.perf_counter() - t
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        reference = session.run(None, inputs)
        got = compiled(inputs)
        diff = max(float(np.abs(got[o.name] - r).max() / max(np.abs(r).max(), 1e-6))
                   for o, r in zip(session.get_outputs(), reference))
        systems = {"tyche": lambda: compiled(inputs), "onnxruntime": lambda: session.run(None, inputs)}
        tvm_model = load_tvm(args, name)
        tvm_diff = None
        if tvm_model is not None:
            got_tvm = tvm_model.run(inputs)
            tvm_diff = max(float(np.abs(g - r).max() / max(np.abs(r).max(), 1e-6)) for g, r in zip(got_tvm, reference))
            systems["tvm"] = lambda: tvm_model.run(inputs)
        calls = {k: calibrate(fn, args.window) for k, fn in systems.items()}
        seconds = {k: [] for k in systems}
        order = list(systems)
        for r in range(args.rounds):
            shift = r % len(order)
            for k in order[shift:] + order[:shift]:
                time.sleep(0.2)  # every pool's spinning threads park before the next system runs
                seconds[k].append(window(systems[k], calls[k]))
        ratio = statistics.median(seconds["tyche"]) / statistics.median(seconds["onnxruntime"])
        lo, hi = bootstrap_ratio(seconds["tyche"], seconds["onnxruntime"])
        gflop = sum(t["gflop"] * t["weight"] for t in compiled.tasks)
        estimate = None
        if args.tune_json_dir:
            f = pathlib.Path(args.tune_json_dir) / f"{name}.json"
            if f.exists():
                estimate = json.loads(f.read_text()).get("estimated_latency_ms")
        row = {
            "model": name, "threads": args.threads, "rounds": args.rounds, "gflop": gflop,
            "tyche_ms": statistics.median(seconds["tyche"]) * 1e3, "onnxruntime_ms": statistics.median(seconds["onnxruntime"]) * 1e3,
            "ratio": ratio, "ratio_ci95": [lo, hi], "tyche_cv": statistics.pstdev(seconds["tyche"]) / statistics.fmean(seconds["tyche"]),
            "onnxruntime_cv": statistics.pstdev(seconds["onnxruntime"]) / statistics.fmean(seconds["onnxruntime"]),
            "tasks": len(compiled.tasks), "tasks_tuned": compiled.tasks_tuned, "arena_bytes": compiled.arena_bytes,
            "naive_bytes": compiled.naive_bytes, "compile_s": compile_s, "max_rel_diff": diff,
            "tuner_estimate_ms": estimate,
        }
        if args.agreement > 0 and len(reference[0].shape) == 2:
            # Top-1 of the first output on fixed inputs (seeds 100, 101, ...), and how many classes
            # onnxruntime predicts among them (agreement on one class every time says little).
            same, classes = 0, set()
            for k in range(args.agreement):
                x = make_models.example_inputs(name, seed=100 + k)
                want = session.run(None, x)[0].argmax()
                same += int(compiled(x)[session.get_outputs()[0].name].argmax() == want)
                classes.add(int(want))
            row["top1_agreement"] = same / args.agreement
            row["agreement_inputs"] = args.agreement
            row["onnxruntime_classes"] = len(classes)
        if tvm_model is not None:
            row["tvm_ms"] = statistics.median(seconds["tvm"]) * 1e3
            row["tyche_over_tvm"] = statistics.median(seconds["tyche"]) / statistics.median(seconds["tvm"])
            row["tyche_over_tvm_ci95"] = list(bootstrap_ratio(seconds["tyche"], seconds["tvm"]))
            row["tvm_over_onnxruntime"] = statistics.median(seconds["tvm"]) / statistics.median(seconds["onnxruntime"])
            row["tvm_max_rel_diff"] = tvm_diff
            row["tvm_tune"] = {k: tvm_model.result.get(k) for k in ("trials", "tasks", "wall_s", "estimated_latency_ms", "tvm_version")}
        return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="resnet_small,mobilenet_small,bert_small")
    p.add_argument("--db-dir", default="", help="directory of <model>.db tuning databases")
    p.add_argument("--tune-json-dir", default="", help="directory of <model>.json written by tune-model --json")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--window", type=float, default=0.3, help="seconds of back-to-back calls per window")
    p.add_argument("--json", default="")
    p.add_argument("--agreement", type=int, default=0,
                   help="top-1 agreement with onnxruntime on this many fixed inputs (classifiers)")
    p.add_argument("--tvm-dir", default="", help="TVM's tuned models (bench/suitelib/tvm_model.py tune --work-dir TVM_DIR/<model>)")
    args = p.parse_args()
    import onnxruntime as ort
    import make_models
    import tyche

    print(f"{cpu_name()} ({tyche.cpu()}), {args.threads} threads, onnxruntime {ort.__version__}")
    print(f"{'model':<16} {'tyche ms':>9} {'ort ms':>9} {'ratio':>6} {'95% CI':>15} {'tuned':>7} {'arena MiB':>10} {'naive MiB':>10} "
          f"{'compile s':>9}  tuner estimate")
    rows = []
    for name in args.models.split(","):
        r = bench_model(name, args, tyche, ort, make_models)
        rows.append(r)
        est = f"{r['tuner_estimate_ms']:.3f} ms (gap {r['tyche_ms'] / r['tuner_estimate_ms']:.2f}x)" if r["tuner_estimate_ms"] else "-"
        print(f"{name:<16} {r['tyche_ms']:>9.3f} {r['onnxruntime_ms']:>9.3f} {r['ratio']:>6.2f} "
              f"[{r['ratio_ci95'][0]:>5.2f}, {r['ratio_ci95'][1]:>5.2f}] {r['tasks_tuned']:>3}/{r['tasks']:<3} "
              f"{r['arena_bytes'] / 2**20:>10.2f} {r['naive_bytes'] / 2**20:>10.2f} {r['compile_s']:>9.2f}  {est}")
        print(f"{'':<16} max rel diff {r['max_rel_diff']:.1e}" + (
            f"; top-1 agreement {r['top1_agreement']:.0%} on {r['agreement_inputs']} inputs "
            f"({r['onnxruntime_classes']} classes predicted)" if "top1_agreement" in r else ""))
        if "tvm_ms" in r:
            t = r["tvm_tune"]
            tvm_est = t["estimated_latency_ms"]
            print(f"{'':<16} TVM {r['tvm_ms']:.3f} ms after {t['trials']} trials ({t['wall_s']:.0f} s): Tyche / TVM = "
                  f"{r['tyche_over_tvm']:.2f} [{r['tyche_over_tvm_ci95'][0]:.2f}, {r['tyche_over_tvm_ci95'][1]:.2f}], "
                  f"TVM / onnxruntime = {r['tvm_over_onnxruntime']:.2f}; TVM's tuner estimate {tvm_est:.3f} ms "
                  f"(gap {r['tvm_ms'] / tvm_est:.2f}x), max rel diff {r['tvm_max_rel_diff']:.1e}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"cpu": f"{cpu_name()} ({tyche.cpu()})", "threads": args.threads, "models": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
