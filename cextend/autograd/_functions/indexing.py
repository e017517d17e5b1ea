"""Indexing, index-put, concatenation and scatter/gather along a dim.

Index and IndexAdd are each other's backward (and so are ScatterAlong and
GatherAlong), so any number of derivatives can be taken.
"""
import numpy as np

from cextend.autograd.function import Function
from cextend.autograd._functions._util import maybe_view_of, wrap


def _is_basic(key):
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, (int, slice, type(None), type(Ellipsis))) for p in parts)


class Index(Function):
    @staticmethod
    def forward(ctx, a, key):
        if a.is_cuda:
            raise TypeError("indexing is not supported on cuda tensors; move the tensor with .cpu() first")
        ctx.key, ctx.in_shape, ctx.dtype = key, a.shape, a._data.dtype
        out = a._data[key]
        if _is_basic(key):
            return maybe_view_of(np.asarray(out), a)
        return wrap(np.array(out))

    @staticmethod
    def backward(ctx, g):
        return IndexAdd.apply(g, ctx.key, ctx.in_shape), None


class IndexAdd(Function):
    """zeros(shape) with g added at key (repeated indices accumulate)."""

    @staticmethod
    def forward(ctx, g, key, shape):
        ctx.key = key
        out = np.zeros(shape, g._data.dtype)
        np.add.at(out, key, g._data)
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return Index.apply(gg, ctx.key), None, None


class IndexPut(Function):
    """a[key] = value, in place."""

    @staticmethod
    def forward(ctx, a, key, value):
        ctx.key = key
        ctx.value_shape = value.shape if hasattr(value, "shape") else None
        a._data[key] = value._data if hasattr(value, "_data") else value
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        grad_a = grad_value = None
        if ctx.needs_input_grad[0]:
            # The overwritten elements get no gradient: a constant mask keeps
            # this differentiable with respect to g.
            keep = np.ones(g.shape, g._data.dtype)
            keep[ctx.key] = 0
            grad_a = g * wrap(keep)
        if ctx.needs_input_grad[2]:
            grad_value = g[ctx.key]
        return grad_a, None, grad_value


class Cat(Function):
    @staticmethod
    def forward(ctx, dim, *tensors):
        ctx.dim = dim
        ctx.sizes = [t.shape[dim] for t in tensors]
        return wrap(np.concatenate([t._data for t in tensors], axis=dim))

    @staticmethod
    def backward(ctx, g):
        grads, start = [], 0
        for size in ctx.sizes:
            index = [slice(None)] * g.dim()
            index[ctx.dim] = slice(start, start + size)
            grads.append(g[tuple(index)])
            start += size
        return (None,) + tuple(grads)


class Stack(Function):
    @staticmethod
    def forward(ctx, dim, *tensors):
        ctx.dim = dim
        return wrap(np.stack([t._data for t in tensors], axis=dim))

    @staticmethod
    def backward(ctx, g):
        count = g.shape[ctx.dim]
        index = [slice(None)] * g.dim()
        grads = []
        for i in range(count):
            index[ctx.dim] = i
            grads.append(g[tuple(index)])
        return (None,) + tuple(grads)


class ScatterAlong(Function):
    """zeros(shape) with g put at `indices` along dim (one index per slot)."""

    @staticmethod
    def forward(ctx, g, indices, dim, shape):
        ctx.indices, ctx.dim = indices, dim
        out = np.zeros(shape, g._data.dtype)
        np.put_along_axis(out, indices, g._data, axis=dim)
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return GatherAlong.apply(gg, ctx.indices, ctx.dim), None, None, None


class GatherAlong(Function):
    @staticmethod
    def forward(ctx, a, indices, dim):
        ctx.indices, ctx.dim, ctx.in_shape = indices, dim, a.shape
        return wrap(np.take_along_axis(a._data, indices, axis=dim))

    @staticmethod
    def backward(ctx, g):
        return ScatterAlong.apply(g, ctx.indices, ctx.dim, ctx.in_shape), None, None
