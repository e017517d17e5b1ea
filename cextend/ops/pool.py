"""2-D max, average and adaptive average pooling on plain numpy arrays (C kernels).

Part of cextend.ops.  x is (N, C, H, W), read in place through its strides;
the window arithmetic (output sizes, ceil_mode, padding limits, which
element a max picks, what an average divides by) is torch's.
"""
import numpy as np

from cextend import _backend

from cextend.ops import _checks
from cextend.ops._shapes import adaptive_output_shape, divisor, pool2d_window

__all__ = ["max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward",
           "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward", "adaptive_max_pool2d_forward"]


def _input(x, name="x"):
    _checks.array(x, name)
    return _checks.float_dtype(**{name: x})


def _x_shape(x_shape):
    shape = _checks.sizes(x_shape, "x_shape")
    if len(shape) != 4:
        raise _checks.ArgumentError("x_shape must be 4-D (N, C, H, W), got %s" % (shape,))
    return shape


def _grad(grad_out, expected, what):
    _checks.array(grad_out, "grad_out")
    dtype = _checks.float_dtype(grad_out=grad_out)
    _checks.shape(grad_out, "grad_out", expected, what)
    return dtype


# -- max ------------------------------------------------------------------------------------

def max_pool2d_forward(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """(values, indices) of torch's max_pool2d(..., return_indices=True):
    indices are int64 flat h*W + w positions in each input plane.  A NaN
    always wins (the last one of a window), else the first maximum."""
    dtype = _input(x)
    window, shape = pool2d_window(x.shape, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    values = _checks.empty(shape, dtype, "max_pool2d")
    indices = _checks.empty(shape, np.int64, "max_pool2d")
    if values.size:
        _backend.max_pool2d_forward(x, values, indices, window)
    return values, indices


def max_pool2d_backward(grad_out, indices, x_shape):
    """dx of x_shape: grad_out added at each window's argmax index."""
    x_shape = _x_shape(x_shape)
    _checks.index_array(indices, "indices")
    if indices.ndim != 4 or indices.shape[:2] != x_shape[:2]:
        raise _checks.ArgumentError("indices must have shape (N, C, H_out, W_out) with (N, C) = %s, got %s"
                         % (x_shape[:2], indices.shape))
    dtype = _grad(grad_out, indices.shape, "indices.shape")
    dx = np.empty(x_shape, dtype)
    if dx.size:
        _backend.max_pool2d_backward(grad_out, indices, dx)
    return dx


# -- average --------------------------------------------------------------------------------

def _avg_window(x_shape, kernel_size, stride, padding, ceil_mode):
    window, shape = pool2d_window(x_shape, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    return window[:3], shape


def avg_pool2d_forward(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                       divisor_override=None):
    """torch's avg_pool2d on x (N, C, H, W)."""
    dtype = _input(x)
    override = divisor(divisor_override)
    window, shape = _avg_window(x.shape, kernel_size, stride, padding, ceil_mode)
    y = _checks.empty(shape, dtype, "avg_pool2d")
    if y.size:
        _backend.avg_pool2d_forward(x, y, window, bool(count_include_pad), override)
    return y


def avg_pool2d_backward(grad_out, x_shape, kernel_size, stride=None, padding=0, ceil_mode=False,
                        count_include_pad=True, divisor_override=None):
    """dx of avg_pool2d_forward for an input of x_shape."""
    x_shape = _x_shape(x_shape)
    override = divisor(divisor_override)
    window, shape = _avg_window(x_shape, kernel_size, stride, padding, ceil_mode)
    dtype = _grad(grad_out, shape, "avg_pool2d's output shape")
    dx = np.empty(x_shape, dtype)
    if dx.size:
        _backend.avg_pool2d_backward(grad_out, dx, window, bool(count_include_pad), override)
    return dx


# -- adaptive average ------------------------------------------------------------------

def adaptive_avg_pool2d_forward(x, output_size):
    """torch's adaptive_avg_pool2d: output_size an int, or a pair whose None
    entries keep the input's size."""
    dtype = _input(x)
    y = _checks.empty(adaptive_output_shape(x.shape, output_size), dtype, "adaptive_avg_pool2d")
    if y.size:
        _backend.adaptive_avg_pool2d_forward(x, y)
    return y


def adaptive_avg_pool2d_backward(grad_out, x_shape):
    """dx of adaptive_avg_pool2d_forward for an input of x_shape; the output
    size is grad_out's."""
    x_shape = _x_shape(x_shape)
    _checks.array(grad_out, "grad_out")
    if grad_out.ndim != 4 or grad_out.shape[:2] != x_shape[:2]:
        raise _checks.ArgumentError("grad_out must have shape (N, C, H_out, W_out) with (N, C) = %s, got %s"
                         % (x_shape[:2], grad_out.shape))
    adaptive_output_shape(x_shape, grad_out.shape[2:])
    dtype = _checks.float_dtype(grad_out=grad_out)
    dx = np.empty(x_shape, dtype)
    if dx.size:
        _backend.adaptive_avg_pool2d_backward(grad_out, dx)
    return dx


# -- adaptive max (numpy: no C of its own; its backward is max_pool2d_backward) --------

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
