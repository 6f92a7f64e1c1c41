#!/usr/bin/env bash
# The format check: C and C++ files as clang-format-14 writes them (.clang-format: Google style,
# 100 columns). Lists every file that differs and exits 1; exit 0 when all are clean.
#   bash scripts/check_format.sh               # every tracked file (CI: the tree is kept clean)
#   bash scripts/check_format.sh --changed REV # only the files changed since REV (and uncommitted)
#   bash scripts/check_format.sh --fix [...]   # rewrite them in place instead
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fix) fix=1 ;;
    --changed) base="${2:?--changed takes a revision}"; shift ;;
    *) echo "check_format: unknown argument '$1' (expected --fix or --changed REV)" >&2; exit 2 ;;
  esac
  shift
done
command -v clang-format-14 >/dev/null || bash scripts/install_deps.sh clang-format-14
patterns=('*.h' '*.cc' '*.c' '*.cpp' '*.hpp')
if [ -n "$base" ]; then
  git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "check_format: '$base' is not a revision" >&2; exit 2; }
  mapfile -t files < <({ git diff --name-only --diff-filter=d "$base" -- "${patterns[@]}"; git ls-files --others --exclude-standard -- "${patterns[@]}"; } | sort -u)
else
  mapfile -t files < <(git ls-files -- "${patterns[@]}")
fi
[ ${#files[@]} -eq 0 ] && { echo "check_format: no files to check"; exit 0; }
if [ "$fix" -eq 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 20 clang-format-14 -i
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue  # deleted in the working tree
  clang-format-14 "$f" | cmp -s - "$f" || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from clang-format-14 (bash scripts/check_format.sh --fix)"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted as clang-format-14 writes them"
