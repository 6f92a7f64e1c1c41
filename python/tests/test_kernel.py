"""Kernels: every preset family (scaled down, unscheduled and as sampled from its design space)
against its reference and, where numpy says it plainly, against numpy; DLPack zero-copy; bad
arguments."""

import numpy as np
import pytest

import tyche
from tyche import rules


@pytest.mark.parametrize("op", tyche.op_names())
def test_family_kernels_match_the_reference(op):
    w = tyche.workload(f"{op}-1", scale_down=True)
    inputs = w.inputs(seed=7)
    expected = w.reference(*inputs)
    spaces = rules.generate_space(w, seed=1)
    sampled = tyche.Schedule(w)
    spaces[0].trace.apply_to(sampled, fresh_decisions=True)
    for program in (w, sampled):
        outs = tyche.build(program)(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        assert len(outs) == len(expected)
        for got, want in zip(outs, expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gmm_and_softmax_against_numpy():
    w = tyche.workload("GMM-1", scale_down=True)
    x, y = w.inputs()
    np.testing.assert_allclose(tyche.build(w)(x, y), x @ y, rtol=1e-4, atol=1e-4)
    s = tyche.workload("SFM-1", scale_down=True)
    (a,) = s.inputs()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(tyche.build(s)(a), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_outputs_in_place_without_copy_and_strided_outputs():
    w = tyche.formula("C[i,j] += A[i,k] * B[k,j]", i=16, j=8, k=4)
    k = tyche.build(w)
    a = np.random.default_rng(1).uniform(-1, 1, (16, 4)).astype("float32")
    b = np.random.default_rng(2).uniform(-1, 1, (4, 8)).astype("float32")
    c = np.zeros((16, 8), dtype="float32")
    assert k(a, b, c) is None
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    wide = np.zeros((16, 16), dtype="float32")
    k(np.asfortranarray(a), b, wide[:, ::2])  # copied in, and the output copied back
    np.testing.assert_allclose(wide[:, ::2], a @ b, rtol=1e-5)
    assert not wide[:, 1::2].any()


def test_dlpack_producer_is_accepted():
    class Wrapped:  # anything exporting DLPack, not only numpy
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, *args, **kwargs):
            return self.a.__dlpack__(*args, **kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    w = tyche.formula("B[i] = A[i] * 2", i=32)
    a = np.arange(32, dtype="float32")
    b = np.zeros(32, dtype="float32")
    tyche.build(w)(Wrapped(a), b)
    np.testing.assert_array_equal(b, a * 2)


def test_bad_arguments_are_input_errors():
    k = tyche.build(tyche.formula("C[i,j] += A[i,k] * B[k,j]", i=16, j=8, k=4))
    a = np.zeros((16, 4), dtype="float32")
    b = np.zeros((4, 8), dtype="float32")
    with pytest.raises(tyche.InputError, match=r"argument 1 \('B'\) must have shape \(4, 8\), got \(8, 4\)"):
        k(a, b.T.copy())
    with pytest.raises(tyche.InputError, match=r"argument 0 \('A'\) must be float32, got float64"):
        k(a.astype("float64"), b)
    with pytest.raises(tyche.InputError, match="takes 2 inputs"):
        k(a)
    with pytest.raises(tyche.InputError, match="must be an array"):
        k(a, [[0.0] * 8] * 4)
    with pytest.raises(tyche.InputError, match="overlaps"):
        buf = np.zeros(16 * 4 + 16 * 8, dtype="float32")
        k(buf[:64].reshape(16, 4), b, buf[:128].reshape(16, 8))
    with pytest.raises(tyche.InputError, match="byte order"):
        k(a.astype(">f4"), b)
    with pytest.raises(tyche.InputError, match="read-only"):
        c = np.zeros((16, 8), dtype="float32")
        c.flags.writeable = False
        k(a, b, c)


def test_time_and_source():
    w = tyche.workload("GMM-1", scale_down=True)
    k = tyche.build(w)
    t = k.time(*w.inputs(), repeat=3, min_repeat_ms=1)
    assert len(t.seconds) == 3 and t.min <= t.median and t.min > 0
    assert "void" in k.source("c")
    assert "define" in k.source("llvm")
    assert "ret" in k.source("asm")
    assert "for" in k.source("ir")
    with pytest.raises(tyche.InputError, match="repeat must be at least 1"):
        k.time(*w.inputs(), repeat=0)
    with pytest.raises(tyche.InputError, match="unknown source kind"):
        k.source("ptx")
    with pytest.raises(tyche.InputError, match="unknown target"):
        tyche.build(w, target="cuda")
    with pytest.raises(tyche.TycheError, match="unknown CPU|cpu"):
        tyche.build(w, cpu="pentium-9000")


def test_empty_arrays_start_where_the_native_runtime_would_put_them():
    # a streamed read's speed depends on the offset in a page (Zen 4: NRM-3 1.15x slower at 64 bytes)
    assert tyche.empty(3).ctypes.data % 64 == 0
    assert tyche.empty(1024).ctypes.data % 4096 == 0 and tyche.zeros((32, 32)).ctypes.data % 4096 == 0
    big = tyche.empty((1024, 1024))
    assert big.ctypes.data % (2 << 20) == 0 and big.shape == (1024, 1024) and big.flags.c_contiguous
    assert tyche.empty(0).size == 0


def test_aligned_arrays_pass_without_copy_and_misaligned_ones_are_staged():
    k = tyche.build(tyche.formula("B[i] = A[i] * 2", i=1024))
    a = tyche.empty(1024)
    a[...] = np.arange(1024)
    b = tyche.zeros(1024)
    k(a, b)
    assert k.last_call_copies == 0 and a.ctypes.data % 64 == 0
    np.testing.assert_array_equal(b, a * 2)
    # views 4 bytes past an aligned address: generated code's aligned vector loads would fault
    in_buf, out_buf = tyche.empty(1025), tyche.zeros(1025)
    in_buf[1:] = np.arange(1024)
    for _ in range(20):
        k(in_buf[1:], out_buf[1:])
    assert k.last_call_copies == 2
    np.testing.assert_array_equal(out_buf[1:], np.arange(1024) * 2)
    assert out_buf[0] == 0
    out = k(in_buf[1:])  # allocated outputs are aligned
    assert out.ctypes.data % 64 == 0 and k.last_call_copies == 1


def test_a_weight_laid_out_anew_is_packed_at_every_call_and_once_before_timing():
    """A schedule that reads DENSE_RELU's weight (layout-free) as panels of 16 columns, written as
    the RewriteLayout postprocessor writes it: the kernel lays the weight out before it runs, so
    its result is right, and timing leaves the layout out."""
    w = tyche.workload("DENSE_RELU-1", scale_down=True)  # N = M = K = 32
    sch = tyche.Schedule(w.func)
    dense = sch.get_block("dense")
    i, j, k = sch.get_loops(dense)
    j0, j1 = sch.split(j, [2, 16])
    sch.reorder(j0, i, k, j1)
    packed = sch.cache_read(dense, 1, "global")
    sch.transform_layout(packed, 0, "lambda k, j: (j // 16, k, j % 16)")
    sch.annotate(packed, "meta_schedule.layout_rewrite_preproc", 1)
    kernel = tyche.build(sch)
    assert kernel.layout_rewrites == [1]
    ir = kernel.source("ir")  # the main part takes the packed weight as its parameter and copies nothing
    assert ", B_global: Buffer(" in ir and "B[" not in ir
    a, b = w.inputs()
    (ref,) = w.reference(a, b)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-5, atol=1e-5)
    b2 = (b * 2).astype(np.float32)  # a new weight is laid out anew at the next call
    np.testing.assert_allclose(kernel(a, b2), w.reference(a, b2)[0], rtol=1e-5, atol=1e-5)
    assert kernel.time(a, b, repeat=3, min_repeat_ms=1).median > 0
    assert tyche.build(w).layout_rewrites == []


def test_typed_formulas_and_presets_compute_in_their_output_type():
    w = tyche.formula("C[i,j] += A[i,k] * B[k,j]", dtypes={"A": "uint8", "B": "int8", "C": "int32"}, i=8, j=16, k=300)
    assert w.dtypes == "C=int32,A=uint8,B=int8"
    a, b = w.inputs()
    assert a.dtype == np.uint8 and b.dtype == np.int8 and a.max() > 200 and b.min() < -100
    c = tyche.build(w)(a, b)
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))  # exact
    np.testing.assert_array_equal(w.reference(a, b)[0], c)
    same = tyche.formula("C[i,j] += A[i,k] * B[k,j]", dtypes="A=uint8,B=int8,C=int32", i=8, j=16, k=300)
    assert same.dtypes == w.dtypes
    p = tyche.workload("GMM-1-U8S8", scale_down=True)
    assert p.precision == "U8S8" and p.name == "GMM-1-U8S8 (scaled down)"
    x, y = p.inputs()
    np.testing.assert_array_equal(tyche.build(p)(x, y), np.matmul(x.astype(np.int64), y.astype(np.int64)))
    with pytest.raises(tyche.InputError, match="never converts a float to an integer"):
        tyche.formula("C[i] = A[i]", dtypes={"C": "int32"}, i=4)
    with pytest.raises(tyche.InputError, match="unknown element type 'int4'"):
        tyche.formula("C[i] = A[i]", dtypes={"A": "int4"}, i=4)
