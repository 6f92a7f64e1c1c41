#!/usr/bin/env bash
# The tuner's benchmark: GMM-4 and C2D-3 tuned for TRIALS (default 1000) trials each with the
# evolutionary search, with replay-trace, and with the evolutionary search starting from a cost
# model pre-trained on the other workloads' records in bench/data; then each best program against
# oneDNN, interleaved in one run (bench_tuned), and the tuning curves. About an hour and a half
# on 2 cores; keep the machine otherwise idle.
#   bash bench/bench_tune.sh            WORKLOADS="GMM-4" TRIALS=300 bash bench/bench_tune.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh libdnnl-dev
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF -DTYCHE_BUILD_BENCH=ON >/dev/null
cmake --build build-bench --target tyche tyche-worker bench_tuned -j "$(nproc)"
tyche=./build-bench/tools/tyche
trials=${TRIALS:-1000}
out=build-bench/tune-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$tyche" cpu | head -4
for w in ${WORKLOADS:-GMM-4 C2D-3}; do
  others=$(ls bench/data/*.jsonl.gz | grep -v "/$w.jsonl.gz")
  # shellcheck disable=SC2086
  "$tyche" model train --records $others -o "$out/model-$w.json"
  for variant in evolutionary replay-trace pretrained; do
    # No warm start, and no default model (trained on bench/data, this workload's records among
    # them): each variant starts from what it names.
    args=(--no-warm-start)
    [ "$variant" = pretrained ] || args+=(--model none)
    [ "$variant" = replay-trace ] && args+=(--strategy replay-trace)
    [ "$variant" = pretrained ] && args+=(--model "$out/model-$w.json")
    echo "== $w, $variant, $trials trials"
    "$tyche" tune "$w" --trials "$trials" --db "$out/$w-$variant" --json "$out/$w-$variant.json" "${args[@]}" | grep -v '^\(sch\.\|[lvb][0-9]\)'
    ./build-bench/bench/bench_tuned --db "$out/$w-$variant" "$w"
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
marks = [64, 128, 256, 512, 1000]
print("\ntuning curves: best GFLOP/s after N trials (wall time of the whole tune; time outside build and run)")
runs = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(path)[:-5]
    if name.startswith("model-"):
        continue
    j = json.load(open(path))
    runs[name] = j
    def best_at(n):
        b = 0
        for h in j["history"]:
            if h["trials"] <= n:
                b = max(b, h["best_gflops"])
        return b
    t = j["times"]
    outside = (t["search_s"] + t["model_s"] + t["database_s"]) / t["total_s"] * 100
    print(f"  {name:<28}" + "".join(f" {n:>5}: {best_at(n):6.1f}" for n in marks) +
          f"   wall {t['total_s'] / 60:4.1f} min, {outside:4.1f}% outside")
for w in ["GMM-4", "C2D-3"]:
    evo, rep = runs.get(f"{w}-evolutionary"), runs.get(f"{w}-replay-trace")
    if not evo or not rep:
        continue
    target = rep["best_gflops"]
    reached = next((h["trials"] for h in evo["history"] if h["best_gflops"] >= target), None)
    print(f"  {w}: evolutionary reaches replay-trace's best ({target:.1f} GFLOP/s at {rep['trials']} trials) after "
          + (f"{reached} trials" if reached else "never"))
PY
