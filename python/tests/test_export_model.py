"""tyche export-model: a small ONNX model (built here with onnx.helper) exported as NET.h and
libNET.a, linked into a C program with cc (no Tyche library), fed from deliberately misaligned
malloc'd buffers; its outputs match `tyche run-model --input ... --save-outputs` within 1e-4
relative. An int8 model (onnxruntime's quantizer) exports too, bit for bit. Refusals are one line
and exit 2, writing nothing.

The tyche binary is $TYCHE_BINARY_DIR/tools/tyche; without it the tests are skipped.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


@pytest.fixture(scope="module")
def tyche() -> pathlib.Path:
    d = os.environ.get("TYCHE_BINARY_DIR")
    path = pathlib.Path(d or "") / "tools" / "tyche"
    if not d or not path.is_file():
        pytest.skip("no tyche binary ($TYCHE_BINARY_DIR/tools/tyche)")
    return path


def small_model(path: pathlib.Path) -> None:
    """Two inputs (image, per-class bias), conv + relu, a residual conv, pooling, a view, gemm,
    softmax; two outputs (the probabilities and the pooled features, through a view)."""
    rng = np.random.RandomState(0)
    w = lambda *shape: numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32))  # noqa: E731
    inits = []
    for name, shape in [("w1", (4, 3, 3, 3)), ("b1", (4,)), ("w2", (4, 4, 3, 3)), ("fc", (5, 4)), ("fcb", (5,))]:
        t = w(*shape)
        t.name = name
        inits.append(t)
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["features"]),
        helper.make_node("Gemm", ["features", "fc", "fcb"], ["logits"], transB=1),
        helper.make_node("Add", ["logits", "class.bias"], ["shifted"]),
        helper.make_node("Softmax", ["shifted"], ["prob"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 8, 10]),
         helper.make_tensor_value_info("class.bias", TensorProto.FLOAT, [1, 5])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 5]),
         helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 4])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "net.h"
/* 4 bytes past TYCHE_ALIGNMENT: the model takes any alignment. */
static char* misaligned(size_t bytes) {
  char* p = malloc(bytes + TYCHE_ALIGNMENT + 4);
  if (!p) exit(3);
  return p + (TYCHE_ALIGNMENT - (uintptr_t)p % TYCHE_ALIGNMENT) + 4;
}
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  char* image = misaligned(net_INPUT0_BYTES);
  char* bias = misaligned(net_INPUT1_BYTES);
  char* prob = misaligned(net_OUTPUT0_BYTES);
  char* features = misaligned(net_OUTPUT1_BYTES);
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(image, 1, net_INPUT0_BYTES, f) != net_INPUT0_BYTES || fread(bias, 1, net_INPUT1_BYTES, f) != net_INPUT1_BYTES) return 3;
  fclose(f);
  int status = net((const float*)image, (const float*)bias, (float*)prob, (float*)features);
  if (status != TYCHE_OK) { fprintf(stderr, "%s\n", tyche_error_string(status)); return 1; }
  fwrite(prob, 1, net_OUTPUT0_BYTES, stdout);
  fwrite(features, 1, net_OUTPUT1_BYTES, stdout);
  return 0;
}
"""


@pytest.mark.parametrize("threads", [None, "1"])
def test_exported_model_in_a_c_program_matches_run_model(tyche, tmp_path, threads):
    model = tmp_path / "small.onnx"
    small_model(model)
    out = tmp_path / "out"
    extra = ["--threads", threads] if threads else []
    proc = subprocess.run([str(tyche), "export-model", str(model), "--name", "net", "-o", str(out), *extra],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "have no record (no --db): they export a default schedule" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["libnet.a", "net.h"]
    header = (out / "net.h").read_text()
    assert "int32_t net(const float* image, const float* class_bias, float* prob, float* features);" in header
    assert '#define net_INPUT1_NAME "class.bias"' in header

    rng = np.random.RandomState(5)
    image = rng.uniform(-1, 1, (1, 3, 8, 10)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, 5)).astype(np.float32)
    np.save(tmp_path / "image.npy", image)
    np.save(tmp_path / "bias.npy", bias)
    saved = tmp_path / "saved"
    run = subprocess.run([str(tyche), "run-model", str(model), "--input", f"image={tmp_path / 'image.npy'}",
                          "--input", f"class.bias={tmp_path / 'bias.npy'}", "--save-outputs", str(saved), "--repeat", "1"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr + run.stdout

    (tmp_path / "main.c").write_text(DRIVER)
    subprocess.run(["cc", "-std=c11", "-O1", "-Wall", "-Werror", "-I", str(out), str(tmp_path / "main.c"), "-L", str(out), "-lnet",
                    "-lm", "-lpthread", "-o", str(tmp_path / "main")], check=True)
    (tmp_path / "in.bin").write_bytes(image.tobytes() + bias.tobytes())
    got = subprocess.run([str(tmp_path / "main"), str(tmp_path / "in.bin")], check=True, capture_output=True).stdout
    values = np.frombuffer(got, dtype=np.float32)
    for name, shape in [("prob", (1, 5)), ("features", (1, 4))]:
        want = np.load(saved / f"{name}.npy")
        assert want.shape == shape
        n = int(np.prod(shape))
        np.testing.assert_allclose(values[:n].reshape(shape), want, rtol=1e-4, atol=1e-6 * max(1.0, np.abs(want).max()))
        values = values[n:]
    assert values.size == 0


def test_refusals_are_one_line_and_write_nothing(tyche, tmp_path):
    model = tmp_path / "small.onnx"
    small_model(model)
    out = tmp_path / "out"
    for args, message in [(["--name", "my-net"], "'my-net' is not a C identifier"),
                          (["--name", "net", "--cpu", "pentium-9000"], "unknown CPU 'pentium-9000'"),
                          (["--name", "net", "--threads", "4"], "--threads takes 1"),
                          (["--name", "net", "--db", str(tmp_path / "nowhere")], "no tuning database")]:
        proc = subprocess.run([str(tyche), "export-model", str(model), "-o", str(out), *args], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
        assert not out.exists()
    (tmp_path / "file").write_text("x")
    proc = subprocess.run([str(tyche), "export-model", str(model), "--name", "net", "-o", str(tmp_path / "file" / "sub")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "cannot create the directory" in proc.stderr, proc.stderr


INT8_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "rsi8.h"
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  float* image = malloc(rsi8_INPUT0_BYTES);
  float* logits = malloc(rsi8_OUTPUT0_BYTES);
  FILE* f = fopen(argv[1], "rb");
  if (!image || !logits || !f || fread(image, 1, rsi8_INPUT0_BYTES, f) != rsi8_INPUT0_BYTES) return 3;
  fclose(f);
  int status = rsi8(image, logits);
  if (status != TYCHE_OK) { fprintf(stderr, "%s\n", tyche_error_string(status)); return 1; }
  fwrite(logits, 1, rsi8_OUTPUT0_BYTES, stdout);
  return 0;
}
"""


def test_an_int8_model_exports_and_computes_what_run_model_does(tyche, tmp_path):
    """resnet_small quantized by onnxruntime (QDQ: QLinearConv kernels, requantization,
    round-half-even) in a C program: the same logits as run-model, bit for bit."""
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
    import make_models

    model = tmp_path / "rsi8.onnx"
    onnx.save(make_models.build_model("resnet_small_int8"), str(model))
    out = tmp_path / "out"
    proc = subprocess.run([str(tyche), "export-model", str(model), "--name", "rsi8", "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    image = make_models.example_inputs("resnet_small_int8", seed=4)["input"]
    np.save(tmp_path / "image.npy", image)
    saved = tmp_path / "saved"
    run = subprocess.run([str(tyche), "run-model", str(model), "--input", f"input={tmp_path / 'image.npy'}",
                          "--save-outputs", str(saved), "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr + run.stdout
    (tmp_path / "main.c").write_text(INT8_DRIVER)
    subprocess.run(["cc", "-std=c11", "-O1", "-Wall", "-Werror", "-I", str(out), str(tmp_path / "main.c"), "-L", str(out), "-lrsi8",
                    "-lm", "-lpthread", "-o", str(tmp_path / "main")], check=True)
    (tmp_path / "in.bin").write_bytes(image.tobytes())
    got = np.frombuffer(subprocess.run([str(tmp_path / "main"), str(tmp_path / "in.bin")], check=True,
                                       capture_output=True).stdout, dtype=np.float32)
    want = np.load(saved / "logits.npy")
    np.testing.assert_array_equal(got.reshape(want.shape), want)
