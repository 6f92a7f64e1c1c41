"""Each implementation measured in a process of its own, driven over a pipe.

In one process the libraries' thread pools (oneDNN's OpenMP, TVM's, Tyche's) and allocators
share everything: oneDNN's small kernels measured beside the others ran far slower than alone
(its depthwise conv, DEP-3: 0.5 GFLOP/s beside them, 28 in a process of its own, AMD EPYC). So the
suite starts one worker per implementation; the workers load the same inputs and reference from
files, build their kernel, check its output, then time windows when asked. The parent still
interleaves the windows round by round (measure.py), so all see the same periods of the host.

Every worker gets the same environment (the suite's explicit thread count for each library, see
suite.worker_env) and is confined to the same CPUs; it reports how many threads its library
actually runs, which the suite checks.

Protocol: one JSON line per request on the worker's stdin, one JSON line per answer on stdout.
    start  -> {"ok": true, "max_error": ..., "implementation": ..., "threads": N} or {"error": "..."}
    {"window": N} -> {"seconds": mean seconds per call} or {"error": "..."}
    {"quit": true} -> the worker exits
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from typing import Any

import numpy as np

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANSWER_TIMEOUT_S = 600  # the unscheduled C3D-3 takes 14 s a call; a worker silent this long hangs


class WorkerError(RuntimeError):
    pass


def save_data(directory: str, inputs, reference: np.ndarray) -> str:
    """Writes the inputs and the reference the workers share; returns the file."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "data.npz")
    np.savez(path, reference=reference, **{f"input{i}": a for i, a in enumerate(inputs)})
    return path


class Worker:
    """The parent's end: starts the worker for ``spec`` and waits for its check. ``spec`` holds
    "kind" (tyche, unscheduled, library, tvm), "workload", "scale_down", "data" (save_data's file)
    and, by kind, "trace" (Tyche's best, text), "system" and "library" (the baselines library),
    or "tvm_library" (TVM's exported best)."""

    def __init__(self, name: str, spec: dict, log_path: str, env: dict | None = None, cpus: list[int] | None = None):
        self.name = name
        self.alive, self.failed = True, False
        env = {**os.environ, **(env or {})}
        env["PYTHONPATH"] = BENCH + os.pathsep + env.get("PYTHONPATH", "")
        self._log = open(log_path, "a")
        spec_path = os.path.splitext(log_path)[0] + ".spec.json"  # a file: a trace may be long
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        try:
            pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
            self._proc = subprocess.Popen([sys.executable, "-m", "suitelib.isolated", spec_path], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._log, text=True, env=env, bufsize=1,
                                          preexec_fn=pin)
        except OSError as e:
            self._log.close()
            raise WorkerError(f"the {name} worker could not start: {e}") from e
        self.pid = self._proc.pid
        try:
            answer = self._receive()
        except WorkerError:
            self.close()
            raise
        self.max_error = answer.get("max_error")
        self.implementation = answer.get("implementation", "")
        self.threads = answer.get("threads")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the worker process, all its threads, so far (0 once it is gone)."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def _fail(self, why: str) -> WorkerError:
        self.failed = True
        return WorkerError(why)

    def _receive(self) -> dict:
        # Every answer is one line, read as soon as it is ready: select on the pipe sees it.
        ready, _, _ = select.select([self._proc.stdout], [], [], ANSWER_TIMEOUT_S)
        if not ready:
            self._proc.kill()
            raise self._fail(f"the {self.name} worker gave no answer in {ANSWER_TIMEOUT_S} s (its log: {self._log.name})")
        line = self._proc.stdout.readline()
        if not line:
            code = self._proc.wait()
            why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise self._fail(f"the {self.name} worker died ({why}; its log: {self._log.name})")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            raise self._fail(f"the {self.name} worker answered '{line.strip()[:80]}', not JSON") from None
        if "error" in answer:
            raise self._fail(answer["error"])
        return answer

    def window(self, calls: int) -> float:
        try:
            self._proc.stdin.write(json.dumps({"window": int(calls)}) + "\n")
        except OSError:
            pass  # the worker is gone: _receive says how
        seconds = self._receive().get("seconds")
        if not isinstance(seconds, (int, float)):
            raise self._fail(f"the {self.name} worker answered a window without its seconds")
        return float(seconds)

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(json.dumps({"quit": True}) + "\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass  # the worker is gone and its pipe with it
        self._log.close()


# ----------------------------------------------------------------------------------------------
# The worker's end


def build_implementation(spec: dict, inputs: list[np.ndarray]):
    import tyche

    from .implementations import library_kernel, tvm_kernel, tyche_kernel

    w = tyche.workload(spec["workload"], scale_down=bool(spec.get("scale_down")))
    kind = spec["kind"]
    if kind == "unscheduled":
        return tyche_kernel("unscheduled", tyche.build(w), inputs, w.func)
    if kind == "tyche":
        sch = tyche.Schedule(w.func)
        tyche.Trace.parse(spec["trace"]).apply_to(sch)
        return tyche_kernel("tyche", tyche.build(sch), inputs, w.func)
    if kind == "library":
        from .baselines import Library
        return library_kernel(Library(spec["library"]), spec["system"], w, inputs)
    if kind == "tvm":
        return tvm_kernel(spec["tvm_library"], w.op, inputs, w.func)
    raise WorkerError(f"unknown implementation kind '{kind}'")


def library_threads(spec: dict) -> int | None:
    """How many threads the implementation's library will run, as the library itself says."""
    import ctypes

    kind = spec["kind"]
    if kind in ("tyche", "unscheduled"):
        import tyche
        return int(tyche.num_threads())
    if kind == "tvm":
        import tvm
        return int(tvm.get_global_func("runtime.NumThreads")())
    if spec.get("system") == "onednn":  # OpenMP (libgomp), already loaded by the baselines library
        return int(ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
    if spec.get("system") == "openblas":
        return int(ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads())
    return None


def serve(spec: dict, requests, answers) -> None:
    from .implementations import aligned_copies, relative_error

    def say(value: dict[str, Any]) -> None:
        answers.write(json.dumps(value) + "\n")
        answers.flush()

    try:
        with np.load(spec["data"]) as data:
            count = sum(1 for k in data.files if k.startswith("input"))
            inputs = aligned_copies([data[f"input{i}"] for i in range(count)])
            reference = data["reference"]
        impl = build_implementation(spec, inputs)
        impl.run()
        err = relative_error(impl.output, reference)
        threads = library_threads(spec)
    except Exception as e:  # noqa: BLE001 - any failure to build, run or check is the answer, on one line
        say({"error": (str(e).splitlines() or [type(e).__name__])[0]})
        return
    say({"ok": True, "max_error": err if np.isfinite(err) else None, "implementation": impl.implementation, "threads": threads})
    for line in requests:
        request = json.loads(line)
        if request.get("quit"):
            return
        try:
            say({"seconds": impl.window(int(request["window"]))})
        except Exception as e:  # noqa: BLE001
            say({"error": (str(e).splitlines() or [type(e).__name__])[0]})


if __name__ == "__main__":
    # The answers get the real stdout; anything a library prints goes to the log instead.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    serve(spec, sys.stdin, answers)
