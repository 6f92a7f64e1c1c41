#!/usr/bin/env bash
# The main job: install what is missing, build in Release, show GMM-4's IR and check scaled-down
# GMM and C2D against their references with the interpreter, then tune GMM-4 for a few hundred
# trials on this machine and run the tuned kernel against oneDNN's sgemm in the same run.
#   TRIALS=1000 bash scripts/main.sh   # a longer tune
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh libdnnl-dev
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF -DTYCHE_BUILD_BENCH=ON >/dev/null
cmake --build build --target tyche tyche-worker bench_tuned -j "$(nproc)"
./build/tools/tyche show GMM-4
./build/tools/tyche check GMM-4 --scale-down
./build/tools/tyche check C2D-1 --scale-down
./build/tools/tyche cpu | head -3
rm -rf build/main-db
./build/tools/tyche tune GMM-4 --trials "${TRIALS:-300}" --db build/main-db
./build/bench/bench_tuned --db build/main-db GMM-4
