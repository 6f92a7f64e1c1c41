"""The TVM MetaSchedule driver: its parameter checks and argument order (always), and — where TVM
is installed (it is a baseline only, not in CI) — TVM's definition of every family computing
Tyche's reference, through the same argument mapping the suite measures with."""

import pytest

import tyche
from suitelib import tvm_driver
from suitelib.tvm_driver import DriverError, check_params, tvm_arguments


def test_every_family_takes_tyches_parameter_tuple():
    assert set(tvm_driver.FAMILIES) == set(tyche.op_names())
    for op in tyche.op_names():
        assert len(tvm_driver.PARAM_NAMES[op]) == len(tyche.workload(f"{op}-1").params)


@pytest.mark.parametrize("family,params,message", [
    ("XYZ", [1], "unknown family 'XYZ'"),
    ("GMM", [1, 2, 3], "GMM takes 4 parameters (B,N,M,K), got 3"),
    ("GMM", [1, 0, 3, 4], "GMM: N must be positive, got 0"),
    ("GRP", [1, 8, 8, 6, 8, 3, 1, 1], "GRP: channels 6 and 8 are not divisible by 4 groups"),
    ("T2D", [1, 4, 4, 8, 8, 3, 2, 3], "T2D: transposed conv padding 3 exceeds kernel size - 1 = 2"),
])
def test_bad_parameters_are_one_line_errors(family, params, message):
    with pytest.raises(DriverError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_params(family, params)


def test_cbr_swaps_scale_and_offset_and_others_keep_tyches_order():
    assert tvm_arguments("CBR", ["I", "W", "bias", "scale", "offset"], ["out"]) == ["I", "W", "bias", "offset", "scale", "out"]
    assert tvm_arguments("GMM", ["X", "Y"], ["Z"]) == ["X", "Y", "Z"]


@pytest.fixture(scope="module")
def tvm_ready():
    why = tvm_driver.available()
    if why:
        pytest.skip(f"TVM MetaSchedule is not usable here ({why})")


def run_tvm(op, tmp_path, reorder=True, fast_exp=False):
    import numpy as np
    import tvm

    w = tyche.workload(f"{op}-1", scale_down=True)
    lib = tvm.compile(tvm.IRModule({"main": tvm_driver.prim_func(op, w.params, fast_exp)}), target="llvm")
    path = str(tmp_path / "k.so")
    lib.export_library(path)
    kernel = tvm_driver.TvmKernel(path)
    inputs = w.inputs()
    (ref,) = w.reference(*inputs)
    out = np.full_like(ref, np.nan)
    kernel.bind(tvm_arguments(op, inputs, [out]) if reorder else inputs + [out])
    kernel.run_bound()
    return float(np.abs(out - ref).max()) / float(np.abs(ref).max())


@pytest.mark.parametrize("op", tyche.op_names())
def test_tvms_definition_computes_tyches_reference(tvm_ready, op, tmp_path):
    assert run_tvm(op, tmp_path) <= 1e-4


def test_without_the_mapping_cbr_is_wrong(tvm_ready, tmp_path):
    assert run_tvm("CBR", tmp_path, reorder=False) > 1e-2


def test_softmax_with_tvms_fast_exp_is_accurate_and_is_another_program(tvm_ready, tmp_path):
    assert run_tvm("SFM", tmp_path, fast_exp=True) <= 1e-5
    w = tyche.workload("SFM-1", scale_down=True)
    assert "T.exp(" in tvm_driver.prim_func("SFM", w.params).script()  # libm's expf, per element
    fast = tvm_driver.prim_func("SFM", w.params, True).script()
    assert "T.exp(" not in fast and "T_fast_exp" in fast
    with pytest.raises(DriverError, match="--fast-exp applies to SFM only, not GMM"):
        tvm_driver.te_tensors("GMM", [1, 2, 2, 2], fast_exp=True)


@pytest.mark.parametrize("op", ["DENSE_RELU", "CBR"])
def test_tuned_weights_are_packed_once_outside_main(tvm_ready, op, tmp_path):
    """Weights are layout-free for TVM as for Tyche: its best kernel takes them packed, the library
    lays them out (layout_rewrite_<i>, run once in bind) and the result is still the reference."""
    import numpy as np

    assert tvm_driver.layout_free_params(op) == ([1, 2, 3, 4] if op == "CBR" else [1])
    assert tvm_driver.layout_free_params("GMM") == []
    import json
    import subprocess
    import sys

    w = tyche.workload(f"{op}-1", scale_down=True)
    # In its own process, as the suite runs it: a second tune_tir in one process trips over
    # MetaSchedule's logging configuration, which the first one left changed.
    subprocess.run([sys.executable, tvm_driver.__file__, "tune", "--family", op, "--params", ",".join(map(str, w.params)),
                    "--trials", "8", "--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "r.json"), "--threads", "2"],
                   check=True, capture_output=True)
    r = json.load(open(tmp_path / "r.json"))
    assert r["layout_rewrites"] and {x["arg"] for x in r["layout_rewrites"]} <= set(tvm_driver.layout_free_params(op))
    kernel = tvm_driver.TvmKernel(r["library"])
    assert kernel.layout_rewrites == r["layout_rewrites"]
    inputs = w.inputs()
    (ref,) = w.reference(*inputs)
    out = np.full_like(ref, np.nan)
    kernel.bind(tvm_arguments(op, inputs, [out]))
    kernel.run_bound()
    assert float(np.abs(out - ref).max()) / float(np.abs(ref).max()) <= 1e-4


def test_a_finished_tuning_is_reused_only_with_the_same_settings(tvm_ready, tmp_path):
    import json
    from suitelib.suite import reusable_tvm_tuning

    w = tyche.workload("GMM-1")
    d = tmp_path / "old-work" / "tvm" / "GMM-1"
    d.mkdir(parents=True)
    (d / "best.so").write_bytes(b"")
    result = {"family": "GMM", "params": list(w.params), "fast_exp": False, "seed": 0, "trials": 64,
              "target": str(tvm_driver.make_target(None, 2)), "tvm_version": tvm_driver.tvm_version(),
              "library": str(d / "best.so"), "best_seconds": 1e-3}
    (d / "result.json").write_text(json.dumps(result))
    dirs = [str(tmp_path / "empty"), str(tmp_path / "old-work")]
    assert reusable_tvm_tuning(w, 64, 0, 2, False, dirs)["reused_from"] == str(d / "result.json")
    assert reusable_tvm_tuning(w, 128, 0, 2, False, dirs) is None  # other trials
    assert reusable_tvm_tuning(w, 64, 1, 2, False, dirs) is None  # other seed
    assert reusable_tvm_tuning(w, 64, 0, 1, False, dirs) is None  # other threads: another target
    assert reusable_tvm_tuning(w, 64, 0, 2, True, dirs) is None  # fast exp is another folder
    assert reusable_tvm_tuning(tyche.workload("GMM-2"), 64, 0, 2, False, dirs) is None
    (d / "best.so").unlink()
    assert reusable_tvm_tuning(w, 64, 0, 2, False, dirs) is None  # its kernel is gone
