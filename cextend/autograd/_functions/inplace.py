"""In-place arithmetic on tensors that record history.

Each Function modifies its first input, marks it dirty and returns it; the
tensor's grad_fn moves to the new node.  (Tensor's in-place methods take a
plain numpy path when no history is being recorded.)
"""
import numpy as np

from cextend.autograd.function import Function
from cextend.autograd._functions._util import raw


def _inplace(ctx, a, ufunc, b):
    ufunc(a._data, raw(b), out=a._data, casting="same_kind")
    ctx.mark_dirty(a)
    return a


class AddInplace(Function):
    @staticmethod
    def forward(ctx, a, b):
        return _inplace(ctx, a, np.add, b)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.needs_input_grad[1] else None)


class SubInplace(Function):
    @staticmethod
    def forward(ctx, a, b):
        return _inplace(ctx, a, np.subtract, b)

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


class MulInplace(Function):
    """a *= b.  `original` is a recorded clone of a's old value (given when b
    needs a gradient), so d(grad_b)/d(a) survives a double backward."""

    needs_original = True

    @staticmethod
    def forward(ctx, a, b, original=None):
        ctx.scalar = b
        ctx.save_for_backward(original, b if not isinstance(b, (int, float)) else None)
        return _inplace(ctx, a, np.multiply, b)

    @staticmethod
    def backward(ctx, g):
        original, b = ctx.saved_tensors
        b = ctx.scalar if b is None else b
        return (g * b if ctx.needs_input_grad[0] else None,
                g * original if ctx.needs_input_grad[1] else None, None)


class DivInplace(Function):
    """a /= b, with `original` as for MulInplace."""

    needs_original = True

    @staticmethod
    def forward(ctx, a, b, original=None):
        ctx.scalar = b
        ctx.save_for_backward(original, b if not isinstance(b, (int, float)) else None)
        return _inplace(ctx, a, np.true_divide, b)

    @staticmethod
    def backward(ctx, g):
        original, b = ctx.saved_tensors
        b = ctx.scalar if b is None else b
        return (g / b if ctx.needs_input_grad[0] else None,
                -g * original / (b * b) if ctx.needs_input_grad[1] else None, None)


class Overwrite(Function):
    """a[...] = values (fill_, zero_, uniform_, copy_ on a tensor with history):
    the old contents no longer matter, so a's gradient is zero and the
    source (if a Tensor) receives the gradient."""

    @staticmethod
    def forward(ctx, a, values):
        ctx.source_shape = values.shape if hasattr(values, "_data") else None
        a._data[...] = raw(values)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        return g * 0, (g if ctx.needs_input_grad[1] else None)
