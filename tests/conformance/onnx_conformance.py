"""Runs the ONNX conformance tests through Tyche: the node tests that the installed onnx package's
own case generators write (onnx.backend.test.case.node) and the model tests its wheel ships
(onnx/backend/test/data/*/*/model.onnx with test_data_set_*). Each case is imported, compiled
with default schedules and run; its outputs are compared with the case's at its tolerance. An
input that Tyche says an op needs as a constant is bound to the case's value (bind=, as a user
binds it with --bind) and the case compiled again.

    python3 tests/conformance/onnx_conformance.py [--only SUBSTRING] [--jobs N] [--json FILE]

Prints one line per case that does not pass (refused: the first line of Tyche's error; wrong: the
largest error), then the counts: in all, per opset stamped on the model, per refusal kind.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import multiprocessing
import os
import re
import sys
import warnings

import numpy as np


def _node_cases(only: str) -> list[tuple[str, bytes, list, list, float, float]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node
        cases = node.collect_testcases()
    out = []
    for c in cases:
        if only and only not in c.name:
            continue
        for i, (inputs, outputs) in enumerate(c.data_sets):
            name = c.name if len(c.data_sets) == 1 else f"{c.name}#{i}"
            out.append((name, c.model.SerializeToString(), list(inputs), list(outputs), c.rtol, c.atol))
    return out


def _model_cases(only: str) -> list[tuple[str, bytes, list, list, float, float]]:
    import onnx
    from onnx import numpy_helper
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    out = []
    for model_path in sorted(glob.glob(os.path.join(root, "*", "*", "model.onnx"))):
        folder = os.path.dirname(model_path)
        kind = os.path.basename(os.path.dirname(folder))
        if kind == "node":
            continue
        name = f"{kind}/{os.path.basename(folder)}"
        if only and only not in name:
            continue
        for data in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
            def read(prefix: str) -> list:
                files = sorted(glob.glob(os.path.join(data, f"{prefix}_*.pb")),
                               key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
                arrays = []
                for f in files:
                    t = onnx.TensorProto()
                    with open(f, "rb") as fh:
                        t.ParseFromString(fh.read())
                    arrays.append(numpy_helper.to_array(t))
                return arrays
            with open(model_path, "rb") as fh:
                model = fh.read()
            out.append((f"{name}#{os.path.basename(data)}", model, read("input"), read("output"), 1e-3, 1e-7))
    return out


def _run(case: tuple[str, bytes, list, list, float, float]) -> tuple[str, str, str, int]:
    """(name, "pass" | "wrong" | "refused", detail, opset)"""
    import onnx
    import tyche.onnx
    name, data, inputs, expected, rtol, atol = case
    model = onnx.ModelProto()
    model.ParseFromString(data)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    given = dict(zip(names, inputs))
    bind: dict = {}
    try:
        # An input an op needs as a constant (axes, a shape, bounds) is bound to the test's value,
        # as a user binds it with --bind: Tyche's refusal names it.
        for _ in range(len(given) + 1):
            try:
                compiled = tyche.onnx.compile(model, threads=1, bind=bind)
                break
            except tyche.InputError as e:
                named = re.search(r"\('([^']+)'\) must be a (one-element )?constant", str(e))
                if not named or named.group(1) not in given or named.group(1) in bind:
                    raise
                bind[named.group(1)] = given[named.group(1)]
        got = compiled({k: v for k, v in given.items() if k not in bind})
        outs = [got[o.name] for o in model.graph.output]
    except Exception as e:  # a refusal: Tyche's one-line error
        return name, "refused", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", opset
    worst = ""
    for o, (want, have) in enumerate(zip(expected, outs)):
        want = np.asarray(want)
        have = np.asarray(have)
        if want.shape != have.shape:
            return name, "wrong", f"output {o}: shape {have.shape}, expected {want.shape}", opset
        if want.dtype.kind in "fc":
            ok = np.allclose(have.astype(want.dtype), want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(have.astype(want.dtype), want)
        if not ok:
            diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
            worst = f"output {o}: max error {np.nanmax(diff) if diff.size else 0:.3g}"
            return name, "wrong", worst, opset
    return name, "pass", "", opset


def _kind(detail: str) -> str:
    if "opset" in detail and "not supported" in detail:
        return "opset"
    if "unsupported operators" in detail:
        return "operator"
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="run the cases whose name holds this")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", default="", help="write {case: [status, detail]} here")
    ap.add_argument("--models-only", action="store_true")
    ap.add_argument("--nodes-only", action="store_true")
    args = ap.parse_args()
    cases = []
    if not args.models_only:
        cases += _node_cases(args.only)
    if not args.nodes_only:
        cases += _model_cases(args.only)
    # maxtasksperchild: a case that leaks or crashes costs one worker, not the run
    with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=50) as pool:
        results = sorted(pool.imap_unordered(_run, cases, chunksize=4))
    counts = collections.Counter(r[1] for r in results)
    by_opset: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    kinds = collections.Counter()
    for name, status, detail, opset in results:
        by_opset[opset][status] += 1
        if status != "pass":
            print(f"{status:7s} {name}: {detail}")
        if status == "refused":
            kinds[_kind(detail)] += 1
    print(f"\n{len(results)} cases: {counts['pass']} pass, {counts['wrong']} wrong, {counts['refused']} refused")
    print("refused for: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    for opset in sorted(by_opset):
        c = by_opset[opset]
        print(f"  opset {opset:2d}: {c['pass']:4d} pass / {sum(c.values()):4d}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({n: [s, d] for n, s, d, _ in results}, fh, indent=0, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
