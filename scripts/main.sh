#!/usr/bin/env bash
# The main job: install what is missing, build in Release, show GMM-4's IR and check scaled-down
# GMM and C2D against their references with the interpreter, then compile, check and time GMM-4
# with LLVM under the example trace written for this CPU's vector width (AVX-512 or AVX2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF >/dev/null
cmake --build build --target tyche tyche-worker -j "$(nproc)"
./build/tools/tyche show GMM-4
./build/tools/tyche check GMM-4 --scale-down
./build/tools/tyche check C2D-1 --scale-down
bits=$(./build/tools/tyche cpu | awk -F': ' '$1 == "vector bits" {print $2}')
llvm_cpu=$(./build/tools/tyche cpu | awk -F': ' '$1 == "llvm cpu" {print $2}')
if [ "$bits" = 512 ]; then trace=examples/traces/gmm_1024.py; else trace=examples/traces/gmm_1024_avx2.py; fi
echo "this CPU ($llvm_cpu) has ${bits}-bit vectors: GMM-4 under $trace"
./build/tools/tyche run GMM-4 --trace "$trace"
