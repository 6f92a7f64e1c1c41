#!/usr/bin/env bash
# Regenerates the measured dataset under bench/data/: design-space samples of nine workloads of
# eight families, each timed in the isolated runner on this machine and checked against the
# reference, one tuning record a line, gzip-compressed. Takes about an hour on 2 cores; keep the
# machine otherwise idle (the records are timings). Resumable: rerunning appends only programs
# not measured yet (decompress first).
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
declare -A samples=([GMM-4]=1000 [C2D-3]=1200 [DEP-2]=200 [SFM-3]=200 [CBR-2]=200 [GMM-3]=200 [C1D-3]=200 [TBG-1]=200 [NRM-3]=200)
for w in GMM-4 C2D-3 DEP-2 SFM-3 CBR-2 GMM-3 C1D-3 TBG-1 NRM-3; do
  n=$(python3 -c "print(max(1, round(${samples[$w]} * $scale)))")
  file=bench/data/$w.jsonl
  [ -f "$file.gz" ] && gunzip "$file.gz"
  echo "== $w: $n candidates -> $file"
  "$tyche" sample-measure "$w" --samples "$n" --records "$file" --seed 1 --timeout 5
  gzip -9 -f "$file"
done
"$tyche" cpu | head -4
