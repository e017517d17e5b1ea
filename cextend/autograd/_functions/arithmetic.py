"""Elementwise arithmetic with broadcasting, and matrix products.

Gradients for broadcast operands come back at the broadcast shape; the
engine sums them down to each input's shape.  Python scalars are accepted
as either operand and receive no gradient.
"""
import math

import numpy as np

from cextend.autograd.function import Function
from cextend.autograd._functions._util import raw, wrap


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return wrap(np.add(raw(a), raw(b)))

    @staticmethod
    def backward(ctx, g):
        return (g if ctx.needs_input_grad[0] else None,
                g if ctx.needs_input_grad[1] else None)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        return wrap(np.subtract(raw(a), raw(b)))

    @staticmethod
    def backward(ctx, g):
        return (g if ctx.needs_input_grad[0] else None,
                -g if ctx.needs_input_grad[1] else None)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(*(x if not isinstance(x, (int, float)) else None for x in (a, b)))
        ctx.scalars = (a, b)
        return wrap(np.multiply(raw(a), raw(b)))

    @staticmethod
    def backward(ctx, g):
        a, b = _operands(ctx)
        return (g * b if ctx.needs_input_grad[0] else None,
                g * a if ctx.needs_input_grad[1] else None)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(*(x if not isinstance(x, (int, float)) else None for x in (a, b)))
        ctx.scalars = (a, b)
        return wrap(np.true_divide(raw(a), raw(b)))

    @staticmethod
    def backward(ctx, g):
        a, b = _operands(ctx)
        grad_a = g / b if ctx.needs_input_grad[0] else None
        grad_b = -g * a / (b * b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def _operands(ctx):
    """The saved operands, with Python scalars in place of the None slots."""
    saved = ctx.saved_tensors
    return tuple(s if s is not None else scalar for s, scalar in zip(saved, ctx.scalars))


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return wrap(np.negative(a._data))

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Function):
    """a ** b for a Tensor and a scalar exponent, a scalar base, or two Tensors."""

    @staticmethod
    def forward(ctx, a, b):
        out = wrap(np.power(raw(a), raw(b)))
        ctx.save_for_backward(*(x if not isinstance(x, (int, float)) else None for x in (a, b, out)))
        ctx.scalars = (a, b, None)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = _operands(ctx)
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = g * b * a ** (b - 1)
        if ctx.needs_input_grad[1]:
            log_a = a.log() if not isinstance(a, (int, float)) else math.log(a)
            grad_b = g * out * log_a
        return grad_a, grad_b


class Mm(Function):
    """2-D matrix product."""

    @staticmethod
    def forward(ctx, a, b):
        if a.dim() != 2 or b.dim() != 2:
            raise RuntimeError("mm: both arguments must be 2-D matrices, got shapes %s and %s"
                               % (list(a.shape), list(b.shape)))
        if a.shape[1] != b.shape[0]:
            raise RuntimeError("mm: shapes %s and %s cannot be multiplied (%d != %d)"
                               % (list(a.shape), list(b.shape), a.shape[1], b.shape[0]))
        ctx.save_for_backward(a, b)
        return wrap(a._data @ b._data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g.mm(b.t()) if ctx.needs_input_grad[0] else None,
                a.t().mm(g) if ctx.needs_input_grad[1] else None)


class MatMul(Function):
    """Batched matrix product of operands with at least 2 dims (batch dims broadcast)."""

    @staticmethod
    def forward(ctx, a, b):
        if a.shape[-1] != b.shape[-2]:
            raise RuntimeError("matmul: shapes %s and %s cannot be multiplied (%d != %d)"
                               % (list(a.shape), list(b.shape), a.shape[-1], b.shape[-2]))
        ctx.save_for_backward(a, b)
        return wrap(np.matmul(a._data, b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g.matmul(b.transpose(-1, -2)) if ctx.needs_input_grad[0] else None,
                a.transpose(-1, -2).matmul(g) if ctx.needs_input_grad[1] else None)
