"""BatchNormFunction: torch's batch_norm on the C kernels.

Training mode normalises with the batch statistics and, in the same C call,
updates the running stats in place; evaluation mode uses the running stats.
The backward runs the C kernel; when a double backward is being recorded it
is written in Tensor ops instead (the same formulas), so it differentiates.
"""
import numpy as np

from cextend.ops import batchnorm as _ops_batchnorm
from cextend._ops import _record as rec
from cextend.autograd.function import Function
from cextend.autograd.grad_mode import is_grad_enabled
from cextend.functions._tensors import wrap
from cextend.functions.conv import float_operands


class BatchNormFunction(Function):
    """input (N, C, *); weight, bias (C,) or None; running_mean and
    running_var (C,) buffers or None (updated in place when training)."""

    _torch_node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, training, momentum, eps):
        x, w, b, rm, rv = float_operands("batch_norm", input=input, weight=weight, bias=bias,
                                         running_mean=running_mean, running_var=running_var)
        y, save_mean, save_invstd = _ops_batchnorm.batch_norm_forward(
            x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
        if not _torch_folds(x, w, b, rm, rv):
            y = _unfolded(x, w, b, save_mean if training else rm,
                          save_invstd if training else None if rv is None else 1 / np.sqrt(rv + eps))
        # torch's kernel updates the running stats without bumping their
        # version (a module can run twice before one backward), and its node
        # saves them: a later in-place change to them makes backward raise
        ctx.training, ctx.eps = bool(training), eps
        ctx.save_mean, ctx.save_invstd = save_mean, save_invstd
        ctx.save_for_backward(input, weight, running_mean, running_var)
        return wrap(y)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, _, _ = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if is_grad_enabled():
            grads = _differentiable_backward(ctx, grad_output, input, weight, need_x, need_w, need_b)
        else:
            dx, dw, db = _ops_batchnorm.batch_norm_backward(
                grad_output._data, input._data, None if weight is None else weight._data,
                ctx.save_mean, ctx.save_invstd, training=ctx.training,
                input=need_x, weight=need_w and weight is not None, bias=need_b)
            grads = wrap(dx), wrap(dw), wrap(db)
        return grads + (None,) * 5


def _torch_folds(x, *per_channel):
    """Whether torch's CPU kernel folds the statistics and the affine terms
    into y = x * alpha + beta: only when the input (contiguous or channels
    last) and every per-channel tensor are contiguous; otherwise it computes
    ((x - mean) * invstd) * weight + bias, which differs at infinities (the
    folded form makes inf - inf = NaN) and in the sign of zeros."""
    dense = x.flags.c_contiguous or (x.ndim in (4, 5) and np.moveaxis(x, 1, -1).flags.c_contiguous)
    return dense and all(a is None or a.size <= 1 or a.strides[0] == a.itemsize for a in per_channel)


def _unfolded(x, w, b, mean, invstd):
    shape = (1, -1) + (1,) * (x.ndim - 2)

    def per_channel(a, default):
        return x.dtype.type(default) if a is None else a.reshape(shape)
    with np.errstate(all="ignore"):
        return ((x - per_channel(mean, 0)) * per_channel(invstd, 1)) * per_channel(w, 1) + per_channel(b, 0)


def _differentiable_backward(ctx, g, input, weight, need_x, need_w, need_b):
    """The kernel's formulas in Tensor ops (recorded for double backward).
    Training: the statistics are recomputed from input, so they differentiate;
    evaluation: they are the running stats, constants."""
    axes = (0,) + tuple(range(2, input.dim()))
    shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    if ctx.training:
        centred = input - input.mean(axes, keepdim=True)
        invstd = 1.0 / ((centred * centred).mean(axes, keepdim=True) + ctx.eps).sqrt()
        xhat = centred * invstd
    else:
        invstd = wrap(ctx.save_invstd.reshape(shape))
        xhat = (input - wrap(ctx.save_mean.reshape(shape))) * invstd
    grad_weight = (g * xhat).sum(axes) if need_w else None
    # (torch's double-backward node reads the input for every gradient it
    # returns: the bias's requires grad through it too, but its formula gives
    # the input no gradient from it: .grad stays None, not zeros)
    grad_bias = rec.reads_through("NativeBatchNormBackwardBackward", g.sum(axes), input,
                                   zero_derivative=False) if need_b else None
    grad_input = None
    if need_x:
        scale = invstd if weight is None else weight.reshape(shape) * invstd
        if ctx.training:
            grad_input = scale * (g - g.mean(axes, keepdim=True) - xhat * (g * xhat).mean(axes, keepdim=True))
        else:
            # torch's double-backward node reads the input too: the gradient
            # requires grad through it, though in evaluation the formula gives
            # the input no gradient (None, not zeros)
            grad_input = rec.reads_through("NativeBatchNormBackwardBackward", scale * g, input,
                                           zero_derivative=False)
    return grad_input, grad_weight, grad_bias
