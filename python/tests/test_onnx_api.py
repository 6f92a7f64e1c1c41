"""tyche.onnx: whole ONNX models from Python. Tiny models built with onnx.helper are compiled
(from a file and from a ModelProto) and checked against onnxruntime (every output within
1e-3 * max|reference|); tasks() shares one task between identical blocks; tune() fills a
database that compile() then picks up; bad models and bad inputs are tyche.InputError."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tyche

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(7)


def U(*shape):
    return RNG.uniform(-1, 1, size=shape).astype(np.float32)


def model(name, nodes, inputs, outputs, inits, opset=17):
    """A checked model: `inputs` and `outputs` are {name: shape} (float32; a None dim is symbolic)."""
    vin = [helper.make_tensor_value_info(k, TensorProto.FLOAT, [d if d is not None else "batch" for d in s])
           for k, s in inputs.items()]
    vout = [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in outputs.items()]
    g = helper.make_graph(nodes, name, vin, vout, initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tyche-test")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def conv_relu_gemm():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]), helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1)]
    return model("conv_relu_gemm", nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 10]},
                 {"w": U(4, 3, 3, 3), "b": U(4), "w2": U(10, 256) * 0.1, "b2": U(10)})


def matmul_softmax():
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1)]
    return model("matmul_softmax", nodes, {"a": [4, 16]}, {"p": [4, 8]}, {"w": U(16, 8), "b": U(8)})


def two_blocks():
    """A stem conv (3 -> 4 channels; the layout's transpose fuses into it), then two conv+relu
    blocks of the same shape (different weights): one task, called twice."""
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c2"], ["y"])]
    return model("two_blocks", nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 4, 8, 8]},
                 {"w0": U(4, 3, 3, 3), "b0": U(4), "w1": U(4, 4, 3, 3), "b1": U(4), "w2": U(4, 4, 3, 3), "b2": U(4)})


def reference(m, feeds):
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in m.graph.output], s.run(None, feeds)))


def assert_matches(got, ref):
    assert set(got) == set(ref)
    for k, r in ref.items():
        assert got[k].shape == r.shape and got[k].dtype == r.dtype, k
        assert np.abs(got[k] - r).max() <= 1e-3 * np.abs(r).max(), k


@pytest.fixture(scope="module")
def gemm_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "conv_relu_gemm.onnx"
    onnx.save(conv_relu_gemm(), str(path))
    return path


def test_compile_from_path(gemm_path):
    c = tyche.onnx.compile(gemm_path, threads=2)
    assert c.input_names == ["x"] and c.output_names == ["y"]
    assert c.inputs == {"x": ((1, 3, 8, 8), "float32")}
    assert c.tasks_tuned == 0 and len(c.tasks) >= 2
    assert 0 < c.arena_bytes <= c.naive_bytes
    x = U(1, 3, 8, 8)
    ref = reference(onnx.load(str(gemm_path)), {"x": x})
    assert_matches(c(x=x), ref)
    assert_matches(c({"x": x}), ref)
    assert_matches(c({"x": np.asfortranarray(x)}), ref)  # copied to C order


def test_compile_from_modelproto():
    m = matmul_softmax()
    c = tyche.onnx.compile(m)
    a = U(4, 16)
    out = c(a=a)
    assert_matches(out, reference(m, {"a": a}))
    np.testing.assert_allclose(out["p"].sum(axis=-1), 1, rtol=1e-5)


def test_tasks_share_identical_blocks():
    tasks = tyche.onnx.tasks(two_blocks())
    shared = [t for t in tasks if t["weight"] == 2]
    assert len(shared) == 1 and "conv_relu" in shared[0]["name"], tasks
    assert sum(t["weight"] for t in tasks if "conv" in t["name"]) == 3, tasks
    t = shared[0]
    assert t["gflop"] > 0 and len(t["hash"]) == 16 and int(t["hash"], 16) >= 0
    assert len({t["hash"] for t in tasks}) == len(tasks)
    assert tasks == tyche.onnx.compile(two_blocks()).tasks
    m = two_blocks()
    x = U(1, 3, 8, 8)
    assert_matches(tyche.onnx.compile(m)(x=x), reference(m, {"x": x}))


def test_tune_then_compile(gemm_path, tmp_path):
    db = tmp_path / "db"
    r = tyche.onnx.tune(gemm_path, trials=16, db=db, threads=2, progress=False, population=64, generations=2)
    assert r["trials"] == 16 and r["model"] == str(gemm_path)
    assert sum(t["trials"] for t in r["tasks"]) <= 16
    assert {t["name"] for t in r["tasks"]} == {t["name"] for t in tyche.onnx.tasks(gemm_path)}
    assert r["estimated_latency_ms"] > 0 and not r["interrupted"]
    assert abs(sum(t["share"] for t in r["tasks"]) - 1) < 1e-6
    c = tyche.onnx.compile(gemm_path, db=db)
    assert c.tasks_tuned > 0
    x = U(1, 3, 8, 8)
    assert_matches(c(x=x), reference(onnx.load(str(gemm_path)), {"x": x}))
    # A model's tasks are timed mixed by default (activations in the last-level cache, weights from
    # memory): every record says so, with ten single runs.
    lines = [json.loads(line) for line in (db / "records.jsonl").read_text().splitlines()]
    measured = [r for r in lines if r["seconds"]]
    assert r["timing"] == "mixed" and measured and all(r["target"]["timing"] == "mixed" for r in lines)
    searched = [r for r in measured if not r.get("confirmed")]  # a leader timed again has its rounds together
    assert all(len(r["seconds"]) in (1, 10) for r in searched)  # 1: far slower than the best, one run after its checking run
    assert any(len(r["seconds"]) == 10 for r in searched)
    # Another timing is passed through to every record (the names and what each evicts are
    # tests/tune/model/model_timing_test.cc's): one short tune shows it.
    cold = tyche.onnx.tune(gemm_path, trials=4, db=tmp_path / "cold", threads=2, progress=False, timing="cold",
                           population=64, generations=2)
    assert cold["trials"] == 4 and cold["timing"] == "cold"
    assert all(json.loads(line)["target"]["timing"] == "cold" for line in (tmp_path / "cold" / "records.jsonl").read_text().splitlines())
    with pytest.raises(tyche.InputError, match="unknown timing 'hot' \\(expected auto, llc, mixed, cold or warm\\)"):
        tyche.onnx.tune(gemm_path, trials=8, db=tmp_path / "hot", threads=2, progress=False, timing="hot")


def test_bfloat16_dtype(gemm_path):
    """dtype="bfloat16", as run-model --dtype: the products read bfloat16 (a Cast task or epilogue
    per activation), the outputs stay float32 and within bfloat16's rounding; the tasks differ
    from float32's (tune and compile with the same dtype); other dtypes are refused."""
    c = tyche.onnx.compile(gemm_path, threads=2, dtype="bfloat16")
    x = U(1, 3, 8, 8)
    ref = reference(onnx.load(str(gemm_path)), {"x": x})["y"]
    got = c(x=x)["y"]
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert np.abs(got - ref).max() <= 0.02 * np.abs(ref).max()
    f32 = {t["hash"] for t in tyche.onnx.tasks(gemm_path)}
    bf16 = {t["hash"] for t in tyche.onnx.tasks(gemm_path, dtype="bfloat16")}
    assert f32 and bf16 and not f32 & bf16
    with pytest.raises(tyche.InputError, match="dtype 'float16': float32 or bfloat16"):
        tyche.onnx.compile(gemm_path, dtype="float16")


def test_input_errors(gemm_path):
    c = tyche.onnx.compile(gemm_path)
    with pytest.raises(tyche.InputError, match="missing input 'x'"):
        c()
    with pytest.raises(tyche.InputError, match="'z' is not an input"):
        c(x=U(1, 3, 8, 8), z=U(1))
    with pytest.raises(tyche.InputError, match="input 'x' must be float32"):
        c(x=U(1, 3, 8, 8).astype(np.float64))
    with pytest.raises(tyche.InputError, match="input 'x' must be float32"):
        c(x=U(1, 3, 8, 9))
    with pytest.raises(tyche.InputError, match="no tuning database"):
        tyche.onnx.compile(gemm_path, db=gemm_path.parent / "missing")


def test_model_errors(tmp_path):
    m = model("unique", [helper.make_node("Unique", ["x"], ["y"])], {"x": [2, 3]}, {"y": [None]}, {})
    with pytest.raises(tyche.InputError, match="unsupported operators: Unique"):
        tyche.onnx.compile(m)
    bad = tmp_path / "not_a_model.onnx"
    bad.write_text("hello, not a model\n")
    for f in (tyche.onnx.compile, tyche.onnx.tasks):
        with pytest.raises(tyche.InputError, match="is not an ONNX model"):
            f(bad)
    with pytest.raises(tyche.InputError, match="cannot open"):
        tyche.onnx.tasks(tmp_path / "missing.onnx")
    with pytest.raises(tyche.InputError, match="path to a .onnx file or an onnx.ModelProto"):
        tyche.onnx.compile(42)


def test_symbolic_input_shape():
    m = model("symbolic", [helper.make_node("Relu", ["x"], ["y"])], {"x": [None, 5]}, {"y": [None, 5]}, {})
    with pytest.raises(tyche.InputError, match="symbolic dimension"):
        tyche.onnx.compile(m)
    c = tyche.onnx.compile(m, input_shapes={"x": (3, 5)})
    x = U(3, 5)
    np.testing.assert_array_equal(c(x=x)["y"], np.maximum(x, 0))
    with pytest.raises(tyche.InputError, match="not an input of the model"):
        tyche.onnx.tasks(m, input_shapes={"nope": (3, 5)})


def _unsqueeze_reshape_model():
    """Unsqueeze's axes and Reshape's shape given as graph inputs (int64), as ONNX's node tests give them."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    axes = helper.make_tensor_value_info("axes", TensorProto.INT64, [1])
    shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])
    g = helper.make_graph([helper.make_node("Unsqueeze", ["x", "axes"], ["u"]),
                           helper.make_node("Reshape", ["u", "shape"], ["y"])], "bind", [x, axes, shape], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="tyche-test")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def test_bind_freezes_inputs_that_ops_need_as_constants(tmp_path):
    m = _unsqueeze_reshape_model()
    with pytest.raises(tyche.InputError, match=r"the axes \('axes'\) must be a constant"):
        tyche.onnx.compile(m)
    bind = {"axes": np.array([0], np.int64), "shape": [3, 2]}
    c = tyche.onnx.compile(m, bind={"axes": bind["axes"], "shape": np.array(bind["shape"], np.int64)})
    assert c.input_names == ["x"]
    x = U(2, 3)
    np.testing.assert_array_equal(c(x=x)["y"], x.reshape(3, 2))
    assert tyche.onnx.tasks(m, bind={"axes": [0], "shape": np.array([3, 2])}) == tyche.onnx.tasks(
        m, bind={"axes": [0], "shape": np.array([3, 2])})
    with pytest.raises(tyche.InputError, match="the value is int32, the input is int64"):
        tyche.onnx.compile(m, bind={"axes": np.array([0], np.int32), "shape": np.array([3, 2])})
    with pytest.raises(tyche.InputError, match="'nope', which is not an input"):
        tyche.onnx.compile(m, bind={"nope": [1], "axes": [0], "shape": np.array([3, 2])})
    with pytest.raises(tyche.InputError, match="bind must be a dict"):
        tyche.onnx.compile(m, bind=[("axes", [0])])


def _control_flow_model():
    """y = x * (1 + 2 + ... + n) by a Loop of n iterations, where n = Ceil(limit) (a float input),
    then an If on `flag` (a bool input) that negates y or not."""
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["f", "one"], ["f1"]), helper.make_node("Mul", ["x", "f1"], ["xf"]),
         helper.make_node("Add", ["acc", "xf"], ["acc_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("acc", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [2])])
    neg = helper.make_graph([helper.make_node("Neg", ["s"], ["ng"])], "neg", [], [vi("ng", TensorProto.FLOAT, [2])])
    keep = helper.make_graph([helper.make_node("Identity", ["s"], ["k"])], "keep", [], [vi("k", TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("Ceil", ["limit"], ["lc"]), helper.make_node("Cast", ["lc"], ["n"], to=TensorProto.INT64),
             helper.make_node("Loop", ["n", "", "zero"], ["s"], body=body),
             helper.make_node("If", ["flag"], ["y"], then_branch=neg, else_branch=keep)]
    g = helper.make_graph(nodes, "control_flow",
                          [vi("x", TensorProto.FLOAT, [2]), vi("limit", TensorProto.FLOAT, []),
                           vi("flag", TensorProto.BOOL, [])], [vi("y", TensorProto.FLOAT, [2])],
                          initializer=[numpy_helper.from_array(np.float32(1), "one"),
                                       numpy_helper.from_array(np.zeros(2, np.float32), "zero")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="tyche-test")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def test_control_flow_expands_once_its_conditions_are_bound():
    m = _control_flow_model()
    with pytest.raises(tyche.InputError, match=r"node 'Loop_2' \(Loop\): the trip count \('n'\) must be a one-element "
                       r"constant: .*; it is computed from the input 'limit': bind it \(--bind\)$"):
        tyche.onnx.compile(m)
    with pytest.raises(tyche.InputError, match=r"node 'If_3' \(If\): the condition \('flag'\) must be a one-element "
                       r"constant: .*: bind it \(--bind\)$"):
        tyche.onnx.compile(m, bind={"limit": np.float32(3.5)})
    x = U(2)
    for limit, flag, want in [(3.5, True, -10 * x), (1.0, False, x), (0.0, False, 0 * x)]:
        c = tyche.onnx.compile(m, bind={"limit": np.float32(limit), "flag": np.bool_(flag)})
        np.testing.assert_allclose(c(x=x)["y"], want, rtol=1e-6)
    with pytest.raises(tyche.InputError, match=r"runs more than 4096 iterations"):
        tyche.onnx.compile(m, bind={"limit": np.float32(5000), "flag": np.bool_(True)})


def _malformed_control_flow(kind):
    vi = helper.make_tensor_value_info
    x = vi("x", TensorProto.FLOAT, [2, 3])
    ident = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "g", [], [vi("o", TensorProto.FLOAT, [2, 3])])
    step = helper.make_graph([helper.make_node("Add", ["s", "r"], ["s2"])], "step",
                             [vi("s", TensorProto.FLOAT, [3]), vi("r", TensorProto.FLOAT, [3])],
                             [vi("s2", TensorProto.FLOAT, [3])])
    inits = [numpy_helper.from_array(np.asarray(True), "t"), numpy_helper.from_array(np.int64(2), "two"),
             numpy_helper.from_array(np.zeros(3, np.float32), "z")]
    nodes = {
        "if without else": [helper.make_node("If", ["t"], ["y"], then_branch=ident)],
        "if with a left-out condition": [helper.make_node("If", [""], ["y"], then_branch=ident, else_branch=ident)],
        "loop forever": [helper.make_node("Loop", ["", "", "x"], ["y"], body=helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Neg", ["v"], ["v2"])], "b",
            [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("v", TensorProto.FLOAT, [2, 3])],
            [vi("c2", TensorProto.BOOL, []), vi("v2", TensorProto.FLOAT, [2, 3])]))],
        "loop body without inputs": [helper.make_node("Loop", ["two", "t"], ["y"], body=ident)],
        "scan with too many scan inputs": [helper.make_node("Scan", ["z", "x"], ["w", "y"], body=step, num_scan_inputs=5)],
        "scan body giving too few outputs": [helper.make_node("Scan", ["z", "x"], ["w", "y"], body=step, num_scan_inputs=1)],
        "scan input axis out of range": [helper.make_node("Scan", ["z", "x"], ["y"], body=step, num_scan_inputs=1,
                                                          scan_input_axes=[4])],
    }[kind]
    g = helper.make_graph(nodes, "bad", [x], [vi("y", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="tyche-test")
    m.ir_version = 8
    return m


@pytest.mark.parametrize("kind, message", [
    ("if without else", r"node 'If_0' \(If\): has no 'else_branch' graph"),
    ("if with a left-out condition", r"node 'If_0' \(If\): has no condition"),
    ("loop forever", r"neither a trip count nor a condition"),
    ("loop body without inputs", r"its body must take the iteration count"),
    ("scan with too many scan inputs", r"num_scan_inputs \(5\) must be in \[1, 2\]"),
    ("scan body giving too few outputs", r"node 'Scan_0' \(Scan\): has 2 outputs, its body gives 1"),
    ("scan input axis out of range", r"scan input axis 4 is out of range for 'x' of rank 2"),
])
def test_malformed_control_flow_is_one_line(kind, message):
    with pytest.raises(tyche.InputError, match=message):
        tyche.onnx.compile(_malformed_control_flow(kind))


def test_supported_ops_are_sorted_with_their_patterns():
    ops = tyche.onnx.supported_ops()
    names = [op for op, _ in ops]
    assert names == sorted(names) and len(names) == len(set(names))
    patterns = dict(ops)
    assert patterns["Conv"] == "anchor" and patterns["Relu"] == "elementwise"
    assert patterns["Resize"] == "injective" and patterns["Attention"] == "reduction"
    assert patterns["Constant"] == "constant"  # folded on import
    assert "NonZero" not in patterns  # data-dependent output shape: refused


def test_bfloat16_arrays_go_in_and_come_out_through_ml_dtypes(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    node = helper.make_node("Mul", ["x", "x"], ["y"])
    graph = helper.make_graph([node], "bf16", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.asarray([[1.5, -2, 0.25], [3, 0.5, -1]], dtype=ml_dtypes.bfloat16)
    y = tyche.onnx.compile(model, threads=1)({"x": x})["y"]
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), (x.astype(np.float32) ** 2))


@pytest.mark.parametrize("name,code", [("float8_e4m3fn", TensorProto.FLOAT8E4M3FN),
                                       ("float8_e4m3fnuz", TensorProto.FLOAT8E4M3FNUZ),
                                       ("float8_e5m2", TensorProto.FLOAT8E5M2),
                                       ("float8_e5m2fnuz", TensorProto.FLOAT8E5M2FNUZ),
                                       ("float4_e2m1fn", TensorProto.FLOAT4E2M1),
                                       ("int4", TensorProto.INT4), ("uint4", TensorProto.UINT4),
                                       ("int2", TensorProto.INT2), ("uint2", TensorProto.UINT2)])
@pytest.mark.parametrize("saturate", [1, 0])
def test_narrow_types_cast_as_ml_dtypes_and_round_trip(name, code, saturate):
    # Every float32 that rounds differently (ties, subnormals, overflow, inf, NaN, -0) cast to the
    # narrow type as ONNX's reference casts it (ml_dtypes, or onnx's saturate_cast), and back.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    narrow = getattr(ml_dtypes, name)
    every = np.arange(256, dtype=np.uint8).view(narrow) if name.startswith("float8") else None
    values = [0.0, -0.0, 0.3, -0.3, 0.25, 0.75, 1.5, 2.5, -2.5, 5.1, 7.4, 7.5, 8, -9.7, 15.7, 16.2, 100, 239,
              241, 250, 449, 460, 464, 500, 57344, 61440, 70000, 1e-9, 1e-3, -1e-3, np.inf, -np.inf, np.nan]
    x = np.asarray(values, dtype=np.float32)
    if every is not None:  # the midpoints between neighbouring codes: the ties
        finite = np.sort(np.unique(every.astype(np.float32)[np.isfinite(every.astype(np.float32))]))
        x = np.concatenate([x, finite, (finite[1:] + finite[:-1]) / 2]).astype(np.float32)
    cast = helper.make_node("Cast", ["x"], ["y"], to=code, saturate=saturate)
    back = helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT)
    graph = helper.make_graph([cast, back], "narrow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
                              [helper.make_tensor_value_info("y", code, [len(x)]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [len(x)])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    model.ir_version = 11
    got = tyche.onnx.compile(model, threads=1)({"x": x})
    with np.errstate(invalid="ignore"):
        if saturate and name.startswith("float8"):
            want = numpy_helper.saturate_cast(x, narrow)
        else:
            want = x.astype(narrow)
    assert got["y"].dtype == narrow
    np.testing.assert_array_equal(got["y"].astype(np.float32), want.astype(np.float32))
    np.testing.assert_array_equal(got["z"], want.astype(np.float32))
    # A narrow input: read as ml_dtypes gives it, converted exactly.
    model2 = helper.make_model(helper.make_graph(
        [back], "narrow_in", [helper.make_tensor_value_info("y", code, [len(x)])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [len(x)])]), opset_imports=[helper.make_opsetid("", 25)])
    model2.ir_version = 11
    np.testing.assert_array_equal(tyche.onnx.compile(model2, threads=1)({"y": want})["z"], want.astype(np.float32))


def test_a_narrow_input_read_by_an_op_that_computes_is_refused_in_one_line():
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "f8", [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    model.ir_version = 11
    with pytest.raises(tyche.InputError, match=r"input 'x' is FLOAT8E4M3FN, which only Cast, CastLike, "
                                               r"QuantizeLinear, DequantizeLinear and Identity read"):
        tyche.onnx.compile(model, threads=1)
