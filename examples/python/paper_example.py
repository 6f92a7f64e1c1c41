"""The MetaSchedule paper's example: dense + ReLU, a probabilistic schedule that samples tile
sizes and where to compute the dense under the ReLU's loops, tuned natively and checked against
numpy.

    python3 examples/python/paper_example.py [--size 256] [--trials 64] [--db /tmp/tyche_paper_db]
"""

import argparse
import tempfile

import numpy as np

import tyche
from tyche import te


def dense_relu(n: int) -> tyche.PrimFunc:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis(n, name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((n, n), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return te.create_prim_func([A, B, D], name="dense_relu")


def stochastic_schedule(sch: tyche.Schedule) -> None:
    """Host control flow is free here; only the instructions (and the draws) enter the trace."""
    dense, relu = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(relu)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=64))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i0, j0, i1, j1)
    sch.parallel(i0)
    sch.compute_at(dense, sch.sample_compute_location(dense))

# Each candidate timed twice for a couple of milliseconds and only two leaders timed again.
QUICK = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2, population=64, generations=2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--db", default=None, help="the tuning database directory (default: a temporary one)")
    p.add_argument("--quick", action="store_true", help="time each candidate briefly (a smoke test, not a tune)")
    args = p.parse_args()

    func = dense_relu(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        result = tyche.tune(func, trials=args.trials, batch=min(16, args.trials), db=args.db or tmp,
                            space=stochastic_schedule,
                            **QUICK if args.quick else {})
    print(result)
    print("the best trace:\n" + str(result.best_trace))

    kernel = tyche.build(result)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (args.size, args.size)).astype("float32")
    b = rng.uniform(-1, 1, (args.size, args.size)).astype("float32")
    d = kernel(a, b)
    np.testing.assert_allclose(d, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    t = kernel.time(a, b)
    print(f"correct against numpy; {t}, {2 * args.size ** 3 / t.median / 1e9:.1f} GFLOP/s on {kernel.cpu}")


if __name__ == "__main__":
    main()
