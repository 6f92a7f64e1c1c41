"""bench_early's --retime: the early best and the reference best timed against each other in one
process, interleaved, with a bootstrap interval; and its refusal without a reference."""

import subprocess
import sys

import pytest

import bench_early
import tyche

DEP = "DEP-3"  # a few microseconds a call: the case --retime is for


def parallel_trace() -> str:
    """A small hand schedule: the convolution's outer loop in parallel."""
    sch = tyche.Schedule(tyche.workload(DEP).func)
    sch.parallel(sch.get_loops(sch.get_block("depthwise_conv2d"))[0])
    return str(sch.trace)


def test_retime_times_both_programs_interleaved_and_bounds_the_ratio():
    trace = parallel_trace()
    r = bench_early.retime(tyche, DEP, trace, trace, rounds=7, window_s=0.01)
    assert r["rounds"] == 7
    assert r["early_seconds"] > 0 and r["reference_seconds"] > 0
    assert r["ratio"] == pytest.approx(r["reference_seconds"] / r["early_seconds"])
    lo, hi = r["interval"]
    assert 0 < lo <= hi
    # The same program on both sides. Loose bounds: ctest runs another test beside this one,
    # and a shared VM's slow periods have put a 5-round interval's low end at 0.46.
    assert 0.25 < lo and hi < 4.0 and 0.25 < r["ratio"] < 4.0


def test_retime_needs_a_reference():
    p = subprocess.run([sys.executable, bench_early.__file__, "--workloads", DEP, "--trials", "8", "--retime"],
                       capture_output=True, text=True)
    assert p.returncode != 0
    assert "--retime needs --reference" in p.stderr
