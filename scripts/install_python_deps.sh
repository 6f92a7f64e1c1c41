#!/usr/bin/env bash
# Installs what the Python package builds and tests with (nanobind, numpy, pytest, scikit-build-core
# for `pip install .`, matplotlib for the benchmark suite's plots, and onnx (1.23.2: the ONNX
# conformance expectations are its cases) and onnxruntime for the ONNX importer's tests and scripts/make_models.py, optuna and scikit-learn for the example
# strategies and cost models, ray for measuring on a cluster, and NVIDIA's cuobjdump, which the
# tests read a tensor-core kernel's machine code with, and the nvdisasm it runs) into the python3 on PATH, and
# Python's headers if they are missing; does nothing when they are all present.
set -euo pipefail
python3 - <<'PY' 2>/dev/null && exit 0
import os, sys, sysconfig
import matplotlib, nanobind, numpy, onnx, onnxruntime, optuna, pytest, ray, scikit_build_core, sklearn  # noqa: F401
assert sys.version_info >= (3, 11) and tuple(int(x) for x in numpy.__version__.split(".")[:2]) >= (1, 26)
assert onnx.__version__ == "1.23.2"  # the conformance expectations and the op schema table are its
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
import nvidia  # noqa: E402
assert any(os.path.exists(os.path.join(p, "cu13", "bin", "cuobjdump")) and os.path.exists(os.path.join(p, "cu13", "bin", "nvdisasm"))
           for p in nvidia.__path__)
PY
if ! python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null; then
  bash "$(dirname "$0")/install_deps.sh" python3-dev
fi
packages=(nanobind "numpy>=1.26" pytest scikit-build-core matplotlib onnx==1.23.2 onnxruntime optuna scikit-learn ray nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)
echo "installing: ${packages[*]} (pip)"
python3 -m pip install --quiet --disable-pip-version-check "${packages[@]}" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "${packages[@]}"
