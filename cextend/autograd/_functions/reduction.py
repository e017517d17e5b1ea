"""Reductions: sum, mean, max.  Backward spreads the gradient back over
the reduced dimensions (expand), which is itself differentiable."""
import numpy as np

from cextend._device import empty_like
from cextend.autograd.function import Function
from cextend.autograd.grad_mode import is_grad_enabled
from cextend.autograd._functions._util import constant, wrap


def _keepdim_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _spread(g, ctx):
    """g broadcast back over the reduced dims: recorded when building a
    double-backward graph, else filled into a fresh array with numpy (faster
    than np.broadcast_to, and contiguous for the C kernels downstream)."""
    keep = _keepdim_shape(ctx.in_shape, ctx.dims)
    if is_grad_enabled():
        return g.reshape(keep).expand(ctx.in_shape)
    out = empty_like(ctx.in_shape, g._data.dtype, like=g._data)
    out[...] = g._data.reshape(keep)
    return wrap(out)


class Sum(Function):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        data = a._data
        ctx.in_shape = data.shape
        ctx.dims = tuple(range(data.ndim)) if dims is None else dims
        # The array method skips np.sum's Python-level dispatch.
        return wrap(data.sum(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _spread(g, ctx), None, None


class Mean(Function):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        data = a._data
        ctx.in_shape = data.shape
        ctx.dims = tuple(range(data.ndim)) if dims is None else dims
        ctx.count = int(np.prod([data.shape[d] for d in ctx.dims]))
        return wrap(data.mean(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _spread(g, ctx) / ctx.count, None, None


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
