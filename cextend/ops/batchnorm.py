"""Batch normalisation on plain numpy arrays (C kernels).

Part of cextend.ops.  x is (N, C, *): statistics are per channel over the
batch and every trailing position, as torch's batch_norm.  Training mode
computes them (two passes in double) and, in the same C call, updates the
running stats in place; evaluation mode uses the running stats.
"""
import math

import numpy as np

from cextend import _backend

from cextend.ops import _checks

__all__ = ["batch_norm_forward", "batch_norm_backward"]


def _channels(x, name="x"):
    """x seen as (N, C, S) without a copy when its trailing dims merge."""
    _checks.array(x, name)
    _checks.min_ndim(x, name, 2, "(N, C, *)")
    n, c = x.shape[:2]
    return x.reshape(n, c, math.prod(x.shape[2:]))


def _per_channel(arr, name, c, dtype, writable=False):
    if arr is None:
        return None
    _checks.array(arr, name)
    if arr.shape != (c,):
        raise _checks.ArgumentError("%s should contain %d elements (one per channel of x), got shape %s"
                         % (name, c, arr.shape))
    if arr.dtype != dtype:
        raise _checks.DtypeError("%s must have dtype %s (x's), got %s" % (name, dtype, arr.dtype))
    if writable:
        # Updated in place: the caller's own array must be writable as is.
        if not arr.flags.writeable:
            raise _checks.ArgumentError("%s is read-only but training updates it in place" % name)
        if not (arr.flags.c_contiguous and arr.flags.aligned):
            raise _checks.ArgumentError("%s must be contiguous and aligned: training updates it in place" % name)
        return arr
    # The kernel reads per-channel values one after another: a strided or
    # expanded (stride-0) array is copied into one contiguous block first.
    return np.ascontiguousarray(arr)


def batch_norm_forward(x, running_mean=None, running_var=None, w=None, b=None, *, training=False,
                       momentum=0.1, eps=1e-5):
    """(y, save_mean, save_invstd) of torch's batch_norm on x (N, C, *).

    training: normalise with the batch's mean and biased variance, and
    update running_mean / running_var in place (if given) with momentum and
    the unbiased variance.  Otherwise normalise with the running stats,
    which are then required.  save_mean and save_invstd (C,) are what
    batch_norm_backward needs.
    """
    x3 = _channels(x)
    c = x.shape[1]
    dtype = _checks.float_dtype(x=x, w=w, b=b)
    training = bool(training)
    _checks.real_scalar(momentum, "momentum")
    _checks.real_scalar(eps, "eps")
    running_mean = _per_channel(running_mean, "running_mean", c, dtype, writable=training)
    running_var = _per_channel(running_var, "running_var", c, dtype, writable=training)
    w = _per_channel(w, "w", c, dtype)
    b = _per_channel(b, "b", c, dtype)
    if not training and (running_mean is None or running_var is None):
        raise _checks.ArgumentError("running_mean and running_var must be given in evaluation mode (training=False)")
    if training and x3.shape[0] * x3.shape[2] == 1:
        raise _checks.ArgumentError("Expected more than 1 value per channel when training, got input size %s"
                         % (list(x.shape),))
    y = np.empty(x3.shape, dtype)
    save_mean = np.empty(c, dtype)
    save_invstd = np.empty(c, dtype)
    if c:
        _backend.batch_norm_forward(x3, w, b, running_mean, running_var, training, momentum, eps,
                                    y, save_mean, save_invstd)
    return y.reshape(x.shape), save_mean, save_invstd


def batch_norm_backward(grad_out, x, w, save_mean, save_invstd, *, training, input=True, weight=True,
                        bias=True):
    """(dx, dw, db) of batch_norm_forward, None for those not asked; w may
    be None (no affine weight: 1)."""
    x3 = _channels(x)
    c = x.shape[1]
    _checks.array(grad_out, "grad_out")
    _checks.shape(grad_out, "grad_out", x.shape, "x.shape")
    dtype = _checks.float_dtype(grad_out=grad_out, x=x, w=w)
    w = _per_channel(w, "w", c, dtype)
    save_mean = _per_channel(save_mean, "save_mean", c, dtype)
    save_invstd = _per_channel(save_invstd, "save_invstd", c, dtype)
    if save_mean is None or save_invstd is None:
        raise _checks.ArgumentError("save_mean and save_invstd (from batch_norm_forward) are required")
    dx = np.empty(x3.shape, dtype) if input else None
    dw = np.empty(c, dtype) if weight else None
    db = np.empty(c, dtype) if bias else None
    if c and (input or weight or bias):
        _backend.batch_norm_backward(grad_out.reshape(x3.shape), x3, w, save_mean, save_invstd, bool(training),
                                     dx, dw, db)
    return (None if dx is None else dx.reshape(x.shape)), dw, db
