"""The fuzz test can fail: run against a `tyche` that leaks the sentinel's secret and crashes
(leaky_tyche.sh, and the Python package leaky_python/tyche, whose cases run forked from
py_zygote.py), it must exit 1 and name both problems for every case it ran."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

here = Path(__file__).resolve().parent
with tempfile.TemporaryDirectory() as tmp:
    work = Path(tmp) / "work"
    cases = "^(ext-symlink-passwd/import|ext-dev-zero/import|flag-run-threads-abc|ext-symlink-passwd/py-tasks)$"
    env = dict(os.environ, PYTHONPATH=str(here / "leaky_python"))
    r = subprocess.run([sys.executable, str(here / "fuzz_inputs.py"), "--tyche", str(here / "leaky_tyche.sh"),
                        "--work", str(work), "--only", cases], capture_output=True, text=True, timeout=300, env=env)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert r.returncode == 1, f"the fuzz test passed a leaking, crashing tyche (exit {r.returncode})"
    report = json.loads((work / "report.json").read_text())
    assert sorted(c["case"] for c in report) == ["ext-dev-zero/import", "ext-symlink-passwd/import",
                                                  "ext-symlink-passwd/py-tasks", "flag-run-threads-abc"], report
    for c in report:
        problems = " ".join(c["problems"])
        assert "SIGSEGV" in problems, (c["case"], problems)
        assert "sentinel secret" in problems, (c["case"], problems)
print("fuzz self-test: 4 failing cases caught (3 of the CLI, 1 of the Python API), each with its signal and the leaked secret")
