"""Programs from Python: presets, index notation and the tensor-expression API build the same
PrimFuncs as the C++ front-end."""

import numpy as np
import pytest

import tyche
from tyche import te
from conftest import SOURCE_DIR


def test_preset_prints_the_cpp_golden():
    w = tyche.workload("GMM-1")
    assert str(w.func) == (SOURCE_DIR / "tests" / "golden" / "GMM-1.txt").read_text()
    assert str(w) == str(w.func)
    assert w.flop == 2 * 128 ** 3
    assert w.shape == "B=1,N=128,M=128,K=128"


def test_every_preset_is_listed_and_loads():
    names = tyche.preset_names()
    assert len(names) == 56 and names[0] == "GMM-1"
    assert len(tyche.op_names()) == 14
    for op in tyche.op_names():
        w = tyche.workload(f"{op}-1", scale_down=True)
        assert w.op == op


def test_unknown_workload_is_an_input_error():
    with pytest.raises(tyche.InputError, match="NOPE-1"):
        tyche.workload("NOPE-1")
    with pytest.raises(ValueError):  # InputError is also a ValueError
        tyche.workload("GMM-9")


def test_formula_matches_the_index_notation_golden():
    w = tyche.formula("C[i,j] += A[i,k] * B[k,j]", i=64, j=32, k=16)
    assert w.func.params == [("A", [64, 16], "float32"), ("B", [16, 32], "float32"), ("C", [64, 32], "float32")]
    with pytest.raises(tyche.InputError, match="column"):
        tyche.formula("C[i,j] += A[i,k] * ", i=4, j=4, k=4)
    with pytest.raises(tyche.InputError):
        tyche.formula("C[i,j] += A[i,k] * B[k,j]")


def test_te_matmul_equals_the_formula():
    A = te.placeholder((64, 16), name="A")
    B = te.placeholder((16, 32), name="B")
    k = te.reduce_axis(16, name="k")
    C = te.compute((64, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    text = str(func)
    assert 'with block("C")' in text and "axis.reduce(16, k)" in text
    same = tyche.formula("C[i,j] += A[i,k] * B[k,j]", i=64, j=32, k=16).func
    assert str(func).replace("def main", "def X") == str(same).replace(f"def {same.name}", "def X")


def test_te_elementwise_and_reductions_run():
    A = te.placeholder((8, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    M = te.compute((8,), lambda i: te.max(A[i, k], axis=k), name="M")
    E = te.compute((8, 16), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    R = te.compute((8, 16), lambda i, j: te.if_then_else(j < 8, E[i, j] * 2.0, te.max(E[i, j], 0.5)), name="R")
    func = te.create_prim_func([A, R])
    a = np.random.default_rng(0).uniform(-1, 1, (8, 16)).astype("float32")
    e = np.exp(a - a.max(axis=1, keepdims=True))
    want = np.where(np.arange(16) < 8, e * 2, np.maximum(e, 0.5))
    (got,) = tyche.interpret(func, a)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(tyche.build(func)(a), want, rtol=1e-5)


def test_te_errors():
    A = te.placeholder((8, 16), name="A")
    with pytest.raises(tyche.InputError, match="2 dimensions"):
        A[1]
    with pytest.raises(tyche.InputError, match="expected an expression"):
        te.compute((8,), lambda i: A[i, "x"], name="B")
    with pytest.raises(tyche.InputError, match="unknown data type 'complex'"):
        te.placeholder((4,), dtype="complex", name="Z")
    with pytest.raises(tyche.InputError, match="larger than 2"):
        te.placeholder((2 ** 32 + 4,), name="Huge")
    with pytest.raises(tyche.InputError, match="reads A outside its shape"):
        te.create_prim_func([A, te.compute((4,), lambda i: A[i + 100000000, 0], name="Far")])
    # an expression is not a truth value: Python's max() or `x if e else y` would decide on the object
    with pytest.raises(TypeError, match="no truth value"):
        te.compute((8,), lambda i: max(A[i, 0], 0.0), name="M")


def test_te_comparisons_build_expressions():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: te.if_then_else(i == 0, 100.0, A[i]), name="B")
    C = te.compute((8,), lambda i: te.select(i != 3, B[i], -1.0), name="C")
    a = np.arange(8, dtype="float32")
    (got,) = tyche.interpret(te.create_prim_func([A, C]), a)
    np.testing.assert_array_equal(got, [100, 1, 2, -1, 4, 5, 6, 7])


def test_te_gmm_is_the_preset():
    """The TE API builds the same PrimFunc as the C++ front-end: GMM written here prints as the
    GMM-1 golden the C++ preset prints."""
    B, N, M, K = 1, 128, 128, 128
    X = te.placeholder((B, N, K), name="X")
    Y = te.placeholder((B, K, M), name="Y")
    k = te.reduce_axis(K, name="k")
    Z = te.compute((B, N, M), lambda b, i, j: te.sum(X[b, i, k] * Y[b, k, j], axis=k), name="Z", axis_names=["b", "i", "j"])
    func = te.create_prim_func([X, Y, Z], name="GMM")
    assert str(func) == (SOURCE_DIR / "tests" / "golden" / "GMM-1.txt").read_text()
