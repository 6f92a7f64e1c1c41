"""The GPU check's baselines and report (scripts/gpu_check.sh).

  python3 bench/gpu_baselines.py time --json OUT      PyTorch's time for each target (CUDA events,
                                                      L2 flushed before each run, warm-up first)
  python3 bench/gpu_baselines.py report DIR           the figures of a check: Tyche's and PyTorch's
                                                      repeats pooled over the rounds, ratios with
                                                      95 % bootstrap intervals, as Markdown

The targets (issue 36): a 4096^3 float16 matrix product accumulated in float32 (torch.matmul of
float16: cuBLAS's tensor-core GEMM, float16 out), GMM-4 in float32 (cuBLAS SGEMM, TF32 off),
SFM-4 (torch.softmax of each row) and NRM-4 (torch.linalg.norm of each batch's M x N matrix, its
Frobenius norm, as NRM reduces both axes).
"""

import argparse
import glob
import json
import os
import random
import statistics
import sys

# name -> (what Tyche runs: preset or formula, extents, dtypes), shapes for PyTorch, FLOPs counted
# as Tyche counts them (workloads' flop; none for the reductions: time only).
TARGETS = {
    "GMM-4096-F16": ("C[i,j] += A[i,k]*B[k,j]", "i=4096,j=4096,k=4096", "A=float16,B=float16,C=float32"),
    "GMM-4": ("GMM-4", "", ""),
    "SFM-4": ("SFM-4", "", ""),
    "NRM-4": ("NRM-4", "", ""),
}


def torch_runs(name, torch):
    """A function running the baseline once, its inputs made (shapes of docs/workloads.md)."""
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    if name == "GMM-4096-F16":
        a = torch.rand(4096, 4096, device=dev, generator=g, dtype=torch.float16)
        b = torch.rand(4096, 4096, device=dev, generator=g, dtype=torch.float16)
        return lambda: torch.matmul(a, b)
    if name == "GMM-4":
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 as Tyche computes it: SGEMM
        a = torch.rand(1, 1024, 1024, device=dev, generator=g)
        b = torch.rand(1, 1024, 1024, device=dev, generator=g)
        return lambda: torch.matmul(a, b)
    if name == "SFM-4":
        x = torch.rand(*sfm_shape(), device=dev, generator=g)
        return lambda: torch.softmax(x, dim=-1)
    if name == "NRM-4":
        x = torch.rand(*nrm_shape(), device=dev, generator=g)
        return lambda: torch.linalg.norm(x, dim=(1, 2))
    raise SystemExit(f"unknown target {name}")


def preset_shape(name):
    """The preset's tensor shape as `tyche workloads` states it (its first input)."""
    import subprocess
    tyche = os.environ.get("TYCHE", ".gpu-bundle/bin/tyche")
    text = subprocess.run([tyche, "workloads"], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        if line.split() and line.split()[0] == name:
            return line
    raise SystemExit(f"tyche workloads does not list {name}")


def sfm_shape():  # A[M, N]
    return parse_params(preset_shape("SFM-4"), ("M", "N"))


def nrm_shape():  # A[B, M, N]
    return parse_params(preset_shape("NRM-4"), ("B", "M", "N"))


def parse_params(line, names):
    found = {}
    for word in line.replace(",", " ").split():
        if "=" in word:
            k, v = word.split("=", 1)
            if k in names and v.isdigit():
                found[k] = int(v)
    if set(found) != set(names):
        raise SystemExit(f"cannot read {names} from: {line}")
    return [found[n] for n in names]


def time_torch(args):
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA device")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # larger than any L2 (H200: 60 MB)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "targets": {}}
    for name in args.targets or TARGETS:
        run = torch_runs(name, torch)
        for _ in range(3):
            run()
        seconds = []
        for _ in range(args.repeat):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            seconds.append(start.elapsed_time(end) / 1e3)
        out["targets"][name] = seconds
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


def bootstrap_ratio(ours, theirs, n=2000, seed=0):
    """Median of theirs / median of ours (> 1: Tyche faster), with a 95 % percentile interval."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(n):
        a = [rng.choice(ours) for _ in ours]
        b = [rng.choice(theirs) for _ in theirs]
        ratios.append(statistics.median(b) / statistics.median(a))
    ratios.sort()
    return statistics.median(theirs) / statistics.median(ours), ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]


def report(args):
    d = args.dir
    torch_rounds = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(d, "torch_round*.json")))]
    lines = ["# GPU check", ""]
    if torch_rounds:
        lines.append(f"Device: {torch_rounds[0]['device']} (PyTorch {torch_rounds[0]['torch']}).")
    lines += ["", "| target | Tyche median (ms) | PyTorch median (ms) | PyTorch / Tyche [95 % CI] | Tyche trials | correct |",
              "|---|---|---|---|---|---|"]
    for name in TARGETS:
        ours, correct = [], True
        for p in sorted(glob.glob(os.path.join(d, f"tyche_{name}_round*.json"))):
            j = json.load(open(p))
            ours += j["seconds"]
            correct = correct and j["correct"]
        theirs = [s for r in torch_rounds for s in r["targets"].get(name, [])]
        trials = open(os.path.join(d, f"trials_{name}.txt")).read().strip() if os.path.exists(os.path.join(d, f"trials_{name}.txt")) else "?"
        if not ours:
            lines.append(f"| {name} | not measured | | | {trials} | |")
            continue
        ratio = ""
        if theirs:
            r, lo, hi = bootstrap_ratio(ours, theirs)
            ratio = f"{r:.2f} [{lo:.2f}, {hi:.2f}]"
        theirs_ms = f"{statistics.median(theirs) * 1e3:.4f}" if theirs else "-"
        lines.append(f"| {name} | {statistics.median(ours) * 1e3:.4f} | {theirs_ms} | {ratio} | {trials} | {'yes' if correct else 'NO'} |")
    fam = os.path.join(d, "families.txt")
    if os.path.exists(fam):
        lines += ["", "Every family's tuned program, run and checked against the reference:", "", "```", open(fam).read().rstrip(), "```"]
    text = "\n".join(lines) + "\n"
    open(os.path.join(d, "gpu_figures.md"), "w").write(text)
    sys.stdout.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    t.add_argument("--json", required=True)
    t.add_argument("--repeat", type=int, default=20)
    t.add_argument("targets", nargs="*")
    r = sub.add_parser("report")
    r.add_argument("dir")
    args = p.parse_args()
    time_torch(args) if args.cmd == "time" else report(args)


if __name__ == "__main__":
    main()
