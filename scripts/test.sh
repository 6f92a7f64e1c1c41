#!/usr/bin/env bash
# Checks that the tree compiles warning-free with clang++ 14, then builds with g++ (warnings as
# errors) and runs every test. The test summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
jobs="$(nproc)"
if [ "${TYCHE_SKIP_CLANG:-0}" != 1 ]; then
  cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WERROR=ON \
    -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
  cmake --build build-clang -j "$jobs" >build-clang/build.log 2>&1 || { tail -60 build-clang/build.log; exit 1; }
  echo "clang++-14 build: clean"
fi
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WERROR=ON \
  -DCMAKE_CXX_COMPILER=g++ >/dev/null
cmake --build build-test -j "$jobs"
cd build-test && ctest --output-on-failure -j "$jobs"
