"""Measuring on Ray: trials per minute with the local runner and with 1 and 2 Ray nodes (a
ray.cluster_utils.Cluster on this machine, one CPU per node), the same workload, strategy and
budget each; and the driver's cost per trial, from which the number of nodes at which the driver
becomes the bottleneck follows.

    PYTHONPATH=build/python python3 bench/bench_ray.py [--workload GMM-3] [--trials 128] [--json OUT]

The loop is sequential: each batch is searched on the driver (search, cost model, database: d
seconds per trial), then measured on the nodes (build and run: m seconds per trial on one node,
from the local run). With N nodes a trial costs about d + m / N, so the driver is the bottleneck
from N = m / d nodes on. On one machine the nodes share its cores with each other and the driver,
so 2 nodes here show the mechanism's overhead, not a cluster's speed-up.
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


def run(tyche, workload, trials: int, batch: int, runner, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as db:
        t = time.perf_counter()
        r = tyche.tune(workload, trials=trials, batch=batch, db=db, runner=runner, seed=seed, warm_start=False, progress=False,
                       confirm_top=0)
        wall = time.perf_counter() - t
    driver = r.times.get("search", 0) + r.times.get("model", 0) + r.times.get("database", 0)
    return dict(trials=r.trials, wall_s=wall, trials_per_minute=60 * r.trials / wall, best_seconds=r.best_seconds,
                driver_s_per_trial=driver / max(1, r.trials),
                measure_s_per_trial=(r.times.get("build", 0) + r.times.get("run", 0)) / max(1, r.trials),
                resent=getattr(runner, "resent", 0))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="GMM-3")
    p.add_argument("--trials", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    a = p.parse_args()
    import ray
    from ray.cluster_utils import Cluster
    import tyche
    import tyche.ray
    w = tyche.workload(a.workload)
    rows = {"local": run(tyche, w, a.trials, a.batch, None, a.seed)}
    for nodes in (1, 2):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        try:
            rows[f"ray-{nodes}"] = run(tyche, w, a.trials, a.batch, tyche.ray.RayRunner(address=cluster.address), a.seed)
        finally:
            ray.shutdown()
            cluster.shutdown()
    local = rows["local"]
    d, m = local["driver_s_per_trial"], local["measure_s_per_trial"]
    print(f"{cpu_name()}: {a.workload}, {a.trials} trials, batch {a.batch}")
    print("| runner | trials/min | wall s | driver s/trial | measure s/trial (as the driver waits) |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['trials_per_minute']:.0f} | {r['wall_s']:.1f} | {r['driver_s_per_trial'] * 1e3:.1f} ms | "
              f"{r['measure_s_per_trial'] * 1e3:.1f} ms |")
    bottleneck = m / d if d > 0 else float("inf")
    print(f"model: a trial costs d + m / N with d = {d * 1e3:.1f} ms (driver) and m = {m * 1e3:.1f} ms (one node); "
          f"the driver is the bottleneck from N = m / d = {bottleneck:.1f} nodes on")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_name(), "workload": a.workload, "trials": a.trials, "batch": a.batch, "rows": rows,
                       "driver_s_per_trial": d, "node_s_per_trial": m, "bottleneck_nodes": bottleneck}, f, indent=1)


if __name__ == "__main__":
    main()
