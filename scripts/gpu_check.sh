#!/usr/bin/env bash
# Issue 36's GPU check, on a machine with an NVIDIA GPU and no LLVM (the device tool's CUDA image:
# nvcc, NVRTC, PyTorch), within GPU_CHECK_MINUTES (default 9):
#   1. the GPU-only Tyche: .gpu-bundle/ made here by scripts/gpu_bundle.sh (carried along), or
#      built on the spot where CMake finds its dependencies;
#   2. every family's preset at its smallest size tuned for a few trials on the GPU, and the best
#      program run and checked against the reference (families.txt), and 24 samples of a float16
#      GMM (both tensor-core families, pipelined or not) run and checked;
#   3. the targets (bench/gpu_baselines.py: a 4096^3 float16 GMM, GMM-4, SFM-4, NRM-4) tuned up to
#      500 trials each, resuming the database carried back as gpu_db.tar.gz, then timed against
#      PyTorch in the same run, two rounds in alternating order, repeats pooled.
# Writes $OUT/gpu_figures.md (the figures, ratios with bootstrap intervals), every measurement's
# JSON, and $OUT/gpu_db.tar.gz (carry it back to go on tuning).
#
# GPU_CHECK_TARGET=opencl runs steps 2 and 3 on an OpenCL device (PoCL here; TYCHE=build-dev/tools/tyche
# for a full build's) without PyTorch or the 4096^3 GMM: the script's own check without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu_check_out}"
mkdir -p "$out"
minutes="${GPU_CHECK_MINUTES:-9}"
deadline=$(( $(date +%s) + minutes * 60 ))
left() { echo $(( deadline - $(date +%s) )); }
log() { echo "[gpu_check $(date +%H:%M:%S), $(left) s left] $*" | tee -a "$out/log.txt"; }

# --- 1. Tyche ---
if [ -n "${TYCHE:-}" ]; then
  tyche="$TYCHE"
elif [ -x .gpu-bundle/bin/tyche ]; then
  tyche=.gpu-bundle/bin/tyche
  export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "bundle built for glibc $(cat .gpu-bundle/GLIBC 2>/dev/null); this machine's: $(ldd --version | head -1)"
  # The machine's C++ runtime unless it is older than the build's.
  "$tyche" workloads >/dev/null 2>&1 || export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/.gpu-bundle/lib-cxx"
  "$tyche" workloads >/dev/null || { log "the bundle does not run here (see above)"; exit 1; }
  [ -f .gpu-bundle/share/tyche/cost_model.json ] && export TYCHE_COST_MODEL="$PWD/.gpu-bundle/share/tyche/cost_model.json"
else
  log "no .gpu-bundle: building the GPU-only Tyche here"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WITH_LLVM=OFF -DTYCHE_BUILD_TESTS=OFF >/dev/null
  cmake --build build-gpu --target tyche tyche-worker tyche_default_cost_model
  tyche=build-gpu/tools/tyche
fi
export TYCHE="$tyche"
if [ "${GPU_CHECK_TARGET:-cuda}" = opencl ]; then
  target=opencl
else
  # NVRTC from the toolkit or from PyTorch's wheels, wherever the image keeps it.
  for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(*[os.path.join(p, q, "lib") for p in nvidia.__path__ for q in ("cu13", "cuda_nvrtc")])' 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
  done
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)"
  target="cuda -arch=sm_${cap}"
fi
log "tyche: $tyche; target: $target"

db=gpu_db
if [ -f gpu_db.tar.gz ]; then tar xzf gpu_db.tar.gz; log "resuming $(wc -l < $db/records.jsonl) records"; fi
mkdir -p "$db"
save_db() { tar czf "$out/gpu_db.tar.gz" "$db"; }
trap save_db EXIT

# --- 2. every family, tuned briefly and checked ---
: > "$out/families.txt"
for w in GMM-1 C1D-1 C2D-1 C3D-1 GRP-3 DIL-2 DEP-1 T2D-2 CAP-1 NRM-1 SFM-1 CBR-1 TBG-1 DENSE_RELU-1 GMM-1-F16; do
  [ "$(left)" -gt 300 ] || { log "time is short: families from $w on skipped"; break; }
  timeout -s INT 60 "$tyche" tune "$w" --target "$target" --trials 8 --db "$db" > "$out/tune_$w.txt" 2>&1 || true
  if "$tyche" run "$w" --target "$target" --db "$db" --repeat 5 >> "$out/families.txt" 2>&1; then :; else
    echo "$w: not checked (see tune_$w.txt)" >> "$out/families.txt"
  fi
done
log "families: $(grep -c correct "$out/families.txt" || true) checked correct"

# --- 2b. both tensor-core families (mma.sync with ldmatrix, WMMA; cp.async pipelines), sampled,
# run and checked on the GPU: their instructions never ran before a GPU did ---
if [ "$target" != opencl ] && [ "$(left)" -gt 360 ]; then
  timeout -s INT 120 "$tyche" sample-measure GMM-1-F16 --target "$target" --samples 24 \
    --records "$out/tensor_core_samples.jsonl" > "$out/tensor_core_samples.txt" 2>&1 || true
  python3 - "$out/tensor_core_samples.jsonl" >> "$out/families.txt" <<'PY' || true
import json, sys
counts = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    trace = json.dumps(r["trace"])
    family = "mma.sync" if "cuda_mma_" in trace else "WMMA" if "cuda_wmma_" in trace else "no tensor cores"
    sampled = {i["outputs"][0]: i["args"]["candidates"][i["decision"]]
               for i in r["trace"]["instructions"] if i["kind"] == "sample_categorical"}
    stages = [sampled.get(v["rv"], 1) if isinstance(v, dict) else v
              for i in r["trace"]["instructions"] if i["kind"] == "annotate" and i["args"]["ann_key"] == "software_pipeline_stages"
              for v in [i["args"]["ann_val"]]]
    family += f", {max(stages + [1])} stage(s)"
    c = counts.setdefault(family, [0, 0, 0])
    c[0] += 1
    c[1] += not r.get("error")
    c[2] += "wrong result" in (r.get("error") or "")
for family, (n, ok, wrong) in sorted(counts.items()):
    print(f"GMM-1-F16 samples, {family}: {n} measured, {ok} correct, {wrong} wrong results")
PY
  log "tensor-core samples: $(grep -c 'GMM-1-F16 samples' "$out/families.txt" || true) kinds checked"
fi

# --- 3. the targets ---
args_of() {  # the workload arguments of a target
  python3 - "$1" <<'PY'
import sys
sys.path.insert(0, "bench")
from gpu_baselines import TARGETS
w, extents, dtypes = TARGETS[sys.argv[1]]
print(w, *([f"--extents={extents}", f"--dtypes={dtypes}"] if extents else []), sep="\n")
PY
}
targets=(GMM-4096-F16 GMM-4 SFM-4 NRM-4)
repeat=20
if [ "$target" = opencl ]; then targets=(GMM-4 SFM-4 NRM-4) repeat=3; fi  # PoCL runs on the CPU: no 4096^3
for t in "${targets[@]}"; do
  mapfile -t a < <(args_of "$t")
  done_trials=$(cat "$db/trials_$t" 2>/dev/null || echo 0)  # measured in earlier checks
  budget=$(( ($(left) - 150) / ${#targets[@]} ))
  if [ "$budget" -gt 20 ] && [ "$done_trials" -lt 500 ]; then
    log "$t: tuning for up to $budget s ($done_trials trials so far)"
    timeout -s INT "$budget" "$tyche" tune "${a[@]}" --target "$target" --trials $(( 500 - done_trials )) --db "$db" \
      > "$out/tune_$t.txt" 2>&1 || true
    now=$(grep -oE ': [0-9]+ trials \(' "$out/tune_$t.txt" | grep -oE '[0-9]+' | tail -1 || true)
    echo $(( done_trials + ${now:-0} )) > "$db/trials_$t"
  fi
  cat "$db/trials_$t" 2>/dev/null > "$out/trials_$t.txt" || true
done
for round in 1 2; do  # alternating order: PyTorch first, then Tyche first
  if [ "$round" = 1 ] && [ "$target" != opencl ]; then python3 bench/gpu_baselines.py time --json "$out/torch_round$round.json" "${targets[@]}"; fi
  for t in "${targets[@]}"; do
    mapfile -t a < <(args_of "$t")
    "$tyche" run "${a[@]}" --target "$target" --db "$db" --repeat "$repeat" --json "$out/tyche_${t}_round$round.json" >> "$out/runs.txt" 2>&1 ||
      log "$t: no tuned program ran (see runs.txt)"
  done
  if [ "$round" = 2 ] && [ "$target" != opencl ]; then python3 bench/gpu_baselines.py time --json "$out/torch_round$round.json" "${targets[@]}"; fi
done
python3 bench/gpu_baselines.py report "$out"
