#!/usr/bin/env bash
# Builds everything with g++ (Release, warnings as errors), the Python package included, and runs
# every test: the tests of generated code at each x86-64 level this host can run, and the Python
# package's pytest suite (one ctest test per file). The test summary is the last thing printed.
# clang++'s warning check is scripts/check_clang_warnings.sh (CI runs both).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/install_deps.sh
bash scripts/install_python_deps.sh
jobs="$(nproc)"
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WERROR=ON -DCMAKE_CXX_COMPILER=g++ \
  -DTYCHE_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build build-test -j "$jobs"
# The tests share one kernel cache (TYCHE_KERNEL_CACHE: many compile the same kernels), emptied
# first so that every run compiles with this build's code generator.
rm -rf build-test/kernel-cache
export TYCHE_KERNEL_CACHE="$PWD/build-test/kernel-cache"
built=$SECONDS
cd build-test
status=0
ctest --output-on-failure -j "$jobs" || status=$?
# The README's budget for this command is 12 minutes on 2 cores from a fresh clone.
echo "scripts/test.sh: $((SECONDS - start)) s ($((built - start)) s to install and build, $((SECONDS - built)) s of tests)"
exit "$status"
