"""A short showcase of the C kernels against numpy (`make demo`).

Runs each kernel on random inputs in float32 and float64, including a
transposed view, and prints the largest difference from a float64 numpy
reference next to the error bound the tests use.
"""
import argparse

import numpy as np

from cextend import ops


def _bound(x, w, dtype):
    """Reduction-scaled bound: 4 * K * u * (|x| |w|^T), as in the tests."""
    u = np.finfo(dtype).eps / 2
    return 4 * x.shape[-1] * u * (np.abs(x) @ np.abs(w).T)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print("%-34s %-8s %12s %12s" % ("kernel", "dtype", "max |err|", "bound"))
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((64, 97)).astype(dtype)
        w_t = rng.standard_normal((97, 31)).astype(dtype)   # w = w_t.T: a transposed view
        b = rng.standard_normal(31).astype(dtype)
        w = w_t.T
        x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
        y = ops.linear_forward(x, w, b)
        err = np.abs(y - (x64 @ w64.T + b64))
        bound = _bound(x64, w64, dtype) + np.finfo(dtype).eps * np.abs(b64)
        print("%-34s %-8s %12.3g %12.3g" % ("linear_forward (w transposed)", np.dtype(dtype).name,
                                            err.max(), bound.max()))
        dy = rng.standard_normal((64, 31)).astype(dtype)
        dx, dw, db = ops.linear_backward(dy, x, w)
        for name, ours, ref in (("linear_backward dx", dx, dy.astype(np.float64) @ w64),
                                ("linear_backward dw", dw, dy.astype(np.float64).T @ x64),
                                ("linear_backward db", db, dy.astype(np.float64).sum(0))):
            print("%-34s %-8s %12.3g" % (name, np.dtype(dtype).name, np.abs(ours - ref).max()))
        pool_in = rng.standard_normal((2, 3, 5, 5)).astype(dtype)
        values, indices = ops.global_max_pool_forward(pool_in)
        same = np.array_equal(indices, pool_in.reshape(2, 3, -1).argmax(-1))
        print("%-34s %-8s %12s" % ("global_max_pool indices == argmax", np.dtype(dtype).name, same))


if __name__ == "__main__":
    main()
