#!/usr/bin/env bash
# The second compiler's warning check: every translation unit (sources, tools, tests, the Python
# package's bindings; not nanobind's own sources) through
# clang++-14's front end with warnings as errors, without code generation, since clang's warnings
# come from its front end; also the stand-ins of a build without LLVM (TYCHE_WITH_LLVM=OFF:
# *_cpuinfo.cc, llvm_unavailable.cc), configured in build-clang-nollvm. CI runs it after the test
# command; scripts/test.sh builds with g++.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=(clang-14)
command -v python3 >/dev/null || extra+=(python3)
bash scripts/install_deps.sh "${extra[@]}"
bash scripts/install_python_deps.sh
cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WERROR=ON -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DTYCHE_UNITY_BUILD=OFF -DTYCHE_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake -S . -B build-clang-nollvm -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WERROR=ON -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DTYCHE_UNITY_BUILD=OFF -DTYCHE_WITH_LLVM=OFF -DTYCHE_BUILD_TESTS=OFF >/dev/null
python3 - "$(nproc)" <<'PY'
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

def check(entry):
    args = shlex.split(entry["command"])
    out = args.index("-o")
    args = args[:out] + args[out + 2:] + ["-fsyntax-only"]
    r = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], r.returncode, r.stderr

root = os.getcwd() + "/"
# Sources generated into the build tree (the embedded export runtime) are not ours to check and
# do not exist before a build.
entries = [e for e in json.load(open("build-clang/compile_commands.json"))
           if e["file"].startswith(root) and not e["file"].startswith(root + "build-clang/")]
entries += [e for e in json.load(open("build-clang-nollvm/compile_commands.json"))
            if e["file"].endswith(("_cpuinfo.cc", "llvm_unavailable.cc"))]
# File by file (TYCHE_UNITY_BUILD=OFF above): a unity batch's generated source lives in the build
# tree, so its files would not be checked. Far fewer units than files means that happened.
sources = sum(1 for d, _, fs in os.walk("src") for f in fs if f.endswith((".cc", ".c")))
if len(entries) < sources:
    sys.exit(f"clang++-14 warning check: {len(entries)} units for {sources} source files under src/ (a unity build?)")
failed = 0
with ThreadPoolExecutor(int(sys.argv[1])) as pool:
    for file, code, err in pool.map(check, entries):
        if code != 0:
            failed += 1
            print(err, end="")
print(f"clang++-14 warning check: {len(entries)} files, {failed} with warnings or errors")
sys.exit(1 if failed else 0)
PY
