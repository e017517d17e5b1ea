"""Autograd overhead: nn.Linear forward + sum + backward, and the per-call
cost of Function.apply, against numpy with a hand-written backward and
against torch's autograd.  (Issue 15's autograd targets add their cases
here.)
"""
import numpy as np

import cextend as cx
import cextend.nn as cnn
from cextend.autograd import Function
from registry import Case, suite

try:
    import torch
    import torch.nn.functional as torch_F
except ImportError:
    torch = None

SHAPES = [(1, 8, 8), (32, 128, 128), (64, 512, 512), (128, 1024, 1024), (256, 2048, 2048)]


def _linear_sum_backward(n, k, m, dtype):
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((n, k), (m, k), (m,)))
    layer = cnn.Linear(k, m, dtype=np.dtype(dtype))
    layer.weight.data = cx.from_numpy(w.copy())
    layer.bias.data = cx.from_numpy(b.copy())
    xt = cx.from_numpy(x.copy()).requires_grad_()

    def ours():
        xt.grad = layer.weight.grad = layer.bias.grad = None
        layer(xt).sum().backward()

    def numpy_by_hand():
        y = x @ w.T + b
        g = np.ones_like(y)
        return y.sum(), g @ w, g.T @ x, g.sum(0)
    out = {"ours": ours, "numpy": numpy_by_hand}
    if torch is not None:
        tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))

        def torch_autograd():
            tx.grad = tw.grad = tb.grad = None
            torch_F.linear(tx, tw, tb).sum().backward()
        out["torch"] = torch_autograd
    return out


class _Identity(Function):
    @staticmethod
    def forward(ctx, a):
        return a

    @staticmethod
    def backward(ctx, g):
        return g


def _function_apply():
    x = cx.randn(1, requires_grad=True)
    out = {"ours": lambda: _Identity.apply(x)}
    if torch is not None:
        class TorchIdentity(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.view_as(a)

            @staticmethod
            def backward(ctx, g):
                return g
        tx = torch.randn(1, requires_grad=True)
        out["torch"] = lambda: TorchIdentity.apply(tx)
    return out


@suite("autograd")
def autograd_cases(options):
    shapes = SHAPES[:2] if options.quick else SHAPES
    cases = [Case("autograd", "linear_sum_backward", (n, k, m), np.dtype(dtype).name, 1,
                  lambda n=n, k=k, m=m, dtype=dtype: _linear_sum_backward(n, k, m, dtype),
                  flops=6 * n * k * m)
             for (n, k, m) in shapes for dtype in (np.float32, np.float64)]
    cases.append(Case("autograd", "function_apply", (1,), "float32", 1, _function_apply))
    return cases
