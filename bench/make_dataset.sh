#!/usr/bin/env bash
# Regenerates the measured dataset under bench/data/ that the default cost model is trained on:
# for one shape of each of the 14 families, the records of a tune from an untrained model (its
# first rounds random design-space samples, then the candidates its model picks as it learns),
# each timed in the isolated runner on this machine and checked against the reference, one
# tuning record a line, gzip-compressed. A search's records, not only random samples: the model
# must rank the programs a search meets once it is near a good one. No shape the suite measures
# (the third preset of each family) is in it, so the suite's early-search figures are transfer
# across shapes, not recall. Takes about 30 minutes on 2 cores; keep the machine otherwise idle
# (the records are timings).
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
# One shape a family (GMM two), none of them a -3 preset; GMM-4 and C2D-4 get the most trials.
workloads=(GMM-4 GMM-2 C1D-4 C2D-4 C3D-4 GRP-4 DIL-4 DEP-4 T2D-2 CAP-4 NRM-2 SFM-2 CBR-4 TBG-2 DENSE_RELU-2)
declare -A trials=([GMM-4]=400 [C2D-4]=400)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for w in "${workloads[@]}"; do
  case "$w" in *-3) echo "make_dataset: $w is a suite shape; the dataset holds them out" >&2; exit 1 ;; esac
  n=$(python3 -c "print(max(1, round(${trials[$w]:-250} * $scale)))")
  echo "== $w: a $n-trial tune -> bench/data/$w.jsonl.gz"
  "$tyche" tune "$w" --trials "$n" --model none --no-warm-start --seed 1 --threads "$threads" --db "$work/$w" >/dev/null
  mkdir -p "$work/data"
  gzip -9 -c "$work/$w/records.jsonl" > "$work/data/$w.jsonl.gz"
done
# Only a complete set replaces the shipped one.
rm -f bench/data/*.jsonl.gz
mv "$work"/data/*.jsonl.gz bench/data/
"$tyche" cpu | head -4
