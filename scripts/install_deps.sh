#!/usr/bin/env bash
# Installs the Debian packages Tyche builds with (lld links it; libonnx and protobuf read ONNX models; oneDNN and OpenBLAS: the benchmark suite's
# baselines, built and checked with the tests; the OpenCL ICD loader and PoCL, which runs OpenCL C
# on the CPU for the GPU code's tests, and OpenCL's headers, which an exported OpenCL host file's
# test compiles with), and any named on the command line (the clang
# warning check adds clang-14); does nothing when they are all present.
set -euo pipefail
packages=(cmake ninja-build g++ lld nlohmann-json3-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev llvm-19-dev zlib1g-dev libxgboost-dev
  ocl-icd-libopencl1 pocl-opencl-icd opencl-c-headers ocl-icd-opencl-dev
  libdnnl-dev libopenblas-dev libonnx-dev libprotobuf-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
