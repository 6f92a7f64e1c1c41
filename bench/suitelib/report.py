"""The suite's results: the JSON file (every figure with its CV), its validation when read back,
the summary (geometric means, ratios) and the markdown table."""

from __future__ import annotations

import json
import math
import os
import re

FORMAT = 1
SYSTEMS = ("tyche", "onednn", "openblas", "tvm", "unscheduled")
LABELS = {"tyche": "Tyche", "onednn": "oneDNN", "openblas": "OpenBLAS", "tvm": "TVM MetaSchedule",
          "unscheduled": "unscheduled"}
TUNERS = ("tyche", "tvm")


class ResultsError(ValueError):
    pass


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "cpu"


def results_stem(out_dir: str, host: dict, date: str) -> str:
    """``<out_dir>/<host-cpu>-<date>``, with -2, -3... when a run of that day is already there (a
    result is never overwritten)."""
    base = os.path.join(out_dir, f"{slug(host['cpu_name'])}-{slug(host['llvm_cpu'])}-{date}")
    stem, n = base, 1
    while os.path.exists(stem + ".json"):
        n += 1
        stem = f"{base}-{n}"
    return stem


def write_json(results: dict, path: str) -> None:
    """Atomically: a crash mid-write leaves the previous file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def _require(cond: bool, path: str, what: str) -> None:
    if not cond:
        raise ResultsError(f"{path}: not a suite result ({what})")


def load(path: str) -> dict:
    """Reads a results file back, checking the fields the table and plots use."""
    try:
        with open(path) as f:
            r = json.load(f)
    except OSError as e:
        raise ResultsError(f"{path}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    _require(isinstance(r, dict) and r.get("format") == FORMAT, path, f"format {FORMAT} expected")
    for key in ("host", "config", "roofline", "workloads"):
        _require(key in r, path, f"no '{key}'")
    _require(isinstance(r["workloads"], list), path, "'workloads' is not a list")
    for w in r["workloads"]:
        _require(isinstance(w, dict) and isinstance(w.get("name"), str), path, "a workload without a name")
        for key in ("flop", "systems", "tuning"):
            _require(key in w, path, f"workload {w['name']} has no '{key}'")
        for name, s in w["systems"].items():
            _require(name in SYSTEMS, path, f"unknown system '{name}' in {w['name']}")
            _require(isinstance(s, dict) and ("seconds" in s or "error" in s), path, f"{w['name']} {name}: no seconds or error")
    return r


def ok(w: dict, system: str) -> bool:
    s = w["systems"].get(system)
    return bool(s) and s.get("correct", False) and s.get("seconds", 0) > 0


def gflops(w: dict, system: str) -> float | None:
    return w["flop"] / w["systems"][system]["seconds"] / 1e9 if ok(w, system) else None


def geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def speedup(w: dict, system: str, over: str) -> float | None:
    """How many times faster ``system`` is than ``over`` on w (None when either is missing or wrong)."""
    if not (ok(w, system) and ok(w, over)):
        return None
    return w["systems"][over]["seconds"] / w["systems"][system]["seconds"]


def tuning_wall(w: dict, tuner: str) -> float | None:
    t = w["tuning"].get(tuner)
    return t.get("wall_s") if t and not t.get("error") else None


def summarize(results: dict) -> dict:
    ws = results["workloads"]
    walls = [(tuning_wall(w, "tyche"), tuning_wall(w, "tvm")) for w in ws]
    return {
        "workloads": len(ws),
        "geomean_tyche_over_tvm": geomean(speedup(w, "tyche", "tvm") for w in ws),
        "geomean_tyche_over_onednn": geomean(speedup(w, "tyche", "onednn") for w in ws),
        "geomean_tuning_wall_tyche_over_tvm": geomean(a / b for a, b in walls if a and b),
        "tyche_over_onednn": {w["name"]: speedup(w, "tyche", "onednn") for w in ws if speedup(w, "tyche", "onednn")},
        "tyche_over_tvm": {w["name"]: speedup(w, "tyche", "tvm") for w in ws if speedup(w, "tyche", "tvm")},
    }


def _cell(w: dict, system: str) -> str:
    s = w["systems"].get(system)
    if not s:
        return "—"
    if "error" in s:
        return "failed"
    if not s.get("correct", False):
        return "wrong"
    return f"{gflops(w, system):.3g} ({s['cv'] * 100:.0f}%)"


def _ratio(x: float | None) -> str:
    return f"{x:.2f}×" if x else "—"


def _minutes(s: float | None) -> str:
    return f"{s / 60:.1f} min" if s else "—"


def host_line(results: dict) -> str:
    h, c, r = results["host"], results["config"], results["roofline"]
    # A resumed run may have tuned its workloads at several commits: all are named.
    commits = list(dict.fromkeys([h["tyche_commit"]] + [w["tyche_commit"] for w in results["workloads"] if "tyche_commit" in w]))
    return (f"Measured on {h['cpu_name']} ({h['llvm_cpu']}, {h['vector_bits']}-bit vectors, {h['cores']} cores, "
            f"L2 {h['l2_kib']} KiB) on {h['date']}, Tyche {', '.join(commits)}, {c['trials']} trials per tuner; "
            f"peak {r['peak_gflops']:.0f} GFLOP/s (FMA, {r['threads']} threads), bandwidth {r['bandwidth_gbs']:.1f} GB/s (triad).")


def markdown(results: dict) -> str:
    systems = [s for s in SYSTEMS if any(s in w["systems"] for w in results["workloads"])]
    head = ["workload", "GFLOP"] + [LABELS[s] for s in systems] + ["Tyche / oneDNN", "Tyche / TVM", "roofline",
                                                                   "tune Tyche", "tune TVM"]
    lines = [host_line(results), "",
             "GFLOP/s (CV over the measuring windows); ratios are speedups (> 1: Tyche is faster); "
             "roofline: Tyche's fraction of min(peak, bandwidth × flop/compulsory bytes).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in results["workloads"]:
        t = w["systems"].get("tyche", {})
        roof = f"{t['roofline_fraction'] * 100:.0f}%" if ok(w, "tyche") and "roofline_fraction" in t else "—"
        row = [w["name"], f"{w['flop'] / 1e9:.3g}"] + [_cell(w, s) for s in systems] + [
            _ratio(speedup(w, "tyche", "onednn")), _ratio(speedup(w, "tyche", "tvm")), roof,
            _minutes(tuning_wall(w, "tyche")), _minutes(tuning_wall(w, "tvm"))]
        lines.append("| " + " | ".join(row) + " |")
    s = summarize(results)
    wall = s["geomean_tuning_wall_tyche_over_tvm"]
    row = ["geomean", ""] + [""] * len(systems) + [_ratio(s["geomean_tyche_over_onednn"]), _ratio(s["geomean_tyche_over_tvm"]), "",
                                                   f"{wall:.2f}× TVM's" if wall else "", ""]
    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
