"""The suite's baseline drivers compute what Tyche's references compute, on every preset of every
family they implement (scaled down), and refuse bad input with a clear error."""

import re

import numpy as np
import pytest

import tyche
from suitelib.baselines import SYSTEMS, BaselineError

PRESETS = [p for p in tyche.preset_names()]
# What each library is expected to implement (the issue's list, plus CBR, NRM and TBG for oneDNN,
# and NRM for OpenBLAS as numpy's norm).
EXPECTED = {
    "onednn": {"GMM", "C1D", "C2D", "C3D", "GRP", "DIL", "DEP", "T2D", "NRM", "SFM", "CBR", "TBG", "DENSE_RELU"},
    "openblas": {"GMM", "TBG", "NRM", "DENSE_RELU"},
}


def relative_error(out, ref):
    return float(np.abs(out - ref).max() / max(1.0, float(np.abs(ref).max())))


def test_the_libraries_implement_the_expected_families(library):
    for system in SYSTEMS:
        assert {f for f in tyche.op_names() if library.supports(system, f)} == EXPECTED[system]
    assert not library.supports("mkl", "GMM")


@pytest.mark.parametrize("name", PRESETS)
def test_each_driver_matches_the_reference(library, name):
    w = tyche.workload(name, scale_down=True)
    inputs = w.inputs()
    (ref,) = w.reference(*inputs)
    for system in SYSTEMS:
        if not library.supports(system, w.op):
            continue
        out = np.full_like(ref, np.nan)
        library.baseline(system, w.op, w.params, inputs + [out]).run()
        assert relative_error(out, ref) < 1e-5, f"{system} {name}"


def test_a_driver_fed_the_inputs_the_wrong_way_round_is_caught(library):
    # The check above can fail: GMM with X and Y swapped (same sizes, N = M = K) gives another product.
    w = tyche.workload("GMM-1", scale_down=True)
    x, y = w.inputs()
    (ref,) = w.reference(x, y)
    for system in ("onednn", "openblas"):
        out = np.zeros_like(ref)
        library.baseline(system, "GMM", w.params, [y, x, out]).run()
        assert relative_error(out, ref) > 1e-2


def test_each_baseline_says_which_implementation_runs(library):
    w = tyche.workload("GMM-1")
    arrays = w.inputs() + [np.zeros(w.func.params[-1][1], dtype=np.float32)]
    onednn = library.baseline("onednn", "GMM", w.params, arrays).describe()
    assert onednn and onednn != "unknown", onednn  # e.g. "brg:avx2", "jit:gemm:any"
    assert library.baseline("openblas", "GMM", w.params, arrays).describe().startswith("sgemm, ")


def test_the_norm_baselines_are_real_kernels_not_reference_code(library):
    # oneDNN's norm_lp_sum is its reference kernel (ref:any, ~0.1 GFLOP/s): the NRM baseline
    # composes jit primitives instead; OpenBLAS's is sdot. Both well above the reference kernel's
    # speed: 19 and 43 GFLOP/s on an idle AMD EPYC Zen 4; the bound is 3x the reference's, because
    # a host busy with other work (CI beside a tune) slowed oneDNN's two spinning threads to 0.75.
    w = tyche.workload("NRM-3")
    inputs = w.inputs()
    out = np.zeros(1, dtype=np.float32)
    for system in ("onednn", "openblas"):
        b = library.baseline(system, "NRM", w.params, inputs + [out])
        assert "ref" not in b.describe(), b.describe()
        b.run()
        assert relative_error(out, w.reference(*inputs)[0]) < 1e-5, system
        assert w.flop / min(b.window(4) for _ in range(5)) / 1e9 > 0.3, system


def test_timing_windows_are_positive_and_scale_with_calls(library):
    w = tyche.workload("GMM-1")
    inputs = w.inputs()
    out = np.zeros(w.func.params[-1][1], dtype=np.float32)
    b = library.baseline("onednn", "GMM", w.params, inputs + [out])
    one = min(b.window(1) for _ in range(5))
    assert 0 < one < 1.0
    assert b.window(20) > 0


@pytest.mark.parametrize("system,family,params,buffers,message", [
    ("cudnn", "GMM", [1, 4, 4, 4], 3, "unknown baseline system 'cudnn'"),
    ("onednn", "CAP", [1, 8, 8, 4, 4, 3, 1, 1], 3, "onednn has no implementation of CAP"),
    ("openblas", "C2D", [1, 8, 8, 4, 4, 3, 1, 1], 3, "openblas has no implementation of C2D"),
    ("onednn", "GMM", [1, 4, 4], 3, "GMM takes 4 parameters, got 3"),
    ("openblas", "GMM", [1, 4, 4, 4], 2, "GMM takes 3 buffers (inputs, then the output), got 2"),
    ("onednn", "C2D", [1, 2, 2, 4, 4, 7, 1, 0], 3, "convolution output is empty"),
    ("onednn", "GRP", [1, 8, 8, 6, 8, 3, 1, 1], 3, "channels are not divisible by the group count"),
])
def test_bad_requests_are_refused_with_one_line(library, system, family, params, buffers, message):
    arrays = [np.zeros(4096, dtype=np.float32) for _ in range(buffers)]
    with pytest.raises(BaselineError, match=re.escape(message)):
        library.baseline(system, family, params, arrays)


def test_arrays_must_be_contiguous_float32(library):
    with pytest.raises(BaselineError, match="C-contiguous float32"):
        library.baseline("onednn", "SFM", [4, 4], [np.zeros((4, 4)), np.zeros((4, 4), dtype=np.float32)])
    with pytest.raises(BaselineError, match="C-contiguous float32"):
        library.baseline("onednn", "SFM", [4, 4], [np.zeros((4, 8), dtype=np.float32)[:, ::2], np.zeros((4, 4), dtype=np.float32)])


def test_roofline_probes(library):
    bits = library.vector_bits()
    flags = set(re.search(r"^flags\s*:(.*)$", open("/proc/cpuinfo").read(), re.M).group(1).split())
    assert bits == (512 if "avx512f" in flags else 256 if {"avx2", "fma"} <= flags else 128)
    peak = library.peak_gflops(1, 0.2)
    # One core sustains at least one vector FMA per cycle at >= 1 GHz.
    assert peak >= 2 * bits / 32 * 1.0, peak
    bandwidth = library.memory_bandwidth(1, 32 << 20, 2)
    assert 0.5 < bandwidth < 1000, bandwidth
