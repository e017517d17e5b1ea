"""Reflect and replicate padding of the last two dims on plain numpy arrays.

Part of cextend.ops (numpy, no C of its own).  The padded array gathers
input positions through an index map (numpy's pad of an arange in the
matching mode); its backward adds each gradient back to the position it
came from: the two are each other's adjoint.
"""
import numpy as np

from cextend._errors import ArgumentError

__all__ = ["index_maps", "pad_forward", "pad_backward"]

_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge"}


def index_maps(height, width, pads, mode):
    """(rows, cols): the input row and column of each padded position.
    pads = (left, right, top, bottom), torch's order for the last two dims."""
    if mode not in _NUMPY_MODES:
        raise ValueError("padding mode must be one of %s, got %r" % (sorted(_NUMPY_MODES), mode))
    left, right, top, bottom = pads
    for size, before, after, dim in ((width, left, right, -1), (height, top, bottom, -2)):
        if mode == "reflect" and max(before, after) >= size:
            raise ArgumentError("Padding size should be less than the corresponding input dimension, but got: "
                                "padding (%d, %d) at dimension %d of input of size %d" % (before, after, dim, size))
        if mode == "replicate" and size == 0 and max(before, after) > 0:
            raise ArgumentError("replicate padding needs a non-empty dimension %d" % dim)
    rows = np.pad(np.arange(height), (top, bottom), mode=_NUMPY_MODES[mode])
    cols = np.pad(np.arange(width), (left, right), mode=_NUMPY_MODES[mode])
    return rows, cols


def pad_forward(x, rows, cols):
    """x (*, H, W) -> (*, len(rows), len(cols)), gathered through the index maps."""
    return np.ascontiguousarray(x[..., rows[:, None], cols[None, :]])


def pad_backward(grad, rows, cols, x_shape):
    """Each padded position's gradient added to the input position it copies."""
    height, width = x_shape[-2:]
    out = np.zeros(x_shape, grad.dtype)
    flat_out = out.reshape(-1, height * width)
    flat_index = (rows[:, None] * width + cols[None, :]).ravel()
    np.add.at(flat_out, (slice(None), flat_index), grad.reshape(flat_out.shape[0], len(flat_index)))
    return out
