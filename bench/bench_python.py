"""What the Python package costs over the native library, measured in one run on this host:

1. a kernel call from Python (argument checks, DLPack import, GIL release) against the same
   kernel timed natively (kernel.time), on a tiny kernel and on GMM-3;
2. an argument that must be staged (not 64-byte aligned) against one passed as it is;
3. tyche.tune from Python against the `tyche tune` command, same workload, trials and seed,
   interleaved (A B A B): wall time and the best kernel found.

    PYTHONPATH=build-test/python python3 bench/bench_python.py [--trials 64] [--tyche build-test/tools/tyche]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import tyche

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
from gmm_hand_schedule import schedule_gmm  # noqa: E402


def python_call_seconds(kernel, args, min_seconds=0.5):
    """Median over 5 windows of the mean time of back-to-back Python calls."""
    windows = []
    for _ in range(5):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < min_seconds / 5:
            kernel(*args)
            n += 1
        windows.append((time.perf_counter() - start) / n)
    return sorted(windows)[2]


def call_overhead(name, kernel, args):
    native = kernel.time(*args, repeat=5, min_repeat_ms=100).median
    py = python_call_seconds(kernel, args)
    print(f"  {name}: native {native * 1e6:.2f} us, from Python {py * 1e6:.2f} us per call: "
          f"{py / native:.3f}x ({(py - native) * 1e6:+.2f} us)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--workload", default="GMM-1")
    p.add_argument("--tyche", default=os.path.join("build-test", "tools", "tyche"))
    args = p.parse_args()
    print(f"CPU: {tyche.cpu()}, {tyche.num_threads()} threads")

    print("1. kernel calls")
    tiny = tyche.build(tyche.formula("B[i] = A[i] * 2", i=256))
    call_overhead("B[i] = A[i] * 2, i=256", tiny, (tyche.zeros(256), tyche.zeros(256)))
    w = tyche.workload("GMM-3")
    sch = tyche.Schedule(w)
    schedule_gmm(sch)
    gmm = tyche.build(sch)
    x, y = w.inputs()
    z = tyche.empty((1, 512, 512))
    call_overhead("GMM-3 hand schedule", gmm, (x, y, z))

    print("2. an unaligned output, staged through an aligned copy")
    raw = tyche.empty(512 * 512 + 1)
    unaligned = raw[1:].reshape(1, 512, 512)
    aligned = python_call_seconds(gmm, (x, y, z))
    staged = python_call_seconds(gmm, (x, y, unaligned))
    print(f"  GMM-3: aligned {aligned * 1e3:.3f} ms, staged {staged * 1e3:.3f} ms: {staged / aligned:.3f}x")

    print(f"3. tuning {args.workload} for {args.trials} trials, seed 0: the CLI against tyche.tune, interleaved")
    results = {"cli": [], "python": []}
    for rnd in range(2):
        for who in ("cli", "python"):
            with tempfile.TemporaryDirectory() as db:
                start = time.perf_counter()
                if who == "cli":
                    out = os.path.join(db, "r.json")
                    subprocess.run([args.tyche, "tune", args.workload, "--trials", str(args.trials), "--db", db,
                                    "--seed", "0", "--json", out], check=True, capture_output=True)
                    with open(out) as f:
                        best = json.load(f)["best_latency_s"]
                else:
                    r = tyche.tune(tyche.workload(args.workload), trials=args.trials, db=db, seed=0, progress=False)
                    best = r.best_seconds
                wall = time.perf_counter() - start
            results[who].append((wall, best))
            print(f"  round {rnd + 1}, {who:6}: {wall:6.1f} s wall, best {best * 1e3:.4f} ms")
    cli_wall = sum(r[0] for r in results["cli"]) / 2
    py_wall = sum(r[0] for r in results["python"]) / 2
    cli_best = min(r[1] for r in results["cli"])
    py_best = min(r[1] for r in results["python"])
    print(f"  wall time Python / CLI: {py_wall / cli_wall:.3f}x; best kernel Python / CLI: {py_best / cli_best:.3f}x")


if __name__ == "__main__":
    main()
