"""The benchmark suite: tune every family with Tyche (and TVM MetaSchedule with --tvm), then measure
the best kernels beside oneDNN, OpenBLAS and the unscheduled program, interleaved in one run;
write the results (JSON, markdown, plots) under bench/results. Run it as ``bench/suite``."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

import tyche

from . import plots, report
from .baselines import SYSTEMS as LIBRARIES, BaselineError, Library
from .implementations import aligned_copies
from .isolated import Worker, WorkerError, save_data
from .measure import Timed, measure_interleaved

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PRESET = 3  # one shape per family: the third of docs/workloads.md's four
# Each result is checked against the float64 reference: max |out - ref| / max |ref| at most this.
# 1e-4 wherever float32 allows it; NRM sums M·N = 1M squares into one float, and the unscheduled
# program's serial sum (like any sequential accumulation) drifts by ~n·eps/8 = 1e-4..1e-3.
TOLERANCE = {"NRM": 1e-3}
DEFAULT_TOLERANCE = 1e-4


def tolerance(family: str) -> float:
    return TOLERANCE.get(family, DEFAULT_TOLERANCE)


def worker_env(threads: int) -> dict[str, str]:
    """The environment of every measured implementation's process: one explicit thread count for
    every library, each library's own spin-wait left at its default (the settle time between
    windows lets every pool park; measure.py records that it did). Every process is confined to
    the same CPUs (worker_cpus); inside them no binding is forced: OMP_PROC_BIND binds libgomp's
    initial thread to one CPU at load, and OpenBLAS, started after it in oneDNN's and OpenBLAS's
    process, then counted one CPU and ran one thread (the suite's thread check caught it)."""
    n = str(threads)
    return {"TYCHE_NUM_THREADS": n, "OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "TVM_NUM_THREADS": n}


def worker_cpus(threads: int) -> list[int]:
    """The CPUs every implementation's process is confined to: the first ``threads`` this process may use."""
    allowed = sorted(os.sched_getaffinity(0))
    if threads > len(allowed):
        raise SuiteError(f"--threads {threads}: only {len(allowed)} CPUs are available to this process")
    return allowed[:threads]


class SuiteError(RuntimeError):
    pass


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/suite", description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=256, help="trials per workload for each tuner (default 256; the published run: 1000)")
    p.add_argument("--full", action="store_true", help="all 56 presets instead of one shape per family")
    p.add_argument("--workloads", help="comma-separated presets instead (e.g. GMM-3,C2D-3)")
    p.add_argument("--tvm", action="store_true", help="also tune and measure TVM MetaSchedule (pip apache-tvm)")
    p.add_argument("--scale-down", action="store_true", help="shrink every shape (a quick check of the suite itself)")
    p.add_argument("--out", default=os.path.join(BENCH, "results"), help="where the results go (default bench/results)")
    p.add_argument("--work", help="tuning databases and logs (default build-bench/suite-work/<time>)")
    p.add_argument("--rounds", type=int, default=10, help="measuring rounds (default 10)")
    p.add_argument("--window", type=float, default=0.2, help="seconds per measuring window (default 0.2)")
    p.add_argument("--roofline-seconds", type=float, default=1.0, help="seconds of the peak-FMA probe (default 1)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="threads of every system, tuning and measuring (default: the CPUs this process may use)")
    p.add_argument("--settle", type=float, default=0.25,
                   help="seconds of sleep before each measuring window, so every library's spinning threads park (default 0.25)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--confirm-top", type=int, default=16, help="Tyche's leaders timed again at the end of a tune (default 16)")
    p.add_argument("--quick-search", metavar="POPULATION", type=int, default=None,
                   help="a smoke test's search: this population and 2 generations per round (default: Tyche's, 512 and 4)")
    p.add_argument("--build", default=os.environ.get("TYCHE_BUILD_DIR", os.path.join(BENCH, "..", "build-bench")),
                   help="the build folder holding bench/libtyche_baselines.so")
    p.add_argument("--tvm-reuse", metavar="WORK_DIR", action="append", default=[],
                   help="use TVM tunings of an earlier suite's work folder where family, shape, trials, seed, target and "
                        "TVM version match (repeatable; the suite's own --work is always searched)")
    p.add_argument("--resume", metavar="RESULTS_JSON", help="add the workloads a results file lacks to it (same CPU and settings)")
    p.add_argument("--remeasure", metavar="RESULTS_JSON",
                   help="time every system of a results file's workloads (or of --workloads) again with their tunings kept, "
                        "after a change to how the suite measures (same CPU and settings)")
    p.add_argument("--report", metavar="RESULTS_JSON", help="only redo the table and plots of a results file")
    a = p.parse_args(argv)
    if sum(x is not None for x in (a.resume, a.remeasure, a.report)) > 1:
        p.error("--resume, --remeasure and --report exclude each other")
    if a.trials < 1:
        p.error("--trials must be at least 1")
    if a.quick_search is not None and a.quick_search < 2:
        p.error("--quick-search takes a population of at least 2")
    if a.rounds < 1 or a.window <= 0 or a.roofline_seconds <= 0 or a.confirm_top < 0 or a.threads < 1 or a.settle < 0:
        p.error("--rounds, --window, --threads and --roofline-seconds must be positive, --confirm-top and --settle not negative")
    return a


def select_workloads(a: argparse.Namespace) -> list[str]:
    names = tyche.preset_names()
    if a.workloads:
        chosen = [n.strip().upper() for n in a.workloads.split(",") if n.strip()]
        unknown = [n for n in chosen if n not in names]
        if unknown:
            raise SuiteError(f"unknown workload '{unknown[0]}' (the presets are {names[0]} ... {names[-1]}, see docs/workloads.md)")
        return chosen
    if a.full:
        return names
    return [f"{op}-{DEFAULT_PRESET}" for op in tyche.op_names()]


def progress(step: str, text: str) -> None:
    print(f"[suite {step}] {text}", file=sys.stderr, flush=True)


def git_commit() -> str:
    """The checkout's commit, with "+" when it has uncommitted changes. Results files do not count:
    a run resumed from a committed results file changes that file after its first workload."""
    try:
        run = lambda *args: subprocess.run(["git", "-C", BENCH, *args], capture_output=True, text=True, check=True).stdout  # noqa: E731
        changed = run("status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)bench/results")
        return run("rev-parse", "--short", "HEAD").strip() + ("+" if changed.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def describe_host(library: Library) -> dict:
    cpuinfo = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    l2 = "/sys/devices/system/cpu/cpu0/cache/index2/size"
    l2_kib = int(re.sub(r"\D", "", open(l2).read()) or 0) if os.path.exists(l2) else 0
    llvm = re.match(r"host: (\S+)", tyche.cpu("host"))
    return {"cpu_name": model.group(1).strip() if model else "unknown CPU", "llvm_cpu": llvm.group(1) if llvm else "unknown",
            "vector_bits": library.vector_bits(), "cores": os.cpu_count(), "l2_kib": l2_kib,
            "date": datetime.date.today().isoformat(), "tyche_commit": git_commit()}


def measure_roofline(library: Library, seconds: float, bandwidth_bytes: int, threads: int) -> dict:
    peaks = [library.peak_gflops(threads, seconds / 3) for _ in range(3)]
    bws = [library.memory_bandwidth(threads, bandwidth_bytes, 3) for _ in range(3)]
    cv = lambda xs: float(np.std(xs, ddof=1) / np.mean(xs))  # noqa: E731
    return {"threads": threads, "peak_gflops": max(peaks), "peak_cv": cv(peaks), "bandwidth_gbs": max(bws),
            "bandwidth_cv": cv(bws), "bandwidth_array_bytes": bandwidth_bytes, "vector_bits": library.vector_bits()}


def compulsory_bytes(func) -> int:
    return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for _, shape, dtype in func.params)


def tune_tyche(w, trials: int, work: str, seed: int, confirm_top: int, threads: int, step: str,
               population: int | None = None) -> dict:
    db = os.path.join(work, "tyche", w.name.replace(" ", "_"))
    def show(done, budget, task, best, elapsed):
        rate = f"{w.flop / best / 1e9:.1f} GFLOP/s" if best > 0 else "-"
        progress(step, f"Tyche {done}/{budget} trials, best {rate}, {elapsed:.0f} s")
    t0 = time.monotonic()
    search = {} if population is None else {"population": population, "generations": 2}
    r = tyche.tune(w, trials=trials, db=db, seed=seed, confirm_top=confirm_top, threads=threads, progress=show, **search)
    wall = time.monotonic() - t0
    measured = [h["measured_best_seconds"] for h in r.history if h.get("measured_best_seconds", 0) > 0]
    record = {"trials": r.trials, "failed": r.failed, "wall_s": wall, "best_seconds": r.best_seconds, "history": r.history,
              "measured_best_seconds": min(measured) if measured else r.best_seconds,
              "times": r.times, "best_trace": str(r.best_trace) if r.best_trace else None, "database": db}
    return record


def tvm_subdir(w, fast_exp: bool) -> str:
    return os.path.join("tvm-fast-exp" if fast_exp else "tvm", w.name.replace(" ", "_"))


def reusable_tvm_tuning(w, trials: int, seed: int, threads: int, fast_exp: bool, work_dirs: list[str]) -> dict | None:
    """A finished TVM tuning of this workload with the same settings, from one of WORK_DIRS. TVM's
    tuning does not depend on Tyche's code, so a suite rerun after a change to Tyche need not spend
    ~15 min per family tuning TVM again; the kernel is measured afresh beside the others."""
    from .tvm_driver import make_target, tvm_version
    target, version = str(make_target(None, threads)), tvm_version()
    for work in work_dirs:
        path = os.path.join(work, tvm_subdir(w, fast_exp), "result.json")
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        same = (r.get("family") == w.op and list(r.get("params", [])) == list(w.params) and r.get("fast_exp") == fast_exp
                and r.get("trials") == trials and r.get("seed", 0) == seed and r.get("target") == target
                and r.get("tvm_version") == version and os.path.exists(r.get("library", "")))
        if same:
            return {**r, "reused_from": path}
    return None


def tune_tvm(w, trials: int, work: str, seed: int, threads: int, step: str, fast_exp: bool = False,
             reuse: list[str] | None = None) -> dict:
    found = reusable_tvm_tuning(w, trials, seed, threads, fast_exp, [work] + (reuse or []))
    if found:
        progress(step, f"TVM{' (fast exp)' if fast_exp else ''}: reusing the tuning in {found['reused_from']} "
                       f"(best {found['best_seconds'] * 1e6:.1f} us)")
        return found
    d = os.path.join(work, tvm_subdir(w, fast_exp))
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "result.json")
    cmd = [sys.executable, os.path.join(BENCH, "suitelib", "tvm_driver.py"), "tune", "--family", w.op, "--params",
           ",".join(str(p) for p in w.params), "--trials", str(trials), "--work-dir", d, "--out", out, "--seed", str(seed),
           "--threads", str(threads)] + (["--fast-exp"] if fast_exp else [])
    with open(os.path.join(d, "log.txt"), "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.PIPE, text=True, env={**os.environ, **worker_env(threads)})
        last = ""
        for line in proc.stderr:
            log.write(line)
            if line.startswith("[tvm]"):
                progress(step, ("TVM (fast exp) " if fast_exp else "TVM ") + line[5:].strip())
            elif line.strip():
                last = line.strip()
        proc.wait()
    if proc.returncode != 0 or not os.path.exists(out):
        return {"error": last or f"tvm_driver exited with {proc.returncode} (see {d}/log.txt)"}
    with open(out) as f:
        return json.load(f)


def measure_workload(name: str, w, library_path: str, best_trace: str | None, tvm_libraries: dict[str, str],
                     a: argparse.Namespace, directory: str) -> dict:
    """Every implementation in a worker process of its own (isolated.py), all with the same
    threads on the same CPUs, checked against the reference, then timed interleaved with the
    order rotated and a settle time before each window (measure.py)."""
    specs = []
    if best_trace:
        specs.append(("tyche", {"kind": "tyche", "trace": best_trace}))
    library = Library(library_path)
    for s in LIBRARIES:
        if library.supports(s, w.op):
            specs.append((s, {"kind": "library", "system": s, "library": library_path}))
    for system, path in tvm_libraries.items():
        specs.append((system, {"kind": "tvm", "tvm_library": path}))
    specs.append(("unscheduled", {"kind": "unscheduled"}))
    inputs = aligned_copies(w.inputs())
    data = save_data(directory, inputs, w.reference(*inputs)[0])
    common = {"workload": name, "scale_down": a.scale_down, "data": data}
    env, cpus, limit = worker_env(a.threads), worker_cpus(a.threads), tolerance(w.op)
    workers, systems = [], {}
    try:
        for system, spec in specs:
            try:
                worker = Worker(system, {**common, **spec}, os.path.join(directory, f"{system}.log"), env=env, cpus=cpus)
            except WorkerError as e:
                systems[system] = {"error": str(e)}
                continue
            err = worker.max_error
            systems[system] = {"max_error": err, "correct": err is not None and err <= limit, "threads": worker.threads}
            if worker.implementation:
                systems[system]["implementation"] = worker.implementation
            if worker.threads is not None and worker.threads != a.threads:
                systems[system] = {"error": f"runs {worker.threads} threads, not {a.threads}"}
                worker.close()
                continue
            workers.append(worker)
        while True:  # a worker that dies while timing is reported; the others are timed again
            try:
                timed = measure_interleaved([Timed(wk.name, wk.window, wk.cpu_seconds) for wk in workers if wk.alive], a.rounds,
                                            a.window, settle_s=a.settle)
                break
            except WorkerError as e:
                dead = [wk for wk in workers if wk.alive and wk.failed]
                for wk in dead:
                    wk.alive = False
                    systems[wk.name] = {"error": str(e)}
                if not dead:
                    raise
    finally:
        for worker in workers:
            worker.close()
        os.remove(data)
    for t in timed:
        systems[t.name].update({"seconds": t.median, "cv": t.cv, "calls_per_window": t.calls, "windows": len(t.seconds),
                                "window_seconds": t.seconds, "gflops": w.flop / t.median / 1e9,
                                "foreign_cpu_fraction": t.foreign_cpu_s / t.foreign_window_s if t.foreign_window_s else 0.0})
    return systems


def work_dir(a: argparse.Namespace) -> str:
    return a.work or os.path.join(BENCH, "..", "build-bench", "suite-work", time.strftime("%Y%m%d-%H%M%S"))


def stem_of(path: str) -> str:
    """A results file's name without ".json": its table and plots are named after it."""
    return path[:-5] if path.endswith(".json") else path


def run_suite(a: argparse.Namespace) -> str:
    names = select_workloads(a)
    library_path = os.path.join(a.build, "bench", "libtyche_baselines.so")
    library = Library(library_path)
    if a.tvm:
        from .tvm_driver import available
        why = available()
        if why:
            raise SuiteError(f"--tvm: TVM MetaSchedule cannot run here: {why}")
    work = work_dir(a)
    os.makedirs(work, exist_ok=True)
    host = describe_host(library)
    if a.resume:
        results, stem = resume_results(a, host, names, a.resume, "--resume")
    else:
        os.makedirs(a.out, exist_ok=True)
        stem = report.results_stem(a.out, host, host["date"])
        results = {"format": report.FORMAT, "host": host,
                   "config": {"trials": a.trials, "workloads": names, "tvm": a.tvm, "scale_down": a.scale_down, "rounds": a.rounds,
                              "window_s": a.window, "settle_s": a.settle, "seed": a.seed, "confirm_top": a.confirm_top,
                              "threads": a.threads, "cpus": worker_cpus(a.threads), "worker_env": worker_env(a.threads),
                              "order": "rotated by one each round", "tolerance": {"default": DEFAULT_TOLERANCE, **TOLERANCE},
                              "flop": "without padding taps (docs/workloads.md)"},
                   "roofline": {}, "workloads": []}
    done = {w["name"] for w in results["workloads"]}
    progress("0", f"{len(names)} workloads ({len(done & set(names))} already measured), {a.trials} trials, TVM "
                  f"{'on' if a.tvm else 'off'}; {host['cpu_name']} ({host['llvm_cpu']}); results {stem}.json; work {work}")
    if not results["roofline"]:
        progress("0", "measuring the roofline: peak FMA throughput and memory bandwidth")
        results["roofline"] = measure_roofline(library, a.roofline_seconds, 16 << 20 if a.scale_down else 256 << 20, a.threads)
    roof = results["roofline"]
    progress("0", f"peak {roof['peak_gflops']:.1f} GFLOP/s ({roof['vector_bits']}-bit FMA, {roof['threads']} threads), "
                  f"bandwidth {roof['bandwidth_gbs']:.1f} GB/s")
    report.write_json(results, stem + ".json")
    for i, name in enumerate(names):
        step = f"{i + 1}/{len(names)} {name}"
        if name in done:
            continue
        w = tyche.workload(name, scale_down=a.scale_down)
        # A run resumed over sessions may span commits: each workload says which one tuned it.
        entry = {"name": name, "family": w.op, "params": list(w.params), "shape": w.shape, "flop": w.flop,
                 "bytes": compulsory_bytes(w.func), "tyche_commit": git_commit(), "tuning": {}, "systems": {}}
        progress(step, f"tuning with Tyche ({a.trials} trials)")
        try:
            entry["tuning"]["tyche"] = tune_tyche(w, a.trials, work, a.seed, a.confirm_top, a.threads, step, a.quick_search)
        except tyche.TycheError as e:
            entry["tuning"]["tyche"] = {"error": str(e).splitlines()[0]}
        best_trace = entry["tuning"]["tyche"].get("best_trace") if entry["tuning"]["tyche"].get("best_seconds", 0) > 0 else None
        tvm_libs = {}
        # SFM twice: TVM's softmax as it tunes by default calls libm's expf per element; with
        # fast_exp (what its FastMath pass substitutes) it is the fair comparison.
        for system, fast_exp in ([("tvm", False)] + ([("tvm_fastexp", True)] if w.op == "SFM" else [])) if a.tvm else []:
            label = report.LABELS[system]
            progress(step, f"tuning with {label} ({a.trials} trials)")
            entry["tuning"][system] = tvm = tune_tvm(w, a.trials, work, a.seed, a.threads, step, fast_exp, a.tvm_reuse)
            if "error" in tvm:
                progress(step, f"{label} failed: {tvm['error']}")
            elif tvm.get("library"):
                tvm_libs[system] = tvm["library"]
        progress(step, f"measuring every implementation, each in its own process on CPUs {worker_cpus(a.threads)} with "
                       f"{a.threads} threads, interleaved, order rotated")
        measure_entry(entry, w, library_path, best_trace, tvm_libs, a, work, roof)
        results["workloads"].append(entry)
        order = tyche.preset_names()
        results["workloads"].sort(key=lambda e: order.index(e["name"]) if e["name"] in order else len(order))
        results["summary"] = report.summarize(results)
        report.write_json(results, stem + ".json")
        figures = ", ".join(f"{report.LABELS[k]} {v['gflops']:.1f}" + ("" if v["correct"] else " (WRONG)")
                            for k, v in entry["systems"].items() if "gflops" in v)
        progress(step, f"GFLOP/s: {figures}")
    write_report(results, stem)
    return stem


def measure_entry(entry: dict, w, library_path: str, best_trace: str | None, tvm_libs: dict[str, str],
                  a: argparse.Namespace, work: str, roof: dict) -> None:
    entry["systems"] = measure_workload(entry["name"], w, library_path, best_trace, tvm_libs, a,
                                        os.path.join(work, "measure", entry["name"].replace(" ", "_")))
    bound = min(roof["peak_gflops"], w.flop / entry["bytes"] * roof["bandwidth_gbs"])
    entry["roofline_gflops"] = bound
    for s in entry["systems"].values():
        if "gflops" in s:
            s["roofline_fraction"] = s["gflops"] / bound


def remeasure(a: argparse.Namespace) -> str:
    """Times every system of a results file's workloads again, keeping what each tuner found:
    Tyche's best trace and TVM's exported library. Notes on a workload's gaps are dropped (they
    explained the old timings); the workload records the commit that measured it."""
    library_path = os.path.join(a.build, "bench", "libtyche_baselines.so")
    host = describe_host(Library(library_path))
    results, stem = resume_results(a, host, [], a.remeasure, "--remeasure")
    chosen = select_workloads(a) if a.workloads else [w["name"] for w in results["workloads"]]
    entries = {w["name"]: w for w in results["workloads"]}
    missing = [n for n in chosen if n not in entries]
    if missing:
        raise SuiteError(f"--remeasure: {a.remeasure} has no workload {missing[0]}")
    work = work_dir(a)
    for i, name in enumerate(chosen):
        step, entry = f"{i + 1}/{len(chosen)} {name}", entries[name]
        w = tyche.workload(name, scale_down=a.scale_down)
        tuning = entry["tuning"]
        tyche_tuning = tuning.get("tyche", {})
        best_trace = tyche_tuning.get("best_trace") if tyche_tuning.get("best_seconds", 0) > 0 else None
        tvm_libs = {k: t["library"] for k, t in tuning.items() if k != "tyche" and t.get("library")}
        for path in tvm_libs.values():
            if not os.path.exists(path):
                raise SuiteError(f"--remeasure: {name}'s TVM library {path} is gone; tune again with --resume")
        progress(step, f"measuring every implementation again, tunings kept ({', '.join(['tyche'] * bool(best_trace) + list(tvm_libs))})")
        measure_entry(entry, w, library_path, best_trace, tvm_libs, a, work, results["roofline"])
        entry["measured_commit"], entry["measured_date"] = git_commit(), datetime.date.today().isoformat()
        entry.pop("notes", None)
        results["summary"] = report.summarize(results)
        report.write_json(results, stem + ".json")
    write_report(results, stem)
    return stem


def resume_results(a: argparse.Namespace, host: dict, names: list[str], path: str, flag: str) -> tuple[dict, str]:
    """A results file to add the missing workloads to (or to measure again): it must come from this
    CPU and the same settings."""
    results = report.load(path)
    c, h = results["config"], results["host"]
    for key, value in (("trials", a.trials), ("tvm", a.tvm), ("scale_down", a.scale_down), ("threads", a.threads)):
        if c.get(key) != value:
            raise SuiteError(f"{flag}: {path} was measured with {key} = {c.get(key)}, not {value}")
    if (h.get("cpu_name"), h.get("llvm_cpu")) != (host["cpu_name"], host["llvm_cpu"]):
        raise SuiteError(f"{flag}: {path} was measured on {h.get('cpu_name')} ({h.get('llvm_cpu')}), not on this "
                         f"{host['cpu_name']} ({host['llvm_cpu']})")
    c["workloads"] = list(dict.fromkeys(c.get("workloads", []) + names))
    return results, stem_of(path)


def write_report(results: dict, stem: str) -> None:
    with open(stem + ".md", "w") as f:
        f.write(report.markdown(results))
    for path in plots.write_all(results, stem):
        progress("done", f"wrote {path}")
    progress("done", f"wrote {stem}.json and {stem}.md")
    print(report.markdown(results))


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if a.report:
            results = report.load(a.report)
            write_report(results, stem_of(a.report))
        elif a.remeasure:
            remeasure(a)
        else:
            run_suite(a)
    except (SuiteError, report.ResultsError, BaselineError, tyche.TycheError) as e:
        print(f"bench/suite: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench/suite: interrupted; the results measured so far are in the JSON file", file=sys.stderr)
        return 130
    return 0
