"""The conformance runner's own check: with an expectations file that lists a case which passes,
or leaves out one which fails, it must fail; with the right file it must pass."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

RUNNER = pathlib.Path(__file__).resolve().parent / "onnx_conformance.py"


def run(only: str, listed: dict[str, str], cache: str) -> subprocess.CompletedProcess:
    import onnx
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        fh.write(f"# onnx {onnx.__version__}\n")
        for name, reason in listed.items():
            fh.write(f"{name}\t{reason}\n")
    try:
        return subprocess.run([sys.executable, str(RUNNER), "--nodes-only", "--only", only, "--jobs", "1",
                               "--cache", cache, "--expectations", fh.name], capture_output=True, text=True)
    finally:
        os.unlink(fh.name)


def main() -> int:
    cache = sys.argv[1] if len(sys.argv) > 1 else ""
    failures = []
    # test_relu passes; test_unique_not_sorted_without_axis is refused (Unique: a data-dependent output
    # shape). One run with the wrong file (relu listed, Unique not) and one with the right file.
    both = "test_relu,test_unique_not_sorted_without_axis"
    checks = [(both, {"test_relu": "refused: x"}, 1, ["PASSES, so remove it", "FAILS, and is not listed"]),
              (both, {"test_unique_not_sorted_without_axis": "refused: Unique"}, 0, [])]
    for only, listed, want, says in checks:
        proc = run(only, listed, cache)
        missing = [s for s in says if s not in proc.stdout]
        if proc.returncode != want or missing:
            failures.append(f"--only {only} with {listed}: exit {proc.returncode} (want {want}), "
                            f"{missing} not in:\n{proc.stdout}{proc.stderr}")
    for f in failures:
        print(f)
    print(f"{len(checks) - len(failures)} of {len(checks)} checks hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
