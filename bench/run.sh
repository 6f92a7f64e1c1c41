#!/usr/bin/env bash
# Builds and runs the benchmarks (installs oneDNN, the GMM baseline, if missing). Ratios are
# measured in one run; timing on a shared machine is noisy, so run it twice before believing it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
if ! dpkg-query -W -f='${Status}' libdnnl-dev 2>/dev/null | grep -q "install ok installed"; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq libdnnl-dev >/dev/null
fi
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF -DTYCHE_BUILD_BENCH=ON >/dev/null
cmake --build build-bench --target bench_fork_join bench_gmm bench_space bench_cost_model -j "$(nproc)"
./build-bench/bench/bench_fork_join
./build-bench/bench/bench_gmm
./build-bench/bench/bench_space
./build-bench/bench/bench_cost_model
