"""The fuzz test can fail: run against a `tyche` that leaks the sentinel's secret and crashes
(leaky_tyche.sh), it must exit 1 and name both problems for every case it ran."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

here = Path(__file__).resolve().parent
with tempfile.TemporaryDirectory() as tmp:
    work = Path(tmp) / "work"
    cases = "^(ext-symlink-passwd/import|ext-dev-zero/import|flag-run-threads-abc)$"
    r = subprocess.run([sys.executable, str(here / "fuzz_inputs.py"), "--tyche", str(here / "leaky_tyche.sh"),
                        "--work", str(work), "--only", cases], capture_output=True, text=True, timeout=300)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert r.returncode == 1, f"the fuzz test passed a leaking, crashing tyche (exit {r.returncode})"
    report = json.loads((work / "report.json").read_text())
    assert len(report) == 3, [c["case"] for c in report]
    for c in report:
        problems = " ".join(c["problems"])
        assert "SIGSEGV" in problems, (c["case"], problems)
        assert "sentinel secret" in problems, (c["case"], problems)
print("fuzz self-test: 3 failing cases caught, each with its signal and the leaked secret")
