"""The benchmark suite itself: its options, a two-workload 8-trial run end to end (without TVM),
the results file, its summary and table, and the plots."""

import copy
import json
import os
import re
import subprocess
import sys

import pytest

from suitelib import plots, report
from suitelib.measure import Timed, bootstrap_ratio, measure_interleaved, schedule
from suitelib.suite import SuiteError, main, parse_args, select_workloads

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PNG = b"\x89PNG\r\n\x1a\n"


def suite(args, build_dir, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(build_dir, "python"), BENCH]), TYCHE_BUILD_DIR=build_dir)
    return subprocess.run([sys.executable, "-m", "suitelib", *args], capture_output=True, text=True, env=env, cwd=BENCH, **kw)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, build_dir):
    out = tmp_path_factory.mktemp("results")
    r = suite(["--workloads", "GMM-1,DENSE_RELU-1", "--scale-down", "--trials", "8", "--rounds", "3", "--window", "0.005", "--settle", "0.02",
               "--roofline-seconds", "0.1", "--confirm-top", "4", "--quick-search", "64", "--out", str(out), "--work", str(out / "work")],
              build_dir, timeout=600)
    assert r.returncode == 0, r.stderr
    (path,) = [p for p in out.iterdir() if p.suffix == ".json"]
    return out, path, r


def test_a_small_run_measures_every_implementation_correctly(small_run):
    out, path, r = small_run
    results = report.load(str(path))
    assert results["config"]["trials"] == 8 and results["config"]["tvm"] is False
    assert results["config"]["order"] == "rotated by one each round" and results["config"]["settle_s"] == 0.02
    assert [w["name"] for w in results["workloads"]] == ["GMM-1", "DENSE_RELU-1"]
    roof = results["roofline"]
    assert roof["peak_gflops"] > 0 and roof["bandwidth_gbs"] > 0 and roof["vector_bits"] in (128, 256, 512)
    for w in results["workloads"]:
        assert set(w["systems"]) == {"tyche", "onednn", "openblas", "unscheduled"}
        assert w["tyche_commit"] == results["host"]["tyche_commit"] != "unknown"
        for name, s in w["systems"].items():
            assert s["correct"], (w["name"], name, s)
            assert s["threads"] == results["config"]["threads"] == len(os.sched_getaffinity(0))
            assert s["foreign_cpu_fraction"] < 0.2, (name, s["foreign_cpu_fraction"])  # asleep while others run
            assert s["seconds"] > 0 and s["windows"] >= 3 and 0 <= s["cv"] < 10
            assert s["roofline_fraction"] == pytest.approx(s["gflops"] / w["roofline_gflops"])
        t = w["tuning"]["tyche"]
        assert t["trials"] == 8 and t["history"] and t["times"]["total"] > 0 and t["best_trace"]
        assert w["roofline_gflops"] <= roof["peak_gflops"]
    # progress lines on stderr, the table on stdout
    assert "[suite 1/2 GMM-1] tuning with Tyche (8 trials)" in r.stderr
    assert "| GMM-1 |" in r.stdout and "| DENSE_RELU-1 |" in r.stdout


def test_the_run_writes_the_table_and_the_plots(small_run):
    out, path, _ = small_run
    stem = str(path)[:-5]
    with open(stem + ".md") as f:
        table = f.read()
    assert "AMD" in table or "Intel" in table or "Measured on" in table
    assert table.count("\n| ") >= 4  # header, two workloads, geomean
    for suffix in ("-speed.png", "-curves-trials.png", "-curves-time.png", "-tuning-time.png"):
        with open(stem + suffix, "rb") as f:
            data = f.read()
        assert data.startswith(PNG) and len(data) > 10_000, suffix


def test_report_redoes_the_table_from_the_json(small_run, build_dir, tmp_path):
    out, path, _ = small_run
    copy_path = tmp_path / "copy.json"
    copy_path.write_text(path.read_text())
    r = suite(["--report", str(copy_path)], build_dir, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "copy.md").read_text() == open(str(path)[:-5] + ".md").read()
    assert (tmp_path / "copy-speed.png").exists()


def test_resume_adds_only_the_missing_workloads(small_run, build_dir, tmp_path):
    out, path, _ = small_run
    resumed = tmp_path / "resumed.json"
    resumed.write_text(path.read_text())
    before = report.load(str(resumed))
    common = ["--scale-down", "--rounds", "3", "--window", "0.005", "--settle", "0.02", "--confirm-top", "4", "--quick-search", "64",
              "--work", str(tmp_path / "work")]
    r = suite(["--resume", str(resumed), "--workloads", "SFM-1,GMM-1", "--trials", "8", *common], build_dir, timeout=600)
    assert r.returncode == 0, r.stderr
    after = report.load(str(resumed))
    assert [w["name"] for w in after["workloads"]] == ["GMM-1", "SFM-1", "DENSE_RELU-1"]  # in the presets' order
    assert after["workloads"][0] == before["workloads"][0] and after["roofline"] == before["roofline"]
    assert after["workloads"][1]["systems"]["onednn"]["correct"]
    assert "tuning with Tyche" not in r.stderr.split("SFM-1")[0]  # GMM-1 was not tuned again
    r = suite(["--resume", str(resumed), "--workloads", "NRM-1", "--trials", "16", *common], build_dir, timeout=120)
    assert r.returncode == 1 and r.stderr.strip().endswith("was measured with trials = 8, not 16")
    assert report.load(str(resumed)) == after


def test_remeasure_times_the_systems_again_and_keeps_the_tunings(small_run, build_dir, tmp_path):
    out, path, _ = small_run
    again = tmp_path / "again.json"
    before = json.loads(path.read_text())
    before["workloads"][0]["notes"] = {"tyche": "an explanation of the old timings"}
    again.write_text(json.dumps(before))
    common = ["--scale-down", "--rounds", "3", "--window", "0.005", "--settle", "0.02", "--trials", "8", "--work", str(tmp_path / "work")]
    r = suite(["--remeasure", str(again), "--workloads", "GMM-1", *common], build_dir, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "tuning with" not in r.stderr and "measuring every implementation again, tunings kept (tyche)" in r.stderr
    after = report.load(str(again))
    gmm, dense = after["workloads"]
    assert dense == before["workloads"][1]  # not chosen: untouched
    assert gmm["tuning"] == before["workloads"][0]["tuning"] and "notes" not in gmm
    assert gmm["measured_commit"] != "unknown" and set(gmm["systems"]) == set(before["workloads"][0]["systems"])
    assert all(s["correct"] for s in gmm["systems"].values())
    assert gmm["systems"]["tyche"]["seconds"] != before["workloads"][0]["systems"]["tyche"]["seconds"]
    assert f"(timed again on {gmm['measured_date']} at {gmm['measured_commit']})" in (tmp_path / "again.md").read_text()
    r = suite(["--remeasure", str(again), "--workloads", "NRM-1", *common], build_dir, timeout=120)
    assert r.returncode == 1 and r.stderr.strip() == f"bench/suite: --remeasure: {again} has no workload NRM-1"
    r = suite(["--remeasure", str(again), "--resume", str(again), *common], build_dir, timeout=120)
    assert r.returncode == 2 and "exclude each other" in r.stderr


def test_bad_options_are_one_line_errors(build_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--trials", "0"])
    assert "--trials must be at least 1" in capsys.readouterr().err
    assert main(["--workloads", "GMM-1,FOO-2", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == ("bench/suite: unknown workload 'FOO-2' (the presets are GMM-1 ... DENSE_RELU-4, "
                                               "see docs/workloads.md)")
    bad = tmp_path / "bad.json"
    for text, message in [("{", "not JSON (line 1"), ('{"format": 7}', "format 1 expected"),
                          ('{"format": 1, "host": {}, "config": {}, "roofline": {}}', "no 'workloads'")]:
        bad.write_text(text)
        assert main(["--report", str(bad)]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"bench/suite: {bad}: ") and message in err and "\n" not in err
    assert main(["--report", str(tmp_path / "missing.json")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_the_default_selection_is_one_shape_per_family_and_full_is_all():
    assert select_workloads(parse_args([])) == [f"{op}-3" for op in ["GMM", "C1D", "C2D", "C3D", "GRP", "DIL", "DEP", "T2D", "CAP",
                                                                     "NRM", "SFM", "CBR", "TBG", "DENSE_RELU"]]
    assert len(select_workloads(parse_args(["--full"]))) == 56
    assert select_workloads(parse_args(["--workloads", "gmm-4, c2d-1"])) == ["GMM-4", "C2D-1"]
    with pytest.raises(SuiteError):
        select_workloads(parse_args(["--workloads", "GMM-9"]))


def test_results_are_never_overwritten(tmp_path):
    host = {"cpu_name": "AMD EPYC 7B13", "llvm_cpu": "znver3"}
    first = report.results_stem(str(tmp_path), host, "2026-12-02")
    assert first == str(tmp_path / "amd-epyc-7b13-znver3-2026-12-02")
    open(first + ".json", "w").close()
    assert report.results_stem(str(tmp_path), host, "2026-12-02") == first + "-2"


def synthetic(tyche_s, tvm_s, tyche_wall, tvm_wall):
    """Results for two workloads with chosen latencies and tuning times."""
    def system(seconds, correct=True, jitter=(1.02, 0.97, 1.0, 1.01, 0.99)):
        return {"seconds": seconds, "cv": 0.01, "correct": correct, "gflops": 1.0 / seconds, "roofline_fraction": 0.5,
                "window_seconds": [seconds * f for f in jitter]}
    def tuning(wall, tvm):
        history = [{"trials": 64 * (i + 1), "best_seconds": 1.0 / (i + 1), "elapsed_s": wall * (i + 1) / 4} for i in range(4)]
        times = ({"EvoSearch/Evolve/Mutation": wall * 0.25, "EvoSearch/SampleInitPopulation": wall * 0.05, "SendToBuilder": wall * 0.2,
                  "SendToRunner": wall * 0.3, "Total": wall} if tvm else
                 {"search": wall * 0.2, "build": wall * 0.3, "run": wall * 0.3, "model": 0.01, "database": 0.01, "confirm": 0.1,
                  "total": wall})
        return {"trials": 256, "wall_s": wall, "history": history, "times": times, "best_seconds": 0.25}
    ws = []
    for i in range(2):
        ws.append({"name": f"W-{i}", "flop": 1e9, "systems": {"tyche": system(tyche_s[i], jitter=(0.98, 1.0, 1.02, 0.99, 1.01)), "tvm": system(tvm_s[i]),
                                                              "onednn": system(1.0), "unscheduled": system(50.0, correct=False),
                                                              "openblas": {"error": "no"}},
                   "tuning": {"tyche": tuning(tyche_wall[i], False), "tvm": tuning(tvm_wall[i], True)}})
    return {"format": 1, "host": {"cpu_name": "Test CPU", "llvm_cpu": "x", "vector_bits": 256, "cores": 2, "l2_kib": 512,
                                  "date": "2026-12-02", "tyche_commit": "abc"},
            "config": {"trials": 256}, "roofline": {"peak_gflops": 100.0, "threads": 2, "bandwidth_gbs": 10.0}, "workloads": ws}


def test_summary_and_table_of_known_figures():
    r = synthetic(tyche_s=[0.5, 2.0], tvm_s=[1.0, 1.0], tyche_wall=[10.0, 10.0], tvm_wall=[20.0, 80.0])
    r["workloads"][0]["tuning"]["tyche"]["best_seconds"] = 0.48  # 4% slower in the suite: no note asked for
    r["workloads"][1]["tuning"]["tyche"]["best_seconds"] = 1.6   # 25% slower: flagged
    r["workloads"][0]["tuning"]["tvm"]["best_seconds"] = 0.8     # TVM 25% slower, explained
    r["workloads"][0]["notes"] = {"tvm": "its runner times without flushing caches."}
    s = report.summarize(r)
    assert s["geomean_tyche_over_tvm"] == pytest.approx(1.0)  # 2x faster on one, 2x slower on the other
    lo, hi = s["geomean_tyche_over_tvm_ci95"]
    assert 0.95 < lo < 1.0 < hi < 1.05
    assert s["geomean_tuning_wall_tyche_over_tvm"] == pytest.approx(0.25)  # sqrt(1/2 * 1/8)
    assert s["tyche_over_onednn"] == {"W-0": pytest.approx(2.0), "W-1": pytest.approx(0.5)}
    assert s["tuning_gap"]["W-1"]["tyche"] == pytest.approx(1.25)
    table = report.markdown(r)
    row = next(line for line in table.splitlines() if line.startswith("| W-0 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:7] == ["W-0", "1", "2 (1%)", "1 (1%)", "failed", "1 (1%)", "wrong"]
    assert re.fullmatch(r"2\.00× \[1\.9\d, 2\.0\d\]", cells[7]) and cells[8].startswith("2.00× [")
    assert cells[9:] == ["50%", "1.04", "1.25 (!)", "0.2 min", "0.3 min"]
    assert "| 1.25 (!) |" in next(line for line in table.splitlines() if line.startswith("| W-1 |"))
    assert "- W-0 TVM MetaSchedule: its runner times without flushing caches." in table
    assert "- W-1 Tyche: 1.25× slower in the suite than in its tuning (not yet explained)." in table
    assert "0.25× TVM's" in table
    assert "Tyche abc, 256 trials" in table
    resumed = copy.deepcopy(r)  # a run resumed at another commit names both
    resumed["workloads"][1]["tyche_commit"] = "def"
    assert "Tyche abc, def, 256 trials" in report.markdown(resumed)
    broken = copy.deepcopy(r)
    broken["workloads"][0]["systems"]["tyche"]["correct"] = False  # a wrong result counts in no ratio
    assert report.summarize(broken)["geomean_tyche_over_tvm"] == pytest.approx(0.5)


def test_the_fair_tvm_figure_uses_its_fast_exp_and_a_fake_baseline_is_left_out():
    r = synthetic(tyche_s=[0.5, 2.0], tvm_s=[1.0, 1.0], tyche_wall=[10.0, 10.0], tvm_wall=[20.0, 80.0])
    w = r["workloads"][1]
    w["systems"]["tvm_fastexp"] = dict(w["systems"]["tvm"], seconds=4.0, window_seconds=[4.0] * 5)
    s = report.summarize(r)
    assert s["tyche_over_tvm"]["W-1"] == pytest.approx(2.0)  # against the fast exp
    assert s["geomean_tyche_over_tvm"] == pytest.approx(2.0) and s["geomean_tyche_over_tvm_default"] == pytest.approx(1.0)
    table = report.markdown(r)
    assert "- W-1 against TVM as it tunes by default (libm expf per element): 0.50× [" in table
    assert re.search(r"with its fast exp: 2\.00× \[1\.9\d, 2\.0\d\] \(in the geomean\)", table)
    w["no_baseline"] = ["onednn"]  # a baseline in name only
    s = report.summarize(r)
    assert s["geomean_tyche_over_onednn"] == pytest.approx(2.0) and s["geomean_tyche_over_onednn_workloads"] == ["W-0"]
    assert "| no baseline |" in report.markdown(r)


def test_plots_of_both_tuners(tmp_path):
    r = synthetic(tyche_s=[0.5, 2.0], tvm_s=[1.0, 1.0], tyche_wall=[10.0, 10.0], tvm_wall=[20.0, 80.0])
    paths = plots.write_all(r, str(tmp_path / "t"))
    assert len(paths) == 4
    for p in paths:
        with open(p, "rb") as f:
            assert f.read(8) == PNG
    phases = plots.tyche_phases(r["workloads"][0]["tuning"]["tyche"]["times"])
    assert sum(phases.values()) == pytest.approx(10.0)  # the phases and "other" add up to the wall time
    tvm = plots.tvm_phases(r["workloads"][0]["tuning"]["tvm"]["times"], 20.0)
    assert tvm["search"] == pytest.approx(6.0) and tvm["build"] == pytest.approx(4.0) and tvm["measure"] == pytest.approx(6.0)
    assert sum(tvm.values()) == pytest.approx(20.0)  # "Total" is not a phase


def test_tuning_curves_plot_measured_times_not_the_drift_corrected_ranking():
    # Tyche's history: the search's corrected best (0.5 s, faster than anything measured) and
    # the fastest time as measured (0.8 s); TVM's has only what it measured.
    tyche_history = [{"trials": 8, "elapsed_s": 1.0, "best_seconds": 0.5, "measured_best_seconds": 0.8}]
    assert plots._curve(tyche_history, 2e9, "trials") == ([8], [pytest.approx(2.5)])
    tvm_history = [{"trials": 8, "elapsed_s": 3.0, "best_seconds": 0.4}, {"trials": 16, "elapsed_s": 6.0, "best_seconds": 0}]
    assert plots._curve(tvm_history, 2e9, "elapsed_s") == ([3.0], [pytest.approx(5.0)])


def test_measuring_interleaves_rotates_settles_and_spares_slow_implementations():
    log = []
    def fake(name, seconds):
        def window(calls):
            log.append(name)
            return seconds
        return Timed(name, window)
    fast, slow = fake("fast", 1e-4), fake("slow", 1.0)
    measure_interleaved([fast, slow], rounds=6, window_s=0.01, settle_s=0.3, sleep=lambda s: log.append(f"sleep {s}"))
    assert fast.calls == 100 and slow.calls == 1
    assert len(fast.seconds) == 6 and len(slow.seconds) == 3  # the slow one: min_rounds
    # calibration, each after a settle (a warm-up, batches of 1, 4 and 16 calls, 16 twice more;
    # the slow one's single call already lasts a twentieth of the window), then round by round in
    # the rotated order, every window after a settle and, for a fast one, an untimed call
    assert log[:12] == ["sleep 0.3"] + ["fast"] * 6 + ["sleep 0.3"] + ["slow"] * 4
    rounds = [x for x in log[12:] if x != "sleep 0.3"]
    assert rounds == ["fast", "fast", "slow", "slow", "fast", "fast", "fast", "fast", "slow", "fast", "fast", "fast", "fast",
                      "fast", "fast"]
    assert log[12:].count("sleep 0.3") == 9  # one per window
    assert fast.median == 1e-4 and fast.cv == 0.0
    json.dumps({"cv": slow.cv})


def test_the_schedule_rotates_the_order_every_round():
    assert schedule([2, 2, 2]) == [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (1, 0)]
    windows = schedule([6, 6, 6])
    for r in range(6):  # every system leads twice and follows each other one equally often
        assert [i for rr, i in windows if rr == r] == [(r + j) % 3 for j in range(3)]
    leaders = [windows[3 * r][1] for r in range(6)]
    assert sorted(leaders) == [0, 0, 1, 1, 2, 2]
    assert schedule([3, 1]) == [(0, 0), (0, 1), (1, 0), (2, 0)]  # a slow one's rounds end early
    assert schedule([]) == []


def test_the_bootstrap_interval_covers_the_ratio_and_narrows_with_steadier_windows():
    noisy_a, noisy_b = [1.0, 1.3, 0.9, 1.1, 1.2, 0.8], [2.0, 2.5, 1.7, 2.2, 2.4, 1.9]
    lo, hi = bootstrap_ratio(noisy_b, noisy_a)
    assert lo < 2.0 < hi and hi - lo > 0.1
    lo2, hi2 = bootstrap_ratio([2.0, 2.01, 1.99, 2.0, 2.0, 2.01], [1.0, 1.0, 1.01, 0.99, 1.0, 1.0])
    assert lo2 <= 2.0 <= hi2 and hi2 - lo2 < 0.05


def test_every_system_gets_the_same_explicit_threads_and_cpus():
    from suitelib.suite import worker_cpus, worker_env
    env = worker_env(3)
    for var in ("TYCHE_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TVM_NUM_THREADS"):
        assert env[var] == "3"
    assert "OMP_PROC_BIND" not in env  # it would pin libgomp's first thread, and OpenBLAS would count one CPU
    allowed = sorted(os.sched_getaffinity(0))
    assert worker_cpus(1) == allowed[:1]
    with pytest.raises(SuiteError, match=f"--threads {len(allowed) + 1}: only {len(allowed)} CPUs"):
        worker_cpus(len(allowed) + 1)


def test_the_workers_run_the_threads_they_are_given_and_sleep_between_windows(build_dir, library, tmp_path):
    """Real worker processes: each library reports the thread count it was told (1 here, so the
    check can fail on a 2-CPU host whose default is 2), sits on the CPU it was given, and uses
    next to no CPU while the other is timed."""
    import numpy as np

    import tyche
    from suitelib.isolated import Worker, save_data
    from suitelib.suite import worker_cpus, worker_env
    w = tyche.workload("GMM-1", scale_down=True)
    inputs = w.inputs()
    data = save_data(str(tmp_path), inputs, w.reference(*inputs)[0])
    path = os.path.join(build_dir, "bench", "libtyche_baselines.so")
    common = {"workload": "GMM-1", "scale_down": True, "data": data}
    workers = [Worker("tyche", {**common, "kind": "unscheduled"}, str(tmp_path / "t.log"), env=worker_env(1), cpus=worker_cpus(1)),
               Worker("onednn", {**common, "kind": "library", "system": "onednn", "library": path}, str(tmp_path / "o.log"),
                      env=worker_env(1), cpus=worker_cpus(1)),
               Worker("openblas", {**common, "kind": "library", "system": "openblas", "library": path}, str(tmp_path / "b.log"),
                      env=worker_env(1), cpus=worker_cpus(1))]
    try:
        assert [wk.threads for wk in workers] == [1, 1, 1]
        for wk in workers:
            assert os.sched_getaffinity(wk.pid) == set(worker_cpus(1))
        timed = measure_interleaved([Timed(wk.name, wk.window, wk.cpu_seconds) for wk in workers], rounds=3, window_s=0.05,
                                    settle_s=0.05)
        for t in timed:
            assert t.foreign_window_s > 0 and t.foreign_cpu_s / t.foreign_window_s < 0.2, t.name
        assert np.isfinite(workers[0].cpu_seconds()) and workers[0].cpu_seconds() > 0
    finally:
        for wk in workers:
            wk.close()


def test_the_commit_is_marked_changed_by_sources_not_by_results(tmp_path, monkeypatch):
    """A resumed run rewrites its committed results file: that alone does not make the tree dirty."""
    import suitelib.suite as suite
    git = lambda *args: subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "run.json").write_text("{}")
    (tmp_path / "bench" / "tool.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.setattr(suite, "BENCH", str(tmp_path / "bench"))
    clean = suite.git_commit()
    assert clean and not clean.endswith("+") and clean != "unknown"
    (tmp_path / "bench" / "results" / "run.json").write_text('{"workloads": []}')
    assert suite.git_commit() == clean
    (tmp_path / "bench" / "tool.py").write_text("x = 2\n")
    assert suite.git_commit() == clean + "+"
