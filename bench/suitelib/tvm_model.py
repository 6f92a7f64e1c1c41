"""Apache TVM as a whole-model baseline: a model of scripts/make_models.py tuned with Relax and
MetaSchedule (pip apache-tvm 0.27, as tvm_driver.py says), then run by TVM's Relax VM.

    python3 bench/suitelib/tvm_model.py tune --model mobilenetv2 --trials 3000 --work-dir DIR \\
        [--threads 2] [--mcpu znver5] [--seed 0]

imports the model with TVM's own ONNX frontend (weights bound as constants), lowers it with
Relax's zero pipeline (legalization, TVM's operator fusion), tunes every fused function with
``tune_relax`` (the gradient task scheduler, evolutionary search, XGBoost cost model, local
builder and runner, TVM's defaults, ``--trials`` for all tasks together), applies the database,
compiles the module and exports it to DIR/model.so, and writes DIR/result.json: {model, trials,
tasks, wall_s (tune_relax alone), estimated_latency_ms (the sum over tasks of weight x best
measured time), setup_s, compile_s, library, input_names, target, tvm_version}.
Progress lines on stderr start with "[tvm]"; a failure prints one line and exits non-zero.

``TvmModel(DIR)`` loads what ``tune`` wrote, for bench_models.py: ``run(inputs)`` takes
{name: array} and returns the outputs as a list of numpy arrays.

This is tuned from TVM's own import of the same file: TVM's fusion and layouts (NCHW, no weight
prepacking: ``cpu_weight_prepack`` changes the deployed interface), not Tyche's.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))

import tvm_driver  # noqa: E402  (the build function without tensor intrinsics, the target, availability)

_log = tvm_driver._log


class ModelError(Exception):
    """A failure the command reports as one line."""


def tune(model: str, trials: int, work_dir: str, threads: int | None = None, mcpu: str | None = None,
         seed: int = 0) -> dict:
    if trials <= 0:
        raise ModelError(f"--trials must be positive, got {trials}")
    threads = int(threads or os.cpu_count() or 1)
    os.environ["TVM_NUM_THREADS"] = str(threads)
    reason = tvm_driver.available()
    if reason:
        raise ModelError(reason)

    t_setup = time.monotonic()
    import make_models
    import tvm
    import tvm.s_tir.tensor_intrin  # noqa: F401  (off the tuning clock, as in tvm_driver.tune)
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.s_tir import meta_schedule as ms

    import cloudpickle

    cloudpickle.register_pickle_by_value(tvm_driver)  # builder workers unpickle its build function by value

    try:
        proto = make_models.build_model(model)
    except KeyError as e:
        raise ModelError(f"unknown model '{model}'") from e
    work = pathlib.Path(work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    for stale in ("database_workload.json", "database_tuning_record.json"):  # no records from an earlier run
        (work / stale).unlink(missing_ok=True)
    input_names = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    mod = from_onnx(proto, keep_params_in_input=False)
    target = tvm_driver.make_target(mcpu, threads)
    with target:
        mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings(),
                                        relax.get_pipeline("zero")])(mod)
    tasks = ms.relax_integration.extract_tasks(mod, target)
    setup_s = time.monotonic() - t_setup
    _log(f"{model}: {len(tasks)} tasks, {trials} trials on {target} ({threads} threads)")

    builder = ms.builder.LocalBuilder(max_workers=threads, f_build=tvm_driver._build_without_tensor_intrin)
    history: list[dict] = []
    t0 = [time.monotonic()]
    recorder = tvm_driver._make_recorder(t0, history, None)
    callbacks = ms.MeasureCallback.create("default") + [recorder]
    t0[0] = time.monotonic()
    try:
        db = ms.relax_integration.tune_relax(mod, {}, target, str(work), max_trials_global=trials, builder=builder,
                                             measure_callbacks=callbacks, seed=seed)
    except Exception as e:  # noqa: BLE001
        lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
        raise ModelError(f"tune_relax failed: {lines[-1] if lines else type(e).__name__}") from e
    wall = time.monotonic() - t0[0]

    t = time.monotonic()
    # The tuner's view of the model: the sum over tasks of weight x best measured mean time.
    estimate, estimated = 0.0, 0
    for task in tasks:
        record = db.query_tuning_record(task.dispatched[0], target, "main")
        secs = [float(x) for x in record.run_secs] if record is not None and record.run_secs else []
        if secs and sum(secs) / len(secs) < 1e9:
            estimate += task.weight * sum(secs) / len(secs)
            estimated += 1
    del db  # tune_relax wrote it to work_dir, where MetaScheduleApplyDatabase reads it
    with target:
        mod = relax.transform.MetaScheduleApplyDatabase(str(work))(mod)
    library = work / "model.so"
    tvm.compile(mod, target=target).export_library(str(library))
    compile_s = time.monotonic() - t
    result = {"model": model, "trials": recorder.trials, "valid_trials": recorder.valid, "tasks": len(tasks),
              "wall_s": wall, "estimated_latency_ms": estimate * 1e3, "tasks_estimated": estimated,
              "setup_s": setup_s, "compile_s": compile_s, "library": str(library),
              "input_names": input_names, "target": str(target), "history": history,
              "tvm_version": f"{tvm.__version__} (apache-tvm-ffi {tvm_driver._ffi_version()})"}
    (work / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    _log(f"done: {recorder.trials} trials in {wall:.0f} s, compiled in {compile_s:.1f} s -> {library}")
    return result


class TvmModel:
    """A model ``tune`` exported, run by TVM's Relax VM on TVM_NUM_THREADS threads (set here before
    TVM's thread pool starts: ``threads``, default os.cpu_count())."""

    def __init__(self, work_dir: str, threads: int | None = None):
        os.environ["TVM_NUM_THREADS"] = str(int(threads or os.cpu_count() or 1))
        import tvm
        from tvm import relax

        work = pathlib.Path(work_dir)
        result = json.loads((work / "result.json").read_text())
        self.result = result
        self._tvm = tvm
        self._device = tvm.cpu(0)
        self._vm = relax.VirtualMachine(tvm.runtime.load_module(str(work / "model.so")), self._device)
        self.input_names = result["input_names"]

    def run(self, inputs: dict) -> list:
        tvm = self._tvm
        args = [tvm.runtime.tensor(inputs[n], self._device) for n in self.input_names]
        out = self._vm["main"](*args)
        outs = out if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else [out]
        return [o.numpy() for o in outs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tvm_model.py", description="Tune a whole model with TVM Relax + MetaSchedule.")
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tune")
    t.add_argument("--model", required=True, help="a name of scripts/make_models.py")
    t.add_argument("--trials", type=int, required=True)
    t.add_argument("--work-dir", required=True)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--mcpu", default=None)
    t.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    try:
        tune(a.model, a.trials, a.work_dir, a.threads, a.mcpu, a.seed)
    except (ModelError, tvm_driver.DriverError) as e:
        print(f"tvm_model.py: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
