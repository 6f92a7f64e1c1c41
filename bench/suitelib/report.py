"""The suite's results: the JSON file (every figure with its CV), its validation when read back,
the summary (geometric means, ratios) and the markdown table."""

from __future__ import annotations

import json
import math
import os
import re

from .measure import bootstrap_geomean, bootstrap_ratio

FORMAT = 1
SYSTEMS = ("tyche", "onednn", "openblas", "tvm", "tvm_fastexp", "unscheduled")
LABELS = {"tyche": "Tyche", "onednn": "oneDNN", "openblas": "OpenBLAS", "tvm": "TVM MetaSchedule",
          "tvm_fastexp": "TVM MetaSchedule (fast exp)", "unscheduled": "unscheduled"}
TUNERS = ("tyche", "tvm", "tvm_fastexp")
GAP_LIMIT = 1.10  # a system timed this much slower in the suite than at its best in tuning is explained


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


def fair_tvm(w: dict) -> str:
    """The TVM run the fair comparison uses: with its fast exp where the workload has one (SFM)."""
    return "tvm_fastexp" if ok(w, "tvm_fastexp") else "tvm"


def _windows(w: dict, system: str) -> list[float] | None:
    s = w["systems"].get(system, {})
    return s.get("window_seconds") or ([s["seconds"]] if "seconds" in s else None)


def speedup_ci(w: dict, system: str, over: str) -> tuple[float, float] | None:
    """The 95% bootstrap interval of ``speedup`` (rounds resampled)."""
    if speedup(w, system, over) is None:
        return None
    return bootstrap_ratio(_windows(w, over), _windows(w, system))


def tuning_gap(w: dict, system: str) -> float | None:
    """How much slower the system runs in the suite than the best its tuner measured (> 1: slower)."""
    t = w["tuning"].get(system)
    if not t or t.get("error") or not ok(w, system) or not t.get("best_seconds"):
        return None
    return w["systems"][system]["seconds"] / t["best_seconds"]


def _geomean_with_ci(ws: list[dict], system: str, over) -> tuple[float | None, tuple[float, float] | None, list[str]]:
    """Geomean over workloads of system's speedup over ``over`` (a name or a function of the
    workload), its 95% interval, and the workloads it covers; workloads marked
    ``"no_baseline": [systems]`` for ``over`` are left out."""
    pairs, ratios, names = [], [], []
    for w in ws:
        o = over(w) if callable(over) else over
        if o in w.get("no_baseline", []) or speedup(w, system, o) is None:
            continue
        pairs.append((_windows(w, o), _windows(w, system)))
        ratios.append(speedup(w, system, o))
        names.append(w["name"])
    if not pairs:
        return None, None, []
    return geomean(ratios), bootstrap_geomean(pairs), names


def summarize(results: dict) -> dict:
    ws = results["workloads"]
    walls = [(tuning_wall(w, "tyche"), tuning_wall(w, "tvm")) for w in ws]
    onednn, onednn_ci, onednn_names = _geomean_with_ci(ws, "tyche", "onednn")
    tvm, tvm_ci, tvm_names = _geomean_with_ci(ws, "tyche", fair_tvm)
    tvm_default, tvm_default_ci, _ = _geomean_with_ci(ws, "tyche", "tvm")
    return {
        "workloads": len(ws),
        "geomean_tyche_over_tvm": tvm,  # the fair one: TVM with its fast exp on SFM
        "geomean_tyche_over_tvm_ci95": tvm_ci,
        "geomean_tyche_over_tvm_workloads": tvm_names,
        "geomean_tyche_over_tvm_default": tvm_default,
        "geomean_tyche_over_tvm_default_ci95": tvm_default_ci,
        "geomean_tyche_over_onednn": onednn,
        "geomean_tyche_over_onednn_ci95": onednn_ci,
        "geomean_tyche_over_onednn_workloads": onednn_names,
        "geomean_tuning_wall_tyche_over_tvm": geomean(a / b for a, b in walls if a and b),
        "tyche_over_onednn": {w["name"]: speedup(w, "tyche", "onednn") for w in ws if speedup(w, "tyche", "onednn")},
        "tyche_over_tvm": {w["name"]: speedup(w, "tyche", fair_tvm(w)) for w in ws if speedup(w, "tyche", fair_tvm(w))},
        "tuning_gap": {w["name"]: {t: tuning_gap(w, t) for t in TUNERS if tuning_gap(w, t)} for w in ws},
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


def _ratio(x: float | None, ci: tuple[float, float] | None = None) -> str:
    if not x:
        return "—"
    return f"{x:.2f}× [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{x:.2f}×"


def _gap(w: dict, system: str) -> str:
    g = tuning_gap(w, system)
    if g is None:
        return "—"
    return f"{g:.2f}" + (" (!)" if g > GAP_LIMIT else "")


def _minutes(s: float | None) -> str:
    return f"{s / 60:.1f} min" if s else "—"


def host_line(results: dict) -> str:
    h, c, r = results["host"], results["config"], results["roofline"]
    # A resumed run may have tuned its workloads at several commits: all are named.
    commits = list(dict.fromkeys([h["tyche_commit"]] + [w["tyche_commit"] for w in results["workloads"] if "tyche_commit" in w]))
    again = sorted({(w["measured_date"], w["measured_commit"]) for w in results["workloads"] if "measured_commit" in w})
    again_text = "".join(f" (timed again on {d} at {m})" for d, m in again)
    return (f"Measured on {h['cpu_name']} ({h['llvm_cpu']}, {h['vector_bits']}-bit vectors, {h['cores']} cores, "
            f"L2 {h['l2_kib']} KiB) on {h['date']}, Tyche {', '.join(commits)}{again_text}, {c['trials']} trials per tuner; "
            f"peak {r['peak_gflops']:.0f} GFLOP/s (FMA, {r['threads']} threads), bandwidth {r['bandwidth_gbs']:.1f} GB/s (triad).")


def settings_line(results: dict) -> str:
    c = results["config"]
    if "threads" not in c:
        return ""
    tol = c.get("tolerance", {})
    per_family = ", ".join(f"{k} {v:g}" for k, v in tol.items() if k != "default")
    foreign = [s.get("foreign_cpu_fraction", 0.0) for w in results["workloads"] for s in w["systems"].values()]
    return (f"Every system: {c['threads']} threads on CPUs {c.get('cpus')}, in a process of its own "
            f"({', '.join(f'{k}={v}' for k, v in c.get('worker_env', {}).items())}); windows interleaved, the order "
            f"{c.get('order', 'fixed')}, {c.get('settle_s', 0):g} s of sleep before each window (the most CPU any idle "
            f"system used while another was timed: {max(foreign, default=0) * 100:.1f}% of a window); FLOPs "
            f"{c.get('flop', 'with padding taps')}; results within {tol.get('default', 1e-3):g} of the reference "
            f"(max |out − ref| / max |ref|){'; ' + per_family if per_family else ''}.")


def markdown(results: dict) -> str:
    systems = [s for s in SYSTEMS if any(s in w["systems"] for w in results["workloads"])]
    tuners = [t for t in TUNERS if any(t in w["tuning"] for w in results["workloads"])]
    head = (["workload", "GFLOP"] + [LABELS[s] for s in systems] + ["Tyche / oneDNN", "Tyche / TVM", "roofline"] +
            [f"gap {LABELS[t]}" for t in tuners] + ["tune Tyche", "tune TVM"])
    settings = settings_line(results)
    lines = [host_line(results), ""] + ([settings, ""] if settings else []) + [
             "GFLOP/s (CV over the measuring windows); ratios are speedups (> 1: Tyche is faster) with their 95% bootstrap "
             "interval; Tyche / TVM is against TVM with its fast exp where it has one (SFM); roofline: Tyche's fraction of "
             "min(peak, bandwidth × flop/compulsory bytes); gap: the suite's time over the best its tuner measured "
             "((!): over 10%, explained below).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in results["workloads"]:
        t = w["systems"].get("tyche", {})
        roof = f"{t['roofline_fraction'] * 100:.0f}%" if ok(w, "tyche") and "roofline_fraction" in t else "—"
        tvm = fair_tvm(w)
        onednn = "no baseline" if "onednn" in w.get("no_baseline", []) else _ratio(speedup(w, "tyche", "onednn"),
                                                                                      speedup_ci(w, "tyche", "onednn"))
        row = ([w["name"], f"{w['flop'] / 1e9:.3g}"] + [_cell(w, s) for s in systems] +
               [onednn, _ratio(speedup(w, "tyche", tvm), speedup_ci(w, "tyche", tvm)), roof] + [_gap(w, tn) for tn in tuners] +
               [_minutes(tuning_wall(w, "tyche")), _minutes(tuning_wall(w, "tvm"))])
        lines.append("| " + " | ".join(row) + " |")
    s = summarize(results)
    wall = s["geomean_tuning_wall_tyche_over_tvm"]
    row = (["geomean", ""] + [""] * len(systems) +
           [_ratio(s["geomean_tyche_over_onednn"], s["geomean_tyche_over_onednn_ci95"]),
            _ratio(s["geomean_tyche_over_tvm"], s["geomean_tyche_over_tvm_ci95"]), ""] + [""] * len(tuners) +
           [f"{wall:.2f}× TVM's" if wall else "", ""])
    lines.append("| " + " | ".join(row) + " |")
    extra = []
    for w in results["workloads"]:
        if ok(w, "tvm_fastexp") and ok(w, "tvm"):
            extra.append(f"- {w['name']} against TVM as it tunes by default (libm expf per element): "
                         f"{_ratio(speedup(w, 'tyche', 'tvm'), speedup_ci(w, 'tyche', 'tvm'))}; with its fast exp: "
                         f"{_ratio(speedup(w, 'tyche', 'tvm_fastexp'), speedup_ci(w, 'tyche', 'tvm_fastexp'))} (in the geomean).")
    if s["geomean_tyche_over_tvm_default"] and s["geomean_tyche_over_tvm_default"] != s["geomean_tyche_over_tvm"]:
        extra.append(f"- Geomean against TVM as it tunes by default: "
                     f"{_ratio(s['geomean_tyche_over_tvm_default'], s['geomean_tyche_over_tvm_default_ci95'])}.")
    for w in results["workloads"]:
        for system, why in w.get("notes", {}).items():
            extra.append(f"- {w['name']} {LABELS.get(system, system)}: {why}")
        for system in tuners:
            g = tuning_gap(w, system)
            if g and g > GAP_LIMIT and system not in w.get("notes", {}):
                extra.append(f"- {w['name']} {LABELS[system]}: {g:.2f}× slower in the suite than in its tuning (not yet explained).")
    if extra:
        lines += [""] + extra
    return "\n".join(lines) + "\n"
