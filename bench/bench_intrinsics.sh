#!/usr/bin/env bash
# The CPU tensor intrinsics' benchmark: each typed preset and its float32 preset tuned for TRIALS
# (default 500) trials into one database, then bench_intrinsics measures the best programs against
# oneDNN's int8 and bf16 primitives, interleaved in one run, and writes the figures to JSON. About
# 25 minutes on 2 cores; keep the machine otherwise idle.
#   bash bench/bench_intrinsics.sh       WORKLOADS="GMM-4-U8S8" TRIALS=200 bash bench/bench_intrinsics.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh libdnnl-dev
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF -DTYCHE_BUILD_BENCH=ON >/dev/null
cmake --build build-bench --target tyche tyche-worker bench_intrinsics -j "$(nproc)"
tyche=./build-bench/tools/tyche
trials=${TRIALS:-500}
workloads=${WORKLOADS:-GMM-4-U8S8 C2D-3-U8S8 GMM-4-BF16 DENSE-BERT-BF16}
out=build-bench/intrinsics-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$tyche" cpu | head -4
for w in $workloads; do
  for x in "$w" "${w%-*}"; do  # the typed preset, then its float32 preset
    echo "== $x, $trials trials"
    "$tyche" tune "$x" --trials "$trials" --db "$out/db" --json "$out/$x.json" | grep -v '^\(sch\.\|[lvb][0-9]\)'
  done
done
# shellcheck disable=SC2086
./build-bench/bench/bench_intrinsics --db "$out/db" --rounds 21 --json "$out/intrinsics.json" $workloads
echo "figures: $out/intrinsics.json"
