#!/usr/bin/env bash
# The export example of docs/export.md, on small shapes: two kernels exported into one library from
# traces, examples/export built with CMake against it, run; its results are checked by itself.
#   export_example.sh TYCHE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tyche="$1" src="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
echo 'b = sch.get_block(name="row_exp")' > "$work/softmax.py"
"$tyche" export GMM-4 --scale-down --trace "$src/examples/traces/gmm_tiled.py" --name gmm --library kernels -o "$work/kernels"
"$tyche" export SFM-1 --scale-down --trace "$work/softmax.py" --name softmax --library kernels -o "$work/kernels"
cmake -S "$src/examples/export" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DTYCHE_EXPORT_DIR="$work/kernels" > "$work/cmake.log"
cmake --build "$work/build" > "$work/build.log"
"$work/build/demo"
rm -rf "$work"
