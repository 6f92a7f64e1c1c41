"""tyche.export: a scheduled program as a header and a static library that a C program links
without Tyche (checked against the reference, on misaligned buffers), as C source, and its
refusals as InputError."""

import subprocess

import numpy as np
import pytest

import tyche

# The buffers are deliberately misaligned (4 bytes past TYCHE_ALIGNMENT): the kernel copies them.
DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "mm.h"
static float* misaligned(size_t bytes) {
  char* p = malloc(bytes + TYCHE_ALIGNMENT + 4);
  if (!p) exit(3);
  return (float*)(p + (TYCHE_ALIGNMENT - (uintptr_t)p % TYCHE_ALIGNMENT) + 4);
}
int main(int argc, char** argv) {
  float* x = misaligned(mm_X_BYTES);
  float* y = misaligned(mm_Y_BYTES);
  float* z = misaligned(mm_Z_BYTES);
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, 1, mm_X_BYTES, f) != mm_X_BYTES || fread(y, 1, mm_Y_BYTES, f) != mm_Y_BYTES) return 3;
  fclose(f);
  int status = mm(x, y, z);
  if (status != TYCHE_OK) { printf("%s\n", tyche_error_string(status)); return 1; }
  fwrite(z, 1, mm_Z_BYTES, stdout);
  return argc == 2 ? 0 : 2;
}
"""


def scheduled_gmm():
    w = tyche.workload("GMM-1", scale_down=True)
    s = tyche.Schedule(w)
    z = s.get_block("Z")
    loops = s.get_loops(z)
    s.parallel(loops[1])
    return w, s


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_exported_gmm_runs_in_a_c_program(tmp_path, target):
    w, s = scheduled_gmm()
    files = tyche.export(s, "mm", tmp_path, target=target)
    assert str(tmp_path / "mm.h") in files
    x, y = w.inputs(seed=3)
    (tmp_path / "in.bin").write_bytes(x.tobytes() + y.tobytes())
    (tmp_path / "main.c").write_text(DRIVER)
    sources = ["-L", str(tmp_path), "-lmm"] if target == "llvm" else [str(tmp_path / "mm.c"), str(tmp_path / "tyche_rt1_runtime.c")]
    subprocess.run(["cc", "-std=c11", "-O1", "-I", str(tmp_path), str(tmp_path / "main.c"), *sources, "-lm", "-lpthread",
                    "-o", str(tmp_path / "main")], check=True)
    out = subprocess.run([str(tmp_path / "main"), str(tmp_path / "in.bin")], check=True, capture_output=True).stdout
    (want,) = w.reference(x, y)
    got = np.frombuffer(out, dtype=np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_bad_exports_raise_input_errors(tmp_path):
    w, s = scheduled_gmm()
    with pytest.raises(tyche.InputError, match="'my-mm' is not a C identifier"):
        tyche.export(s, "my-mm", tmp_path)
    with pytest.raises(tyche.InputError, match="unknown CPU 'pentium-9000'"):
        tyche.export(s, "mm", tmp_path, cpu="pentium-9000")
    with pytest.raises(tyche.InputError, match="threads takes 1"):
        tyche.export(s, "mm", tmp_path, threads=4)
    (tmp_path / "file").write_text("x")
    with pytest.raises(tyche.InputError, match="cannot create the directory"):
        tyche.export(s, "mm", tmp_path / "file" / "sub")
    assert not (tmp_path / "mm.h").exists()
