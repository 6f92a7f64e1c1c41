"""The suite's figures (matplotlib, written as PNG without a display):
(a) speed per workload normalized to oneDNN, (b) tuning curves — best GFLOP/s against trials and
against wall time, Tyche and TVM — and (c) where each tuner's time went."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .report import LABELS, SYSTEMS, gflops, host_line, ok  # noqa: E402

COLORS = {"tyche": "#d62728", "onednn": "#1f77b4", "openblas": "#2ca02c", "tvm": "#ff7f0e", "tvm_fastexp": "#bcbd22",
          "unscheduled": "#7f7f7f"}
# Tyche's tuning time by phase (TuneResult.times) and TVM's (its Profiler's scopes) in common terms.
TYCHE_PHASES = {"search": "search", "build": "build", "run": "measure", "model": "cost model", "database": "database",
                "confirm": "confirm best"}
PHASE_COLORS = {"search": "#9467bd", "build": "#8c564b", "measure": "#1f77b4", "cost model": "#e377c2", "database": "#bcbd22",
                "confirm best": "#17becf", "other": "#c7c7c7"}


def _reference(w: dict) -> str | None:
    """What a workload's bars are normalized to: oneDNN where it implements the op, else TVM, else Tyche."""
    for s in ("onednn", "tvm", "tyche"):
        if ok(w, s):
            return s
    return None


def speed_bars(results: dict, path: str) -> None:
    ws = results["workloads"]
    systems = [s for s in SYSTEMS if any(ok(w, s) for w in ws)]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(ws) + 2), 4.2))
    width = 0.8 / max(1, len(systems))
    labels = []
    for i, w in enumerate(ws):
        ref = _reference(w)
        labels.append(w["name"] + ("" if ref in (None, "onednn") else f"\n(vs {LABELS[ref]})"))
        for j, s in enumerate(systems):
            if ref and ok(w, s):
                ax.bar(i + (j - (len(systems) - 1) / 2) * width, gflops(w, s) / gflops(w, ref), width, color=COLORS[s],
                       label=LABELS[s] if i == 0 or not any(ok(v, s) for v in ws[:i]) else None)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(ws)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("speed relative to oneDNN (log)")
    ax.set_title("Kernel speed per workload, normalized to oneDNN", fontsize=10)
    ax.legend(fontsize=8, ncols=len(systems))
    fig.text(0.01, 0.005, host_line(results), fontsize=6, wrap=True)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _curve(history: list[dict], flop: float, x_key: str):
    """Best GFLOP/s as measured: Tyche's history also has its search's drift-corrected ranking
    ("best_seconds"), a time scaled by a yardstick that can pass the CPU's peak, so its raw
    "measured_best_seconds" is plotted, like TVM's (the mean of its run_secs)."""
    xs, ys = [], []
    for h in history:
        best = h.get("measured_best_seconds") or h.get("best_seconds")
        if best and best > 0:
            xs.append(h[x_key])
            ys.append(flop / best / 1e9)
    return xs, ys


def tuning_curves(results: dict, path: str, x_key: str) -> None:
    """One small panel per workload; ``x_key`` is "trials" or "elapsed_s"."""
    ws = [w for w in results["workloads"] if any(w["tuning"].get(t, {}).get("history") for t in ("tyche", "tvm"))]
    cols = min(4, max(1, len(ws)))
    rows = max(1, math.ceil(len(ws) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows + 0.6), squeeze=False)
    for ax, w in zip(axes.flat, ws):
        for tuner in ("tyche", "tvm"):
            t = w["tuning"].get(tuner)
            if t and t.get("history"):
                xs, ys = _curve(t["history"], w["flop"], x_key)
                ax.step(xs, ys, where="post", marker="o", markersize=3, color=COLORS[tuner], label=LABELS[tuner])
        ax.set_title(w["name"], fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("trials" if x_key == "trials" else "tuning wall time (s)", fontsize=7)
        ax.set_ylabel("best GFLOP/s", fontsize=7)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(ws):]:
        ax.axis("off")
    what = "trials" if x_key == "trials" else "tuning wall time"
    fig.suptitle(f"Best kernel found against {what} (each tuner's own measurements)", fontsize=10)
    fig.text(0.01, 0.005, host_line(results), fontsize=6, wrap=True)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tyche_phases(times: dict) -> dict[str, float]:
    phases = {TYCHE_PHASES[k]: v for k, v in times.items() if k in TYCHE_PHASES}
    phases["other"] = max(0.0, times.get("total", 0.0) - sum(phases.values()))
    return phases


def tvm_phases(times: dict, wall: float) -> dict[str, float]:
    """TVM's profiler scopes (tune_tir's own names) in the common phases; the rest of the wall is "other"."""
    def pick(*names):
        return sum(v for k, v in times.items() if k in names)
    phases = {"search": pick("EvoSearch/SampleInitPopulation", "EvoSearch/Evolve/Mutation", "EvoSearch/Evolve/Misc",
                             "EvoSearch/PickWithEpsGreedy", "EvoSearch/PickBestFromDatabase"),
              "build": pick("SendToBuilder"),
              "measure": pick("SendToRunner", "JoinRunnerFutures"),
              "cost model": pick("MeasureCallback/UpdateCostModel", "EvoSearch/Evolve/PredictNormalizedScore"),
              "database": pick("MeasureCallback/AddToDatabase")}
    phases["other"] = max(0.0, wall - sum(phases.values()))
    return phases


def time_breakdown(results: dict, path: str) -> None:
    bars = []
    for w in results["workloads"]:
        for tuner in ("tyche", "tvm"):
            t = w["tuning"].get(tuner)
            if t and t.get("times") and not t.get("error"):
                phases = tyche_phases(t["times"]) if tuner == "tyche" else tvm_phases(t["times"], t["wall_s"])
                bars.append((f"{w['name']} {LABELS[tuner]}", phases))
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(bars) + 1.6))
    seen = set()
    for i, (label, phases) in enumerate(bars):
        left = 0.0
        for phase, color in PHASE_COLORS.items():
            v = phases.get(phase, 0.0)
            if v > 0:
                ax.barh(i, v, left=left, color=color, label=None if phase in seen else phase)
                seen.add(phase)
                left += v
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("tuning wall time (s)")
    ax.set_title("Where the tuning time went", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.text(0.01, 0.005, host_line(results), fontsize=6, wrap=True)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_all(results: dict, stem: str) -> list[str]:
    paths = {"speed": f"{stem}-speed.png", "trials": f"{stem}-curves-trials.png", "time": f"{stem}-curves-time.png",
             "breakdown": f"{stem}-tuning-time.png"}
    speed_bars(results, paths["speed"])
    tuning_curves(results, paths["trials"], "trials")
    tuning_curves(results, paths["time"], "elapsed_s")
    time_breakdown(results, paths["breakdown"])
    return list(paths.values())
