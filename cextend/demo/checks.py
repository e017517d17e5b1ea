"""Section 1 of the demo: gradcheck and gradgradcheck of the C-backed ops.

Every case runs in float64 on small random inputs: the analytical Jacobian
(the C backward) against finite differences, then the same for the
backward's own derivative (double backward through the same kernels).
"""
import time

import numpy as np

import cextend as cx
import cextend.nn.functional as F
from cextend.autograd import gradcheck, gradgradcheck
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant


def _leaf(rng, *shape):
    return cx.from_numpy(rng.standard_normal(shape)).requires_grad_()


def mlp_cases(rng):
    w_t = cx.from_numpy(np.ascontiguousarray(rng.standard_normal((6, 4))).T).requires_grad_()
    return [
        ("LinearFunction (x, W, b)", LinearFunction.apply, (_leaf(rng, 5, 6), _leaf(rng, 4, 6), _leaf(rng, 4))),
        ("LinearFunction (3-D x, W^T view)", LinearFunction.apply, (_leaf(rng, 2, 3, 6), w_t)),
        ("MulConstant (x, 2.5)", lambda t: MulConstant.apply(t, 2.5), (_leaf(rng, 3, 4),)),
        ("Add (a, b)", Add.apply, (_leaf(rng, 3, 4), _leaf(rng, 3, 4))),
        ("GlobalMaxPool values", lambda t: GlobalMaxPool.apply(t)[0], (_leaf(rng, 2, 3, 4, 4),)),
    ]


def cnn_cases(rng):
    return [
        ("conv2d (stride 2, pad 1, groups 2)",
         lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
         (_leaf(rng, 2, 4, 5, 6), _leaf(rng, 6, 2, 3, 3), _leaf(rng, 6))),
        ("batch_norm (training)",
         lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         (_leaf(rng, 3, 4, 3, 2), _leaf(rng, 4), _leaf(rng, 4))),
        ("max_pool2d (2x2)", lambda x: F.max_pool2d(x, 2), (_leaf(rng, 2, 3, 5, 4),)),
        ("linear (x, W, b)", F.linear, (_leaf(rng, 5, 6), _leaf(rng, 4, 6), _leaf(rng, 4))),
    ]


def check_functions(cases, stream=None):
    """Print one row per case; True when every check passed."""
    print("1. gradcheck / gradgradcheck of the C-backed ops (float64)\n", file=stream)
    print("   %-36s %-9s %-9s %s" % ("op", "grad", "gradgrad", "time"), file=stream)
    all_ok = True
    for name, fn, inputs in cases:
        start = time.perf_counter()
        first = gradcheck(fn, inputs, raise_exception=False)
        second = gradgradcheck(fn, inputs, raise_exception=False)
        all_ok &= first and second
        print("   %-36s %-9s %-9s %.0f ms" % (name, "pass" if first else "FAIL", "pass" if second else "FAIL",
                                              (time.perf_counter() - start) * 1e3), file=stream)
    print(file=stream)
    return all_ok
