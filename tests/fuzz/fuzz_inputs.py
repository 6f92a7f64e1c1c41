#!/usr/bin/env python3
"""Malformed and hostile inputs run through the `tyche` CLI and the Python API (issue 60).

A seeded generator of ONNX models (truncated, bytes flipped, fields mutated, crafted sizes, external
data that points out of the model's folder), .npy files, formulas and extents, flags and damaged
tuning databases. Every case runs in a child process, and each must

  * exit 1 or 2 (a refusal) unless the input is legitimately valid (then 0; some cases, such as a
    random mutation that may still be a valid model, accept either); Python: a tyche.TycheError
    (the child exits 3) or success, never another exception;
  * end by itself: no signal, under TYCHE_FUZZ_TIME_LIMIT seconds (default 5) of wall time;
  * stay under 1 GiB of resident memory (the child's peak RSS from wait4, and a watchdog that
    kills it once /proc says it is over, so a runaway allocation cannot take the machine);
  * refuse in one line: a CLI refusal's last stderr line starts "tyche: error:", is readable
    (no option-library range dump, no bare "stoll", no "internal error") and names what it is about
    where the case says so (the flag, the tensor and its location);
  * read nothing outside the model's folder: a sentinel file with a secret lies beside the folder
    (and the secret is in the children's environment, for /proc/self/environ); external data points
    at it by ../, by an absolute path, by a symlink and through a symlinked folder, and the secret
    must appear in no output and in no library `tyche export-model` writes;
  * lose nothing saved: a database's records are the same after every damaged-input run.

Usage: fuzz_inputs.py --tyche build/tools/tyche [--work DIR] [--seed N] [--mutations N]
       [--jobs N] [--require-python] [--only REGEX] [--write-corpus DIR]
PYTHONPATH must reach the built package (build/python) for the Python API cases. Environment:
TYCHE_FUZZ_MUTATIONS (random mutations, default 100), TYCHE_FUZZ_SEED, TYCHE_FUZZ_TIME_LIMIT,
TYCHE_FUZZ_JOBS. The report (every case, failures first) is printed and saved as WORK/report.json;
each case's files stay under WORK/cases/NAME.

This file runs and judges the cases; they are built by fuzz_cases.py (from the models, .npy
headers and mutations of fuzz_models.py) beside it. The Python cases' children are forked from a
Python that has imported tyche once (py_zygote.py).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import queue
import random
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

# The case generators are modules beside this file (fuzz_cases.py, fuzz_models.py): find them
# whatever the current directory.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzz_cases import PY_IMPORT, PY_MULTILINE, PY_OK, PY_OTHER, PY_TYCHE_ERROR, Case, Cases  # noqa: E402

RSS_LIMIT = 1 << 30  # bytes
# Words of a message that leaked from an implementation instead of being written for a person.
UNREADABLE = ["stoll", "stoi", "stoul", "stod", "bad_alloc", "basic_string", "not in range", "vector::",
              "Resource temporarily unavailable", "incompatible function arguments", "internal error",
              "std::", "what():", "terminate called"]
MAX_MESSAGE = 400  # characters of a one-line refusal


@dataclass
class Result:
    case: Case
    code: int | None = None
    signal: str | None = None
    killed: str | None = None
    seconds: float = 0.0
    rss: int = 0
    stdout: str = ""
    stderr: str = ""
    problems: list[str] = field(default_factory=list)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


class Zygote:
    """A py_zygote.py process: it forks the Python cases' children (see there)."""

    def __init__(self, env: dict):
        self.process = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "py_zygote.py")],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0,
                                        start_new_session=True)
        self.pending = b""  # read from its stdout, not yet a whole line

    def reply(self, wait: bool) -> dict | None:
        """Its next reply; None when `wait` is false and no whole line has come yet."""
        while b"\n" not in self.pending:
            if not wait and not select.select([self.process.stdout], [], [], 0)[0]:
                return None
            data = os.read(self.process.stdout.fileno(), 1 << 16)
            if not data:
                raise OSError(f"the Python zygote is gone (exit {self.process.poll()})")
            self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def start(self, case: Case, out_path: Path, err_path: Path):
        """Starts the case; returns its pid and a poll that gives (wait status, maxrss KiB) once it ended."""
        request = {"argv": case.argv, "cwd": case.cwd, "env": case.env, "out": str(out_path), "err": str(err_path)}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
        except (BrokenPipeError, ValueError) as e:
            raise OSError(f"the Python zygote is gone: {e}") from e
        pid = self.reply(wait=True)["pid"]

        def ended():
            reply = self.reply(wait=False)
            return (reply["status"], reply["maxrss"]) if reply else None
        return pid, ended

    def close(self):
        self.process.stdin.close()
        self.process.wait()


class Fuzz(Cases):
    def __init__(self, args):
        self.args = args
        self.tyche = os.path.abspath(args.tyche)
        self.work = Path(args.work).resolve()
        self.rng = random.Random(args.seed)
        self.secret = f"tyche-fuzz-secret-{uuid.UUID(int=random.Random(args.seed ^ os.getpid()).getrandbits(128)).hex}"
        self.secrets = [self.secret.encode(), b"root:x:0:0"]
        self.cases: list[Case] = []
        self.time_limit = float(os.environ.get("TYCHE_FUZZ_TIME_LIMIT", "5"))
        self.stdin_r, self.stdin_w = os.pipe()  # a stdin that never ends: /dev/stdin blocks on it
        self.zygotes: queue.Queue | None = None  # of Zygote, one per job, once the cases are built

    # ---- running ----

    def base_env(self) -> dict:
        """The children's environment: the secret first, so the start of /proc/self/environ holds it."""
        return {"TYCHE_FUZZ_SECRET": self.secret, **os.environ}

    def spawn(self, case: Case, env: dict, out_path: Path, err_path: Path):
        """Starts the case's own process; returns its pid and a poll as Zygote.start does."""
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            p = subprocess.Popen(case.argv, stdout=out, stderr=err, stdin=self.stdin_r, cwd=case.cwd, env=env,
                                 start_new_session=True)

        def ended():
            done, status, usage = os.wait4(p.pid, os.WNOHANG)
            if not done:
                return None
            p.returncode = status  # reaped here: Popen must not wait for it again
            return status, usage.ru_maxrss
        return p.pid, ended

    def run(self, case: Case) -> Result:
        r = Result(case)
        d = self.work / "out"
        d.mkdir(exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", case.name)
        out_path, err_path = d / f"{safe}.out", d / f"{safe}.err"
        env = {**self.base_env(), **case.env}
        start = time.monotonic()
        # A Python case is forked from a Python that has imported tyche (py_zygote.py): the same
        # child, 0.3 s sooner.
        zygote = self.zygotes.get() if case.kind == "python" and self.zygotes is not None else None
        try:
            try:
                pid, ended = (zygote.start(case, out_path, err_path) if zygote
                              else self.spawn(case, env, out_path, err_path))
            except OSError as e:
                r.problems.append(f"could not start: {e}")
                return r
            peak = 0
            while not (result := ended()):
                elapsed = time.monotonic() - start
                limit = case.time_limit or self.time_limit
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                peak = max(peak, int(line.split()[1]) * 1024)
                except OSError:
                    pass
                if peak > RSS_LIMIT and not r.killed:
                    r.killed = f"killed: RSS over {RSS_LIMIT >> 20} MiB"
                    kill_group(pid)
                elif elapsed > limit and not r.killed:
                    r.killed = f"killed: running after {limit:g} s"
                    kill_group(pid)
                time.sleep(0.01 if elapsed < 0.5 else 0.03)
        finally:
            if zygote:
                self.zygotes.put(zygote)
        status, maxrss_kib = result
        r.seconds = time.monotonic() - start
        kill_group(pid)  # threads or children left in the group
        r.rss = max(peak, maxrss_kib * 1024)
        if os.WIFSIGNALED(status):
            r.signal = signal.Signals(os.WTERMSIG(status)).name
        else:
            r.code = os.WEXITSTATUS(status)
        r.stdout = out_path.read_bytes().decode(errors="replace")
        r.stderr = err_path.read_bytes().decode(errors="replace")
        self.judge(r)
        return r

    def judge(self, r: Result) -> None:
        c = r.case
        if r.killed:
            r.problems.append(r.killed)
        elif r.signal:
            r.problems.append(f"signal {r.signal}")
        elif r.code not in c.expect:
            if c.kind == "python":
                what = {PY_OK: "returned normally", PY_TYCHE_ERROR: "raised TycheError", PY_OTHER: "raised another exception",
                        PY_IMPORT: "could not import tyche", PY_MULTILINE: "raised a TycheError of several lines"}.get(r.code, f"exit {r.code}")
                last = ([l for l in r.stderr.splitlines() if l.strip()] or [""])[-1]
                r.problems.append(f"{what}, expected " + " or ".join(
                    {PY_OK: "success", PY_TYCHE_ERROR: "TycheError"}.get(e, str(e)) for e in sorted(c.expect))
                    + (f": {last[:160]!r}" if r.code in (PY_OTHER, PY_IMPORT, PY_MULTILINE) else ""))
            else:
                r.problems.append(f"exit {r.code}, expected {'/'.join(map(str, sorted(c.expect)))}")
        if r.seconds > (c.time_limit or self.time_limit) and not r.killed:
            r.problems.append(f"took {r.seconds:.1f} s")
        if r.rss > RSS_LIMIT and not r.killed:
            r.problems.append(f"peak RSS {r.rss >> 20} MiB")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        last = lines[-1] if lines else ""
        refused = not r.killed and not r.signal and r.code not in (0, None)
        if c.kind == "cli" and refused:
            if not last.startswith("tyche: error:"):
                r.problems.append(f"last stderr line is not 'tyche: error: ...': {last[:120]!r}")
        if refused and last:
            message = last
            if len(message) > MAX_MESSAGE:
                r.problems.append(f"refusal of {len(message)} characters")
            bad = [w for w in UNREADABLE if w in message]
            if bad and r.code != PY_OTHER:
                r.problems.append(f"refusal leaks {bad[0]!r}: {message[:160]!r}")
            missing = [m for m in c.mentions if m not in message]
            if missing and r.code in (1, 2, PY_TYCHE_ERROR):
                r.problems.append(f"refusal does not name {', '.join(map(repr, missing))}: {message[:160]!r}")
        for s in self.secrets:
            for stream, text in (("stdout", r.stdout), ("stderr", r.stderr)):
                if s.decode() in text:
                    r.problems.append(f"{stream} holds {'the sentinel secret' if s == self.secret.encode() else s.decode()!r}")
        for d in c.grep_dirs:
            for leak in self.grep(Path(d)):
                r.problems.append(leak)
        if c.after:
            r.problems += c.after(c)

    def grep(self, d: Path) -> list[str]:
        found = []
        if not d.exists():
            return found
        for p in sorted(d.rglob("*")):
            if p.is_file() and not p.is_symlink():
                data = p.read_bytes()
                for s in self.secrets:
                    if s in data:
                        found.append(f"{p.relative_to(self.work)} holds "
                                     f"{'the sentinel secret' if s == self.secret.encode() else s.decode()!r}")
        return found

    # ---- the whole run ----

    def build(self):
        self.setup_failures = []
        self.python = self.check_python()
        self.external_cases()
        self.size_cases()
        self.npy_cases()
        self.formula_cases()
        self.flag_cases()
        self.database_cases()
        self.mutation_cases(self.args.mutations)
        if self.args.only:
            rx = re.compile(self.args.only)
            self.cases = [c for c in self.cases if rx.search(c.name)]

    def check_python(self) -> bool:
        r = subprocess.run([sys.executable, "-c", "import tyche, tyche.onnx"], capture_output=True, text=True)
        if r.returncode == 0:
            return True
        msg = f"the Python package cannot be imported (PYTHONPATH={os.environ.get('PYTHONPATH', '')}): " \
              f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
        if self.args.require_python:
            self.setup_failures_early = msg
            print(f"setup: {msg}")
            sys.exit(1)
        print(f"note: {msg}; the Python API cases are skipped")
        return False


def report(results: list[Result], work: Path, elapsed: float, setup_failures: list[str]) -> int:
    failed = [r for r in results if r.problems]

    def outcome(r: Result) -> str:
        if r.killed:
            return "killed"
        if r.signal:
            return r.signal
        return f"exit {r.code}"

    def command(r: Result) -> str:
        argv = list(r.case.argv)
        if r.case.kind == "python":
            argv = ["python", "-c", "<child>", argv[-1].strip().replace("\n", "; ")]
        else:
            argv[0] = "tyche"
        text = " ".join(shlex.quote(a) if len(a) < 80 else shlex.quote(a[:60] + f"...<{len(a)} chars>") for a in argv)
        return str(text).replace(str(work) + "/", "")

    rows = []
    for r in failed:
        rows.append((r.case.name, outcome(r), f"{r.seconds:.2f}", f"{r.rss >> 20}", "; ".join(r.problems), command(r)))
    if rows:
        print(f"\n{len(failed)} of {len(results)} cases FAILED:\n")
        head = ("case", "outcome", "time s", "RSS MiB", "problem", "command")
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head[:4])]
        print("  ".join(h.ljust(w) for h, w in zip(head[:4], widths)) + "  problem / command")
        for row in rows:
            print("  ".join(v.ljust(w) for v, w in zip(row[:4], widths)) + "  " + row[4][:300])
            print(" " * (sum(widths) + 8) + "$ " + row[5][:300])
        by_group: dict[str, list[int]] = {}
        for r in results:
            g = by_group.setdefault(r.case.group or "other", [0, 0])
            g[0] += 1
            g[1] += bool(r.problems)
        print("\nfailures by group: " + ", ".join(f"{g} {v[1]}/{v[0]}" for g, v in sorted(by_group.items())))
    slowest = max(results, key=lambda r: r.seconds) if results else None
    biggest = max(results, key=lambda r: r.rss) if results else None
    print(f"\n{len(results) - len(failed)} of {len(results)} cases passed in {elapsed:.1f} s"
          + (f"; slowest {slowest.case.name} {slowest.seconds:.2f} s, largest {biggest.case.name} {biggest.rss >> 20} MiB"
             if results else ""))
    for s in setup_failures:
        print(f"setup failure: {s}")
    with open(work / "report.json", "w") as f:
        json.dump([{"case": r.case.name, "group": r.case.group, "argv": r.case.argv if r.case.kind == "cli" else r.case.argv[-1:],
                    "outcome": outcome(r), "seconds": round(r.seconds, 3), "rss_mib": r.rss >> 20,
                    "problems": r.problems, "stderr_tail": r.stderr[-600:]}
                   for r in sorted(results, key=lambda r: (not r.problems, r.case.name))], f, indent=1)
    print(f"report: {work / 'report.json'}")
    return 1 if failed or setup_failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tyche", help="the tyche binary")
    ap.add_argument("--work", default="fuzz_inputs_work", help="a folder for the cases' files (emptied first)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("TYCHE_FUZZ_SEED", "60")))
    ap.add_argument("--mutations", type=int, default=int(os.environ.get("TYCHE_FUZZ_MUTATIONS", "100")))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("TYCHE_FUZZ_JOBS", str(min(2, os.cpu_count() or 1)))))
    ap.add_argument("--require-python", action="store_true", help="fail if the Python package cannot be imported")
    ap.add_argument("--only", help="run only the cases whose name matches this regular expression")
    ap.add_argument("--write-corpus", help="write small valid models (a fuzzing seed corpus) to this folder and exit")
    args = ap.parse_args()
    if args.write_corpus:
        args.tyche = args.tyche or "tyche"
        args.work = args.write_corpus
        Fuzz.__new__(Fuzz).write_corpus(Path(args.write_corpus))
        return 0
    if not args.tyche or not os.access(args.tyche, os.X_OK):
        ap.error(f"--tyche: not an executable: {args.tyche}")
    work = Path(args.work).resolve()
    if work.exists():
        for p in work.rglob("*"):  # a read-only database of an earlier run
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(work)
    work.mkdir(parents=True)
    fuzz = Fuzz(args)
    start = time.monotonic()
    fuzz.build()
    print(f"{len(fuzz.cases)} cases (seed {args.seed}, {args.mutations} model mutations), {args.jobs} at a time, "
          f"limits {fuzz.time_limit:g} s and {RSS_LIMIT >> 20} MiB each; python API cases: {'yes' if fuzz.python else 'no'}",
          flush=True)
    results = []
    if fuzz.python and any(c.kind == "python" for c in fuzz.cases):
        fuzz.zygotes = queue.Queue()
        for _ in range(max(1, args.jobs)):
            fuzz.zygotes.put(Zygote(fuzz.base_env()))
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for r in pool.map(fuzz.run, fuzz.cases):
            results.append(r)
    while fuzz.zygotes and not fuzz.zygotes.empty():
        fuzz.zygotes.get().close()
    for p in work.rglob("*.bin"):  # the FIFOs: a later `grep -r` of the build folder must not block on one
        if p.is_fifo():
            p.unlink()
    return report(results, work, time.monotonic() - start, fuzz.setup_failures + fuzz.pristine_unchanged())


if __name__ == "__main__":
    sys.exit(main())
