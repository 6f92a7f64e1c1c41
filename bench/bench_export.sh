#!/usr/bin/env bash
# An exported GMM-4 against the same program inside Tyche, in one run: `tyche export` of a hand
# trace (examples/traces/gmm_1024.py, or gmm_1024_avx2.py without AVX-512) linked by cc into a
# timing program (bench/export_timing.c), and `tyche run` of the same trace, timed alike (batches
# of 100 ms, median of 10); five rounds interleaved, the median of each side and their ratio.
# The target: the exported kernel within 10 % of Tyche's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TYCHE_BUILD_DIR:-$root/build-bench}"
if [[ ! -x "$build/tools/tyche" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target tyche >/dev/null
tyche="$build/tools/tyche"
vector_bits="$("$tyche" cpu | awk '/^vector bits:/ {print $3}')"
trace="$root/examples/traces/gmm_1024.py"
[[ "$vector_bits" -lt 512 ]] && trace="$root/examples/traces/gmm_1024_avx2.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$tyche" export GMM-4 --trace "$trace" --name gmm4 -o "$work" >/dev/null
cc -O2 -std=c11 -I "$work" "$root/bench/export_timing.c" -L "$work" -lgmm4 -lm -lpthread -o "$work/timing"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $("$tyche" cpu | sed -n 's/^cpu: //p; s/^llvm cpu: / llvm /p' | paste -sd,), $("$tyche" cpu | sed -n 's/^host threads: //p') threads"
echo "trace: ${trace#$root/}"
inside=() exported=()
for round in 1 2 3 4 5; do
  "$tyche" run GMM-4 --trace "$trace" --repeat 10 --json "$work/run.json" >/dev/null
  inside+=("$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["latency_s"])' "$work/run.json")")
  exported+=("$("$work/timing" 10)")
  awk -v r="$round" -v a="${inside[-1]}" -v b="${exported[-1]}" 'BEGIN { printf "round %d: inside Tyche %.3f ms, exported %.3f ms\n", r, a * 1e3, b * 1e3 }'
done
python3 - "${inside[*]}" "${exported[*]}" <<'PY'
import statistics, sys
inside = [float(x) for x in sys.argv[1].split()]
exported = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(inside), statistics.median(exported)
gflop = 2 * 1024 ** 3 / 1e9
print(f"GMM-4 inside Tyche: {a * 1e3:.3f} ms ({gflop / a:.1f} GFLOP/s), exported: {b * 1e3:.3f} ms ({gflop / b:.1f} GFLOP/s)")
print(f"exported / inside (time): {b / a:.3f}; within 10 %: {'yes' if abs(b / a - 1) <= 0.10 else 'NO'}")
PY
