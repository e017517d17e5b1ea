"""Adaptive max pooling (torch's adaptive_max_pool2d) in numpy, no C of its own.

Output cell (i, j) of an (H, W) plane pools rows [floor(i*H/oh), ceil((i+1)*H/oh))
and columns likewise, as torch's kernel.  Its backward is max pooling's:
the gradient is added at each cell's argmax with the C scatter kernel, and
the double backward gathers there (cextend/functions/pooling.py).
"""
import numpy as np

from cextend._ops._record import reads_through
from cextend.autograd.function import Function
from cextend.functions._tensors import wrap
from cextend.functions.conv import float_operands
from cextend.functions.pooling import _ScatterToIndices


def _windows(size, out):
    """(positions (out, width) clipped into range, which of them lie in the window)."""
    i = np.arange(out)
    starts = (i * size) // out
    ends = ((i + 1) * size + out - 1) // out
    width = int((ends - starts).max()) if out else 0
    positions = starts[:, None] + np.arange(width)[None, :]
    return np.minimum(positions, size - 1), positions < ends[:, None]


def adaptive_max_pool2d_forward(x, output_size):
    """(values, int64 flat h*W + w indices) of x (N, C, H, W) for output_size (oh, ow).
    A NaN wins (the last one of a window, in row-major window order), else
    the first maximum: torch's `val > max || isnan(val)` scan from -inf."""
    n, c, h, w = x.shape
    oh, ow = output_size
    rows, row_ok = _windows(h, oh)                      # (oh, kh)
    cols, col_ok = _windows(w, ow)                      # (ow, kw)
    kh, kw = rows.shape[1], cols.shape[1]
    gathered = x[:, :, rows[:, :, None, None], cols[None, None, :, :]]          # (n, c, oh, kh, ow, kw)
    gathered = gathered.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, oh, ow, kh * kw)
    inside = (row_ok[:, None, :, None] & col_ok[None, :, None, :]).reshape(oh, ow, kh * kw)
    flat = (rows[:, None, :, None] * w + cols[None, :, None, :]).reshape(oh, ow, kh * kw)
    values = np.where(inside, gathered, -np.inf).astype(x.dtype, copy=False)
    nan = np.isnan(values)
    if kh * kw:
        last_nan = kh * kw - 1 - np.argmax(nan[..., ::-1], axis=-1)
        first_max = np.argmax(np.where(nan, -np.inf, values), axis=-1)
        pick = np.where(nan.any(axis=-1), last_nan, first_max)[..., None]
    else:
        pick = np.zeros(values.shape[:-1] + (1,), np.int64)
    out_values = np.take_along_axis(values, pick, axis=-1)[..., 0] if values.size else \
        np.empty((n, c, oh, ow), x.dtype)
    indices = np.take_along_axis(np.broadcast_to(flat, values.shape), pick, axis=-1)[..., 0] if values.size else \
        np.empty((n, c, oh, ow), np.int64)
    return np.ascontiguousarray(out_values, dtype=x.dtype), np.ascontiguousarray(indices, dtype=np.int64)


class AdaptiveMaxPool2dFunction(Function):
    """input (N, C, H, W), output_size (oh, ow) -> (values, int64 indices into each H*W plane)."""

    _torch_node_name = "AdaptiveMaxPool2DBackward0"

    @staticmethod
    def forward(ctx, input, output_size):
        x, = float_operands("adaptive_max_pool2d", input=input)
        values, indices = adaptive_max_pool2d_forward(x, output_size)
        indices = wrap(indices)
        ctx.mark_non_differentiable(indices)
        # torch's AdaptiveMaxPool2DBackward0 saves self and result1 (the indices)
        ctx.save_for_backward(input, indices)
        return wrap(values), indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        input, indices = ctx.saved_tensors
        grad = _ScatterToIndices.apply(grad_values, indices._data, input.shape)
        return reads_through("AdaptiveMaxPool2DBackwardBackward", grad, input), None
