"""Reductions: sum, mean, max.  Backward spreads the gradient back over
the reduced dimensions (expand), which is itself differentiable."""
import numpy as np

from cextend.autograd.function import Function
from cextend.autograd._functions._util import constant, wrap


def _keepdim_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


class Sum(Function):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.in_shape = a.shape
        ctx.dims = tuple(range(a.dim())) if dims is None else dims
        return wrap(np.sum(a._data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(_keepdim_shape(ctx.in_shape, ctx.dims)).expand(ctx.in_shape), None, None


class Mean(Function):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.in_shape = a.shape
        ctx.dims = tuple(range(a.dim())) if dims is None else dims
        ctx.count = int(np.prod([a.shape[d] for d in ctx.dims]))
        return wrap(np.mean(a._data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        spread = g.reshape(_keepdim_shape(ctx.in_shape, ctx.dims)).expand(ctx.in_shape)
        return spread / ctx.count, None, None


class Max(Function):
    """Maximum of all elements; ties share the gradient evenly (as torch's max())."""

    @staticmethod
    def forward(ctx, a):
        if a.numel() == 0:
            raise RuntimeError("max(): expected a non-empty tensor")
        out = a._data.max()
        mask = (a._data == out)
        ctx.share = constant((mask / mask.sum()).astype(a._data.dtype))
        return wrap(np.asarray(out))

    @staticmethod
    def backward(ctx, g):
        return g * ctx.share


class MaxDim(Function):
    """(values, indices) of the maximum along dim; the gradient goes to the index."""

    @staticmethod
    def forward(ctx, a, dim, keepdim):
        if a.shape[dim] == 0:
            raise RuntimeError("max(): cannot reduce over an empty dimension %d" % dim)
        indices = np.expand_dims(np.argmax(a._data, axis=dim), dim)
        values = np.take_along_axis(a._data, indices, axis=dim)
        ctx.in_shape, ctx.dim, ctx.keepdim = a.shape, dim, keepdim
        ctx.indices = indices
        if not keepdim:
            values, indices = np.squeeze(values, dim), np.squeeze(indices, dim)
        idx = wrap(indices.astype(np.int64))
        ctx.mark_non_differentiable(idx)
        return wrap(values), idx

    @staticmethod
    def backward(ctx, g, _):
        from cextend.autograd._functions.indexing import ScatterAlong
        if not ctx.keepdim:
            g = g.unsqueeze(ctx.dim)
        return ScatterAlong.apply(g, ctx.indices, ctx.dim, ctx.in_shape), None, None
