#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer
# (issue 60): builds tests/fuzz/import_fuzzer.cc and the libraries below tyche_graph with clang into
# build-fuzz (a project of its own, tests/fuzz/CMakeLists.txt, without LLVM), seeds a corpus with
# small valid models (tests/fuzz/fuzz_inputs.py --write-corpus), and runs for SECONDS (default 60)
# with a 1 GiB memory limit. Each crash, leak, out-of-memory and timeout is saved under
# build-fuzz/artifacts/ and replayed once for its stack; the script exits 1 if there was any.
#
# Usage: scripts/fuzz_importer.sh [SECONDS] [extra libFuzzer flags...]
# Environment: FUZZ_JOBS (build jobs, default 1: the build is niced and serial so it can run beside
# other work), FUZZ_WORKERS (libFuzzer fork-mode workers, default 1), FUZZ_STOP_ON_CRASH=1 (stop at
# the first finding instead of going on in fork mode), CXX_FUZZ (default clang++-14, else clang++),
# TYCHE_FUZZ_PIPELINE=1 (a model that imports also goes through the rest of `tyche import`: batch
# norms folded, NHWC, tasks extracted).
# The corpus grows in build-fuzz/corpus and is kept between runs (an hour: scripts/fuzz_importer.sh 3600).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${1:-60}
shift || true
build=$root/build-fuzz
cxx=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}
cc=${cxx/clang++/clang}

if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
    "$cxx" -x c++ -fsanitize=fuzzer,address,undefined - -o /dev/null 2>/dev/null; then
  echo "fuzz_importer: $cxx cannot link -fsanitize=fuzzer (install clang and libclang-rt-dev)" >&2
  exit 2
fi

cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
nice -n 10 cmake --build "$build" -j"${FUZZ_JOBS:-1}" --target import_fuzzer

mkdir -p "$build/corpus" "$build/artifacts" "$build/run"
python3 tests/fuzz/fuzz_inputs.py --write-corpus "$build/seeds" >/dev/null
before=$(ls "$build/artifacts" | { grep -v '\.txt$' || true; } | wc -l)

mode=(-fork="${FUZZ_WORKERS:-1}" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
[[ "${FUZZ_STOP_ON_CRASH:-0}" == 1 ]] && mode=()
export TYCHE_FUZZ_DIR="$build/run/fuzz-dir"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "fuzz_importer: ${seconds} s, corpus $build/corpus (seeds $build/seeds), artifacts $build/artifacts"
(cd "$build/run" && "$build/import_fuzzer" "${mode[@]}" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 \
  -max_len=65536 -dict="$root/tests/fuzz/onnx.dict" -artifact_prefix="$build/artifacts/" -print_final_stats=1 "$@" \
  "$build/corpus" "$build/seeds" 2>&1 | tee "$build/fuzz.log" | grep -E "^#[0-9]+ +(INITED|DONE|pulse)|ERROR|SUMMARY|Test unit written|stat::" || true)

# Each finding of this run replayed alone (its report saved beside it as NAME.txt), then grouped by
# the top of its stack: one line per distinct bug, with how many inputs hit it and one of them.
after=$(ls "$build/artifacts" | { grep -v '\.txt$' || true; } | wc -l)
found=$((after - before))
echo "fuzz_importer: corpus $(ls "$build/corpus" | wc -l) inputs; $found new findings ($after in $build/artifacts)"
new=()
for f in $(ls -t "$build/artifacts" | grep -v '\.txt$' | head -n "$found"); do
  (cd "$build/run" && timeout 60 "$build/import_fuzzer" -rss_limit_mb=1024 -timeout=10 "$build/artifacts/$f" \
    >"$build/artifacts/$f.txt" 2>&1 || true)
  new+=("$build/artifacts/$f")
done
[[ $found -eq 0 ]] && exit 0
python3 - "${new[@]}" <<'PY'
import re, sys
groups = {}
for art in sys.argv[1:]:
    text = open(art + ".txt", errors="replace").read()
    kind = next((l.strip() for l in text.splitlines() if re.search(
        r"runtime error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|==FUZZ==|out-of-memory|terminate called", l)),
        "no report (did not reproduce alone)")
    kind = re.sub(r"0x[0-9a-f]+|\b\d{3,}\b", "N", kind)
    frames = [m.group(1) + " " + m.group(2).split("/work/")[-1].split("/src/")[-1]
              for m in re.finditer(r"^\s+#\d+ 0x[0-9a-f]+ in (\S+?)(?:\(.*?\))?(?: const)? (\S+:\d+)", text, re.M)
              if "sanitizer" not in m.group(2) and "libFuzzer" not in m.group(2) and "/usr/" not in m.group(2)][:3]
    key = (re.sub(r"\b\d+\b", "N", kind.split("runtime error:")[-1]), tuple(frames[:1]))
    groups.setdefault(key, []).append((art, kind, frames))
print(f"fuzz_importer: {len(groups)} distinct findings")
for (_, _), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
    art, kind, frames = items[0]
    print(f"- {len(items)} input(s): {kind[:200]}")
    for fr in frames:
        print(f"    at {fr}")
    print(f"    e.g. {art} (report: {art}.txt)")
PY
exit 1
