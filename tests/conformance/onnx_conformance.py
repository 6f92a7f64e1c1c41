"""Runs the ONNX conformance tests through Tyche: the node tests that the installed onnx package's
own case generators write (onnx.backend.test.case.node) and the model tests its wheel ships
(onnx/backend/test/data/*/*/model.onnx with test_data_set_*). Each case is imported, compiled
with default schedules and run; its outputs are compared with the case's at its tolerance. An
input that Tyche says an op needs as a constant is bound to the case's value (bind=, as a user
binds it with --bind) and the case compiled again.

    python3 tests/conformance/onnx_conformance.py [--only SUBSTRING] [--jobs N] [--json FILE]
        [--cache DIR] [--expectations FILE | --write-expectations FILE] [-v]

Prints the cases passed per operator and per opset stamped on the model, and the counts (-v: a
line per case that does not pass: refused, with the first line of Tyche's error; wrong, with the
largest error). With --expectations (the ctest Conformance.OnnxNodeAndModelTests), fails when a case not listed
there does not pass, or a listed one passes (so the list only shrinks).
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import multiprocessing
import os
import pickle
import re
import sys
import time
import warnings

import numpy as np


Case = tuple  # (name, model bytes, inputs, outputs, rtol, atol)


def _generate_node_cases() -> list[Case]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx
        import onnx.backend.test.case.node as node
        np.random.seed(0)  # some generators draw their data unseeded: the same cases every run
        cases = node.collect_testcases()
    from onnx import numpy_helper

    def array(x):  # a generator may give a TensorProto (float8, bfloat16 data)
        return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x

    out = []
    for c in cases:
        for i, (inputs, outputs) in enumerate(c.data_sets):
            name = c.name if len(c.data_sets) == 1 else f"{c.name}#{i}"
            out.append((name, c.model.SerializeToString(), [array(x) for x in inputs],
                        [array(x) for x in outputs], c.rtol, c.atol))
    return out


def _selected(name: str, only: str) -> bool:
    """--only: the names holding any of its comma-separated parts (all, when empty)."""
    return not only or any(part and part in name for part in only.split(","))


def _node_cases(only: str, cache: str = "") -> list[Case]:
    """The generators' cases, from `cache` (a folder) when it holds this onnx version's."""
    import onnx
    path = os.path.join(cache, f"onnx_node_cases_{onnx.__version__}_v2.pickle") if cache else ""
    if path and os.path.isfile(path):
        with open(path, "rb") as fh:
            cases = pickle.load(fh)
    else:
        cases = _generate_node_cases()
        if path:
            os.makedirs(cache, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                pickle.dump(cases, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
    return [c for c in cases if _selected(c[0], only)]


def _op_of(name: str, data: bytes) -> str:
    """The operator a case tests: its graph's op when it has one node, else the op its name
    starts with (an expanded test's function body has several)."""
    import onnx
    model = onnx.ModelProto()
    model.ParseFromString(data)
    ops = [n.op_type for n in model.graph.node]
    if len(ops) == 1:
        return ops[0]
    if "/" in name:
        return "(model tests)"
    base = name.removeprefix("test_").split("#")[0]
    for op in sorted(set(ops), key=len, reverse=True):
        if base.replace("_", "").lower().startswith(op.lower()):
            return op
    return ops[0] if ops else "?"


def _input_types(data: bytes) -> set[str]:
    """The element types of a case's graph inputs ("float32", "int64", ...)."""
    import onnx
    model = onnx.ModelProto()
    model.ParseFromString(data)
    out = set()
    for vi in model.graph.input:
        code = vi.type.tensor_type.elem_type
        if code:
            out.add(onnx.helper.tensor_dtype_to_string(code).removeprefix("TensorProto.").lower())
    return out


def _write_operators(path: str, cases: list, results: list, ops: dict[str, str]) -> None:
    """docs/operators.md: every operator Tyche converts with its fusion pattern, the versions of it
    that ONNX defines up to the newest opset the onnx package knows, the input types of the
    conformance cases it passes, and its cases passed/total; then the operators of the conformance
    cases Tyche does not convert."""
    import onnx
    import onnx.defs
    import tyche.onnx
    versions: dict[str, list[int]] = collections.defaultdict(list)
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            versions[schema.name].append(schema.since_version)
    data = {c[0]: c[1] for c in cases}
    passed: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    types: dict[str, set] = collections.defaultdict(set)
    for name, status, _detail, _opset in results:
        passed[ops[name]][status] += 1
        if status == "pass":
            types[ops[name]] |= _input_types(data[name])
    supported = tyche.onnx.supported_ops()
    names = {op for op, _ in supported}
    lines = [
        "# ONNX operators",
        "",
        "Generated by `python3 tests/conformance/onnx_conformance.py --write-operators docs/operators.md`",
        f"(onnx {onnx.__version__}, the newest opset it knows: {onnx.defs.onnx_opset_version()}) from Tyche's op registry",
        "(`src/graph/op_registry.cc`) and a run of the conformance cases ([networks.md](networks.md#onnx-conformance-testsconformance)).",
        "Models below opset 13 are upgraded to 13 on import; each node is read at its operator's newest",
        "version not above the model's opset. *Types* are the input types of the conformance cases that pass;",
        "*conformance* counts the node tests of the operator (the `_expanded` variants count under the",
        "operator they expand) and passes/total.",
        "",
        f"{len(supported)} operators:",
        "",
        "| Operator | Pattern | ONNX versions | Types (passing cases) | Conformance |",
        "|---|---|---|---|---|",
    ]
    for op, pattern in supported:
        c = passed.get(op, collections.Counter())
        total = sum(c.values())
        score = f"{c['pass']}/{total}" if total else "no cases"
        vs = ", ".join(str(v) for v in sorted(versions.get(op, [])))
        lines.append(f"| {op} | {pattern} | {vs} | {', '.join(sorted(types.get(op, ()))) or '-'} | {score} |")
    missing = sorted((op, c) for op, c in passed.items() if op not in names and op != "(model tests)")
    lines += ["", f"The conformance cases' operators Tyche does not convert ({len(missing)}; the reasons are in",
              "`tests/conformance/expected_failures.txt`):", ""]
    lines.append(", ".join(f"{op} ({sum(c.values())})" for op, c in missing) + ".")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _read_expectations(path: str) -> dict[str, str]:
    """{case: reason} from lines "CASE<TAB>REASON" (# comments)."""
    out = {}
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                name, _, reason = line.partition("\t")
                out[name] = reason
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
        if not _selected(name, only):
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


# The light models the ctest runs (the README's test command has a time budget); the others run
# with --light all, as docs/networks.md says.
CTEST_LIGHT = ("bvlc_alexnet", "resnet50", "squeezenet")


def _light_model_cases(only: str, which: str = "all") -> list[Case]:
    """The model zoo's architectures with light weights (data/light): each non-initializer input
    gets onnx's dummy data (arange(n) / n, as its backend test runner feeds them); the expected
    output ships with the model."""
    import onnx
    from onnx import numpy_helper
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    out = []
    for model_path in sorted(glob.glob(os.path.join(root, "light_*.onnx"))):
        model_name = os.path.basename(model_path)[len("light_"):-len(".onnx")]
        name = "light/" + model_name
        if not _selected(name, only) or (which != "all" and model_name not in which.split(",")):
            continue
        with open(model_path, "rb") as fh:
            data = fh.read()
        model = onnx.ModelProto()
        model.ParseFromString(data)
        inits = {t.name for t in model.graph.initializer}
        inputs = []
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim)
            n = int(np.prod(shape))
            inputs.append((np.arange(n).reshape(shape) / n).astype(np.float32))
        outputs = []
        for i in range(len(model.graph.output)):
            t = onnx.TensorProto()
            with open(model_path[:-len(".onnx")] + f"_output_{i}.pb", "rb") as fh:
                t.ParseFromString(fh.read())
            outputs.append(numpy_helper.to_array(t))
        out.append((name, data, inputs, outputs, 2e-3 if "densenet" in name else 1e-3, 1e-7))
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
                if not named or named.group(1) in bind:
                    raise
                if named.group(1) in given:
                    bind[named.group(1)] = given[named.group(1)]
                    continue
                # Tyche names the inputs a computed value comes from: bind those.
                sources = re.search(r"computed from the inputs? ((?:'[^']+'(?:, )?)+)", str(e))
                if sources:
                    names = re.findall(r"'([^']+)'", sources.group(1))
                    if all(k in given and k not in bind for k in names):
                        bind.update({k: given[k] for k in names})
                        continue
                # A value computed from inputs (a window's size, a crop's shape): bind the integer
                # inputs it may come from, as a user would.
                ints = {k: v for k, v in given.items() if k not in bind and np.asarray(v).dtype.kind in "iu"}
                if not ints:
                    raise
                bind.update(ints)
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
        bf16 = want.dtype.name == "bfloat16"  # ml_dtypes' (numpy has none)
        narrow_float = want.dtype.name.startswith(("float8", "float4"))  # ml_dtypes' too
        if narrow_float:  # exact: each is one of at most 256 values
            ok = np.array_equal(have.astype(np.float32), want.astype(np.float32), equal_nan=True)
        elif bf16:
            ok = np.allclose(have.astype(np.float32), want.astype(np.float32), rtol=rtol, atol=atol, equal_nan=True)
        elif want.dtype.kind in "fc":
            ok = np.allclose(have.astype(want.dtype), want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(have.astype(want.dtype), want)
        if not ok:
            diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
            err = float(np.nanmax(diff)) if diff.size else 0.0
            worst = f"output {o} ({want.dtype}): max error {err:.3g}"
            if want.dtype == np.float16 or bf16:
                # The numeric limit: Tyche keeps float32 between the ops of a fused group and
                # rounds to 16 bits once; the reference rounds after every op.
                top = float(np.nanmax(np.abs(want.astype(np.float32))))
                ulp = float(np.spacing(np.float16(top))) if not bf16 else 2.0 ** (np.floor(np.log2(top)) - 7)
                worst += f" = {err / ulp:.1f} ulp of {want.dtype.name} at the output's largest magnitude"
            return name, "wrong", worst, opset
    return name, "pass", "", opset


# Item 2 of the coverage issue: what Tyche refuses by design, each in one line naming the node.
# A case that does not pass and matches none of these is in scope (and counts against the target).
_OUT_OF_SCOPE = [
    ("training", r"ai\.onnx\.preview\.training|training_mode is not supported|^test_(adagrad|adam|momentum|nesterov)"),
    ("sequences", r"Sequence|SplitToSequence|ConcatFromSequence|^test_sequence_|^test_loop13_seq|^test_loop16_seq"),
    ("optionals", r"Optional|type UNDEFINED|^test_optional_|^test_if_opt"),
    ("strings", r"String|RegexFullMatch|TfIdfVectorizer|type STRING|^simple/test_strnorm|^test_(cast|castlike)_.*STRING"),
    ("other domains", r"ai\.onnx\.ml|ai\.onnx\.preview:|only ai\.onnx"),
    ("data-dependent output shapes", r"NonZero|Unique|NonMaxSuppression|Compress|ImageDecoder"),
    ("random outputs", r"Bernoulli|RandomUniform|RandomNormal|Multinomial|^test_dropout_default_mask_ratio|^test_training_dropout"),
]


def _scope(name: str, detail: str) -> str:
    """An empty string for an in-scope case, else "out of scope (WHY)"."""
    for why, pattern in _OUT_OF_SCOPE:
        if re.search(pattern, detail) or re.search(pattern, name):
            return f"out of scope ({why})"
    return ""


def _kind(detail: str) -> str:
    if "opset" in detail and "not supported" in detail:
        return "opset"
    if "unsupported operators" in detail:
        return "operator"
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="run the cases whose name holds this (or any of these, comma-separated)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", default="", help="write {case: [status, detail]} here")
    ap.add_argument("--timeout", type=float, default=600, help="seconds for all cases")
    ap.add_argument("--shard", default="", help="K/N: run the cases whose index is K modulo N (of the sorted list)")
    ap.add_argument("--light", default="all",
                    help="the light model-zoo graphs to run: all, ctest (the ctest's four) or NAME,NAME")
    ap.add_argument("--cache", default="", help="a folder to keep the generated node cases in (per onnx version)")
    ap.add_argument("--expectations", default="", help="fail unless exactly the cases listed in this file fail")
    ap.add_argument("--write-expectations", default="", help="write the cases that do not pass, with why, here")
    ap.add_argument("--write-operators", default="", help="write the operator table (docs/operators.md) here")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case that does not pass")
    ap.add_argument("--models-only", action="store_true")
    ap.add_argument("--nodes-only", action="store_true")
    args = ap.parse_args()
    cases = []
    if not args.models_only:
        cases += _node_cases(args.only, args.cache)
    if not args.nodes_only:
        light = ",".join(CTEST_LIGHT) if args.light == "ctest" else args.light
        cases += _model_cases(args.only) + _light_model_cases(args.only, light)
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        cases = [c for i, c in enumerate(sorted(cases, key=lambda c: c[0])) if i % n == k]
    # Forked workers start at once (the parent holds no threads). A worker that crashes is
    # replaced by the pool; its case never reports back and is counted as crashed at the deadline.
    results = []
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        pending = [(case[0], pool.apply_async(_run, (case,))) for case in cases]
        deadline = time.monotonic() + args.timeout
        for name, result in pending:
            try:
                results.append(result.get(timeout=max(0.1, deadline - time.monotonic())))
            except multiprocessing.TimeoutError:
                results.append((name, "crashed", f"no result within {args.timeout} s (crashed or hung)", 0))
    results.sort()
    ops = {c[0]: _op_of(c[0], c[1]) for c in cases}
    counts = collections.Counter(r[1] for r in results)
    by_opset: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    by_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    kinds = collections.Counter()
    for name, status, detail, opset in results:
        by_opset[opset][status] += 1
        by_op[ops[name]][status] += 1
        if status != "pass" and args.verbose:
            print(f"{status:7s} {name}: {detail}")
        if status == "refused":
            kinds[_kind(detail)] += 1
    print("passed/total per operator: " + ", ".join(
        f"{op} {c['pass']}/{sum(c.values())}" for op, c in sorted(by_op.items())))
    print("per opset stamped on the model: " + ", ".join(
        f"{opset}: {c['pass']}/{sum(c.values())}" for opset, c in sorted(by_opset.items())))
    print(f"{len(results)} cases: {counts['pass']} pass, {counts['wrong']} wrong, {counts['refused']} refused, "
          f"{counts['crashed']} crashed; refused for: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    out_of_scope = collections.Counter(_scope(n, d)[14:-1] for n, s, d, _ in results if s != "pass" and _scope(n, d))
    node = [r for r in results if "/" not in r[0] and (r[1] == "pass" or not _scope(r[0], r[2]))]
    node_pass = sum(r[1] == "pass" for r in node)
    print(f"out of scope: {sum(out_of_scope.values())} (" + ", ".join(f"{k} {v}" for k, v in out_of_scope.most_common())
          + f"); in-scope node tests: {node_pass} of {len(node)} pass"
          + (f" ({100.0 * node_pass / len(node):.1f} %)" if node else ""))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({n: [s, d] for n, s, d, _ in results}, fh, indent=0, sort_keys=True)
    if args.write_operators:
        _write_operators(args.write_operators, cases, results, ops)
    if args.write_expectations:
        with open(args.write_expectations, "w") as fh:
            import onnx
            fh.write(f"# onnx {onnx.__version__}\n"
                     "# The ONNX conformance cases Tyche does not pass, each with the reason it gave\n"
                     "# (tests/conformance/onnx_conformance.py --write-expectations writes this file;\n"
                     "# \"out of scope (WHY)\" marks what Tyche refuses by design, the rest counts against the target;\n"
                     "# the ctest Conformance.OnnxNodeAndModelTests fails when a case listed here passes or one not listed fails).\n")
            for name, status, detail, _ in results:
                if status != "pass":
                    scope = _scope(name, detail)
                    fh.write(f"{name}\t{scope + ': ' if scope else ''}{status}: {detail}\n")
    if not args.expectations:
        return 0
    import onnx
    with open(args.expectations) as fh:
        written_for = next((line.split()[-1] for line in fh if line.startswith("# onnx ")), "?")
    if written_for != onnx.__version__:
        print(f"{args.expectations} lists onnx {written_for}'s cases, this is onnx {onnx.__version__} "
              "(scripts/install_python_deps.sh installs the one it lists)")
        return 1
    expected = _read_expectations(args.expectations)
    seen = {name for name, *_ in results}
    failed = [f"{name}: {status}: {detail}" for name, status, detail, _ in results
              if status != "pass" and name not in expected]
    fixed = [name for name, status, _, _ in results if status == "pass" and name in expected]
    for line in failed:
        print(f"FAILS, and is not listed in {args.expectations}: {line}")
    for name in fixed:
        print(f"PASSES, so remove it from {args.expectations}: {name}")
    partial = args.only or args.nodes_only or args.models_only or args.light != "all" or args.shard
    missing = [] if partial else sorted(set(expected) - seen)
    for name in missing:
        print(f"LISTED, but there is no such case: {name}")
    if failed or fixed or missing:
        print(f"{len(failed)} unexpected failures, {len(fixed)} listed cases passing, {len(missing)} unknown names "
              "(after a fix: --write-expectations rewrites the list)")
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
