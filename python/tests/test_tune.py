"""Design spaces and tuning from Python: built-in rules, a Python rule inside a space, a Python
space function tuned for a few trials, the GIL released while native code runs."""

import threading
import time

import numpy as np
import pytest

import tyche
from tyche import rules


def gmm():
    return tyche.workload("GMM-1", scale_down=True)


# Each candidate timed briefly, two leaders timed again: the search and the database are under test here.
QUICK = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2)


class SplitColumns:
    """A user's rule: split the output block's column loop by a sampled factor; a second branch
    also vectorizes the inner part."""
    name = "split-columns"

    def __init__(self):
        self.calls = []

    def apply(self, sch, block):
        self.calls.append(sch.block_name(block))
        if sch.iter_kinds(block) != "SSSR":
            return [sch]
        j = sch.get_loops(block)[2]
        j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=8))
        other = sch.copy()
        other.annotate(j1, "pragma_note", "vector")
        return [sch, other]


def test_builtin_rules_and_options():
    names = [r.name for r in rules.default()]
    assert any("MultiLevelTiling" in n for n in names) and any("AutoInline" in n for n in names)
    mlt = rules.multi_level_tiling(structure="SSRSRS", reuse_write={"req": "may", "levels": [1, 2]})
    sch = tyche.Schedule(gmm())
    out = mlt.apply(sch, sch.get_block("Z"))
    traces = [str(s.trace) for s in out]
    assert len(out) >= 2 and any("cache_write" in t for t in traces) and any("cache_write" not in t for t in traces)
    assert "Z_global" not in str(sch.func)  # the given schedule stays as it was
    with pytest.raises(tyche.InputError, match="unknown option 'structur'"):
        rules.multi_level_tiling(structur="SSR")
    with pytest.raises(tyche.InputError, match="req must be"):
        rules.multi_level_tiling(reuse_write={"req": "sometimes"})


def test_python_rule_joins_the_builtin_rules():
    rule = SplitColumns()
    spaces = rules.generate_space(gmm(), [rules.auto_inline(), rule, rules.parallel_vectorize_unroll()])
    assert rule.calls == ["Z", "root", "root"]  # the root of each of the rule's two branches
    assert len(spaces) == 2
    for s in spaces:
        text = str(s.trace)
        assert "sample_perfect_tile" in text and "sch.split" in text
        assert "parallel" in text or "meta_schedule" in text or "annotate" in text
    assert "pragma_note" in str(spaces[1].trace) and "pragma_note" not in str(spaces[0].trace)


def test_rule_and_space_function_errors():
    class Broken:
        def apply(self, sch, block):
            raise RuntimeError("broken rule")

    # what a rule or a space function raises reaches the caller as it was, with a note saying where
    with pytest.raises(RuntimeError, match="broken rule") as broken:
        rules.generate_space(gmm(), [Broken()])
    assert broken.value.__notes__ == ["raised in schedule rule 'Broken' applied to block 'Z'"]

    def bad_space(sch):
        sch.split(sch.get_loops(sch.get_block("Z"))[1], [3, 5])

    with pytest.raises(tyche.ScheduleError) as refused:
        rules.generate_space(gmm(), bad_space)
    assert refused.value.code == "invalid_factors" and refused.value.__notes__ == ["raised in the space function"]
    with pytest.raises(tyche.ScheduleError):
        tyche.tune(gmm(), trials=4, db="/tmp/tyche_unused_db", space=bad_space, progress=False)

    class Forgetful:
        def apply(self, sch, block):
            sch.get_loops(block)

    with pytest.raises(TypeError, match="rule 'Forgetful' returned None"):
        rules.generate_space(gmm(), [Forgetful()])
    with pytest.raises(tyche.InputError, match="not a rule"):
        rules.generate_space(gmm(), [42])
    with pytest.raises(tyche.InputError, match="unknown space 'fancy'"):
        rules.generate_space(gmm(), "fancy")
    assert len(rules.generate_space(gmm(), "default")) == len(rules.generate_space(gmm(), rules.default()))


def paper_space(sch):
    """The paper's example: tiles sampled, a producer computed at a sampled location."""
    block = sch.get_block("Z")
    b, i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i0, j0, i1, j1)
    sch.parallel(i0)


def test_python_space_function_tuned_for_a_few_trials(tmp_path, capsys):
    w = gmm()
    result = tyche.tune(w, trials=8, batch=4, db=tmp_path / "db", space=paper_space, population=32, generations=1,
                         **QUICK)
    assert result.trials == 8
    assert result.best_seconds > 0 and result.best_gflops > 0
    text = str(result.best_trace)
    assert "sample_perfect_tile" in text and "sch.parallel" in text
    x, y = w.inputs()
    np.testing.assert_allclose(tyche.build(result)(x, y), x @ y, rtol=1e-4, atol=1e-4)
    assert "[tyche] GMM-1 (scaled down): 8/8 trials" in capsys.readouterr().err
    # the database makes a rerun resume: nothing is measured twice
    again = tyche.tune(w, trials=4, batch=4, db=tmp_path / "db", space=paper_space, population=32, generations=1,
                       progress=False, **QUICK)
    assert again.resumed_records == 8 + 2  # the first tune's 8 trials and its 2 leaders timed again
    assert again.trials == 4 and again.warnings == []


class SplitInnermost:
    def apply(self, sch, block):
        if sch.block_name(block) == "root":
            return [sch]
        inner = sch.get_loops(block)[-1]
        sch.split(inner, sch.sample_perfect_tile(inner, n=2, max_innermost_factor=16))
        return [sch]


def test_tune_a_te_program_with_a_rule_list(tmp_path):
    from tyche import te
    A = te.placeholder((32, 16), name="A")
    B = te.compute((32, 16), lambda i, j: te.max(A[i, j], 0.0), name="B")
    func = te.create_prim_func([A, B], name="relu")
    seen = []
    result = tyche.tune(func, trials=4, batch=4, db=tmp_path / "db", space=[SplitInnermost(), rules.parallel_vectorize_unroll()],
                        progress=lambda *a: seen.append(a), population=16, generations=1,
                        target="llvm -num-cores 2 -mcpu x86-64-v2", **QUICK)
    assert result.trials == 4 and result.best_seconds > 0
    assert tyche.build(result).cpu.startswith("x86-64-v2")  # built for the CPU it was tuned for
    assert seen and seen[-1][0] == 4 and seen[-1][2] == "relu"
    assert seen[-1][3] == result.history[-1]["measured_best_seconds"] > 0  # as measured, not drift-corrected
    a = np.random.default_rng(0).uniform(-1, 1, (32, 16)).astype("float32")
    np.testing.assert_array_equal(tyche.build(result)(a), np.maximum(a, 0))
    with pytest.raises(tyche.InputError, match="unknown option"):
        tyche.tune(func, trials=4, db=tmp_path / "db", no_such_option=1)
    with pytest.raises(tyche.TycheError, match="repeats"):
        tyche.tune(func, trials=4, db=tmp_path / "db", repeat=0)
    with pytest.raises(tyche.TycheError, match="worker program '/nowhere' not found"):
        tyche.tune(func, trials=4, db=tmp_path / "db", worker="/nowhere", progress=False)

    def failing_progress(*args):
        raise ValueError("progress display broke")

    with pytest.raises(ValueError, match="progress display broke"):  # after the round is saved
        tyche.tune(func, trials=8, batch=4, db=tmp_path / "db2", space=[SplitInnermost()], progress=failing_progress,
                   population=16, generations=1, **QUICK)


def test_native_work_releases_the_gil():
    w = tyche.workload("GMM-1")  # 128^3: long enough to count during
    k = tyche.build(w)
    x, y = w.inputs()
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = time.perf_counter()
    k.time(x, y, repeat=5, min_repeat_ms=60)
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    assert elapsed > 0.25 and ticks > 50  # the counter ran while the kernel was timed


def test_ctrl_c_stops_the_tune_after_saving_what_was_measured(tmp_path):
    import os
    import signal
    import json
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        tyche.tune(gmm(), trials=100000, batch=4, db=tmp_path / "db", population=16,
                   generations=1, progress=False, **QUICK)
    assert time.perf_counter() - start < 30
    timer.join()
    records = [json.loads(line) for f in (tmp_path / "db").glob("records*") for line in f.read_text().splitlines()]
    assert records, "the rounds measured before the interrupt are in the database"


def test_tune_for_the_opencl_device_and_refuse_a_missing_cuda_driver(tmp_path, monkeypatch):
    """A GPU target tunes as a CPU one does (PoCL runs OpenCL here); no device: one line, no work."""
    try:
        result = tyche.tune(gmm(), trials=4, batch=4, db=tmp_path / "db", target="opencl", population=16, generations=1,
                            progress=False, **QUICK)
    except tyche.TycheError as e:
        if "OpenCL" in str(e):
            pytest.skip(str(e))
        raise
    assert result.trials == 4 and result.best_seconds > 0
    monkeypatch.setenv("TYCHE_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1")
    with pytest.raises(tyche.TycheError, match="cannot load the CUDA driver"):
        tyche.tune(gmm(), trials=4, db=tmp_path / "db2", target="cuda -arch=sm_90", progress=False)
