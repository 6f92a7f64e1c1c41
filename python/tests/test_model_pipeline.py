"""The CLI and Python share one model pipeline (src/model/pipeline.h): for one model and one set
of options (an input shape bound, a dtype) `tyche import --json` and tyche.onnx.tasks list the
same tasks with the same hashes, and a database tuned from Python is read by `tyche run-model`
exactly as tyche.onnx.compile reads it: each task picks the same record (the same program).

The tyche binary is $TYCHE_BINARY_DIR/tools/tyche; without it the tests are skipped.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tyche
import tyche.onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


@pytest.fixture(scope="module")
def tyche_bin() -> pathlib.Path:
    d = os.environ.get("TYCHE_BINARY_DIR")
    path = pathlib.Path(d or "") / "tools" / "tyche"
    if not d or not path.is_file():
        pytest.skip("no tyche binary ($TYCHE_BINARY_DIR/tools/tyche)")
    return path


def model_file(path: pathlib.Path) -> pathlib.Path:
    """A batch-symbolic MLP: MatMul + bias + Relu, MatMul, Softmax (three tasks)."""
    rng = np.random.RandomState(1)
    inits = []
    for name, shape in [("w1", (24, 32)), ("b1", (32,)), ("w2", (32, 8))]:
        t = numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32))
        t.name = name
        inits.append(t)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["prob"], axis=-1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 24])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["batch", 8])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)
    return path


def run_json(cmd: list[str], out: pathlib.Path) -> dict:
    r = subprocess.run(cmd + ["--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def test_cli_and_python_extract_the_same_tasks(tyche_bin, tmp_path):
    path = model_file(tmp_path / "mlp.onnx")
    for dtype in ["float32", "bfloat16"]:
        cli = run_json([str(tyche_bin), "import", str(path), "--input-shape", "x=6x24", "--dtype", dtype], tmp_path / "import.json")
        py = tyche.onnx.tasks(str(path), input_shapes={"x": (6, 24)}, dtype=dtype)
        assert [(t["name"], t["hash"], t["weight"]) for t in cli["tasks"]] == [(t["name"], t["hash"], t["weight"]) for t in py]
        assert len(py) >= 2
    # Another bound shape is another set of tasks: the hashes do see the options.
    other = tyche.onnx.tasks(str(path), input_shapes={"x": (5, 24)})
    assert {t["hash"] for t in other}.isdisjoint({t["hash"] for t in tyche.onnx.tasks(str(path), input_shapes={"x": (6, 24)})})


def test_a_database_tuned_from_python_picks_the_same_records_on_the_cli(tyche_bin, tmp_path):
    path = model_file(tmp_path / "mlp.onnx")
    db = tmp_path / "db"
    shapes = {"x": (6, 24)}
    tyche.onnx.tune(str(path), trials=4, db=db, threads=2, input_shapes=shapes, progress=False, timing="warm",
                    population=64, generations=2)
    compiled = tyche.onnx.compile(str(path), db=db, input_shapes=shapes)
    py = compiled.records
    cli = run_json([str(tyche_bin), "run-model", str(path), "--input-shape", "x=6x24", "--db", str(db), "--repeat", "1"],
                   tmp_path / "run.json")
    assert cli["records"] == py
    assert [r["hash"] for r in py] == [t["hash"] for t in compiled.tasks]
    tuned = [r for r in py if r["program"] is not None]
    assert tuned and len(tuned) == compiled.tasks_tuned == cli["tasks_tuned"]
    # Without the database every task runs its default schedule, on both sides.
    plain = tyche.onnx.compile(str(path), input_shapes=shapes).records
    assert all(r["program"] is None and r["measured_at"] is None for r in plain)
