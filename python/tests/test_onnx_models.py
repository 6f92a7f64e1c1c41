"""The small models of scripts/make_models.py end to end through the command line, against
onnxruntime (every output within 1e-3 * max|reference|): imported, fused into tasks, run with the
default schedules; then a tune-model killed mid-run resumes from its database without measuring
any program twice, and run-model picks the tuned programs up.

The tyche binary is $TYCHE_BINARY_DIR/tools/tyche; without it the tests are skipped.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

SOURCE = pathlib.Path(os.environ.get("TYCHE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(SOURCE / "scripts"))
import make_models  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from exact_reference import exact_outputs, ort_saturates_u8s8  # noqa: E402

SMALL = ["resnet_small", "mobilenet_small", "bert_small"]


@pytest.fixture(scope="module")
def tyche() -> pathlib.Path:
    d = os.environ.get("TYCHE_BINARY_DIR")
    path = pathlib.Path(d or "") / "tools" / "tyche"
    if not d or not path.is_file():
        pytest.skip("no tyche binary ($TYCHE_BINARY_DIR/tools/tyche)")
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, pathlib.Path]:
    d = tmp_path_factory.mktemp("models")
    paths = {}
    for name in SMALL:
        paths[name] = d / f"{name}.onnx"
        onnx.save(make_models.build_model(name), str(paths[name]))
    return paths


def run_and_compare(tyche, model: pathlib.Path, name: str, tmp: pathlib.Path, *extra: str) -> dict:
    inputs = make_models.example_inputs(name, seed=3)
    args = []
    for k, v in inputs.items():
        np.save(tmp / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp / f'{k}.npy'}"]
    out = tmp / "out"
    proc = subprocess.run([str(tyche), "run-model", str(model), *args, "--save-outputs", str(out), "--repeat", "2",
                           "--threads", "2", "--json", str(tmp / "run.json"), *extra], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for meta, ref in zip(session.get_outputs(), session.run(None, inputs)):
        got = np.load(out / f"{meta.name}.npy")
        assert got.shape == ref.shape and got.dtype == ref.dtype
        assert np.abs(got - ref).max() <= 1e-3 * max(np.abs(ref).max(), 1e-6), meta.name
    return json.loads((tmp / "run.json").read_text())


@pytest.mark.parametrize("name", SMALL)
def test_small_model_matches_onnxruntime(tyche, models, name, tmp_path):
    result = run_and_compare(tyche, models[name], name, tmp_path)
    assert result["tasks_tuned"] == 0 and result["tasks"] > 0
    # The arena holds every intermediate value at once no more than the liveness bound needs.
    assert result["arena_bytes"] <= 1.1 * result["lower_bound_bytes"]
    assert result["arena_bytes"] < result["naive_bytes"]
    imported = subprocess.run([str(tyche), "import", str(models[name]), "--json", str(tmp_path / "import.json")],
                              capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    table = json.loads((tmp_path / "import.json").read_text())
    assert len(table["tasks"]) == result["tasks"]
    assert sum(t["weight"] for t in table["tasks"]) == sum(1 for n in table["nodes"] if n["task"] is not None)


def run_logits(tyche, model: pathlib.Path, x: np.ndarray, tmp: pathlib.Path, *extra: str) -> np.ndarray:
    """run-model on one input (2 threads, one run): the saved logits."""
    np.save(tmp / "x.npy", x)
    proc = subprocess.run([str(tyche), "run-model", str(model), *extra, "--input", f"input={tmp / 'x.npy'}",
                           "--save-outputs", str(tmp / "out"), "--repeat", "1", "--threads", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return np.load(tmp / "out" / "logits.npy")


def test_int8_resnet_from_onnxruntimes_quantizer(tyche, tmp_path):
    """resnet_small quantized by onnxruntime (QDQ format): every Conv between DequantizeLinear and
    QuantizeLinear is imported as one QLinearConv on the integers, and the logits agree with
    onnxruntime's within one output quantization step (bit for bit on Zen 4), with the same top-1,
    on five inputs. On an x86 host without VNNI, whose onnxruntime u8 x s8 kernels saturate, the
    reference is onnx's exact ReferenceEvaluator (exact_reference.py)."""
    model = tmp_path / "resnet_small_int8.onnx"
    onnx.save(make_models.build_model("resnet_small_int8"), str(model))
    imported = subprocess.run([str(tyche), "import", str(model), "--json", str(tmp_path / "import.json")],
                              capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    ops = [op for node in json.loads((tmp_path / "import.json").read_text())["nodes"] for op in node["ops"]]
    assert ops.count("QLinearConv") == 16 and "Conv" not in ops, ops
    # The last QuantizeLinear's step bounds the logits' difference (a rounding tie may go either way).
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(str(model)).graph.initializer}
    steps = [float(inits[n.input[1]]) for n in onnx.load(str(model)).graph.node if n.op_type == "QuantizeLinear"]
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for seed in range(5):
        x = make_models.example_inputs("resnet_small_int8", seed=seed)["input"]
        got = run_logits(tyche, model, x, tmp_path)
        (ref,) = session.run(None, {"input": x})
        if ort_saturates_u8s8():
            (ref,) = exact_outputs(onnx.load(str(model)), {"input": x}).values()
        assert got.shape == ref.shape and got.dtype == ref.dtype
        assert np.abs(got - ref).max() <= steps[-1] * 1.001, (seed, np.abs(got - ref).max(), steps[-1])
        assert got.argmax() == ref.argmax()


def test_bfloat16_option_runs_the_products_in_bfloat16(tyche, models, tmp_path):
    """--dtype bfloat16: every convolution and matrix product reads bfloat16 weights and
    activations and accumulates in float32; the logits stay within bfloat16's rounding of
    onnxruntime's float32 ones (5% of their range: 16 convolutions of bfloat16 rounding; 2.1%
    measured) with the same top-1. A dtype other than
    float32 or bfloat16 is one line, exit 2."""
    model = models["resnet_small"]
    imported = subprocess.run([str(tyche), "import", str(model), "--dtype", "bfloat16", "--json", str(tmp_path / "i.json")],
                              capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    ops = [op for node in json.loads((tmp_path / "i.json").read_text())["nodes"] for op in node["ops"]]
    assert ops.count("Cast") >= 10, ops  # each product's activation stored as bfloat16 by its producer
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for seed in range(3):
        x = make_models.example_inputs("resnet_small", seed=seed)["input"]
        got = run_logits(tyche, model, x, tmp_path, "--dtype", "bfloat16")
        (ref,) = session.run(None, {"input": x})
        assert got.dtype == np.float32 and got.shape == ref.shape
        assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max(), (seed, np.abs(got - ref).max())
        assert got.argmax() == ref.argmax()
    bad = subprocess.run([str(tyche), "run-model", str(model), "--dtype", "float16"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "float16" in bad.stderr, bad.stderr


def records(db: pathlib.Path) -> list[dict]:
    path = db / "records.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line torn by the kill
    return out


def test_a_killed_tune_resumes_and_run_model_uses_its_records(tyche, models, tmp_path):
    model, db = models["bert_small"], tmp_path / "db"
    cmd = [str(tyche), "tune-model", str(model), "--db", str(db), "--threads", "2", "--population", "64",
           "--generations", "2"]
    proc = subprocess.Popen(cmd + ["--trials", "400"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while len(records(db)) < 16 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = records(db)
    assert len(before) >= 16, "the tune recorded nothing before it was killed"
    again = subprocess.run(cmd + ["--trials", "16", "--json", str(tmp_path / "tune.json")], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    after = [r for r in records(db) if not r.get("confirmed")]
    seen = set()
    for r in after:
        key = (r["workload"]["hash"], r["program"])
        assert key not in seen, f"program {r['program']} of {r['workload']['name']} measured twice"
        seen.add(key)
    summary = json.loads((tmp_path / "tune.json").read_text())
    assert summary["trials"] == 16 and summary["estimated_latency_ms"] > 0
    result = run_and_compare(tyche, model, "bert_small", tmp_path, "--db", str(db), "--profile")
    assert result["tasks_tuned"] > 0
    # --profile: every call timed, per task; a tuned task shows its tuned time beside its time in the model.
    profile = result["profile"]
    rows = {r["task"]: r for r in profile["tasks"]}
    assert len(rows) == result["tasks"]
    assert sum(r["calls"] for r in rows.values()) == sum(t["weight"] for t in summary["tasks"])
    assert all(r["in_model_ms"] > 0 for r in rows.values())
    tuned = [r for r in rows.values() if r["tuned_ms"] is not None]
    assert len(tuned) == result["tasks_tuned"] and all(r["tuned_ms"] > 0 for r in tuned)
    assert 0 < profile["calls_ms"] <= profile["run_ms"] and profile["tuned_sum_ms"] > 0
