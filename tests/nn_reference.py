"""Float64 numpy references for the CNN kernels, written from the definitions.

Convolution: a zero-padded copy of x and one einsum per kernel tap, each
returning the elementwise error bound |x| |w| (the same sum over absolute
values) so tests can assert |ours - ref| <= c * K * u * bound.  Pooling:
plain loops over each window, in the row-major window order torch uses.
"""
import math

import numpy as np


def _padded(x, pad, reach):
    """x (N, C, H, W) in a zero array with pad before and room up to reach."""
    n, c, h, w = x.shape
    rows = max(pad[0] + h, reach[0])
    cols = max(pad[1] + w, reach[1])
    out = np.zeros((n, c, rows, cols))
    out[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w] = x
    return out


def _taps(kh, kw, stride, dilation, out_size):
    """(p, q, row slice, col slice) of each kernel tap in the padded input."""
    for p in range(kh):
        for q in range(kw):
            r0, c0 = p * dilation[0], q * dilation[1]
            yield p, q, slice(r0, r0 + (out_size[0] - 1) * stride[0] + 1, stride[0]), \
                slice(c0, c0 + (out_size[1] - 1) * stride[1] + 1, stride[1])


def _reach(kh, kw, stride, dilation, out_size):
    return ((out_size[0] - 1) * stride[0] + (kh - 1) * dilation[0] + 1,
            (out_size[1] - 1) * stride[1] + (kw - 1) * dilation[1] + 1)


def conv2d(x, w, b, stride, pad, dilation, groups, out_size):
    """(y, |x| |w| bound) of the cross-correlation, x read as zero outside."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n = x.shape[0]
    c_out, cig, kh, kw = w.shape
    cog = c_out // groups
    xp = _padded(x, pad, _reach(kh, kw, stride, dilation, out_size))
    y = np.zeros((n, c_out) + tuple(out_size))
    bound = np.zeros_like(y)
    for g in range(groups):
        ci, co = slice(g * cig, (g + 1) * cig), slice(g * cog, (g + 1) * cog)
        for p, q, rows, cols in _taps(kh, kw, stride, dilation, out_size):
            patch = xp[:, ci, rows, cols]
            y[:, co] += np.einsum("ncij,oc->noij", patch, w[co, :, p, q])
            bound[:, co] += np.einsum("ncij,oc->noij", np.abs(patch), np.abs(w[co, :, p, q]))
    if b is not None:
        y += np.asarray(b, np.float64)[None, :, None, None]
        bound += np.abs(np.asarray(b, np.float64))[None, :, None, None]
    return y, bound


def conv2d_input_grad(dy, w, stride, pad, dilation, groups, x_shape):
    """(dx, bound): the adjoint of conv2d in x (= conv_transpose2d of dy)."""
    dy, w = np.asarray(dy, np.float64), np.asarray(w, np.float64)
    c_out, cig, kh, kw = w.shape
    cog = c_out // groups
    out_size = dy.shape[2:]
    reach = _reach(kh, kw, stride, dilation, out_size)
    shape = (x_shape[0], x_shape[1], max(pad[0] + x_shape[2], reach[0]), max(pad[1] + x_shape[3], reach[1]))
    dxp, bound = np.zeros(shape), np.zeros(shape)
    for g in range(groups):
        ci, co = slice(g * cig, (g + 1) * cig), slice(g * cog, (g + 1) * cog)
        for p, q, rows, cols in _taps(kh, kw, stride, dilation, out_size):
            dxp[:, ci, rows, cols] += np.einsum("noij,oc->ncij", dy[:, co], w[co, :, p, q])
            bound[:, ci, rows, cols] += np.einsum("noij,oc->ncij", np.abs(dy[:, co]), np.abs(w[co, :, p, q]))
    crop = (slice(None), slice(None), slice(pad[0], pad[0] + x_shape[2]), slice(pad[1], pad[1] + x_shape[3]))
    return dxp[crop], bound[crop]


def conv2d_weight_grad(dy, x, stride, pad, dilation, groups, w_shape):
    """(dw, bound): the adjoint of conv2d in w."""
    dy, x = np.asarray(dy, np.float64), np.asarray(x, np.float64)
    c_out, cig, kh, kw = w_shape
    cog = c_out // groups
    out_size = dy.shape[2:]
    xp = _padded(x, pad, _reach(kh, kw, stride, dilation, out_size))
    dw, bound = np.zeros(w_shape), np.zeros(w_shape)
    for g in range(groups):
        ci, co = slice(g * cig, (g + 1) * cig), slice(g * cog, (g + 1) * cog)
        for p, q, rows, cols in _taps(kh, kw, stride, dilation, out_size):
            patch = xp[:, ci, rows, cols]
            dw[co, :, p, q] = np.einsum("noij,ncij->oc", dy[:, co], patch)
            bound[co, :, p, q] = np.einsum("noij,ncij->oc", np.abs(dy[:, co]), np.abs(patch))
    return dw, bound


def assert_close(ours, ref, bound, dtype, reduction, c=4.0, what="result"):
    """|ours - ref| <= c * reduction * u * bound elementwise, with no NaN left."""
    ours = np.asarray(ours)
    assert ours.shape == ref.shape, (what, ours.shape, ref.shape)
    assert ours.dtype == np.dtype(dtype), (what, ours.dtype)
    assert not np.isnan(ours).any(), "%s: NaN left (an unwritten or wrong element)" % what
    u = np.finfo(dtype).eps / 2
    tolerance = c * max(reduction, 1) * u * bound
    err = np.abs(ours.astype(np.float64) - ref)
    if err.size:
        worst = np.unravel_index(np.argmax(err - tolerance), err.shape)
        assert np.all(err <= tolerance), "%s: error %g > bound %g at %s" % (
            what, err[worst], tolerance[worst], worst)


# -- pooling -------------------------------------------------------------------------------

def max_pool2d(x, kernel, stride, pad, dilation, out_size):
    """(values, indices): torch's rule, a NaN always replaces (the last NaN
    wins), otherwise only a strictly larger value; -inf and torch's index
    for a window with no element inside the image."""
    n, c, h, w = x.shape
    values = np.empty((n, c) + tuple(out_size), x.dtype)
    indices = np.empty((n, c) + tuple(out_size), np.int64)
    for i in range(out_size[0]):
        rows = [i * stride[0] - pad[0] + p * dilation[0] for p in range(kernel[0])]
        rows = [r for r in rows if 0 <= r < h]
        first_row = i * stride[0] - pad[0]
        while first_row < 0:
            first_row += dilation[0]
        for j in range(out_size[1]):
            cols = [j * stride[1] - pad[1] + q * dilation[1] for q in range(kernel[1])]
            cols = [s for s in cols if 0 <= s < w]
            first_col = j * stride[1] - pad[1]
            while first_col < 0:
                first_col += dilation[1]
            for b in range(n):
                for ch in range(c):
                    best, best_index = -np.inf, first_row * w + first_col
                    for r in rows:
                        for s in cols:
                            v = x[b, ch, r, s]
                            if v > best or np.isnan(v):
                                best, best_index = v, r * w + s
                    values[b, ch, i, j] = best
                    indices[b, ch, i, j] = best_index
    return values, indices


def avg_pool2d(x, kernel, stride, pad, count_include_pad, divisor_override, out_size):
    """(y, windows): y in float64 and, per output, (rows, cols, divisor)."""
    n, c, h, w = x.shape
    x = np.asarray(x, np.float64)
    y = np.zeros((n, c) + tuple(out_size))
    windows = {}
    for i in range(out_size[0]):
        for j in range(out_size[1]):
            r0, c0 = i * stride[0] - pad[0], j * stride[1] - pad[1]
            r1, c1 = min(r0 + kernel[0], h + pad[0]), min(c0 + kernel[1], w + pad[1])
            size = (r1 - r0) * (c1 - c0)
            r0, c0, r1, c1 = max(r0, 0), max(c0, 0), min(r1, h), min(c1, w)
            if r0 >= r1 or c0 >= c1:
                windows[i, j] = None
                continue
            div = divisor_override or (size if count_include_pad else (r1 - r0) * (c1 - c0))
            windows[i, j] = (slice(r0, r1), slice(c0, c1), div)
            y[:, :, i, j] = x[:, :, r0:r1, c0:c1].sum(axis=(2, 3)) / div
    return y, windows


def avg_pool2d_backward(dy, x_shape, windows):
    dx = np.zeros(x_shape)
    for (i, j), window in windows.items():
        if window is not None:
            rows, cols, div = window
            dx[:, :, rows, cols] += np.asarray(dy, np.float64)[:, :, i, j, None, None] / div
    return dx


def adaptive_windows(size, out):
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def adaptive_avg_pool2d(x, out_size):
    x = np.asarray(x, np.float64)
    y = np.zeros(x.shape[:2] + tuple(out_size))
    for i, (r0, r1) in enumerate(adaptive_windows(x.shape[2], out_size[0])):
        for j, (c0, c1) in enumerate(adaptive_windows(x.shape[3], out_size[1])):
            y[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return y


def adaptive_avg_pool2d_backward(dy, x_shape):
    dy = np.asarray(dy, np.float64)
    dx = np.zeros(x_shape)
    out_size = dy.shape[2:]
    for i, (r0, r1) in enumerate(adaptive_windows(x_shape[2], out_size[0])):
        for j, (c0, c1) in enumerate(adaptive_windows(x_shape[3], out_size[1])):
            dx[:, :, r0:r1, c0:c1] += dy[:, :, i, j, None, None] / ((r1 - r0) * (c1 - c0))
    return dx


# -- batch norm -----------------------------------------------------------------------------

def batch_norm(x, mean, var, w, b, eps):
    """y and xhat in float64 from given per-channel mean and (biased) var."""
    x = np.asarray(x, np.float64)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    xhat = (x - np.asarray(mean, np.float64).reshape(shape)) / np.sqrt(np.asarray(var, np.float64).reshape(shape) + eps)
    y = xhat * (1.0 if w is None else np.asarray(w, np.float64).reshape(shape))
    return y + (0.0 if b is None else np.asarray(b, np.float64).reshape(shape)), xhat


def batch_stats(x):
    """Per-channel mean and biased variance of x (N, C, *) in float64."""
    x = np.asarray(x, np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    if x.size == 0:         # no values per channel: no statistics
        return np.full(x.shape[1], np.nan), np.full(x.shape[1], np.nan), axes
    return x.mean(axis=axes), x.var(axis=axes), axes
