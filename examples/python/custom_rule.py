"""A schedule rule written in Python joins the built-in ones: for every element-wise block it
samples a split of the innermost loop and vectorizes the inner part. The search explores the
rule's draws like those of the built-in rules.

    python3 examples/python/custom_rule.py [--trials 32]
"""

import argparse
import tempfile

import numpy as np

import tyche
from tyche import rules, te


class VectorizeInnermost:
    """Element-wise blocks only (no reduction iterator): split the innermost loop by a sampled
    vector length and vectorize it; a second branch leaves the block alone."""
    name = "vectorize-innermost"

    def apply(self, sch: tyche.Schedule, block: tyche.BlockRV) -> list[tyche.Schedule]:
        kinds = sch.iter_kinds(block)
        if not kinds or "R" in kinds or sch.block_name(block) == "root":
            return [sch]
        plain = sch.copy()
        inner = sch.get_loops(block)[-1]
        _, lanes = sch.split(inner, sch.sample_perfect_tile(inner, n=2, max_innermost_factor=16))
        sch.vectorize(lanes)
        return [sch, plain]


def bias_gelu_like(n: int, m: int) -> tyche.PrimFunc:
    X = te.placeholder((n, m), name="X")
    bias = te.placeholder((m,), name="bias")
    Y = te.compute((n, m), lambda i, j: X[i, j] + bias[j], name="Y")
    Z = te.compute((n, m), lambda i, j: Y[i, j] * te.sigmoid(Y[i, j] * 1.702), name="Z")
    return te.create_prim_func([X, bias, Z], name="bias_gelu")

# Each candidate timed twice for a couple of milliseconds and only two leaders timed again.
QUICK = dict(repeat=2, min_repeat_ms=2, confirm_top=2, confirm_rounds=2, population=64, generations=2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=32)
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--cols", type=int, default=768)
    p.add_argument("--quick", action="store_true", help="time each candidate briefly (a smoke test, not a tune)")
    args = p.parse_args()

    func = bias_gelu_like(args.rows, args.cols)
    space = [rules.auto_inline(), VectorizeInnermost(), rules.parallel_vectorize_unroll()]
    with tempfile.TemporaryDirectory() as db:
        result = tyche.tune(func, trials=args.trials, batch=min(16, args.trials), db=db, space=space,
                            **QUICK if args.quick else {})
    print(result)
    print(result.best_trace)
    kernel = tyche.build(result)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (args.rows, args.cols)).astype("float32")
    bias = rng.uniform(-1, 1, args.cols).astype("float32")
    y = x + bias
    np.testing.assert_allclose(kernel(x, bias), y / (1 + np.exp(-1.702 * y)), rtol=1e-5, atol=1e-6)
    print(f"correct against numpy; {kernel.time(x, bias)} on {kernel.cpu}")


if __name__ == "__main__":
    main()
