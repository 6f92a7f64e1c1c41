#!/usr/bin/env bash
# Regenerates the measured dataset under bench/data/ that the default cost model is trained on:
# for each of nine workloads of eight families, the records of a tune from an untrained model
# (its first rounds random design-space samples, then the candidates its model picks as it
# learns), each timed in the isolated runner on this machine and checked against the reference,
# one tuning record a line, gzip-compressed. A search's records, not only random samples: the
# model must rank the programs a search meets once it is near a good one. Takes about 15 minutes
# on 2 cores; keep the machine otherwise idle (the records are timings).
#   bash bench/make_dataset.sh            # the full set
#   SCALE=0.1 bash bench/make_dataset.sh  # a tenth of it, to try the pipeline
set -euo pipefail
cd "$(dirname "$0")/.."
tyche=${TYCHE_BIN:-}
if [ -z "$tyche" ]; then
  bash scripts/install_deps.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF >/dev/null
  cmake --build build --target tyche tyche-worker -j "$(nproc)"
  tyche=./build/tools/tyche
fi
scale=${SCALE:-1}
threads=${THREADS:-$(nproc)}
declare -A trials=([GMM-4]=400 [C2D-3]=400 [DEP-2]=250 [SFM-3]=250 [CBR-2]=250 [GMM-3]=250 [C1D-3]=250 [TBG-1]=250 [NRM-3]=250)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for w in GMM-4 C2D-3 DEP-2 SFM-3 CBR-2 GMM-3 C1D-3 TBG-1 NRM-3; do
  n=$(python3 -c "print(max(1, round(${trials[$w]} * $scale)))")
  echo "== $w: a $n-trial tune -> bench/data/$w.jsonl.gz"
  "$tyche" tune "$w" --trials "$n" --model none --seed 1 --threads "$threads" --db "$work/$w" >/dev/null
  gzip -9 -c "$work/$w/records.jsonl" > "bench/data/$w.jsonl.gz"
done
"$tyche" cpu | head -4
