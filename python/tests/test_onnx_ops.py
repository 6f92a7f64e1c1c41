"""Tyche's ONNX importer and graph executor, op by op, against onnxruntime, through the command line:

    tyche run-model MODEL.onnx --input NAME=FILE.npy ... --save-outputs DIR --repeat 1 [--threads N]

Each case of onnx_cases.CASES is saved with its inputs, run by tyche and by onnxruntime
(CPUExecutionProvider, all graph optimizations), and every graph output compared: same shape,
float32 for float outputs and int64 for int64 ones, and max|tyche - ort| <= 1e-3 * max(max|ort|, 1e-6)
(integer outputs exactly; a quantized case on an x86 host without VNNI against onnx's exact
ReferenceEvaluator instead: exact_reference.py). The tyche runs of the selected cases start together, a few at a time
(so the file stays well under a minute); each test then checks its own case.

Then the refusals: each exits with status 2 and exactly one non-empty line on stderr that names
the problem (unsupported ops with their counts, an unreadable model file's path, a symbolic input
dim without --input-shape, an input .npy of the wrong dtype or shape).

The tyche binary is $TYCHE_BINARY_DIR/tools/tyche; without it the tests are skipped.
"""

from __future__ import annotations

import concurrent.futures
import errno
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import onnx_cases  # noqa: E402
from exact_reference import exact_outputs, ort_saturates_u8s8, reference_outputs  # noqa: E402

CASES = {cid: (model, inputs) for cid, model, inputs in onnx_cases.CASES}
TIMEOUT_S = 120
THREADS = 2
SPAWN_LOCK = threading.Lock()


@pytest.fixture(scope="module")
def tyche() -> pathlib.Path:
    d = os.environ.get("TYCHE_BINARY_DIR")
    if not d:
        pytest.skip("TYCHE_BINARY_DIR is not set: no tyche binary to test the ONNX importer with")
    path = pathlib.Path(d) / "tools" / "tyche"
    if not path.is_file():
        pytest.skip(f"no tyche binary at {path} (TYCHE_BINARY_DIR/tools/tyche)")
    return path


def save_case(directory: pathlib.Path, model, inputs: dict[str, np.ndarray]
              ) -> tuple[pathlib.Path, dict[str, pathlib.Path]]:
    directory.mkdir(parents=True, exist_ok=True)
    model_path = directory / "model.onnx"
    onnx.save(model, str(model_path))
    files = {}
    for name, value in inputs.items():
        files[name] = directory / f"{name}.npy"
        np.save(files[name], value)
    return model_path, files


def run_tyche(binary: pathlib.Path, model_path, input_files: dict[str, pathlib.Path], out_dir: pathlib.Path,
              extra=(), threads: int | None = None) -> subprocess.CompletedProcess:
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [str(binary), "run-model", str(model_path)]
    for name, path in input_files.items():
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--save-outputs", str(out_dir), "--repeat", "1", *extra]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    # Runs start from several threads; CPython spawns with vfork, and concurrent vforks have
    # failed here with EFAULT on exec (CI, 2026-12-04). Starting them one at a time avoids the
    # race; an EFAULT that still happens is the host's, so the spawn is tried once more.
    for attempt in range(2):
        try:
            with SPAWN_LOCK:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            break
        except OSError as e:
            if e.errno != errno.EFAULT or attempt == 1:
                raise
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def onnxruntime_outputs(model_path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, inputs)))


# ---------------------------------------------------------------- the cases

class CaseRuns:
    """Starts the tyche runs of the cases this session selected, all at once on a thread pool;
    result(case_id) waits for one."""

    def __init__(self, binary: pathlib.Path, root: pathlib.Path, case_ids: list[str]):
        self.root = root
        workers = max(1, min(8, (os.cpu_count() or 2) // THREADS))
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        self.futures = {}
        for cid in case_ids:
            model, inputs = CASES[cid]
            model_path, files = save_case(root / cid, model, inputs)
            self.futures[cid] = self.pool.submit(run_tyche, binary, model_path, files, root / cid / "out", (), THREADS)

    def result(self, cid: str) -> tuple[subprocess.CompletedProcess, pathlib.Path]:
        return self.futures[cid].result(), self.root / cid


@pytest.fixture(scope="module")
def case_runs(request, tyche, tmp_path_factory):
    selected = [item.callspec.params["case_id"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_case_matches_onnxruntime"
                and item.module is request.module and "case_id" in item.callspec.params]
    runs = CaseRuns(tyche, tmp_path_factory.mktemp("onnx_cases"), selected)
    yield runs
    runs.pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("case_id", list(CASES))
def test_case_matches_onnxruntime(case_runs, case_id):
    model, inputs = CASES[case_id]
    proc, directory = case_runs.result(case_id)
    assert proc.returncode == 0, f"tyche exited {proc.returncode}:\n{proc.stderr}{proc.stdout}"
    want = reference_outputs(model, inputs, onnxruntime_outputs(directory / "model.onnx", inputs))
    for name, ref in want.items():
        path = directory / "out" / f"{name}.npy"
        assert path.is_file(), f"tyche wrote no {path.name} (wrote: {sorted(p.name for p in path.parent.iterdir())})"
        got = np.load(path)
        assert got.shape == ref.shape, f"{name}: shape {got.shape}, onnxruntime {ref.shape}"
        if np.issubdtype(ref.dtype, np.floating):
            assert got.dtype == np.float32, f"{name}: dtype {got.dtype}, want float32"
            err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
            bound = 1e-3 * max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-6)
            assert np.isfinite(got).all(), f"{name}: tyche's output has non-finite values"
            assert err <= bound, (
                f"{name}: max|tyche - ort| = {err:.3g} > {bound:.3g}; first mismatches at "
                f"{np.argwhere(~np.isclose(got, ref, rtol=0, atol=bound))[:5].tolist()}")
        else:
            assert got.dtype == ref.dtype, f"{name}: dtype {got.dtype}, want {ref.dtype}"
            np.testing.assert_array_equal(got, ref, err_msg=name)


def test_the_exact_reference_is_exact_and_onnxruntime_saturates_only_without_vnni():
    """exact_reference.py's premise, on a u8 x s8 MatMulInteger: onnx's ReferenceEvaluator gives
    numpy's int64 product (a - az) @ b, and onnxruntime agrees with it except on an x86 host
    without VNNI, where it saturates."""
    model, inputs = CASES["matmul_integer_u8s8_a_zero_point"]
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    want = (inputs["a"].astype(np.int64) - int(inits["az"])) @ inits["b"].astype(np.int64)
    exact = exact_outputs(model, inputs)["y"]
    np.testing.assert_array_equal(exact.astype(np.int64), want)
    ort_y = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], inputs)[0]
    if ort_saturates_u8s8():
        assert not np.array_equal(ort_y.astype(np.int64), want), "onnxruntime is exact here: exact_reference.py's premise no longer holds"
    else:
        np.testing.assert_array_equal(ort_y.astype(np.int64), want)


def test_cases_are_many_and_unique():
    assert len(CASES) == len(onnx_cases.CASES) >= 150


# ---------------------------------------------------------------- refusals

def one_line(proc: subprocess.CompletedProcess) -> str:
    """The refusal's stderr line, after checking exit status 2 and exactly one non-empty line."""
    assert proc.returncode == 2, f"exit {proc.returncode}, want 2:\n{proc.stderr}{proc.stdout}"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), f"want exactly one non-empty stderr line, got {lines!r}"
    return lines[0]


def test_unsupported_ops_are_named_with_counts(tyche, tmp_path):
    model = onnx_cases.unsupported_ops_model()
    model_path, files = save_case(tmp_path, model, {"x": onnx_cases.U(2, 3)})
    line = one_line(run_tyche(tyche, model_path, files, tmp_path / "out"))
    for word in ("NonZero", "2", "Unique"):
        assert word in line, f"{word!r} not in {line!r}"


@pytest.mark.parametrize("kind", ["truncated", "text"])
def test_unreadable_model_file_names_its_path(tyche, tmp_path, kind):
    model_path, files = save_case(tmp_path, onnx_cases.pixels_model(), {"pixels": onnx_cases.U(1, 2, 4, 4)})
    bad = tmp_path / f"bad_{kind}.onnx"
    if kind == "truncated":
        bad.write_bytes(model_path.read_bytes()[:100])
    else:
        bad.write_text("this is not an ONNX model\njust some text\n")
    line = one_line(run_tyche(tyche, bad, files, tmp_path / "out"))
    assert str(bad) in line, f"{str(bad)!r} not in {line!r}"


def test_symbolic_dim_needs_input_shape(tyche, tmp_path):
    model = onnx_cases.symbolic_dim_model()
    feats = onnx_cases.U(2, 3)
    model_path, files = save_case(tmp_path, model, {"feats": feats})
    line = one_line(run_tyche(tyche, model_path, files, tmp_path / "out0"))
    assert "feats" in line and "batch" in line, line

    out = tmp_path / "out1"
    proc = run_tyche(tyche, model_path, files, out, extra=["--input-shape", "feats=2x3"], threads=THREADS)
    assert proc.returncode == 0, f"tyche exited {proc.returncode}:\n{proc.stderr}{proc.stdout}"
    (ref,) = onnxruntime_outputs(model_path, {"feats": feats}).values()
    got = np.load(out / "y.npy")
    assert got.shape == ref.shape == (2, 3) and got.dtype == np.float32
    assert np.max(np.abs(got - ref)) <= 1e-3 * max(np.max(np.abs(ref)), 1e-6)


@pytest.mark.parametrize("bad", ["float64", "shape"])
def test_bad_input_array_names_the_input(tyche, tmp_path, bad):
    good = onnx_cases.U(1, 2, 4, 4)
    value = good.astype(np.float64) if bad == "float64" else good.reshape(1, 2, 2, 8)
    model_path, files = save_case(tmp_path, onnx_cases.pixels_model(), {"pixels": value})
    line = one_line(run_tyche(tyche, model_path, files, tmp_path / "out"))
    assert "pixels" in line, line


def test_bind_freezes_inputs_on_the_command_line(tyche, tmp_path):
    """--bind NAME=FILE.npy: Unsqueeze's axes and Reshape's shape, graph inputs, become constants."""
    nodes = [onnx_cases.N("Unsqueeze", ["x", "axes"], "u"), onnx_cases.N("Reshape", ["u", "shape"])]
    x = onnx_cases.U(2, 3)
    values = {"x": x, "axes": onnx_cases.I64([0]), "shape": onnx_cases.I64([3, 2])}
    model = onnx_cases.make_model("bind", nodes, values, ["y"])
    model_path, files = save_case(tmp_path, model, values)
    line = one_line(run_tyche(tyche, model_path, {"x": files["x"]}, tmp_path / "out0"))
    assert "the axes ('axes') must be a constant" in line, line
    binds = ["--bind", f"axes={files['axes']}", "--bind", f"shape={files['shape']}"]
    proc = run_tyche(tyche, model_path, {"x": files["x"]}, tmp_path / "out", extra=binds)
    assert proc.returncode == 0, f"tyche exited {proc.returncode}:\n{proc.stderr}{proc.stdout}"
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), x.reshape(3, 2))
    line = one_line(run_tyche(tyche, model_path, {"x": files["x"]}, tmp_path / "out2", extra=["--bind", "axes"]))
    assert "--bind 'axes' is not NAME=FILE.npy" in line, line
