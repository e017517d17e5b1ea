"""Reflect, replicate and circular padding of the last two dims, as torch's
F.pad modes of those names, for the convolution layers' padding_mode.

The padded tensor gathers input positions through an index map (numpy's
pad of an arange in the matching mode); its backward adds each gradient
back to the position it came from, and the two are each other's adjoint,
so double backward works.
"""
import numpy as np

from cextend.autograd.function import Function
from cextend.functions._tensors import wrap

_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def index_maps(height, width, pads, mode):
    """(rows, cols): the input row and column of each padded position.
    pads = (left, right, top, bottom), torch's order for the last two dims."""
    left, right, top, bottom = pads
    for size, before, after, dim in ((width, left, right, -1), (height, top, bottom, -2)):
        if mode == "reflect" and max(before, after) >= size:
            raise ValueError("Padding size should be less than the corresponding input dimension, but got: "
                             "padding (%d, %d) at dimension %d of input of size %d" % (before, after, dim, size))
        if mode == "circular" and max(before, after) > size:
            raise ValueError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and size == 0 and max(before, after) > 0:
            raise ValueError("replicate padding needs a non-empty dimension %d" % dim)
    rows = np.pad(np.arange(height), (top, bottom), mode=_NUMPY_MODES[mode])
    cols = np.pad(np.arange(width), (left, right), mode=_NUMPY_MODES[mode])
    return rows, cols


class PadFunction(Function):
    """input (*, H, W) -> (*, top + H + bottom, left + W + right)."""

    @staticmethod
    def forward(ctx, input, pads, mode):
        if mode not in _NUMPY_MODES:
            raise ValueError("padding mode must be one of %s, got %r" % (sorted(_NUMPY_MODES), mode))
        x = input._data
        ctx.rows, ctx.cols = index_maps(x.shape[-2], x.shape[-1], pads, mode)
        ctx.input_shape = x.shape
        return wrap(np.ascontiguousarray(x[..., ctx.rows[:, None], ctx.cols[None, :]]))

    @staticmethod
    def backward(ctx, grad):
        return _AddBack.apply(grad, ctx.rows, ctx.cols, ctx.input_shape), None, None


class _AddBack(Function):
    """Each padded position's value added to the input position it copies."""

    @staticmethod
    def forward(ctx, grad, rows, cols, input_shape):
        ctx.rows, ctx.cols = rows, cols
        g = grad._data
        height, width = input_shape[-2:]
        out = np.zeros(input_shape, g.dtype)
        flat_out = out.reshape(-1, height * width)
        flat_index = (rows[:, None] * width + cols[None, :]).ravel()
        np.add.at(flat_out, (slice(None), flat_index), g.reshape(flat_out.shape[0], len(flat_index)))
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return _Gather.apply(gg, ctx.rows, ctx.cols), None, None, None


class _Gather(Function):
    @staticmethod
    def forward(ctx, x, rows, cols):
        ctx.rows, ctx.cols, ctx.input_shape = rows, cols, x.shape
        return wrap(np.ascontiguousarray(x._data[..., rows[:, None], cols[None, :]]))

    @staticmethod
    def backward(ctx, g):
        return _AddBack.apply(g, ctx.rows, ctx.cols, ctx.input_shape), None, None
