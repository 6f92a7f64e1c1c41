"""Measuring a tune's programs on a Ray cluster.

``tyche.tune(..., runner=tyche.ray.RayRunner(address))`` keeps the search on the driver (this
process) and measures every batch on the cluster's nodes: one actor per node (``workers_per_node``)
receives a share of the batch as trace text, and replays, builds, runs and checks it with the
node's own isolated worker, one program at a time; the records come back as database lines and
the driver writes them, once per batch. A node that dies mid-batch has its share re-sent to the
others. Every node must be the machine the driver's target describes (same CPU, features and
cores, the records' target): a node that differs is refused at the start. The leaders'
confirmation goes to one node, so that they are compared on one machine.

The nodes rebuild the workload from its recipe: a preset's family and parameters, a formula and
its extents, or, for ``tyche.onnx.tune(..., runner=...)``, the model (sent once to the object
store, imported once per node) and the task's hash. A program written in Python (TE, a PrimFunc)
cannot be measured remotely.

    python -m tyche.ray tune GMM-3 --address HOST:6379 --trials 256 --db DIR
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from typing import Any, Optional

from . import _tyche

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tyche-worker")


def recipe_of(workload: Any) -> dict:
    """What a node rebuilds ``workload`` from."""
    if isinstance(workload, _tyche.Workload):
        if workload.op == "index_notation":
            return {"formula": workload.name, "extents": workload.shape, "dtypes": workload.dtypes}
        if workload.op in _tyche.op_names():
            return {"op": workload.op, "params": list(workload.params), "precision": workload.precision}
    raise _tyche.InputError("RayRunner: the nodes rebuild the workload from its recipe, so it must be a preset "
                            "(tyche.workload) or a formula (tyche.formula), not a program made in Python")


def _check_reachable(address: Optional[str], timeout_s: float = 5.0) -> None:
    """A cluster address that answers no TCP connection is refused at once: Ray itself retries
    such an address for minutes."""
    if not address or address == "auto" or address.startswith("local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as e:
        raise _tyche.TycheError(f"cannot reach the Ray cluster at {address}: {e}") from None


class _NodeMeasurer:
    """The actor on each node: measures what the driver sends, with this node's tyche-worker."""

    def describe(self, target: str) -> tuple[str, str]:
        return socket.gethostname(), _tyche.target_key(target)

    def measure(self, recipe: dict, workload: dict, traces: list[str], options: dict) -> list[str]:
        options = dict(options, worker=os.environ.get("TYCHE_WORKER", _WORKER))
        if "onnx_ref" in recipe:  # the model's bytes, in the object store: fetched here, imported once
            import ray
            recipe = {k: v for k, v in recipe.items() if k != "onnx_ref"} | {"onnx_bytes": ray.get(recipe["onnx_ref"][0])}
        return _tyche.measure_traces(recipe, workload, traces, options)


class RayRunner:
    """Measures on the Ray cluster at ``address`` (None: the one this process is connected to, or
    a local one started for it)."""

    def __init__(self, address: Optional[str] = None, workers_per_node: int = 1, num_cpus_per_worker: float = 1):
        if workers_per_node < 1:
            raise _tyche.InputError("RayRunner: workers_per_node must be at least 1")
        self.address, self.workers_per_node, self.num_cpus_per_worker = address, workers_per_node, num_cpus_per_worker
        self.actors: list[Any] = []
        self.resent = 0  # programs re-sent because their node died

    def start(self, target: str = "llvm") -> None:
        """Connects, starts the actors and checks every node against the driver's target."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        _check_reachable(self.address)
        if ray.is_initialized():
            connected = ray.get_runtime_context().gcs_address
            if self.address and self.address != "auto" and self.address.removeprefix("ray://") != connected:
                raise _tyche.TycheError(f"RayRunner: this process is connected to the Ray cluster at {connected}, not {self.address}")
        else:
            try:
                ray.init(address=self.address, log_to_driver=False, include_dashboard=False, logging_level="error")
            except Exception as e:  # ConnectionError, TimeoutError, ValueError: all "cannot reach"
                raise _tyche.TycheError(f"cannot reach the Ray cluster at {self.address or 'auto'}: {str(e).splitlines()[0]}") from None
        actor_class = ray.remote(num_cpus=self.num_cpus_per_worker, max_restarts=0)(_NodeMeasurer)
        # As many actors as a node has CPUs for (at most workers_per_node): one that cannot be
        # placed would wait forever.
        self.actors = []
        for n in ray.nodes():
            fits = int(n.get("Resources", {}).get("CPU", 0) // self.num_cpus_per_worker) if self.num_cpus_per_worker > 0 else self.workers_per_node
            if n.get("Alive"):
                self.actors += [actor_class.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
                                for _ in range(min(self.workers_per_node, fits))]
        if not self.actors:
            raise _tyche.TycheError(f"RayRunner: no node of the cluster has {self.num_cpus_per_worker} CPU free for a measuring actor")
        want = _tyche.target_key(target)
        try:
            described = ray.get([a.describe.remote(target) for a in self.actors], timeout=300)
        except ray.exceptions.GetTimeoutError:
            raise _tyche.TycheError("RayRunner: the nodes' actors did not start within 5 minutes (is tyche installed on every node?)") from None
        wrong = sorted({host for host, key in described if key != want})
        if wrong:
            raise _tyche.TycheError(f"RayRunner: node(s) {', '.join(wrong)} are not the machine the target describes "
                                    f"(their CPU, features or cores differ from this one's); tune on a cluster of one kind")
        self.target = target

    def measure(self, recipe: dict, workload: dict, traces: list[str], options: dict) -> list[str]:
        """One record line per trace, in order; shares of dead nodes go to the others."""
        import ray
        from ray.exceptions import RayActorError
        options = dict(options, target=self.target)
        out: list[Optional[str]] = [None] * len(traces)
        unmeasured = list(range(len(traces)))
        while unmeasured:
            if not self.actors:
                raise _tyche.TycheError("every node of the Ray cluster has died; the records measured so far are kept")
            # The leaders' confirmation is compared on one machine; a search batch is spread.
            actors = self.actors[:1] if options.get("confirmed") else self.actors
            shares = [unmeasured[i::len(actors)] for i in range(len(actors))]
            pending = {actors[i].measure.remote(recipe, workload, [traces[k] for k in share], options): (actors[i], share)
                       for i, share in enumerate(shares) if share}
            unmeasured = []
            for ref, (actor, share) in pending.items():
                try:
                    lines = ray.get(ref)
                except RayActorError:
                    if actor in self.actors:
                        self.actors.remove(actor)
                    self.resent += len(share)
                    unmeasured += share
                    continue
                for k, line in zip(share, lines):
                    out[k] = line
        return out  # type: ignore[return-value]

    def remote(self, workload: Any, options: dict):
        """The function the native loop measures each batch with."""
        recipe = recipe_of(workload)
        node_options = {k: options[k] for k in ("repeat", "min_repeat_ms", "timeout_s") if k in options}

        def measure(workload_record: dict, traces: list[str], batch: dict) -> list[str]:
            return self.measure(recipe, workload_record, traces, {**node_options, **batch})

        return measure


    def remote_model(self, data: bytes, what: str, input_shapes: dict, dtype: str = "float32",
                     bind: dict | None = None):
        """The function the native loop measures a model's batches with: the model goes to the
        object store once, and each node imports it once (the task is found by its hash);
        ``bind``: the inputs bound at compile time, sent with it."""
        import ray
        # In a list, so Ray hands the actor the reference itself rather than the bytes.
        recipe = {"onnx_ref": [ray.put(data)], "what": what, "input_shapes": input_shapes, "dtype": dtype,
                  "bind": dict(bind or {})}

        def measure(workload_record: dict, traces: list[str], batch: dict) -> list[str]:
            return self.measure(recipe, workload_record, traces, batch)

        return measure


def _tune_command(argv: list[str]) -> int:
    from . import formula, tune, workload
    p = argparse.ArgumentParser(prog="python -m tyche.ray tune", description="tune a workload, measuring on a Ray cluster")
    p.add_argument("workload", help="preset name (GMM-4) or index notation ('C[i,j] += A[i,k]*B[k,j]')")
    p.add_argument("--address", default=None, help="the cluster (HOST:PORT; default: RAY_ADDRESS or a local one)")
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--db", required=True, help="the tuning database (created if missing; a rerun resumes)")
    p.add_argument("--extents", default="", help="index extents for a formula, e.g. i=64,j=64,k=64")
    p.add_argument("--dtypes", default="", help="element types of a formula's tensors, e.g. A=uint8,B=int8,C=int32")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--strategy", default="evolutionary")
    p.add_argument("--cost-model", default="xgb")
    p.add_argument("--model", default=None, help="a saved cost model to start from ('none': untrained)")
    p.add_argument("--no-warm-start", action="store_true", help="do not start from the best of similar workloads' records")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="threads for the search on the driver (default: all)")
    p.add_argument("--confirm", type=int, default=None, help="at the end, time the N fastest again on one node (default 16; 0: off)")
    p.add_argument("--timeout", type=float, default=None, help="seconds a candidate may run, all repeats (default 10)")
    p.add_argument("--target", default="llvm", help="llvm (default) or 'llvm -mcpu=NAME -num-cores=N'")
    p.add_argument("--json", default=None, help="write {workload, trials, best_latency_s, best_gflops, wall_s, history, best_trace} here")
    p.add_argument("--workers-per-node", type=int, default=1)
    p.add_argument("--scale-down", action="store_true")
    a = p.parse_args(argv)
    try:
        if a.dtypes and not a.extents:
            raise _tyche.InputError("--dtypes is only for index-notation formulas; a preset names its types (e.g. GMM-4-U8S8)")
        if a.extents:
            w = formula(a.workload, dtypes=a.dtypes, **{k: int(v) for k, v in (kv.split("=") for kv in a.extents.split(","))})
        else:
            w = workload(a.workload, scale_down=a.scale_down)
        runner = RayRunner(address=a.address, workers_per_node=a.workers_per_node)
        options: dict[str, Any] = dict(warm_start=not a.no_warm_start)
        for key, value in (("threads", a.threads or None), ("model", a.model), ("confirm_top", a.confirm), ("timeout_s", a.timeout)):
            if value is not None:
                options[key] = value
        start = time.perf_counter()
        r = tune(w, trials=a.trials, db=a.db, strategy=a.strategy, cost_model=a.cost_model, seed=a.seed, batch=a.batch,
                 target=a.target, runner=runner, **options)
        wall = time.perf_counter() - start
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"workload": r.name, "trials": r.trials, "best_latency_s": r.best_seconds, "best_gflops": r.best_gflops,
                           "wall_s": wall, "history": r.history, "best_trace": str(r.best_trace) if r.best_trace else None}, f, indent=1)
    except (_tyche.TycheError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(r)
    if runner.resent:
        print(f"{runner.resent} programs were re-sent after their node died", file=sys.stderr)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "tune":
        print("usage: python -m tyche.ray tune <workload|formula> --db DIR [--address ADDR] [--trials N] ...", file=sys.stderr)
        return 2
    return _tune_command(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
