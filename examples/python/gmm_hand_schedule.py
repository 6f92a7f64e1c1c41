"""A hand schedule of the GMM preset (batch matmul), written with Tyche's primitives and no random
variables: register tiles of Z, vectorized columns, a parallel outer loop. Checked and timed
against numpy's matmul in the same run.

    python3 examples/python/gmm_hand_schedule.py [--workload GMM-3] [--scale-down]
"""

import argparse

import numpy as np

import tyche


def schedule_gmm(sch: tyche.Schedule, vector: int = 16) -> None:
    z = sch.get_block("Z")
    b, i, j, k = sch.get_loops(z)
    extent_j = sch.loop_extent(j)
    vector = vector if extent_j % vector == 0 else 1
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, vector])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(b, i0, j0, k0, k1, i1, j1)
    write = sch.cache_write(z, 0, "global")     # accumulate the 4 x vector tile locally
    sch.reverse_compute_at(write, j0)
    sch.decompose_reduction(z, k0)
    fused = sch.fuse(b, i0)
    sch.parallel(fused)
    if vector > 1:
        sch.vectorize(j1)
    sch.unroll(i1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="GMM-3")
    p.add_argument("--scale-down", action="store_true")
    args = p.parse_args()

    w = tyche.workload(args.workload, scale_down=args.scale_down)
    sch = tyche.Schedule(w)
    schedule_gmm(sch)
    print(sch.trace)
    kernel = tyche.build(sch)
    x, y = w.inputs()
    z = kernel(x, y)
    np.testing.assert_allclose(z, np.matmul(x, y), rtol=1e-4, atol=1e-4)
    ours = kernel.time(x, y)
    theirs = tyche.TimeResult(**_time_numpy(x, y))
    gflop = w.flop / 1e9
    print(f"{w.name} [{w.shape}] on {kernel.cpu}, {tyche.num_threads()} threads:")
    print(f"  tyche  {ours}  {gflop / ours.median:.1f} GFLOP/s")
    print(f"  numpy  {theirs}  {gflop / theirs.median:.1f} GFLOP/s")
    print(f"  ratio  {theirs.median / ours.median:.2f}x numpy")


def _time_numpy(x, y, repeat: int = 10) -> dict:
    import time
    out = np.empty((x.shape[0], x.shape[1], y.shape[2]), dtype=x.dtype)
    np.matmul(x, y, out=out)
    seconds = []
    for _ in range(repeat):
        n, start = 0, time.perf_counter()
        while True:
            np.matmul(x, y, out=out)
            n += 1
            if time.perf_counter() - start > 0.05:
                break
        seconds.append((time.perf_counter() - start) / n)
    s = sorted(seconds)
    mean = sum(s) / len(s)
    cv = (sum((v - mean) ** 2 for v in s) / len(s)) ** 0.5 / mean
    return dict(seconds=seconds, number=1, median=s[len(s) // 2], min=s[0], mean=mean, cv=cv)


if __name__ == "__main__":
    main()
