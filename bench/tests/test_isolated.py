"""Each implementation is measured in a worker process of its own: the workers check their output
against the shared reference, time windows on request, and a worker that fails to start, or
dies while timing, is reported on one line while the others are still measured."""

import argparse
import os
import signal

import numpy as np
import pytest

import tyche
from suitelib import isolated, suite
from suitelib.implementations import aligned_copies
from suitelib.isolated import Worker, WorkerError, save_data

NAME = "GMM-1"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    w = tyche.workload(NAME, scale_down=True)
    inputs = aligned_copies(w.inputs())
    directory = tmp_path_factory.mktemp("isolated")
    return str(directory), save_data(str(directory), inputs, w.reference(*inputs)[0])


def spec(data, **kw):
    return {"workload": NAME, "scale_down": True, "data": data[1], **kw}


def test_workers_check_their_output_and_time_windows_in_their_own_process(data, build_dir):
    library = os.path.join(build_dir, "bench", "libtyche_baselines.so")
    w = tyche.workload(NAME, scale_down=True)
    sch = tyche.Schedule(w.func)
    loops = sch.get_loops(sch.get_block("Z"))
    sch.parallel(loops[0])
    workers = [Worker("tyche", spec(data, kind="tyche", trace=str(sch.trace)), os.path.join(data[0], "t.log")),
               Worker("onednn", spec(data, kind="library", system="onednn", library=library), os.path.join(data[0], "o.log")),
               Worker("unscheduled", spec(data, kind="unscheduled"), os.path.join(data[0], "u.log"))]
    try:
        for worker in workers:
            assert worker.pid != os.getpid()
            assert worker.max_error is not None and worker.max_error < 1e-5, worker.name
            assert 0 < worker.window(3) < 1
        assert workers[1].implementation.startswith(("gemm", "brg", "jit", "ref"))
        assert len({worker.pid for worker in workers}) == 3
    finally:
        for worker in workers:
            worker.close()


def test_a_wrong_output_is_measured_as_wrong(data, tmp_path):
    w = tyche.workload(NAME, scale_down=True)
    inputs = aligned_copies(w.inputs())
    wrong = save_data(str(tmp_path), inputs, w.reference(*inputs)[0] + 1.0)
    worker = Worker("unscheduled", {"workload": NAME, "scale_down": True, "data": wrong, "kind": "unscheduled"},
                    str(tmp_path / "log"))
    try:
        assert worker.max_error > 0.1
    finally:
        worker.close()


@pytest.mark.parametrize("bad, message", [
    ({"kind": "tyche", "trace": "b0 = sch.get_block(name=\"nowhere\")"}, "nowhere"),
    ({"kind": "tyche", "trace": "this is not a trace"}, "trace line 1, column 1: expected 'sch.<instruction>(...)'"),
    ({"kind": "library", "system": "mkl", "library": "/nonexistent.so"}, "missing"),
    ({"kind": "quantum"}, "unknown implementation kind 'quantum'"),
    ({"kind": "unscheduled", "workload": "GMM-9"}, "unknown workload"),
])
def test_a_worker_that_cannot_start_says_why_on_one_line(data, bad, message):
    with pytest.raises(WorkerError) as e:
        Worker("x", spec(data, **bad), os.path.join(data[0], "bad.log"))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_silent_worker_is_stopped(data, monkeypatch):
    monkeypatch.setattr(isolated, "ANSWER_TIMEOUT_S", 0.01)  # less than a Python start
    with pytest.raises(WorkerError, match="the unscheduled worker gave no answer in 0.01 s"):
        Worker("unscheduled", spec(data, kind="unscheduled"), os.path.join(data[0], "silent.log"))


def test_a_long_trace_goes_to_the_worker_in_a_file(data):
    w = tyche.workload(NAME, scale_down=True)
    sch = tyche.Schedule(w.func)
    block = sch.get_block("Z")
    for _ in range(3000):  # a trace of some 200 KB, more than one command-line argument may hold
        sch.get_loops(block)
    assert len(str(sch.trace)) > 140_000
    worker = Worker("tyche", spec(data, kind="tyche", trace=str(sch.trace)), os.path.join(data[0], "long.log"))
    try:
        assert worker.max_error < 1e-5
    finally:
        worker.close()


def test_a_worker_that_dies_is_reported(data):
    worker = Worker("unscheduled", spec(data, kind="unscheduled"), os.path.join(data[0], "dies.log"))
    try:
        os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(WorkerError, match="the unscheduled worker died \\(killed by signal 9"):
            worker.window(1)
        assert worker.failed
    finally:
        worker.close()


def test_the_suite_reports_a_worker_that_dies_while_timing_and_measures_the_others(data, build_dir, tmp_path, monkeypatch):
    started = []

    class Dying(Worker):
        def __init__(self, name, spec, log, **kw):
            super().__init__(name, spec, log, **kw)
            started.append(self)
            self.windows = 0

        def window(self, calls):
            self.windows += 1
            if self.name == "onednn" and self.windows == 4:
                os.kill(self.pid, signal.SIGKILL)
            return super().window(calls)

    monkeypatch.setattr(suite, "Worker", Dying)
    w = tyche.workload(NAME, scale_down=True)
    a = argparse.Namespace(rounds=3, window=0.005, scale_down=True, threads=1, settle=0.01)
    systems = suite.measure_workload(NAME, w, os.path.join(build_dir, "bench", "libtyche_baselines.so"), None, {}, a,
                                     str(tmp_path / "measure"))
    assert set(systems) == {"onednn", "openblas", "unscheduled"}
    assert "died" in systems["onednn"]["error"]
    for name in ("openblas", "unscheduled"):
        assert systems[name]["correct"] and len(systems[name]["window_seconds"]) == 3
        assert np.isfinite(systems[name]["gflops"])
    assert all(worker._proc.poll() is not None for worker in started)  # every worker stopped
    assert not os.path.exists(tmp_path / "measure" / "data.npz")
