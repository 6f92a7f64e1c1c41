"""Apache TVM MetaSchedule as the suite's baseline (pip apache-tvm 0.27, apache-tvm-ffi 0.1.14.x).

Two uses:

* a command, run by the suite in its own process so that TVM's tuning has its own wall time and
  threads::

      python3 bench/suitelib/tvm_driver.py tune --family GMM --params 1,128,128,128 --trials 64 \\
          --work-dir DIR --out DIR/result.json [--threads 2] [--mcpu znver3] [--seed 0]

  builds the family with TVM's own TE catalogue (tvm.s_tir.meta_schedule.testing.te_workload) at
  Tyche's parameter tuple, tunes it with ``ms.tune_tir`` (evolutionary search, XGBoost cost model,
  local builder and runner, TVM's defaults), exports the best kernel to DIR/best.so and writes a
  JSON summary (see ``tune``). Progress lines on stderr start with "[tvm]"; a failure prints one
  line to stderr and exits non-zero.

* a module for the measuring phase: ``TvmKernel`` loads the exported library and times it with
  TVM's own time_evaluator; ``tvm_arguments`` puts Tyche's inputs and outputs in the PrimFunc's
  argument order; ``available`` says whether TVM MetaSchedule can run here.

TVM is imported only inside functions, so importing this module does not need TVM.

Notes on this TVM build (found on the suite's Zen 3 host):

* apache-tvm 0.27.0.post1 was compiled against apache-tvm-ffi 0.1.14; with apache-tvm-ffi 0.1.15.x
  (what ``pip install apache-tvm`` picks, as it only asks for >=0.1.14.post0) ``tvm.ir.save_json``
  of any IR node segfaults in ``tvm::ffi::ToJSONGraph`` (reflection ABI change). MetaSchedule's
  MutateComputeLocation/MutateParallel call SaveJSON on the module when a TuneContext is
  initialized, so ``tune_tir`` dies at once. Fix: ``pip install apache-tvm-ffi==0.1.14.post1``.
  ``available()`` checks this in a child process.
* MetaSchedule's default build function imports ``tvm.s_tir.tensor_intrin`` in each builder worker,
  and the builder starts fresh workers for every batch. That import parses ~250 TVMScript
  functions, each calling ``inspect.stack()``, and takes 40-100 s on a 2-vCPU host: longer than the
  builder's 30 s timeout, so every candidate failed with "LocalBuilder: Timeout". The driver passes
  the same build function without that import (the LLVM design space tensorizes nothing), and
  imports the intrinsics once in the main process before the tuning clock starts (``setup_s``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

FAMILIES = ("GMM", "C1D", "C2D", "C3D", "GRP", "DIL", "DEP", "T2D", "CAP", "NRM", "SFM", "CBR", "TBG", "DENSE_RELU")

# Tyche's parameter tuples (src/workloads/presets.cc, make_families()).
PARAM_NAMES = {
    "GMM": ("B", "N", "M", "K"),
    "C1D": ("N", "L", "CI", "CO", "K", "stride", "pad"),
    "C2D": ("N", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "C3D": ("N", "D", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "GRP": ("N", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "DIL": ("N", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "DEP": ("N", "H", "W", "C", "K", "stride", "pad"),
    "T2D": ("N", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "CAP": ("N", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "NRM": ("B", "M", "N"),
    "SFM": ("M", "N"),
    "CBR": ("N", "H", "W", "CI", "CO", "K", "stride", "pad"),
    "TBG": ("B", "L", "H", "D"),
    "DENSE_RELU": ("N", "M", "K"),
}
GROUPS = 4  # GRP
DILATION = 2  # DIL
CAPSULE = 4  # CAP

# Where TVM's argument order differs from Tyche's: the position in Tyche's input list of each TVM
# input. CBR: Tyche (I, W, bias, scale, offset), TVM's conv2d_nhwc_bn_relu (data, kernel, bias,
# bn_offset, bn_scale). Every other family takes the inputs in Tyche's order; each has one output.
_INPUT_ORDER = {"CBR": (0, 1, 2, 4, 3)}


class DriverError(Exception):
    """A failure the command reports as one line."""


def _log(msg: str) -> None:
    print(f"[tvm] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# Workloads


def _out_size(n: int, k: int, stride: int, pad: int, dilation: int = 1) -> int:
    return (n + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def check_params(family: str, params) -> list[int]:
    """Tyche's tuple for `family` as ints, with the checks Tyche makes (one-line DriverError)."""
    if family not in PARAM_NAMES:
        raise DriverError(f"unknown family '{family}' (one of {', '.join(FAMILIES)})")
    names = PARAM_NAMES[family]
    try:
        p = [int(x) for x in params]
    except (TypeError, ValueError):
        raise DriverError(f"{family}: parameters must be integers, got {params!r}") from None
    if len(p) != len(names):
        raise DriverError(f"{family} takes {len(names)} parameters ({','.join(names)}), got {len(p)}")
    for name, v in zip(names, p):
        if name == "pad":
            if v < 0:
                raise DriverError(f"{family}: pad must be >= 0, got {v}")
        elif v <= 0:
            raise DriverError(f"{family}: {name} must be positive, got {v}")
    conv_like = {"C1D": (1, 1, 4, 5, 6), "C2D": (2, 1, 5, 6, 7), "GRP": (2, 1, 5, 6, 7), "DIL": (2, 1, 5, 6, 7),
                 "CBR": (2, 1, 5, 6, 7), "CAP": (2, 1, 5, 6, 7), "C3D": (3, 1, 6, 7, 8), "DEP": (2, 1, 4, 5, 6)}
    if family in conv_like:
        spatial, first, ki, si, pi = conv_like[family]
        dil = DILATION if family == "DIL" else 1
        for d in range(first, first + spatial):
            if _out_size(p[d], p[ki], p[si], p[pi], dil) <= 0:
                raise DriverError(f"{family}: kernel {p[ki]} (dilation {dil}) does not fit input {p[d]} with padding {p[pi]}")
    if family == "GRP" and (p[3] % GROUPS or p[4] % GROUPS):
        raise DriverError(f"GRP: channels {p[3]} and {p[4]} are not divisible by {GROUPS} groups")
    if family == "T2D" and p[7] > p[5] - 1:
        raise DriverError(f"T2D: transposed conv padding {p[7]} exceeds kernel size - 1 = {p[5] - 1}")
    return p


def te_tensors(family: str, params, fast_exp: bool = False):
    """TVM's TE definition of `family` at Tyche's tuple: the tensors (inputs..., output). With
    ``fast_exp`` (SFM only), TOPI's fast_softmax: exp as the polynomial ``fast_exp`` that TVM's
    FastMath pass substitutes, instead of libm's expf per element."""
    from tvm.s_tir.meta_schedule.testing import te_workload as tw

    p = check_params(family, params)
    if fast_exp:
        if family != "SFM":
            raise DriverError(f"--fast-exp applies to SFM only, not {family}")
        from tvm import te, topi

        a = te.placeholder((p[0], p[1]), name="A")
        return a, topi.nn.fast_softmax(a, axis=1)
    if family == "DENSE_RELU":
        return tw.matmul_relu(p[0], p[1], p[2])  # Tyche's (N, M, K)
    fn = tw.CONFIGS[family][0]
    if family == "GRP":
        return fn(*p, 1, GROUPS)  # conv2d_nhwc(..., dilation=1, groups=4)
    if family == "DIL":
        return fn(*p, DILATION)  # conv2d_nhwc(..., dilation=2)
    if family == "CAP":
        return fn(*p, CAPSULE)
    return fn(*p)


def layout_free_params(family: str) -> list[int]:
    """TVM's parameter positions of `family`'s weights. MetaSchedule's RewriteLayout may store them
    in the order its kernel reads them, laid out once when a model loads: the same freedom Tyche's
    presets give their weights (constant_inputs, src/workloads/presets.cc) and oneDNN's baseline
    takes (weights reordered once, outside the timing). Matmuls' and reductions' operands are
    activations."""
    family = family.upper()
    if family in ("GMM", "TBG", "NRM", "SFM"):
        return []
    return [1, 2, 3, 4] if family == "CBR" else [1]


def prim_func(family: str, params, fast_exp: bool = False):
    """The PrimFunc TVM tunes for `family` (te.create_prim_func of ``te_tensors``), its weights
    marked ``layout_free_buffers``."""
    from tvm import te

    func = te.create_prim_func(list(te_tensors(family, params, fast_exp)))
    free = layout_free_params(family)
    return func.with_attr("layout_free_buffers", free) if free else func


_PARAM_RE = r'(\w+): T\.Buffer\(\(([^)]*)\), "(\w+)"\)'


def _signature(script: str) -> list[tuple[str, list[int], str]]:
    """(name, shape, dtype) of each parameter of the module's ``main``, from its TVMScript."""
    import re

    head = re.search(r"def main\((.*)\):", script)
    if head is None:
        raise DriverError("no main in the tuned module")
    return [(n, [int(x) for x in shape.split(",") if x.strip()], dt) for n, shape, dt in re.findall(_PARAM_RE, head.group(1))]


def _preproc_nests(script: str) -> dict[str, str]:
    """The root-level loop nests of ``main`` that hold a layout-rewrite block, by the name of the
    buffer the block writes: the statement's text, re-indented to a function body's level."""
    import re

    lines = script.splitlines()
    nests = {}
    for i, line in enumerate(lines):
        if '"meta_schedule.layout_rewrite_preproc"' not in line:
            continue
        start = i
        while not re.match(r"^ {8}for ", lines[start]):  # the enclosing root-level loop
            start -= 1
            if start < 0 or not lines[start].startswith(" " * 8):
                raise DriverError("a layout-rewrite block outside a root-level loop nest")
        end = start + 1
        while end < len(lines) and lines[end].startswith(" " * 9):
            end += 1
        body = "\n".join(lines[start:end])
        written = re.search(r"T\.writes\((\w+)\[", body)
        if written is None:
            raise DriverError("a layout-rewrite block without a written buffer")
        nests[written.group(1)] = body.replace('T.sblock_attr({"meta_schedule.layout_rewrite_preproc": True})', "")
    return nests


def split_layout_rewrites(mod):
    """A tuned module whose kernel reads packed weights, split as a model runs it: ``main`` takes
    the packed weights (RemoveWeightLayoutRewriteBlock: what MetaSchedule's builder measured in
    tuning) and ``layout_rewrite_<i>(weight, packed)`` fills parameter i's packed copy, run once
    (what Relax's SplitLayoutRewritePreproc does for a model). Returns (module, rewrites) with
    rewrites [{"arg", "entry", "shape", "dtype"}]; a module that packs nothing comes back as is."""
    import tvm
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    full = mod.script()
    nests = _preproc_nests(full)
    if not nests:
        return mod, []
    before = _signature(full)
    split = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    after = _signature(split.script())
    funcs = {"main": split["main"]}
    rewrites = []
    for i, ((name, shape, dtype), (packed, packed_shape, _)) in enumerate(zip(before, after)):
        if packed == name:
            continue
        if packed not in nests:
            raise DriverError(f"parameter {name} became {packed} without a layout-rewrite block that writes it")
        entry = f"layout_rewrite_{i}"
        src = ("# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n@I.ir_module\nclass Module:\n"
               f"    @T.prim_func(s_tir=True)\n"
               f"    def {entry}({name}: T.Buffer(({', '.join(map(str, shape))},), \"{dtype}\"), "
               f"{packed}: T.Buffer(({', '.join(map(str, packed_shape))},), \"{dtype}\")):\n"
               f"        T.func_attr({{\"tirx.noalias\": True}})\n{nests[packed]}\n")
        funcs[entry] = tvm.script.from_source(src)[entry].with_attr("global_symbol", entry)
        rewrites.append({"arg": i, "entry": entry, "shape": packed_shape, "dtype": dtype})
    if len(rewrites) != len(nests):
        raise DriverError(f"{len(nests)} layout-rewrite blocks but {len(rewrites)} rewritten parameters")
    return tvm.IRModule(funcs), rewrites


def tvm_arguments(family: str, tyche_inputs, tyche_outputs) -> list:
    """Tyche's inputs and outputs (in Tyche's order) rearranged into TVM's argument order."""
    family = family.upper()
    if family not in PARAM_NAMES:
        raise ValueError(f"unknown family '{family}'")
    inputs, outputs = list(tyche_inputs), list(tyche_outputs)
    order = _INPUT_ORDER.get(family)
    if order is not None:
        if len(inputs) != len(order):
            raise ValueError(f"{family}: expected {len(order)} inputs, got {len(inputs)}")
        inputs = [inputs[i] for i in order]
    return inputs + outputs


# ----------------------------------------------------------------------------------------------
# Availability


def _ffi_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("apache-tvm-ffi")
    except Exception:  # noqa: BLE001
        return None


_SELF_TEST = (
    "import tvm, tvm.s_tir.meta_schedule, xgboost, psutil, cloudpickle\n"
    "assert tvm.runtime.enabled('llvm'), 'this TVM build has no LLVM backend'\n"
    "tvm.ir.save_json(tvm.tirx.IntImm('int32', 1))\n"
)


def tvm_version() -> str:
    import tvm

    return f"{tvm.__version__} (apache-tvm-ffi {_ffi_version()})"


def available() -> str | None:
    """None if TVM MetaSchedule can be used here, else the reason (one line)."""
    import shutil
    import subprocess

    try:
        import tvm  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"cannot import tvm (pip install apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1): {e}"
    for mod in ("xgboost", "psutil", "cloudpickle"):
        try:
            __import__(mod)
        except Exception:  # noqa: BLE001
            return f"TVM MetaSchedule needs the Python package {mod} (pip install {mod})"
    if not (shutil.which("g++") or shutil.which("gcc") or shutil.which("cc")):
        return "no C compiler (g++/gcc/cc) to link TVM's kernels into a shared library"
    # A mismatched apache-tvm-ffi segfaults in SaveJSON, so check in a child process.
    try:
        r = subprocess.run([sys.executable, "-c", _SELF_TEST], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "TVM self-test timed out"
    if r.returncode != 0:
        ffi = _ffi_version()
        if r.returncode < 0 or "Segfault" in r.stderr:
            return (f"TVM crashes serializing IR (apache-tvm-ffi {ffi} does not match apache-tvm {tvm.__version__}); "
                    "pip install apache-tvm-ffi==0.1.14.post1")
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return f"TVM self-test failed: {lines[-1] if lines else f'exit {r.returncode}'}"
    return None


# ----------------------------------------------------------------------------------------------
# Tuning


def _build_without_tensor_intrin(mod, target, _params):
    """MetaSchedule's default_build minus ``import tvm.s_tir.tensor_intrin`` (see module notes)."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def host_cpu() -> str:
    """LLVM's name for the host CPU (e.g. "znver3")."""
    from tvm.target import codegen

    return str(codegen.llvm_get_system_cpu())


def make_target(mcpu: str | None, threads: int):
    import tvm

    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu or host_cpu(), "num-cores": int(threads)})


def _make_recorder(t0_box: list, history: list, flop: float | None):
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class Recorder(PyMeasureCallback):
        """After each measured batch: elapsed seconds, trials so far, best mean run time so far."""

        def __init__(self):
            super().__init__()
            self.trials = 0
            self.valid = 0
            self.best = None

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            self.trials += len(measure_candidates)
            for b, r in zip(builder_results, runner_results):
                if b.error_msg is not None or r.error_msg is not None or not r.run_secs:
                    continue
                secs = [float(s) for s in r.run_secs]
                mean = sum(secs) / len(secs)
                if mean >= 1e9:  # MetaSchedule's marker of a failed run
                    continue
                self.valid += 1
                if self.best is None or mean < self.best:
                    self.best = mean
            elapsed = time.monotonic() - t0_box[0]
            history.append({"trials": self.trials, "best_seconds": self.best, "elapsed_s": elapsed})
            best = "none" if self.best is None else f"{self.best * 1e6:.1f} us"
            if self.best is not None and flop:
                best += f" ({flop / self.best / 1e9:.2f} GFLOP/s)"
            _log(f"{self.trials} trials ({self.valid} ran), best {best}, {elapsed:.0f} s")

    return Recorder()


def tune(family: str, params, trials: int, work_dir: str, out: str, threads: int | None = None,
         mcpu: str | None = None, seed: int = 0, fast_exp: bool = False) -> dict:
    """Tune with MetaSchedule, export the best kernel to WORK_DIR/best.so, write and return the summary:
    {family, params, trials (measured), wall_s (tune_tir alone), best_seconds (database's best record,
    mean of its run_secs), history [{trials, best_seconds, elapsed_s}], times {profiler scope: s},
    library, arg_names, tvm_version, plus setup_s, valid_trials, target, runner}."""
    family = family.upper()
    params = check_params(family, params)
    if trials <= 0:
        raise DriverError(f"--trials must be positive, got {trials}")
    if fast_exp and family != "SFM":
        raise DriverError(f"--fast-exp applies to SFM only, not {family}")
    threads = int(threads or os.cpu_count() or 1)
    if threads <= 0:
        raise DriverError(f"--threads must be positive, got {threads}")
    os.environ["TVM_NUM_THREADS"] = str(threads)  # the runner workers' thread pool (TVM's default: cpus/2)

    t_setup = time.monotonic()
    import tvm
    import tvm.s_tir.tensor_intrin  # noqa: F401  (TuneContext imports it; keep it off the tuning clock)
    from tvm.s_tir import meta_schedule as ms

    if __name__ != "__main__":  # builder workers must unpickle the build function without this module
        import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])

    work_dir = os.path.abspath(work_dir)
    os.makedirs(work_dir, exist_ok=True)
    for stale in ("database_workload.json", "database_tuning_record.json"):  # no records from an earlier run
        path = os.path.join(work_dir, stale)
        if os.path.exists(path):
            os.remove(path)
    try:
        func = prim_func(family, params, fast_exp)
    except DriverError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DriverError(f"{family} {params}: TVM cannot build the workload: {str(e).strip().splitlines()[-1]}") from e
    arg_names = [str(p.name) for p in func.params]
    mod = tvm.IRModule({"main": func})
    target = make_target(mcpu, threads)
    try:
        from tvm.s_tir.analysis import estimate_tir_flops

        flop = float(estimate_tir_flops(mod))
    except Exception:  # noqa: BLE001
        flop = None
    setup_s = time.monotonic() - t_setup

    history: list[dict] = []
    t0_box = [time.monotonic()]
    recorder = _make_recorder(t0_box, history, flop)
    builder = ms.builder.LocalBuilder(max_workers=threads, f_build=_build_without_tensor_intrin)
    callbacks = ms.MeasureCallback.create("default") + [recorder]
    per_iter = min(64, trials)
    _log(f"tuning {family} {','.join(map(str, params))} for {trials} trials on {target} ({threads} threads)")
    with ms.Profiler() as profiler:
        t0_box[0] = time.monotonic()
        try:
            db = ms.tune_tir(mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=per_iter,
                             builder=builder, measure_callbacks=callbacks, num_tuning_cores=threads, seed=seed)
        except Exception as e:  # noqa: BLE001
            lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
            raise DriverError(f"tune_tir failed: {lines[-1] if lines else type(e).__name__}") from e
        wall = time.monotonic() - t0_box[0]
    times = {str(k): float(v) for k, v in profiler.get().items()}

    record = db.query_tuning_record(mod, target, "main")
    best_seconds = None
    if record is not None and record.run_secs:
        secs = [float(s) for s in record.run_secs]
        best_seconds = sum(secs) / len(secs)
    if best_seconds is None or best_seconds >= 1e9:
        raise DriverError(f"{family}: none of the {recorder.trials} measured candidates built and ran correctly "
                          f"(see {work_dir}/logs)")
    sch = ms.tir_integration.compile_tir(db, mod, target)
    if sch is None:
        raise DriverError(f"{family}: the database has no schedule for the workload")
    library = os.path.join(work_dir, "best.so")
    try:
        split, rewrites = split_layout_rewrites(sch.mod)
        lib = tvm.compile(split, target=target)
        lib.export_library(library)
    except DriverError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DriverError(f"compiling TVM's best schedule failed: {str(e).strip().splitlines()[-1]}") from e
    with open(layout_rewrites_path(library), "w") as f:
        json.dump(rewrites, f)
    with open(os.path.join(work_dir, "best_schedule.py"), "w") as f:
        f.write(sch.mod.script())

    result = {
        "family": family,
        "params": params,
        "fast_exp": fast_exp,
        "seed": seed,
        "trials": recorder.trials,
        "valid_trials": recorder.valid,
        "wall_s": wall,
        "setup_s": setup_s,
        "best_seconds": best_seconds,
        "history": history,
        "times": times,
        "library": library,
        "layout_rewrites": rewrites,
        "arg_names": arg_names,
        "target": str(target),
        "runner": "LocalRunner, EvaluatorConfig defaults (number=3, repeat=1, min_repeat_ms=100, no cache flush)",
        "tvm_version": tvm_version(),
    }
    out_dir = os.path.dirname(os.path.abspath(out))
    os.makedirs(out_dir, exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, out)
    gf = f" ({flop / best_seconds / 1e9:.2f} GFLOP/s)" if flop else ""
    _log(f"done: {recorder.trials} trials in {wall:.0f} s, best {best_seconds * 1e6:.1f} us{gf}")
    return result


# ----------------------------------------------------------------------------------------------
# Measuring


def layout_rewrites_path(library: str) -> str:
    """Where ``tune`` says which of the library's parameters ``main`` takes packed (a JSON list of
    split_layout_rewrites' entries; no file: none)."""
    return os.path.splitext(library)[0] + ".layout_rewrites.json"


class TvmKernel:
    """An exported TVM kernel (``tune``'s best.so), run and timed through TVM's runtime.

    Weights that ``main`` takes packed (``layout_rewrites_path``) are laid out by the library's
    ``layout_rewrite_<i>`` once in ``bind``, as a model does at load, so they are never timed.

    ``bind(arrays)`` takes numpy arrays in TVM's argument order (``tvm_arguments``) and wraps them
    once: 64-byte-aligned C-contiguous arrays are shared with TVM (the kernel writes the output
    array in place), others are copied to TVM arrays and the outputs copied back after ``run``.
    ``window(calls)`` times ``calls`` back-to-back calls with TVM's time_evaluator (number=calls,
    repeat=1; it makes one untimed call first) and returns the mean seconds per call. ``threads``
    sets TVM_NUM_THREADS for the process's TVM thread pool (it only takes effect before the first
    TVM kernel of the process runs).
    """

    def __init__(self, library: str, arg_names=None, num_outputs: int = 1, entry: str = "main",
                 threads: int | None = None):
        # TVM's runtime reads TVM_NUM_THREADS when its thread pool starts (at the first parallel
        # kernel in the process); unset, it uses half the logical CPUs on x86 (1 thread on a 2-vCPU
        # host), which halves a parallel kernel's speed. Default: os.cpu_count(), as in ``tune``.
        if threads is not None or "TVM_NUM_THREADS" not in os.environ:
            os.environ["TVM_NUM_THREADS"] = str(int(threads or os.cpu_count() or 1))
        import tvm

        if not os.path.exists(library):
            raise RuntimeError(f"no TVM library at {library}")
        self._tvm = tvm
        self.library = library
        self.arg_names = list(arg_names) if arg_names is not None else None
        self.num_outputs = num_outputs
        self._module = tvm.runtime.load_module(library)
        self._entry = entry
        self._func = self._module[entry]
        self._device = tvm.cpu(0)
        self._tensors = None
        self._copy_back: list = []
        self._evaluators: dict = {}
        rewrites = layout_rewrites_path(library)
        self.layout_rewrites = json.load(open(rewrites)) if os.path.exists(rewrites) else []

    def bind(self, arrays) -> None:
        import numpy as np

        tvm = self._tvm
        arrays = list(arrays)
        if self.arg_names is not None and len(arrays) != len(self.arg_names):
            raise ValueError(f"TVM kernel takes {len(self.arg_names)} arguments ({', '.join(self.arg_names)}), "
                             f"got {len(arrays)}")
        tensors, copy_back = [], []
        first_output = len(arrays) - self.num_outputs
        for i, a in enumerate(arrays):
            if not isinstance(a, np.ndarray):
                raise ValueError(f"argument {i} is not a numpy array")
            shared = a.flags.c_contiguous and a.ctypes.data % 64 == 0 and a.flags.writeable
            if shared:
                t = tvm.runtime.from_dlpack(a)
            else:
                t = tvm.runtime.tensor(np.ascontiguousarray(a), self._device)
                if i >= first_output:
                    copy_back.append((a, t))
            tensors.append(t)
        for r in self.layout_rewrites:
            packed = tvm.runtime.empty(tuple(r["shape"]), r["dtype"], self._device)
            self._module[r["entry"]](tensors[r["arg"]], packed)
            tensors[r["arg"]] = packed
        self._tensors, self._copy_back = tensors, copy_back
        self._arrays = arrays  # keep the shared numpy buffers alive

    def run_bound(self) -> None:
        if self._tensors is None:
            raise RuntimeError("TvmKernel.run_bound before bind")
        self._func(*self._tensors)
        for a, t in self._copy_back:
            a[...] = t.numpy()

    def run(self, arrays=None) -> None:
        """Run once on `arrays` (inputs then outputs, TVM's order; default: the bound ones)."""
        if arrays is not None:
            self.bind(arrays)
        self.run_bound()

    def window(self, calls: int) -> float:
        if self._tensors is None:
            raise RuntimeError("TvmKernel.window before bind")
        calls = max(1, int(calls))
        ev = self._evaluators.get(calls)
        if ev is None:
            ev = self._module.time_evaluator(self._entry, self._device, number=calls, repeat=1, min_repeat_ms=0)
            self._evaluators[calls] = ev
        return float(ev(*self._tensors).mean)


# ----------------------------------------------------------------------------------------------
# Command line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tvm_driver.py", description="Tune a Tyche family with TVM MetaSchedule.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune", help="tune one workload and export the best kernel")
    t.add_argument("--family", required=True, help="one of " + " ".join(FAMILIES))
    t.add_argument("--params", required=True, help="Tyche's parameter tuple, comma separated")
    t.add_argument("--trials", type=int, required=True)
    t.add_argument("--work-dir", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--threads", type=int, default=None, help="num-cores of the target (default: os.cpu_count())")
    t.add_argument("--mcpu", default=None, help="LLVM CPU name (default: the host's)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--fast-exp", action="store_true", help="SFM: TOPI's fast_softmax (TVM's FastMath exp)")
    sub.add_parser("available", help="say whether TVM MetaSchedule can run here")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "available":
            why = available()
            print(why or "ok")
            return 1 if why else 0
        params = [x for x in a.params.replace(" ", "").split(",") if x != ""]
        tune(a.family, params, a.trials, a.work_dir, a.out, a.threads, a.mcpu, a.seed, a.fast_exp)
        return 0
    except DriverError as e:
        print(f"tvm_driver: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("tvm_driver: interrupted", file=sys.stderr, flush=True)
        return 130
    except Exception as e:  # noqa: BLE001
        lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
        print(f"tvm_driver: {type(e).__name__}: {lines[-1] if lines else ''}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
