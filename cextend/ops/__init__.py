"""The C kernels on plain numpy arrays, for users who want no autograd.

One package for the numpy-level layer: this module (linear, add,
mul_constant, global_max_pool), conv, pool and batchnorm (one module each),
_checks (argument checks and their errors) and _shapes (the nn ops' output
sizes and geometry checks).  The op table (cextend._ops) and the autograd
Functions call these; users may too.

Every function checks its arguments (dtype float32/float64 shared by all
operands, native byte order, shapes), reads transposed and row-sliced views
in place, copies only what the kernels cannot express, and returns fresh
arrays (or writes `out=`, which must be C-contiguous, writable, aligned and
of the result's exact shape and dtype).  An `out` that overlaps an input
gets the result of computing into a fresh array first.
"""
import math

import numpy as np

from cextend import _backend

from cextend.ops import _checks

__all__ = [
    "linear_forward", "linear_backward", "add_forward", "add_backward",
    "mul_constant_forward", "mul_constant_backward",
    "global_max_pool_forward", "global_max_pool_backward",
]


def _rows(x, k):
    """x of shape (*, k) seen as a 2-D (N, k) array, without a copy when possible."""
    if x.ndim == 2:
        return x
    return x.reshape(math.prod(x.shape[:-1]), k)


def _linear_operands(x, w, b, x_name="x"):
    """Check x (*, K), w (M, K), b (M,) or None; return (dtype, K, M)."""
    _checks.array(x, x_name)
    _checks.array(w, "w")
    if b is not None:
        _checks.array(b, "b")
    _checks.min_ndim(x, x_name, 1, "(*, K)")
    _checks.ndim(w, "w", 2, "(M, K)")
    k, m = x.shape[-1], w.shape[0]
    if w.shape[1] != k:
        raise _checks.ArgumentError("w must have shape (M, K) with K = %s.shape[-1] = %d, got w.shape %s"
                         % (x_name, k, w.shape))
    if b is not None:
        _checks.ndim(b, "b", 1, "(M,)")
        _checks.shape(b, "b", (m,), "M = w.shape[0]")
    return k, m


def _linear_forward_checked(x, w, b=None, *, out=None):
    """y = x . w^T + b for x (*, K), w (M, K), b (M,) or None; y has shape (*, M)."""
    k, m = _linear_operands(x, w, b)
    dtype = _checks.float_dtype(x=x, w=w, b=b, out=out)
    shape = x.shape[:-1] + (m,)
    x2 = _rows(x, k)

    def compute(y):
        _backend.linear_forward(x2, w, b, y.reshape(x2.shape[0], m))
    return _checks.into(out, (x, w, b), shape, dtype, compute)


# Plain 2-D C-contiguous operands take the quick path inside this function
# (see _backend.with_quick_forward); anything else, the checked one above.
linear_forward = _backend.with_quick_forward(_linear_forward_checked)


def linear_backward(grad_out, x, w, *, input=True, weight=True, bias=True):
    """Gradients of linear_forward: (dx, dw, db), None for those not asked.

    grad_out has shape (*, M) matching x (*, K); dx = grad_out . w,
    dw = grad_out^T . x over all leading dims, db = grad_out summed over them.
    """
    quick = _backend.linear_backward_quick(grad_out, x, w, input, weight, bias)
    if quick is not None:
        return quick
    k, m = _linear_operands(x, w, None)
    _checks.array(grad_out, "grad_out")
    _checks.shape(grad_out, "grad_out", x.shape[:-1] + (m,), "x.shape[:-1] + (M,)")
    dtype = _checks.float_dtype(grad_out=grad_out, x=x, w=w)
    x2, dy2 = _rows(x, k), _rows(grad_out, m)
    dx = np.empty(x.shape, dtype=dtype) if input else None
    dw = np.empty((m, k), dtype=dtype) if weight else None
    db = np.empty((m,), dtype=dtype) if bias else None
    if input or weight or bias:
        _backend.linear_backward(dy2, x2, w, None if dx is None else dx.reshape(x2.shape),
                                 dw, db)
    return dx, dw, db


def _same_shape_pair(a, b, a_name, b_name):
    _checks.array(a, a_name)
    _checks.array(b, b_name)
    if a.shape != b.shape:
        raise _checks.ArgumentError("%s and %s must have the same shape, got %s and %s"
                         % (a_name, b_name, a.shape, b.shape))


def add_forward(a, b, *, out=None):
    """out = a + b, elementwise, for a and b of one shape and dtype."""
    _same_shape_pair(a, b, "a", "b")
    dtype = _checks.float_dtype(a=a, b=b, out=out)
    return _checks.into(out, (a, b), a.shape, dtype, lambda r: _backend.add_forward(a, b, r))


def add_backward(grad_out, *, a=True, b=True):
    """(grad_a, grad_b) of add_forward: copies of grad_out, None for those not asked."""
    _checks.array(grad_out, "grad_out")
    dtype = _checks.float_dtype(grad_out=grad_out)
    grad_a = np.empty(grad_out.shape, dtype) if a else None
    grad_b = np.empty(grad_out.shape, dtype) if b else None
    _backend.add_backward(grad_out, grad_a, grad_b)
    return grad_a, grad_b


def mul_constant_forward(x, c, *, out=None):
    """out = x * c for a real number c (computed in x's dtype)."""
    _checks.array(x, "x")
    _checks.real_scalar(c, "c")
    dtype = _checks.float_dtype(x=x, out=out)
    return _checks.into(out, (x,), x.shape, dtype, lambda r: _backend.mul_constant_forward(x, c, r))


def mul_constant_backward(grad_out, c):
    """grad_x = grad_out * c."""
    _checks.array(grad_out, "grad_out")
    _checks.real_scalar(c, "c")
    dtype = _checks.float_dtype(grad_out=grad_out)
    grad_x = np.empty(grad_out.shape, dtype)
    _backend.mul_constant_backward(grad_out, c, grad_x)
    return grad_x


def _planes(shape, name):
    """(planes, plane_size) of a (*, H, W) shape."""
    return math.prod(shape[:-2]), shape[-2] * shape[-1]


def global_max_pool_forward(x):
    """(values, indices): max and flat H*W argmax of each (H, W) plane of x (*, H, W).

    values has x's dtype and shape x.shape[:-2]; indices are int64.  Ties go
    to the lowest index and the first NaN wins, as numpy's argmax.
    """
    _checks.array(x, "x")
    _checks.min_ndim(x, "x", 2, "(*, H, W)")
    dtype = _checks.float_dtype(x=x)
    planes, plane_size = _planes(x.shape, "x")
    if planes > 0 and plane_size == 0:
        raise _checks.ArgumentError("x has empty (H, W) planes, shape %s: the max of an empty plane is "
                                    "undefined" % (x.shape,))
    values = np.empty(x.shape[:-2], dtype)
    indices = np.empty(x.shape[:-2], np.int64)
    _backend.global_max_pool_forward(x, planes, plane_size, values, indices)
    return values, indices


def global_max_pool_backward(grad_values, indices, x_shape):
    """grad_x of shape x_shape: zero except grad_values scattered to the argmax indices."""
    _checks.array(grad_values, "grad_values")
    _checks.index_array(indices, "indices")
    x_shape = _checks.sizes(x_shape, "x_shape")
    if len(x_shape) < 2:
        raise _checks.ArgumentError("x_shape must have at least 2 dimensions (*, H, W), got %s" % (x_shape,))
    dtype = _checks.float_dtype(grad_values=grad_values)
    _checks.shape(grad_values, "grad_values", x_shape[:-2], "x_shape[:-2]")
    _checks.shape(indices, "indices", x_shape[:-2], "x_shape[:-2]")
    planes, plane_size = _planes(x_shape, "x_shape")
    grad_x = np.empty(x_shape, dtype)
    _backend.global_max_pool_backward(grad_values, indices, planes, plane_size, grad_x)
    return grad_x


# -- convolution, pooling and batch norm (cextend.ops.conv, .pool, .batchnorm) --
from cextend.ops.conv import (conv2d_backward, conv2d_forward, conv_transpose2d_backward,  # noqa: E402
                               conv_transpose2d_forward)
from cextend.ops.pool import (adaptive_avg_pool2d_backward, adaptive_avg_pool2d_forward,  # noqa: E402
                               avg_pool2d_backward, avg_pool2d_forward, max_pool2d_backward,
                               max_pool2d_forward)
from cextend.ops.batchnorm import batch_norm_backward, batch_norm_forward  # noqa: E402

__all__ += [
    "conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward",
    "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward",
    "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward",
    "batch_norm_forward", "batch_norm_backward",
]
