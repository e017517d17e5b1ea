"""GEMM at the kernel level: ops.linear_forward and linear_forward +
linear_backward on ndarrays, against numpy doing the same products and
torch's default CPU path, with no autograd on any side.

    linear_forward   ours  ops.linear_forward(x, w, b)
                     numpy x @ w.T + b
                     torch F.linear(x, w, b)       (no grad tensors, no no_grad())
    linear_fwd_bwd   ours  ops.linear_forward + ops.linear_backward(g, x, w)
                     numpy x @ w.T + b; g @ w; g.T @ x; g.sum(0)
                     torch F.linear; g.mm(w); g.t().mm(x); g.sum(0)

Shapes are N x K x M (batch x in x out).  Two-thread rows also time
cextend on one thread in the same interleaving ("ours_1thread"), so the
speed-up is measured side by side like the ratios.
"""
import numpy as np

import cextend as cx
from cextend import ops
from registry import Case, suite

try:
    import torch
    import torch.nn.functional as torch_F
except ImportError:
    torch = None

SHAPES = [(1, 8, 8), (8, 64, 64), (32, 128, 128), (64, 512, 512), (128, 1024, 1024),
          (256, 2048, 2048), (1024, 4096, 4096)]
QUICK_SHAPES = SHAPES[:4]
# Issue 15's scaling target: 2 threads on the three largest shapes.
THREADED_SHAPES = SHAPES[-3:]
FLOPS_PER_NKM = {"linear_forward": 2, "linear_fwd_bwd": 6}


def _operands(n, k, m, dtype):
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(shape).astype(dtype) for shape in ((n, k), (m, k), (m,), (n, m)))


def _candidates(op, n, k, m, dtype, threads):
    x, w, b, g = _operands(n, k, m, dtype)
    out = {}
    if op == "linear_forward":
        out["ours"] = lambda: ops.linear_forward(x, w, b)
        out["numpy"] = lambda: x @ w.T + b
    else:
        def ours():
            ops.linear_forward(x, w, b)
            ops.linear_backward(g, x, w)

        def numpy_products():
            x @ w.T + b
            g @ w
            g.T @ x
            g.sum(0)
        out["ours"], out["numpy"] = ours, numpy_products
    if torch is not None:
        tx, tw, tb, tg = (torch.from_numpy(a.copy()) for a in (x, w, b, g))
        if op == "linear_forward":
            out["torch"] = lambda: torch_F.linear(tx, tw, tb)
        else:
            def torch_products():
                torch_F.linear(tx, tw, tb)
                tg.mm(tw)
                tg.t().mm(tx)
                tg.sum(0)
            out["torch"] = torch_products
    if threads > 1:
        ours_threaded = out["ours"]

        def ours_1thread():
            cx.set_num_threads(1)
            try:
                ours_threaded()
            finally:
                cx.set_num_threads(threads)
        out["ours_1thread"] = ours_1thread
    return out


def _case(op, shape, dtype, threads):
    n, k, m = shape
    return Case("gemm", op, shape, np.dtype(dtype).name, threads,
                lambda: _candidates(op, n, k, m, dtype, threads),
                flops=FLOPS_PER_NKM[op] * n * k * m)


@suite("gemm")
def gemm_cases(options):
    shapes = QUICK_SHAPES if options.quick else SHAPES
    threads = options.threads or ((1,) if options.quick else (1, 2))
    cases = []
    for shape in shapes:
        for dtype in (np.float32, np.float64):
            for t in threads:
                if t > 1 and shape not in THREADED_SHAPES and not options.threads:
                    continue
                for op in ("linear_forward", "linear_fwd_bwd"):
                    cases.append(_case(op, shape, dtype, t))
    return cases
