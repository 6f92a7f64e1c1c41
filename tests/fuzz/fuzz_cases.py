"""The cases of tests/fuzz/fuzz_inputs.py (issue 60): what a case is, what it expects, and the
generators of every case (external data, crafted sizes, .npy files, formulas and extents, flags,
damaged databases, the Python API and random mutations), in the order the run lists them.

Cases is a mixin of fuzz_inputs.py's Fuzz, which gives it args, tyche, work, rng, secret, python,
setup_failures and cases; fuzz_inputs.py runs and judges what these methods append to self.cases.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fuzz_models import Models

# 17 * WRAP17 = 16 + 15 * 2^64: a dimension that makes a shape's element count wrap to 16.
WRAP17 = 1085102592571150096
assert 17 * WRAP17 % (1 << 64) == 16

REFUSE = frozenset({1, 2})
VALID = frozenset({0})
ANY = frozenset({0, 1, 2})
# The Python child's exit codes.
PY_OK, PY_TYCHE_ERROR, PY_OTHER, PY_IMPORT, PY_MULTILINE = 0, 3, 4, 5, 6
PY_REFUSE = frozenset({PY_TYCHE_ERROR})
PY_ANY = frozenset({PY_OK, PY_TYCHE_ERROR})

# The cases that also go through tyche.onnx.compile (all go through tyche.onnx.tasks): those of
# the issue, and a valid one.
PY_COMPILE = {"ext-valid", "ext-etc-passwd", "ext-dotdot-etc-passwd", "ext-dotdot-sentinel", "ext-abs-sentinel",
              "ext-symlink-out", "ext-proc-environ", "ext-dev-zero", "ext-dev-urandom", "ext-dev-stdin",
              "ext-length-3GiB", "size-wrap-gather", "size-wrap-slice", "size-input-wrap", "size-2p31-no-data"}

PY_CHILD = r'''
import sys
try:
    import numpy as np
    import tyche, tyche.onnx
except Exception as e:
    print("cannot import tyche: %s" % e, file=sys.stderr)
    sys.exit(5)
code = sys.argv[1]
try:
    exec(code, {"tyche": tyche, "np": np})
except tyche.TycheError as e:
    msg = str(e)
    print("%s: %s" % (type(e).__name__, msg.replace("\n", "\\n")), file=sys.stderr)
    sys.exit(3 if "\n" not in msg.strip() else 6)
except BaseException as e:
    import traceback
    traceback.print_exc()
    sys.exit(4)
print("ok")
'''


@dataclass
class Case:
    name: str
    argv: list[str]
    expect: frozenset
    kind: str = "cli"  # cli | python
    cwd: str | None = None
    env: dict = field(default_factory=dict)
    mentions: list[str] = field(default_factory=list)  # words a refusal must name
    grep_dirs: list[str] = field(default_factory=list)  # folders that must not hold the secret
    after: object = None  # a callable(case) -> list of problems, run after the child
    group: str = ""
    time_limit: float | None = None  # seconds; None: the refusal limit (TYCHE_FUZZ_TIME_LIMIT)


class Cases(Models):
    # ---- files ----

    def case_dir(self, name: str) -> Path:
        d = self.work / "cases" / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def model_folder(self, name: str) -> tuple[Path, Path]:
        """CASE/model/ (the model's folder) with weights.bin and data.bin (512 bytes) in it and
        CASE/sentinel.txt beside it; the secret, padded to 64 bytes, is the sentinel's content."""
        root = self.case_dir(name)
        folder = root / "model"
        folder.mkdir(exist_ok=True)
        (root / "sentinel.txt").write_bytes(self.secret.encode().ljust(64, b"#"))
        (folder / "weights.bin").write_bytes(np.arange(64, dtype=np.float32).tobytes() * 4)  # 1024 bytes
        (folder / "data.bin").write_bytes(np.linspace(-1, 1, 128, dtype=np.float32).tobytes())  # 512 bytes
        return root, folder

    def cli(self, name, args, expect, **kw) -> Case:
        c = Case(name, [self.tyche, *args], expect, **kw)
        self.cases.append(c)
        return c

    def py(self, name, code, expect, **kw) -> Case:
        c = Case(name, [sys.executable, "-c", PY_CHILD, textwrap.dedent(code)], expect, kind="python", **kw)
        self.cases.append(c)
        return c

    # ---- the cases ----

    def model_cases(self, name, path, expect, mentions=(), run_model=False, export=True, python=True, group="onnx",
                    py_expect=None, cwd=None):
        """`tyche import` (and run-model, export-model) on a model, tyche.onnx.tasks/compile on it."""
        mentions = list(mentions)
        self.cli(f"{name}/import", ["import", path], expect, mentions=mentions, group=group, cwd=cwd)
        if run_model:
            self.cli(f"{name}/run-model", ["run-model", path, "--repeat", "1"], expect, mentions=mentions, group=group, cwd=cwd)
        if export:
            out = self.case_dir(name) / "export"
            self.cli(f"{name}/export-model", ["export-model", path, "--name", "leak", "-o", str(out)], expect,
                     mentions=mentions, grep_dirs=[str(out)], group=group, cwd=cwd)
        if python and self.python:
            pe = py_expect or (PY_REFUSE if expect == REFUSE else PY_ANY if expect == ANY else frozenset({PY_OK}))
            self.py(f"{name}/py-tasks", f"tyche.onnx.tasks({path!r})", pe, mentions=mentions, group=group, cwd=cwd)
            if name in PY_COMPILE:
                self.py(f"{name}/py-compile", f"m = tyche.onnx.compile({path!r}, threads=1)", pe, mentions=mentions,
                        group=group, cwd=cwd)

    def external_cases(self):
        # Valid external data inside the folder (the confinement must not refuse these).
        root, folder = self.model_folder("ext-valid")
        (folder / "sub").mkdir(exist_ok=True)
        shutil.copy(folder / "weights.bin", folder / "sub" / "w.bin")
        self.model_cases("ext-valid", self.save(folder, self.external([("location", "weights.bin"), ("length", 64)])), VALID,
                         run_model=True)
        self.cli("ext-valid-offset/import", ["import", self.save(folder, self.external(
            [("location", "weights.bin"), ("offset", 128), ("length", 64)]), "offset.onnx")], VALID, group="onnx")
        self.cli("ext-valid-subfolder/import", ["import", self.save(folder, self.external(
            [("location", "sub/w.bin"), ("offset", 0), ("length", 64)]), "sub.onnx")], VALID, group="onnx")
        self.cli("ext-valid-no-length/import", ["import", self.save(folder, self.external(
            [("location", "data.bin"), ("offset", 448)]), "nolen.onnx")], VALID, group="onnx")

        passwd = Path("/etc/passwd").stat().st_size // 4 * 4 if Path("/etc/passwd").exists() else 512
        hostile = [
            # (name, key-value pairs, dims, stdin-sensitive)
            ("ext-etc-passwd", [("location", "/etc/passwd"), ("length", min(512, passwd))], (min(512, passwd) // 4,)),
            ("ext-dotdot-etc-passwd", [("location", "../../../../../../../../etc/passwd"), ("length", min(512, passwd))],
             (min(512, passwd) // 4,)),
            ("ext-dotdot-sentinel", [("location", "../sentinel.txt"), ("length", 64)], (16,)),
            ("ext-dotdot-inner", [("location", "sub/../../sentinel.txt"), ("length", 64)], (16,)),
            ("ext-dotdot-noop", [("location", "sub/../weights.bin"), ("length", 64)], (16,)),
            ("ext-abs-sentinel", [("location", "{root}/sentinel.txt"), ("length", 64)], (16,)),
            ("ext-abs-inside", [("location", "{folder}/weights.bin"), ("length", 64)], (16,)),
            ("ext-symlink-out", [("location", "link.bin"), ("length", 64)], (16,)),
            ("ext-symlink-abs", [("location", "abslink.bin"), ("length", 64)], (16,)),
            ("ext-symlink-passwd", [("location", "passwd.bin"), ("length", min(512, passwd))], (min(512, passwd) // 4,)),
            ("ext-symlink-dir", [("location", "up/sentinel.txt"), ("length", 64)], (16,)),
            ("ext-proc-environ", [("location", "/proc/self/environ"), ("length", 64)], (16,)),
            ("ext-dev-zero", [("location", "/dev/zero"), ("length", 64)], (16,)),
            ("ext-dev-zero-huge", [("location", "/dev/zero"), ("length", 1 << 33)], (1 << 31,)),
            ("ext-dev-urandom", [("location", "/dev/urandom"), ("length", 64)], (16,)),
            ("ext-dev-stdin", [("location", "/dev/stdin"), ("length", 64)], (16,)),
            ("ext-fifo", [("location", "fifo.bin"), ("length", 64)], (16,)),
            ("ext-directory", [("location", "sub"), ("length", 64)], (16,)),
            ("ext-dot", [("location", "."), ("length", 64)], (16,)),
            ("ext-empty-location", [("location", ""), ("length", 64)], (16,)),
            ("ext-no-location", [("length", 64)], (16,)),
            ("ext-missing-file", [("location", "nothere.bin"), ("length", 64)], (16,)),
            ("ext-offset-abc", [("location", "data.bin"), ("offset", "abc"), ("length", 64)], (16,)),
            ("ext-length-abc", [("location", "data.bin"), ("length", "12abc")], (16,)),
            ("ext-length-23-digits", [("location", "data.bin"), ("length", "12345678901234567890123")], (16,)),
            ("ext-offset-23-digits", [("location", "data.bin"), ("offset", "99999999999999999999999"), ("length", 64)], (16,)),
            ("ext-offset-negative", [("location", "data.bin"), ("offset", -64), ("length", 64)], (16,)),
            ("ext-length-negative", [("location", "data.bin"), ("length", -64)], (16,)),
            ("ext-length-3GiB", [("location", "data.bin"), ("length", 3221225472)], (805306368,)),
            ("ext-length-3GiB-small-tensor", [("location", "data.bin"), ("length", 3221225472)], (16,)),
            ("ext-offset-past-end", [("location", "data.bin"), ("offset", 4096), ("length", 64)], (16,)),
            ("ext-offset-plus-length-past-end", [("location", "data.bin"), ("offset", 480), ("length", 64)], (16,)),
            ("ext-offset-wraps", [("location", "data.bin"), ("offset", (1 << 64) - 32), ("length", 64)], (16,)),
            ("ext-offset-int64-max", [("location", "data.bin"), ("offset", (1 << 63) - 1), ("length", 64)], (16,)),
            ("ext-length-mismatch", [("location", "data.bin"), ("length", 60)], (16,)),
            ("ext-huge-dims", [("location", "data.bin"), ("length", 512)], (1 << 30, 1 << 30, 4)),
            ("ext-duplicate-location", [("location", "weights.bin"), ("location", "../sentinel.txt"), ("length", 64)], (16,)),
            ("ext-nul-in-location", [("location", "weights.bin\0../../sentinel.txt"), ("length", 64)], (16,)),
        ]
        for name, entries, dims in hostile:
            root, folder = self.model_folder(name)
            (folder / "sub").mkdir(exist_ok=True)
            for link, target in (("link.bin", "../sentinel.txt"), ("abslink.bin", str(root / "sentinel.txt")),
                                 ("passwd.bin", "/etc/passwd"), ("up", "..")):
                if not (folder / link).is_symlink():
                    os.symlink(target, folder / link)
            if name == "ext-fifo" and not (folder / "fifo.bin").exists():
                os.mkfifo(folder / "fifo.bin")
            entries = [(k, v.format(root=root, folder=folder) if isinstance(v, str) else v) for k, v in entries]
            path = self.save(folder, self.external(entries, dims))
            location = next((v for k, v in entries if k == "location"), "")
            expect = ANY if name in ("ext-duplicate-location", "ext-nul-in-location", "ext-dotdot-noop") else REFUSE
            # The refusal names the tensor and its location (Deliver 1); a shape that is refused
            # before the external data is read names the tensor.
            mentions = ["W_ext"]
            if expect == REFUSE and location and "\0" not in location and name not in ("ext-huge-dims",):
                mentions.append(location)
            self.model_cases(name, path, expect, mentions=mentions, run_model=name in ("ext-etc-passwd", "ext-dev-stdin"),
                             export=True, python=name not in ("ext-offset-wraps", "ext-offset-int64-max", "ext-dot"))

        # A ModelProto from Python: external data needs an explicit base folder, never the current
        # directory (which here holds the sentinel, and a valid weights.bin).
        if self.python:
            root, folder = self.model_folder("py-modelproto")
            shutil.copy(folder / "weights.bin", root / "weights.bin")
            for label, loc in (("sentinel", "sentinel.txt"), ("weights", "weights.bin")):
                p = self.save(folder, self.external([("location", loc), ("length", 64)]), f"{label}.onnx")
                # A ModelProto as tyche.onnx sees one (SerializeToString and graph), without
                # importing onnx in the child (seconds of the 5 s).
                code = f"""
                class Proto:
                    graph = type("G", (), {{"name": "fuzz"}})()
                    def SerializeToString(self):
                        return open({p!r}, "rb").read()
                m = Proto()
                tyche.onnx.compile(m, threads=1)
                """
                self.py(f"py-modelproto-cwd-{label}/compile", code, PY_REFUSE, cwd=str(root), group="python")
                self.py(f"py-modelproto-cwd-{label}/tasks", code.replace("compile(m, threads=1)", "tasks(m)"), PY_REFUSE,
                        cwd=str(root), group="python")
            # With base_dir= (the folder of its external data) a ModelProto reads its own folder and no
            # further.
            for label, loc, expect in (("valid", "weights.bin", frozenset({PY_OK})), ("dotdot", "../sentinel.txt", PY_REFUSE),
                                       ("symlink", "link.bin", PY_REFUSE), ("absolute", str(root / "sentinel.txt"), PY_REFUSE)):
                if not (folder / "link.bin").is_symlink():
                    os.symlink("../sentinel.txt", folder / "link.bin")
                p = self.save(folder, self.external([("location", loc), ("length", 64)]), f"base-{label}.onnx")
                code = f"""
                class Proto:
                    graph = type("G", (), {{"name": "fuzz"}})()
                    def SerializeToString(self):
                        return open({p!r}, "rb").read()
                tyche.onnx.tasks(Proto(), base_dir={str(folder)!r})
                """
                self.py(f"py-modelproto-base-dir-{label}/tasks", code, expect, group="python")

    def size_cases(self):
        G, S = 1 << 30, 1 << 31
        idx = numpy_helper.from_array(np.array([0], np.int64), "ids")
        st, en, ax = (numpy_helper.from_array(np.array([v], np.int64), n) for v, n in ((0, "st"), (1, "en"), (0, "ax")))
        cases = {
            # [2^30, 2^30, 4] float, empty raw_data: 2^64 bytes wrap to 0.
            "size-wrap-gather": self.model([helper.make_node("Gather", ["W_big", "ids"], ["y"], axis=0)], [],
                                           [self.vi("y", None)], [self.big_tensor("W_big", [G, G, 4]), idx]),
            "size-wrap-gather-input": self.model([helper.make_node("Gather", ["W_big", "i"], ["y"], axis=0)],
                                                 [self.vi("i", [1], TensorProto.INT64)], [self.vi("y", None)],
                                                 [self.big_tensor("W_big", [G, G, 4])]),
            "size-wrap-slice": self.model([helper.make_node("Slice", ["W_big", "st", "en", "ax"], ["y"])], [],
                                          [self.vi("y", None)], [self.big_tensor("W_big", [G, G, 4]), st, en, ax]),
            "size-wrap-int64-elements": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                                   [self.big_tensor("W_big", [1 << 32, 1 << 32])]),
            "size-2p31-no-data": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                            [self.big_tensor("W_big", [S], raw=None)]),
            "size-2p31-wrong-data": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                               [self.big_tensor("W_big", [S], raw=b"\0" * 16)]),
            "size-negative-dim": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                            [self.big_tensor("W_big", [-1, 4], raw=b"\0" * 16)]),
            "size-negative-dims-product": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                                     [self.big_tensor("W_big", [-4, -4], raw=b"\0" * 64)]),
            "size-float-data-short": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                                [self.typed_tensor("W_big", TensorProto.FLOAT, [1 << 20], [1.0, 2.0])]),
            "size-float-data-wrap": self.model([helper.make_node("Relu", ["W_big"], ["y"])], [], [self.vi("y", None)],
                                               [self.typed_tensor("W_big", TensorProto.FLOAT, [G, G, 4], [])]),
            "size-int64-data-wrap": self.model([helper.make_node("Reshape", ["x", "W_big"], ["y"])], [self.vi("x", [4])],
                                               [self.vi("y", None)],
                                               [self.typed_tensor("W_big", TensorProto.INT64, [G, G, 2], [])]),
            "size-reshape-to-huge": self.model([helper.make_node("Reshape", ["x", "shp"], ["y"])], [self.vi("x", [4])],
                                               [self.vi("y", None)],
                                               [numpy_helper.from_array(np.array([G, G, 4], np.int64), "shp")]),
            # Shapes whose product overflows int64 (the fuzzer's first finding: ops_shape.cc's Reshape).
            "size-reshape-overflow": self.model([helper.make_node("Reshape", ["x", "shp"], ["y"])], [self.vi("x", [4])],
                                                [self.vi("y", None)],
                                                [numpy_helper.from_array(np.array([1 << 62, 4], np.int64), "shp")]),
            "size-reshape-overflow-infer": self.model([helper.make_node("Reshape", ["x", "shp"], ["y"])], [self.vi("x", [4])],
                                                      [self.vi("y", None)],
                                                      [numpy_helper.from_array(np.array([-1, 1 << 62, 4], np.int64), "shp")]),
            "size-reshape-overflow-2p32": self.model([helper.make_node("Reshape", ["x", "shp"], ["y"])], [self.vi("x", [4])],
                                                     [self.vi("y", None)],
                                                     [numpy_helper.from_array(np.array([1 << 32, 1 << 32, 2], np.int64),
                                                                              "shp")]),
            # 17 x WRAP17 = 16 (mod 2^64): a shape whose product wraps to the input's 16 elements.
            "size-reshape-wraps-to-numel": self.model(
                [helper.make_node("Reshape", ["x", "shp"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
                [self.vi("x", [16])], [self.vi("y", None)],
                [numpy_helper.from_array(np.array([17, WRAP17], np.int64), "shp")]),
            "size-reshape-wraps-to-numel-infer": self.model(
                [helper.make_node("Reshape", ["x", "shp"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
                [self.vi("x", [16])], [self.vi("y", None)],
                [numpy_helper.from_array(np.array([-1, 17, WRAP17], np.int64), "shp")]),
            "size-reshape-wraps-to-numel-const": self.model(
                [helper.make_node("Reshape", ["W_c", "shp"], ["r"]), helper.make_node("Relu", ["r"], ["y"])], [],
                [self.vi("y", None)],
                [numpy_helper.from_array(np.arange(16, dtype=np.float32), "W_c"),
                 numpy_helper.from_array(np.array([17, WRAP17], np.int64), "shp")]),
            "size-expand-overflow": self.model([helper.make_node("Expand", ["x", "shp"], ["y"])], [self.vi("x", [1])],
                                               [self.vi("y", None)],
                                               [numpy_helper.from_array(np.array([1 << 62, 8], np.int64), "shp")]),
            "size-expand-huge": self.model([helper.make_node("Expand", ["x", "shp"], ["y"])], [self.vi("x", [1])],
                                           [self.vi("y", None)],
                                           [numpy_helper.from_array(np.array([G, G, 4], np.int64), "shp")]),
            "size-input-wrap": self.model([helper.make_node("Relu", ["x"], ["y"])], [self.vi("x", [G, G, 4])],
                                          [self.vi("y", [G, G, 4])]),
            "size-input-2p31": self.model([helper.make_node("Relu", ["x"], ["y"])], [self.vi("x", [S])], [self.vi("y", [S])]),
            "size-input-negative": self.model([helper.make_node("Relu", ["x"], ["y"])], [self.vi("x", [-3, 4])],
                                              [self.vi("y", [-3, 4])]),
            "size-input-int64-max": self.model([helper.make_node("Relu", ["x"], ["y"])], [self.vi("x", [(1 << 63) - 1])],
                                               [self.vi("y", None)]),
        }
        for name, m in cases.items():
            root, folder = self.model_folder(name)
            path = self.save(folder, m)
            # A tensor refused for its size is named (an initializer W_big, an input x).
            names = {t.name for t in m.graph.initializer} | {i.name for i in m.graph.input}
            mentions = ["W_big"] if "W_big" in names else ["x"] if name.startswith("size-input") else []
            self.model_cases(name, path, REFUSE, mentions=mentions,
                             run_model=name.startswith("size-input") or name in ("size-wrap-gather-input",
                                                                                  "size-reshape-wraps-to-numel"),
                             export=name in ("size-wrap-gather", "size-input-wrap"), group="size")
        # The tensor limit (TYCHE_MAX_TENSOR_BYTES): a valid model whose input is over it is refused.
        root, folder = self.model_folder("size-over-limit")
        path = self.save(folder, self.model([helper.make_node("Relu", ["x"], ["y"])], [self.vi("x", [1 << 26])],
                                            [self.vi("y", [1 << 26])]))
        self.cli("size-over-limit/run-model", ["run-model", path, "--repeat", "1"], REFUSE,
                 env={"TYCHE_MAX_TENSOR_BYTES": "64M"}, group="size", mentions=["'x'"])
        # --input-shape out of range or huge.
        root, folder = self.model_folder("input-shape")
        path = self.save(folder, self.mlp())
        for label, shape in (("wrap", f"x={G}x{G}x4"), ("negative", "x=-1x8"), ("2p63", f"x={1 << 63}x8"),
                             ("garbage", "x=1xabc"), ("empty", "x="), ("unknown-name", "nope=1x8")):
            self.cli(f"input-shape-{label}/import", ["import", path, "--input-shape", shape], REFUSE, group="size")
        if self.python:
            for label, shape in (("2p64", "(2**64, 8)"), ("negative", "(-1, 8)"), ("wrap", f"({G}, {G}, 4)"),
                                 ("string", "('1', 'x')")):
                self.py(f"py-input-shapes-{label}/compile", f"tyche.onnx.compile({path!r}, input_shapes={{'x': {shape}}})",
                        PY_REFUSE, group="python")

    def npy_cases(self):
        root, folder = self.model_folder("npy")
        model = self.save(folder, self.mlp())
        data = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8).tobytes()
        files = {
            "valid": (self.npy_header() + data, VALID),
            "shape-4x2p62": (self.npy_header(shape=f"(4, {1 << 62})") + data, REFUSE),
            "shape-2p64": (self.npy_header(shape=f"({1 << 64},)") + data, REFUSE),
            "shape-wrap-2p32": (self.npy_header(shape=f"({1 << 32}, {1 << 32})") + data, REFUSE),
            "shape-negative": (self.npy_header(shape="(-1, 8)") + data, REFUSE),
            "shape-mismatch": (self.npy_header(shape="(2, 8)") + data * 2, REFUSE),
            "shape-not-tuple": (self.npy_header(shape="'abc'") + data, REFUSE),
            "truncated-data": (self.npy_header() + data[:13], REFUSE),
            "truncated-header": (self.npy_header()[:30], REFUSE),
            "truncated-magic": (b"\x93NUM", REFUSE),
            "empty": (b"", REFUSE),
            "bad-magic": (self.npy_header(magic=b"\x93NUMPZ") + data, REFUSE),
            "bad-version": (self.npy_header(version=(9, 9)) + data, REFUSE),
            "descr-complex": (self.npy_header(descr="'<c8'") + data, REFUSE),
            "descr-object": (self.npy_header(descr="'|O'") + data, REFUSE),
            "descr-garbage": (self.npy_header(descr="'zz9'") + data, REFUSE),
            "descr-struct": (self.npy_header(descr="[('a', '<f4')]") + data, REFUSE),
            "descr-not-string": (self.npy_header(descr="42") + data, REFUSE),
            "header-not-dict": (self.npy_header(header="[1, 2, 3]") + data, REFUSE),
            "header-code": (self.npy_header(header="__import__('os').system('true')") + data, REFUSE),
            "header-len-huge": (b"\x93NUMPY\x01\x00\xff\xff{'descr'", REFUSE),
            "header-len-v2-huge": (b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{'descr'", REFUSE),
            "header-unterminated": (self.npy_header(header="{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8", pad=True)
                                    + data, REFUSE),
            "fortran-order": (self.npy_header(fortran="True") + data, ANY),
            "version-2": (self.npy_header(version=(2, 0)) + data, ANY),
            "dtype-f8": (self.npy_header(descr="'<f8'") + np.zeros(8, np.float64).tobytes(), ANY),
            "big-endian": (self.npy_header(descr="'>f4'") + data, ANY),
            "extra-data": (self.npy_header() + data + b"\0" * 64, ANY),
        }
        for label, (content, expect) in files.items():
            p = folder / f"{label}.npy"
            p.write_bytes(content)
            self.cli(f"npy-{label}/run-model", ["run-model", model, "--repeat", "1", "--input", f"x={p}"], expect, group="npy")
        (folder / "dir.npy").mkdir(exist_ok=True)
        self.cli("npy-directory/run-model", ["run-model", model, "--repeat", "1", "--input", f"x={folder / 'dir.npy'}"],
                 REFUSE, group="npy")
        self.cli("npy-dev-zero/run-model", ["run-model", model, "--repeat", "1", "--input", "x=/dev/zero"], REFUSE, group="npy")
        self.cli("npy-missing/run-model", ["run-model", model, "--repeat", "1", "--input", f"x={folder / 'nothere.npy'}"],
                 REFUSE, group="npy")
        self.cli("npy-duplicate-input/run-model", ["run-model", model, "--repeat", "1", "--input", f"x={folder / 'valid.npy'}",
                                                   "--input", f"x={folder / 'valid.npy'}"], REFUSE, group="npy",
                 mentions=["x"])
        self.cli("npy-unknown-input/run-model", ["run-model", model, "--repeat", "1", "--input", f"nope={folder / 'valid.npy'}"],
                 REFUSE, group="npy")
        self.cli("npy-no-equals/run-model", ["run-model", model, "--repeat", "1", "--input", "x"], REFUSE, group="npy")
        # --save-outputs all or nothing: the second output's file cannot be written (a folder is in
        # its place), so the first must not be left behind.
        two = self.save(folder, self.model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])],
                                           [self.vi("x", [1, 8])], [self.vi("a", [1, 8]), self.vi("b", [1, 8])]),
                        "two.onnx")
        partial = self.case_dir("save-outputs-partial") / "out"
        (partial / "b.npy").mkdir(parents=True, exist_ok=True)

        def nothing_half_written(_case):
            return [f"{partial.relative_to(self.work)}/a.npy was written though b.npy could not be"] \
                if (partial / "a.npy").exists() else []
        self.cli("save-outputs-partial/run-model", ["run-model", two, "--repeat", "1", "--save-outputs", str(partial)], REFUSE,
                 after=nothing_half_written, group="npy")
        # --save-outputs into a path that cannot be a folder: nothing half-written.
        (folder / "afile").write_text("x")
        self.cli("save-outputs-not-a-folder/run-model", ["run-model", model, "--repeat", "1", "--save-outputs",
                                                         str(folder / "afile" / "out")], REFUSE, group="npy")

    FORMULA = "C[i,j,k] = A[i,j,k]"

    def formula_cases(self):
        G = 1 << 30
        huge = f"i={G},j={G},k=4"
        for cmd in ("run", "check", "show", "features", "space"):
            extra = ["--samples", "1"] if cmd == "space" else []
            self.cli(f"formula-wrap/{cmd}", [cmd, self.FORMULA, "--extents", huge, *extra], REFUSE, group="formula")
        self.cli("formula-wrap-matmul/run", ["run", "C[i,j] += A[i,k] * B[k,j]", "--extents", f"i={G},j={G},k={1 << 4}"],
                 REFUSE, group="formula")
        self.cli("formula-int64-wrap/check", ["check", "C[i,j] = A[i,j]", "--extents", f"i={1 << 32},j={1 << 32}"], REFUSE,
                 group="formula")
        self.cli("formula-over-limit/check", ["check", "C[i] = A[i]", "--extents", f"i={1 << 28}"], REFUSE,
                 env={"TYCHE_MAX_TENSOR_BYTES": "64M"}, group="formula")
        self.cli("formula-wrap/tune", ["tune", self.FORMULA, "--extents", huge, "--trials", "1",
                                       "--db", str(self.case_dir("formula-wrap-tune") / "db")], REFUSE, group="formula")
        self.cli("formula-wrap/sample-measure", ["sample-measure", self.FORMULA, "--extents", huge, "--samples", "1",
                                                 "--records", str(self.case_dir("formula-wrap-sm") / "r.jsonl")], REFUSE,
                 group="formula")
        out = self.case_dir("formula-wrap-export") / "out"
        self.cli("formula-wrap/export", ["export", self.FORMULA, "--extents", huge, "--name", "k", "-o", str(out),
                                         "--trace", "/dev/null"], REFUSE, group="formula")
        malformed = {
            "empty": ("", "i=4"), "blank": ("   ", "i=4"), "no-brackets": ("C", "i=4"), "unclosed": ("C[i", "i=4"),
            "no-rhs": ("C[i] =", "i=4"), "rhs-unclosed": ("C[i] = A[", "i=4"), "no-lhs": ("= A[i]", "i=4"),
            "dangling-op": ("C[i] = A[i] +", "i=4"), "double-bracket": ("C[i]] = A[i]", "i=4"),
            "unknown-function": ("C[i] = nosuch(A[i])", "i=4"), "missing-extent": ("C[i,j] += A[i,k] * B[k,j]", "i=4,j=4"),
            "no-extents": ("C[i,j] += A[i,k] * B[k,j]", ""), "extent-abc": ("C[i] = A[i]", "i=abc"),
            "extent-negative": ("C[i] = A[i]", "i=-5"), "extent-zero": ("C[i] = A[i]", "i=0"),
            "extent-empty": ("C[i] = A[i]", "i="), "extent-no-name": ("C[i] = A[i]", "=4"),
            "extent-23-digits": ("C[i] = A[i]", "i=99999999999999999999999"), "extent-float": ("C[i] = A[i]", "i=1e3"),
            "extent-hex": ("C[i] = A[i]", "i=0x10"), "extent-duplicate": ("C[i] = A[i]", "i=4,i=8"),
            "extent-2p63": ("C[i] = A[i]", f"i={1 << 63}"), "extent-commas": ("C[i] = A[i]", "i=4,,,"),
            "extent-unknown-index": ("C[i] = A[i]", "i=4,q=3"), "extent-spaces": ("C[i] = A[i]", "i = 4"),
            "deep-parens": ("C[i] = " + "(" * 60000 + "A[i]" + ")" * 60000, "i=4"),  # an argument holds < 128 KiB
            "deep-unary": ("C[i] = " + "-" * 100000 + "A[i]", "i=4"),
            "long-sum": ("C[i] = " + " + ".join(["A[i]"] * 15000), "i=4"),
            "long-name": ("C[i] = " + "A" * 100000 + "[i]", "i=4"),
            "many-indices": ("C[" + ",".join(f"i{n}" for n in range(200)) + "] = A[i0]",
                             ",".join(f"i{n}=2" for n in range(200))),
            "huge-constant": ("C[i] = A[i] * 1e999999", "i=4"), "huge-int": ("C[i] = A[i] * 99999999999999999999999", "i=4"),
            "index-expr-huge": ("C[i] = A[i * 4611686018427387904]", "i=4"),
            "non-ascii": ("C[\u00ef] = A[\u00ef]", "\u00ef=4"), "control-chars": ("C[i] = A[i]\x01\x7f", "i=4"),
            "bad-dtype": ("C[i] = A[i]", "i=4", "A=float1024"), "dtype-unknown-tensor": ("C[i] = A[i]", "i=4", "Z=int8"),
        }
        for label, spec in malformed.items():
            text, extents = spec[0], spec[1]
            args = [text] + (["--extents", extents] if extents else []) + (["--dtypes", spec[2]] if len(spec) > 2 else [])
            # Spaces around '=' and a 100000-letter name are legitimate.
            expect = ANY if label in ("extent-spaces", "long-name") else REFUSE
            self.cli(f"formula-{label}/show", ["show", *args], expect, group="formula")
            if label in ("deep-parens", "long-sum", "extent-23-digits", "index-expr-huge", "many-indices", "huge-int"):
                self.cli(f"formula-{label}/check", ["check", *args], expect, group="formula")
        if self.python:
            self.py("py-formula-wrap/inputs", f"tyche.formula({self.FORMULA!r}, i={G}, j={G}, k=4).inputs()", PY_REFUSE,
                    group="python")
            self.py("py-formula-wrap/reference", f"w = tyche.formula({self.FORMULA!r}, i={G}, j={G}, k=4); "
                    "w.reference(np.zeros((1,), np.float32))", PY_REFUSE, group="python")
            self.py("py-formula-string-extent/inputs", "tyche.formula('C[i,j,k] = A[i,j,k]', i='4,j=8', k=4).inputs()",
                    PY_REFUSE, group="python")
            self.py("py-formula-float-extent/inputs", "tyche.formula('C[i] = A[i]', i=4.5).inputs()", PY_REFUSE,
                    group="python")
            self.py("py-formula-2p64-extent/inputs", "tyche.formula('C[i] = A[i]', i=2**64).inputs()", PY_REFUSE,
                    group="python")
            self.py("py-formula-deep-parens", "tyche.formula('C[i] = ' + '(' * 100000 + 'A[i]' + ')' * 100000, i=4)",
                    PY_REFUSE, group="python")
            # Arguments through __dlpack__: one that returns no capsule, one that raises, and a
            # read-only output (plain and through DLPack) are refused; a kernel never writes them.
            k = "k = tyche.build(tyche.formula('C[i] = A[i] * 2.0', i=16)); a = np.ones(16, np.float32)\n"
            dl = {
                "not-a-capsule": "class X:\n    def __dlpack__(self, **kw): return 42\n"
                                 "    def __dlpack_device__(self): return (1, 0)\nk(X())",
                "raises": "class X:\n    def __dlpack__(self, **kw): raise ValueError('no')\n"
                          "    def __dlpack_device__(self): return (1, 0)\nk(X())",
                "read-only-output": "o = np.zeros(16, np.float32); o.flags.writeable = False\nk(a, o)",
                "read-only-output-dlpack": "o = np.zeros(16, np.float32); o.flags.writeable = False\n"
                                           "class X:\n    def __dlpack__(self, **kw): return o.__dlpack__(**kw)\n"
                                           "    def __dlpack_device__(self): return o.__dlpack_device__()\n"
                                           "try:\n    k(a, X())\nfinally:\n    assert not o.any(), 'a read-only output was written'",
                "wrong-shape": "k(np.ones(17, np.float32))",
            }
            for label, body in dl.items():
                self.py(f"py-dlpack-{label}", k + body, PY_REFUSE, group="python")
            self.py("py-dlpack-valid", k + "o = tyche.empty((16,), 'float32')\nk(a, o)\nassert (o == 2).all()",
                    frozenset({PY_OK}), group="python")
            self.py("py-formula-valid/inputs", "tyche.formula('C[i,j] += A[i,k] * B[k,j]', i=8, j=8, k=8).inputs()",
                    frozenset({PY_OK}), group="python")

    def flag_cases(self):
        W = ["C[i,j] += A[i,k] * B[k,j]", "--extents", "i=8,j=8,k=8"]
        db = str(self.case_dir("flags") / "db")
        rec = str(self.case_dir("flags") / "r.jsonl")
        root, folder = self.model_folder("flags-model")
        model = self.save(folder, self.mlp())
        flags = [
            ("tune-trials-0", ["tune", *W, "--trials", "0", "--db", db], "--trials"),
            ("tune-trials-negative", ["tune", *W, "--trials", "-5", "--db", db], "--trials"),
            ("tune-batch-0", ["tune", *W, "--trials", "1", "--batch", "0", "--db", db], "--batch"),
            ("tune-timeout-0", ["tune", *W, "--trials", "1", "--timeout", "0", "--db", db], "--timeout"),
            ("tune-timeout-nan", ["tune", *W, "--trials", "1", "--timeout", "nan", "--db", db], "--timeout"),
            ("tune-threads-huge", ["tune", *W, "--trials", "1", "--threads", "2147483647", "--db", db], "--threads"),
            ("tune-confirm-negative", ["tune", *W, "--trials", "1", "--confirm", "-1", "--db", db], "--confirm"),
            ("run-threads-huge", ["run", *W, "--threads", "2147483647"], "--threads"),
            ("run-threads-negative", ["run", *W, "--threads", "-1"], "--threads"),
            ("run-threads-0", ["run", *W, "--threads", "0"], "--threads"),
            ("run-threads-abc", ["run", *W, "--threads", "abc"], "--threads"),
            ("run-threads-2p64", ["run", *W, "--threads", str(1 << 64)], "--threads"),
            ("run-repeat-0", ["run", *W, "--repeat", "0"], "--repeat"),
            ("run-repeat-negative", ["run", *W, "--repeat", "-3"], "--repeat"),
            ("sample-measure-batch-0", ["sample-measure", *W, "--records", rec, "--batch", "0"], "--batch"),
            ("sample-measure-timeout-0", ["sample-measure", *W, "--records", rec, "--timeout", "0"], "--timeout"),
            ("sample-measure-samples-0", ["sample-measure", *W, "--records", rec, "--samples", "0"], "--samples"),
            ("space-samples-negative", ["space", *W, "--samples", "-1"], "--samples"),
            ("export-threads-0", ["export", *W, "--name", "k", "-o", str(self.case_dir("flags") / "out"), "--threads", "0"],
             "--threads"),
            ("model-eval-top-k-0", ["model", "eval", "--model", "nothere.json", "--records", rec, "--top-k", "0"], "--top-k"),
            ("model-train-threads-huge", ["model", "train", "--records", rec, "-o", str(self.case_dir("flags") / "m.json"),
                                          "--threads", "2147483647"], "--threads"),
            ("run-model-threads-huge", ["run-model", model, "--threads", "2147483647"], "--threads"),
            ("run-model-threads-0", ["run-model", model, "--threads", "0"], "--threads"),
            ("run-model-repeat-0", ["run-model", model, "--repeat", "0"], "--repeat"),
            ("tune-model-trials-0", ["tune-model", model, "--trials", "0", "--db", db], "--trials"),
            ("tune-model-threads-huge", ["tune-model", model, "--trials", "1", "--threads", "2147483647", "--db", db],
             "--threads"),
            ("export-model-threads-0", ["export-model", model, "--name", "k", "-o", str(self.case_dir("flags") / "out2"),
                                        "--threads", "0"], "--threads"),
            ("export-model-bad-name", ["export-model", model, "--name", "../../evil", "-o", str(self.case_dir("flags") / "out3")],
             "../../evil"),
            ("export-bad-name", ["export", *W, "--name", "a b;rm", "-o", str(self.case_dir("flags") / "out4"),
                                 "--trace", "/dev/null"], "a b;rm"),
            ("unknown-command", ["frobnicate"], "frobnicate"),
            ("unknown-flag", ["run", *W, "--frobnicate"], "--frobnicate"),
        ]
        for name, args, mention in flags:
            self.cli(f"flag-{name}", args, REFUSE, mentions=[mention.lstrip("-") if mention.startswith("--") else mention],
                     group="flags")
        self.cli("flag-run-threads-1-valid", ["run", *W, "--threads", "1", "--repeat", "1"], VALID, group="flags")

    # ---- databases ----

    def database_cases(self):
        """A database tuned once (the pristine copy, never touched again); damaged copies hold every
        original line plus damage. After each run on a copy, its original lines must still be there."""
        W = ["C[i,j] += A[i,k] * B[k,j]", "--extents", "i=16,j=16,k=16"]
        base = self.case_dir("db") / "pristine"
        if not (base / "records.jsonl").exists() or not (base / "records.jsonl").read_text().strip():
            shutil.rmtree(base, ignore_errors=True)
            r = subprocess.run([self.tyche, "tune", *W, "--trials", "4", "--batch", "4", "--confirm", "0", "--db", str(base),
                                "--model", "none", "--threads", "1", "--seed", "1"], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0 or not (base / "records.jsonl").exists():
                print(f"setup: tyche tune for the database cases failed ({r.returncode}): {r.stderr.strip()[-400:]}")
                self.setup_failures.append("database: tyche tune failed")
                return
        self.pristine = {p.name: p.read_bytes() for p in base.iterdir() if p.is_file()}
        records = self.pristine["records.jsonl"].decode().splitlines()
        first = json.loads(records[0])

        def broken_trace(rec):
            """The first record as the fastest, confirmed one, with a trace that parses but does not
            replay (its first instruction names a block the workload does not have)."""
            r = json.loads(json.dumps(rec))
            insts = r.get("trace", {}).get("instructions", []) if isinstance(r.get("trace"), dict) else []
            if insts and isinstance(insts[0].get("args"), dict) and "name" in insts[0]["args"]:
                insts[0]["args"]["name"] = "NoSuchBlock"
            elif insts:
                insts[0]["kind"] = "no_such_instruction"
            else:
                r["trace"] = {"format": "tyche.trace", "instructions": [{"kind": "no_such_instruction", "args": {}, "outputs": []}]}
            r["seconds"] = [1e-12, 1e-12, 1e-12]
            r["confirmed"] = True
            r["program"] = "00000000deadbeef"
            return r

        damage = {
            # name: (records.jsonl suffix or replacement, workloads.jsonl suffix, expected exit of `run --db`)
            "truncated-last-line": (records[0][: len(records[0]) // 2], "", VALID),
            "truncated-middle-line": (records[0][: len(records[0]) // 2] + "\n" + records[-1] + "\n", "", ANY),
            "broken-trace-best": (json.dumps(broken_trace(first)) + "\n", "", VALID),
            "not-an-object": ("[]\n42\nnull\n\"x\"\n{}\n", "", ANY),
            "wrong-types": (json.dumps({k: "abc" for k in first}) + "\n", "", ANY),
            "nan-latency": (records[0].replace("[", "[NaN,", 1) + "\n", "", ANY),
            "binary-garbage": (bytes(self.rng.getrandbits(8) for _ in range(2000)).decode("latin1") + "\n", "", ANY),
            "long-line": ("{\"x\": \"" + "a" * (8 << 20) + "\"}\n", "", ANY),
            "deep-json": ("[" * 100000 + "]" * 100000 + "\n", "", ANY),
            "workloads-truncated": ("", "{\"name\": \"x", ANY),
            "workloads-garbage": ("", "garbage\n{}\n", ANY),
        }
        self.db_copies = []
        for name, (rec_extra, wl_extra, expect) in damage.items():
            d = self.case_dir(f"db-{name}") / "db"
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base, d)
            with open(d / "records.jsonl", "a", encoding="latin1") as f:
                f.write(rec_extra)
            with open(d / "workloads.jsonl", "a", encoding="latin1") as f:
                f.write(wl_extra)
            self.db_copies.append(d)
            check = self.keeps_records(d, damage=rec_extra + "\n" + wl_extra)
            self.cli(f"db-{name}/run", ["run", *W, "--db", str(d), "--repeat", "1"], expect, after=check, group="db")
            self.cli(f"db-{name}/show", ["show", *W, "--db", str(d)], expect, after=check, group="db")
            out = self.case_dir(f"db-{name}") / "export"
            self.cli(f"db-{name}/export", ["export", *W, "--db", str(d), "--name", "k", "-o", str(out)], expect,
                     after=check, group="db")
            if name in ("truncated-last-line", "broken-trace-best"):
                # A tune on a damaged database appends; nothing saved before is lost. (Legitimate
                # work, not a refusal: it may take longer than one.)
                self.cli(f"db-{name}/tune", ["tune", *W, "--db", str(d), "--trials", "1", "--batch", "1", "--confirm", "0",
                                             "--model", "none", "--threads", "1"], ANY, after=check, group="db",
                         time_limit=30)
        # A database the user may only read is read (not opened for writing); as root every file is
        # writable, so the case needs another user.
        if os.geteuid() != 0:
            d = self.case_dir("db-read-only") / "db"
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base, d)
            for p in [d, *d.iterdir()]:
                p.chmod(p.stat().st_mode & ~0o222)
            self.cli("db-read-only/run", ["run", *W, "--db", str(d), "--repeat", "1"], VALID,
                     after=self.keeps_records(d, exact=True), group="db")
            out = self.case_dir("db-read-only") / "export"
            self.cli("db-read-only/export", ["export", *W, "--db", str(d), "--name", "k", "-o", str(out)], VALID, group="db")
        # A malformed model tuned into a database must be refused before the database changes.
        d = self.case_dir("db-model") / "db"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        root, folder = self.model_folder("db-model")
        bad = self.save(folder, self.external([("location", "../sentinel.txt"), ("length", 64)]))
        self.cli("db-model-leak/tune-model", ["tune-model", bad, "--trials", "1", "--db", str(d)], REFUSE,
                 after=self.keeps_records(d, exact=True), group="db", mentions=["W_ext"])
        self.cli("db-model-leak/run-model", ["run-model", bad, "--db", str(d)], REFUSE,
                 after=self.keeps_records(d, exact=True), group="db")
        # A database folder that is a file, and one that cannot be created.
        (self.case_dir("db-file") / "db").write_text("not a folder")
        self.cli("db-is-a-file/run", ["run", *W, "--db", str(self.case_dir("db-file") / "db")], REFUSE, group="db")
        self.cli("db-missing/run", ["run", *W, "--db", str(self.case_dir("db-file") / "nothere")], REFUSE, group="db")

    def pristine_unchanged(self) -> list[str]:
        """The database no case was given is byte for byte as tuned."""
        base = self.work / "cases" / "db" / "pristine"
        if not getattr(self, "pristine", None):
            return []
        now = {p.name: p.read_bytes() for p in base.iterdir() if p.is_file()}
        return [f"database {base}: {n} changed" for n in self.pristine if now.get(n) != self.pristine[n]]

    def keeps_records(self, d: Path, exact=False, damage: str = ""):
        """The originals of d's files are all there (exact: d is byte for byte the pristine copy);
        a line that is neither original nor damage (a record written by the run) is valid JSON."""
        damaged = set(damage.encode("latin1").splitlines())

        def check(_case):
            problems = []
            for fname, data in self.pristine.items():
                p = d / fname
                now = p.read_bytes() if p.exists() else b""
                if exact and now != data:
                    problems.append(f"{p.relative_to(self.work)} changed")
                    continue
                if fname.endswith(".jsonl"):
                    have = set(now.splitlines())
                    lost = [l for l in data.splitlines() if l not in have]
                    if lost:
                        problems.append(f"{p.relative_to(self.work)} lost {len(lost)} of its {len(data.splitlines())} lines")
                    old = set(data.splitlines())
                    for line in now.splitlines():
                        if line in old or line in damaged or not line.strip():
                            continue
                        try:
                            json.loads(line)
                        except ValueError:
                            problems.append(f"{p.relative_to(self.work)}: a line written after the damage is not JSON: "
                                            f"{line[:80]!r}")
                            break
            return problems
        return check

    # ---- random mutations ----

    def mutation_cases(self, count: int):
        rng = random.Random(self.args.seed * 7919 + 1)
        bases = {"mlp": self.mlp(), "conv": self.conv(), "conv_opset9": self.conv_opset9(), "shapes": self.shapes(),
                 "gemm_norm": self.gemm_norm(), "narrow": self.narrow(), "control_flow": self.control_flow(),
                 "ext": self.external_valid()}
        root, folder = self.model_folder("mutations")
        for link, target in (("link.bin", "../sentinel.txt"), ("up", "..")):
            if not (folder / link).is_symlink():
                os.symlink(target, folder / link)
        (folder / "sub").mkdir(exist_ok=True)
        for name, m in bases.items():  # the valid models themselves
            self.cli(f"base-{name}/import", ["import", self.save(folder, m, f"base-{name}.onnx")], VALID, group="mutation")
        py_every = max(1, count // 12)
        for i in range(count):
            base_name = rng.choice(sorted(bases))
            kind = rng.choice(["proto", "proto", "proto", "flip", "truncate", "splice"])
            m = onnx.ModelProto()
            m.CopyFrom(bases[base_name])
            what = []
            if kind == "proto":
                for _ in range(rng.randint(1, 3)):
                    what.append(self.mutate_proto(m, rng))
                data = m.SerializeToString()
            else:
                data = bytearray(bases[base_name].SerializeToString())
                if kind == "flip":
                    for _ in range(rng.randint(1, 8)):
                        p = rng.randrange(len(data))
                        data[p] = rng.choice([data[p] ^ (1 << rng.randrange(8)), 0, 0xff, 0x7f, 0x80, rng.randrange(256)])
                    what.append("bytes flipped")
                elif kind == "truncate":
                    cut = rng.randrange(len(data))
                    data = data[:cut]
                    what.append(f"truncated to {cut} bytes")
                else:
                    p = rng.randrange(len(data))
                    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
                    data = data[:p] + junk + data[p + rng.randint(0, 16):]
                    what.append(f"{len(junk)} bytes spliced at {p}")
                data = bytes(data)
            # The oracle: what protobuf cannot parse is not a model, and must be refused.
            try:
                onnx.load_from_string(data)
                expect = ANY
            except Exception:
                expect = REFUSE
            name = f"mut{i:04d}-{base_name}-{kind}"
            path = self.save(folder, data, f"{name}.onnx")
            (self.case_dir("mutations") / f"{name}.txt").write_text("; ".join(what) + "\n")
            self.cli(f"{name}/import", ["import", path], expect, group="mutation")
            if self.python and i % py_every == 0:
                self.py(f"{name}/py-tasks", f"tyche.onnx.tasks({path!r})",
                        PY_REFUSE if expect == REFUSE else PY_ANY, group="mutation")
        # Formulas mutated a character at a time.
        alphabet = list("CABij,k[]=+*-/()0123456789 .e") + ["max(", "exp(", "+=", "sqrt(", "select("]
        formulas = ["C[i,j] += A[i,k] * B[k,j]", "C[i,j] = max(A[i,j], 0.0)", "C[i] += A[i,k] * A[i,k]",
                    "C[i,j] = A[i,j] + B[j,i] * 2.5"]
        for i in range(max(1, count // 3)):
            s = list(rng.choice(formulas))
            for _ in range(rng.randint(1, 4)):
                op = rng.randrange(3)
                p = rng.randrange(len(s) + 1)
                if op == 0 and s:
                    del s[min(p, len(s) - 1)]
                elif op == 1:
                    s.insert(p, rng.choice(alphabet))
                elif s:
                    s[min(p, len(s) - 1)] = rng.choice(alphabet)
            text = "".join(s)
            extents = rng.choice(["i=4,j=4,k=4", "i=4,j=4,k=4", f"i={1 << 30},j={1 << 30},k=4", "i=0,j=4,k=4", "i=4,j=4"])
            cmd = rng.choice(["show", "check"])
            self.cli(f"fmut{i:04d}/{cmd}", [cmd, text, "--extents", extents], ANY, group="mutation")
