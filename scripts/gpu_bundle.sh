#!/usr/bin/env bash
# Prepares, here, what scripts/gpu_check.sh runs on a GPU machine that has neither LLVM nor a
# package registry (the device tool's CUDA image): the GPU-only Tyche (TYCHE_WITH_LLVM=OFF) and
# the shared libraries it needs beyond the C library, in .gpu-bundle/ (ignored by git; the device
# tool's `carry` takes it along). Prints the newest glibc version the bundle needs: the GPU
# machine's must be at least that. The C++ runtime (libstdc++, libgcc_s) goes to
# .gpu-bundle/lib-cxx, used there only where the machine's own is older than the build's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYCHE_WITH_LLVM=OFF -DTYCHE_BUILD_TESTS=OFF >/dev/null
cmake --build build-gpu --target tyche tyche-worker tyche_default_cost_model
rm -rf .gpu-bundle
mkdir -p .gpu-bundle/bin .gpu-bundle/lib .gpu-bundle/lib-cxx .gpu-bundle/share
cp build-gpu/tools/tyche build-gpu/tools/tyche-worker .gpu-bundle/bin/
cp -r build-gpu/share/tyche .gpu-bundle/share/
# Every library ldd resolves, but the C library's own (libc, libm, the loader...): those stay
# the GPU machine's.
for lib in $(ldd build-gpu/tools/tyche build-gpu/tools/tyche-worker | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) continue ;;
    libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" .gpu-bundle/lib-cxx/; continue ;;
  esac
  cp -L "$lib" .gpu-bundle/lib/
done
newest() { objdump -T "$@" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1; }
glibc="$(newest .gpu-bundle/bin/* .gpu-bundle/lib/*)"
echo "$glibc" > .gpu-bundle/GLIBC
echo "gpu bundle: $(du -sh .gpu-bundle | cut -f1) in .gpu-bundle (needs ${glibc:-no versioned glibc}; its C++ runtime $(newest .gpu-bundle/lib-cxx/*))"
