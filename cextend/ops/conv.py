"""2-D convolution and transposed convolution on plain numpy arrays (C kernels).

Part of cextend.ops.  Shapes follow torch: x (N, C_in, H, W); conv2d's
weight (C_out, C_in/groups, kH, kW); conv_transpose2d's weight
(C_in, C_out/groups, kH, kW); bias (C_out,).  Inputs are read in place
through their strides (channel-sliced, transposed and broadcast views
included); outputs are fresh C-contiguous arrays, or `out=`.

The transposed convolution is the convolution's input gradient, so both
run on the same two C entry points (cextend_conv2d_forward/backward).
"""
import numpy as np

from cextend import _backend

from cextend.ops import _checks
from cextend.ops._shapes import conv2d_geometry, conv_transpose2d_geometry

__all__ = ["conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward"]


# -- the kernels on a checked geometry (used by the autograd Functions too) ----------

def conv(x, w, b, geometry, out=None):
    """y = conv2d(x, w) + b for a geometry from conv2d_geometry."""
    y = _checks.empty((x.shape[0], w.shape[0]) + tuple(geometry.out_size), x.dtype, "conv2d") if out is None else out
    if y.size:
        _backend.conv2d_forward(x, w, b, y, geometry.kernel_args())
    return y


def conv_input_grad(dy, w, geometry, x_shape):
    """dx of conv(x, w) for x of x_shape: conv_transpose2d(dy, w) without bias."""
    dx = _checks.empty(x_shape, dy.dtype, "conv_transpose2d")
    if dx.size:
        _backend.conv2d_backward(dy, x_shape, None, w, w.shape, dx, None, None, geometry.kernel_args())
    return dx


def conv_weight_grad(dy, x, geometry, w_shape):
    """dw of conv(x, w) for w of w_shape: the correlation of dy with x."""
    dw = np.empty(w_shape, dy.dtype)
    if dw.size:
        _backend.conv2d_backward(dy, x.shape, x, None, w_shape, None, dw, None, geometry.kernel_args())
    return dw


def conv_grads(dy, x, w, geometry, need_x, need_w, need_b):
    """(dx, dw, db) of conv(x, w) + b, None for those not asked, from one
    kernel call (dy is gathered once for all three)."""
    dx = np.empty(x.shape, dy.dtype) if need_x else None
    dw = np.empty(w.shape, dy.dtype) if need_w else None
    db = np.empty(w.shape[0], dy.dtype) if need_b else None
    if any(a is not None and a.size for a in (dx, dw, db)):
        _backend.conv2d_backward(dy, x.shape, x if need_w else None, w if need_x else None, w.shape,
                                 dx, dw, db, geometry.kernel_args())
    return dx, dw, db


def bias_grad(dy):
    """db: dy summed over batch and positions (in double, in index order
    whatever dy's layout).  It is the bias gradient of any convolution with
    output dy, so the kernel runs as a 1x1 one with no input channels."""
    n, c_out, h_out, w_out = dy.shape
    db = np.empty(c_out, dy.dtype)
    if db.size:
        _backend.conv2d_backward(dy, (n, 0, h_out, w_out), None, None, (c_out, 0, 1, 1), None, None, db,
                                 ((1, 1), (0, 0), (1, 1), 1))
    return db


# -- public, checked forms ---------------------------------------------------------------

def _operands(x, w, b, **others):
    _checks.array(x, "x")
    _checks.array(w, "w")
    if b is not None:
        _checks.array(b, "b")
    return _checks.float_dtype(x=x, w=w, b=b, **others)


def conv2d_forward(x, w, b=None, *, stride=1, padding=0, dilation=1, groups=1, out=None):
    """y = conv2d(x, w) + b, torch's conv2d: x (N, C_in, H, W), w (C_out,
    C_in/groups, kH, kW), b (C_out,) or None; padding an int, a pair,
    'valid' or 'same'.  Returns y (N, C_out, H_out, W_out)."""
    dtype = _operands(x, w, b, out=out)
    geometry, shape = conv2d_geometry(x.shape, w.shape, None if b is None else b.shape,
                                      stride, padding, dilation, groups)
    return _checks.into(out, (x, w, b), shape, dtype, lambda y: conv(x, w, b, geometry, y))


def conv2d_backward(grad_out, x, w, *, stride=1, padding=0, dilation=1, groups=1,
                    input=True, weight=True, bias=True):
    """(dx, dw, db) of conv2d_forward for grad_out (N, C_out, H_out, W_out);
    None for those not asked."""
    dtype = _operands(x, w, None)
    _checks.array(grad_out, "grad_out")
    _checks.float_dtype(grad_out=grad_out, x=x)
    geometry, shape = conv2d_geometry(x.shape, w.shape, None, stride, padding, dilation, groups)
    _checks.shape(grad_out, "grad_out", shape, "conv2d's output shape")
    del dtype
    return conv_grads(grad_out, x, w, geometry, input, weight, bias)


def conv_transpose2d_forward(x, w, b=None, *, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                             out=None):
    """torch's conv_transpose2d: x (N, C_in, H, W), w (C_in, C_out/groups,
    kH, kW), b (C_out,) or None.  Returns (N, C_out, H_out, W_out) with
    H_out = (H - 1)*stride - 2*padding + dilation*(kH - 1) + output_padding + 1."""
    dtype = _operands(x, w, b, out=out)
    geometry, shape = conv_transpose2d_geometry(x.shape, w.shape, None if b is None else b.shape, stride,
                                                padding, output_padding, groups, dilation)

    def compute(y):
        if y.size:
            _backend.conv2d_backward(x, shape, None, w, w.shape, y, None, None, geometry.kernel_args())
            if b is not None:
                y += b.reshape(-1, 1, 1)
    return _checks.into(out, (x, w, b), shape, dtype, compute)


def conv_transpose2d_backward(grad_out, x, w, *, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                              input=True, weight=True, bias=True):
    """(dx, dw, db) of conv_transpose2d_forward; None for those not asked.
    dx is the convolution of grad_out with w; dw its weight gradient with
    the roles of x and grad_out exchanged."""
    _operands(x, w, None)
    _checks.array(grad_out, "grad_out")
    _checks.float_dtype(grad_out=grad_out, x=x)
    geometry, shape = conv_transpose2d_geometry(x.shape, w.shape, None, stride, padding, output_padding,
                                                groups, dilation)
    _checks.shape(grad_out, "grad_out", shape, "conv_transpose2d's output shape")
    dx = conv(grad_out, w, None, geometry) if input else None
    dw = conv_weight_grad(x, grad_out, geometry, w.shape) if weight else None
    db = bias_grad(grad_out) if bias else None
    return dx, dw, db
