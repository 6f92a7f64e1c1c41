"""Measuring on a Ray cluster: a local cluster tunes a workload, every trial recorded once; a second
node that dies mid-tune has its programs re-sent; bad addresses and programs are one-line errors.
The cluster is a head node alone (no dashboard: each Ray node and agent costs CPU the other tests
share); the node-dying test adds the second node."""

import json
import os
import subprocess
import sys

import pytest

import tyche

ray = pytest.importorskip("ray")
import tyche.ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

QUICK = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2, population=64, generations=2)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    yield c
    ray.shutdown()
    c.shutdown()


def records(db):
    with open(os.path.join(db, "records.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_a_two_node_cluster_tunes_and_survives_a_node_dying(cluster, tmp_path):
    victim = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    runner = tyche.ray.RayRunner(address=cluster.address)
    killed = []

    def progress(trials, budget, task, best, elapsed):
        if trials >= 8 and not killed:
            cluster.remove_node(victim)
            killed.append(trials)

    r = tyche.tune(tyche.workload("GMM-1", scale_down=True), trials=24, batch=8, db=tmp_path, runner=runner,
                   progress=progress, **QUICK)
    assert r.trials == 24 and r.best_seconds > 0 and killed == [8]
    assert runner.resent > 0  # the dead node's share of the next batch went to the others
    searched = [rec for rec in records(tmp_path) if not rec.get("confirmed")]
    assert len(searched) == 24 and len({rec["program"] for rec in searched}) == 24  # each trial once
    assert all(rec["error"] is None for rec in searched)


# A typed preset (the nodes rebuild it with its precision, and check its integers exactly).
def test_the_cli_tunes_on_the_cluster(cluster, tmp_path):
    db = str(tmp_path / "db")
    out = str(tmp_path / "tune.json")
    cmd = [sys.executable, "-m", "tyche.ray", "tune", "GMM-1-U8S8", "--scale-down", "--address", cluster.address, "--trials", "8",
           "--batch", "8", "--db", db, "--confirm", "0", "--no-warm-start", "--json", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "after 8 trials" in r.stdout
    with open(out) as f:
        summary = json.load(f)
    assert summary["trials"] == 8 and summary["best_gflops"] > 0 and summary["best_trace"]
    searched = [rec for rec in records(db) if not rec.get("confirmed")]
    assert len(searched) == 8 and all(rec["error"] is None for rec in searched)
    assert searched[0]["workload"]["name"] == "GMM-1-U8S8 (scaled down)"
    bad = subprocess.run(cmd[:4] + ["GMM-9"] + cmd[5:], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0 and "GMM-9" in bad.stderr


def test_an_unreachable_cluster_is_one_line(tmp_path):
    with pytest.raises(tyche.TycheError, match="cannot reach the Ray cluster at 127.0.0.1:1"):
        tyche.ray.RayRunner(address="127.0.0.1:1").start()


def test_a_program_made_in_python_cannot_travel():
    from tyche import te
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(tyche.InputError, match="recipe"):
        tyche.ray.recipe_of(te.create_prim_func([A, B]))
    assert tyche.ray.recipe_of(tyche.workload("GMM-1", scale_down=True)) == {"op": "GMM", "params": [1, 32, 32, 32],
                                                                            "precision": ""}
    assert tyche.ray.recipe_of(tyche.formula("C[i] += A[i,k]", dtypes={"A": "int8", "C": "int32"}, i=4, k=8)) == {
        "formula": "C[i] += A[i,k]", "extents": "i=4,k=8", "dtypes": "C=int32,A=int8"}


def test_a_model_tunes_on_the_cluster(cluster, tmp_path):
    pytest.importorskip("onnx")
    from test_onnx_api import conv_relu_gemm
    runner = tyche.ray.RayRunner(address=cluster.address)
    r = tyche.onnx.tune(conv_relu_gemm(), trials=16, db=tmp_path, threads=2, progress=False, runner=runner,
                        population=64, generations=2)
    assert r["trials"] == 16 and r["timing"] == "mixed"
    searched = [rec for rec in records(tmp_path) if not rec.get("confirmed")]
    assert len(searched) == 16 and len({(rec["workload"]["hash"], rec["program"]) for rec in searched}) == 16
    assert all(rec["target"]["timing"] == "mixed" for rec in searched)  # the nodes timed as the driver asked


def test_a_driver_stopped_mid_tune_resumes_from_its_database(cluster, tmp_path):
    def stop_after_first_batch(trials, budget, task, best, elapsed):
        if trials >= 8:
            raise RuntimeError("driver stopped")

    w = tyche.workload("GMM-1", scale_down=True)
    with pytest.raises(RuntimeError, match="driver stopped"):
        tyche.tune(w, trials=24, batch=8, db=tmp_path, runner=tyche.ray.RayRunner(address=cluster.address),
                   progress=stop_after_first_batch, **QUICK)
    assert len(records(tmp_path)) == 8  # the batch measured before the stop, written once
    r = tyche.tune(w, trials=8, batch=8, db=tmp_path, runner=tyche.ray.RayRunner(address=cluster.address), progress=False, **QUICK)
    assert r.resumed_records == 8
    searched = [rec for rec in records(tmp_path) if not rec.get("confirmed")]
    assert len(searched) == 16 and len({rec["program"] for rec in searched}) == 16
