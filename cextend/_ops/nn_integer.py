"""Convolution and pooling of integer tensors, as torch computes them on
the CPU: conv2d for every integer dtype (dilated: int64 only),
conv_transpose2d and avg_pool2d for int64 only, max_pool2d for every
integer dtype (bool nowhere).

The C kernels are floating-point, so these run in numpy, in int64 (an
integer result wraps around modulo 2**bits whatever order the products
are added in, so computing in int64 and casting back gives torch's
wrapped values).  Integer tensors never require grad: no autograd here.
Shapes and parameters are checked by the same geometry helpers as the
float paths; `geometry` and `window` arguments come from them.
"""
import numpy as np

from cextend._ops._nn_checks import torch_name

_CONV_DTYPES = frozenset("int8 int16 int32 int64 uint8".split())
_INT64_ONLY = frozenset(["int64"])
_MAX_POOL_DTYPES = _CONV_DTYPES


def _require(dtype, supported, kernel):
    if np.dtype(dtype).name not in supported:
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, torch_name(dtype)))


def _span(out, stride, k, dilation):
    """Padded extent that windows reach: (out - 1) * stride + (k - 1) * dilation + 1."""
    return (out - 1) * stride + (k - 1) * dilation + 1 if out > 0 else 0


def conv2d(x, w, b, geometry):
    """y = conv2d(x, w) + b on integer arrays x (N, C_in, H, W), w (C_out, C_in/groups, kH, kW)."""
    (sh, sw), (ph, pw), (dh, dw), groups = geometry.kernel_args()
    # torch's dilated kernel is another one, with int64 alone of the integers.
    if (dh, dw) != (1, 1):
        _require(x.dtype, _INT64_ONLY, "slow_conv_dilated<>")
    _require(x.dtype, _CONV_DTYPES, "slow_conv2d_cpu")
    n, _, h, wd = x.shape
    c_out, cig, kh, kw = w.shape
    oh, ow = geometry.out_size
    reach_h, reach_w = _span(oh, sh, kh, dh), _span(ow, sw, kw, dw)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (ph, max(0, reach_h - h - ph)), (pw, max(0, reach_w - wd - pw))))
    w64 = w.astype(np.int64)
    out = np.zeros((n, c_out, oh, ow), np.int64)
    cog = c_out // groups
    for g in range(groups):
        xs = xp[:, g * cig:(g + 1) * cig]
        target = out[:, g * cog:(g + 1) * cog]
        for p in range(kh):
            for q in range(kw):
                patch = xs[:, :, p * dh:p * dh + (oh - 1) * sh + 1:sh, q * dw:q * dw + (ow - 1) * sw + 1:sw]
                target += np.einsum("ncij,oc->noij", patch, w64[g * cog:(g + 1) * cog, :, p, q])
    if b is not None:
        out += b.astype(np.int64).reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def conv_transpose2d(x, w, geometry, out_shape):
    """conv_transpose2d(x, w) without bias on integer arrays: x (N, C_in, H, W),
    w (C_in, C_out/groups, kH, kW); geometry maps the output to x (as the float path)."""
    _require(x.dtype, _INT64_ONLY, "slow_conv_transpose2d_out_cpu")
    (sh, sw), (ph, pw), (dh, dw), groups = geometry.kernel_args()
    n, c_in, h, wd = x.shape
    _, cog, kh, kw = w.shape
    big_h, big_w = out_shape[2:]
    full = np.zeros((n, cog * groups, max(_span(h, sh, kh, dh), big_h + ph), max(_span(wd, sw, kw, dw), big_w + pw)),
                    np.int64)
    cig = c_in // groups
    x64, w64 = x.astype(np.int64), w.astype(np.int64)
    for g in range(groups):
        xs = x64[:, g * cig:(g + 1) * cig]
        target = full[:, g * cog:(g + 1) * cog]
        for p in range(kh):
            for q in range(kw):
                target[:, :, p * dh:p * dh + (h - 1) * sh + 1:sh, q * dw:q * dw + (wd - 1) * sw + 1:sw] += \
                    np.einsum("ncij,co->noij", xs, w64[g * cig:(g + 1) * cig, :, p, q])
    return full[:, :, ph:ph + big_h, pw:pw + big_w].astype(x.dtype)


def _taps(x, window, out_hw):
    """For each kernel tap in window order: (values (N, C, oh, ow), valid mask (oh, ow), flat input index)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window
    h, wd = x.shape[2:]
    oh, ow = out_hw
    for p in range(kh):
        rows = np.arange(oh) * sh - ph + p * dh
        row_ok = (rows >= 0) & (rows < h)
        for q in range(kw):
            cols = np.arange(ow) * sw - pw + q * dw
            col_ok = (cols >= 0) & (cols < wd)
            rr, cc = np.clip(rows, 0, h - 1), np.clip(cols, 0, wd - 1)
            values = x[:, :, rr[:, None], cc[None, :]]
            yield values, row_ok[:, None] & col_ok[None, :], rr[:, None] * wd + cc[None, :]


def max_pool2d(x, window, out_shape):
    """(values, int64 indices) of torch's max_pool2d on an integer array: the first maximum
    of each window (padding never wins)."""
    _require(x.dtype, _MAX_POOL_DTYPES, "max_pool2d")
    best = np.zeros(out_shape, x.dtype)
    index = np.full(out_shape, -1, np.int64)
    for values, valid, flat in _taps(x, window, out_shape[2:]):
        better = valid & ((index < 0) | (values > best))
        best = np.where(better, values, best)
        index = np.where(better, flat, index)
    return best, index


def avg_pool2d(x, window, out_shape, count_include_pad, divisor_override):
    """torch's avg_pool2d on an int64 array: the window's sum divided by its
    count in C's integer division (truncating toward zero).  window is
    pool2d_window's (kernel, stride, padding, dilation) with dilation 1."""
    _require(x.dtype, _INT64_ONLY, "avg_pool2d")
    (kh, kw), (sh, sw), (ph, pw) = window[:3]
    h, wd = x.shape[2:]
    oh, ow = out_shape[2:]
    total = np.zeros(out_shape, np.int64)
    for values, valid, _ in _taps(x.astype(np.int64), window, (oh, ow)):
        total += np.where(valid, values, 0)
    if divisor_override:
        count = np.full((oh, ow), divisor_override, np.int64)
    else:
        h0, w0 = np.arange(oh) * sh - ph, np.arange(ow) * sw - pw
        h1, w1 = np.minimum(h0 + kh, h + ph), np.minimum(w0 + kw, wd + pw)
        if count_include_pad:
            count = (h1 - h0)[:, None] * (w1 - w0)[None, :]
        else:
            count = ((np.minimum(h1, h) - np.maximum(h0, 0))[:, None]
                     * (np.minimum(w1, wd) - np.maximum(w0, 0))[None, :])
    quotient = np.abs(total) // count
    return np.where(total < 0, -quotient, quotient).astype(x.dtype)
