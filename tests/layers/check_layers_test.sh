#!/usr/bin/env bash
# scripts/check_layers: the tree passes; an include that goes up, one that goes sideways, and a
# folder the table does not list are each refused, naming the file and line.
set -euo pipefail
source_dir="$1"
check="$source_dir/scripts/check_layers"
out="$("$check" --root "$source_dir")"
echo "$out" | grep -q "follow the table of docs/architecture.md"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs" "$work/src/ir" "$work/src/tune/space" "$work/src/tune/core"
cp "$source_dir/docs/architecture.md" "$work/docs/"
printf '#pragma once\n#include "support/error.h"\n#include "tune/core/context.h"\n' > "$work/src/ir/up.h"
printf '#include "codegen/llvm/llvm_codegen.h"\n' > "$work/src/tune/space/sideways.cc"
printf '#include "schedule/schedule.h"\n#include "ir/expr.h"\n' > "$work/src/tune/core/fine.cc"
set +e
out="$("$check" --root "$work" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "expected exit 1, got $rc: $out"; exit 1; }
echo "$out" | grep -q 'src/ir/up.h:3: #include "tune/core/context.h" goes up or sideways: ir may include support'
echo "$out" | grep -q 'src/tune/space/sideways.cc:1: #include "codegen/llvm/llvm_codegen.h" goes up or sideways'
if echo "$out" | grep -q 'fine.cc'; then echo "a permitted include was refused: $out"; exit 1; fi

mkdir -p "$work/src/unlisted"
printf '#include "ir/expr.h"\n' > "$work/src/unlisted/import.cc"
set +e
out="$("$check" --root "$work" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "expected exit 2 for a folder without a row, got $rc: $out"; exit 1; }
echo "$out" | grep -q "src/unlisted/import.cc: folder 'unlisted' has no row"
echo "check_layers refuses what it should"
