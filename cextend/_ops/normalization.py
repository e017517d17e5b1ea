"""Batch norm as a built-in op: torch's native_batch_norm and its node.

Training normalises with the batch statistics and, in the same C call,
updates the running stats in place; evaluation uses the running stats.
NativeBatchNormBackward0's formula is native_batch_norm_backward, on the
C backward kernel, recorded under create_graph as torch's one
NativeBatchNormBackwardBackward0 node, a FormulaNode: its derivative is
that of the kernel's formulas written in Tensor ops.
"""
import numpy as np

from cextend._memory_format import channels_last, channels_last_3d, empty_as, suggests_channels_last
from cextend.autograd import record as rec
from cextend._ops._kernels import Kernels
from cextend.ops import _checks
from cextend.ops import batchnorm as _cpu_batchnorm
from cextend.tensor import Tensor, _wrap

BATCH_NORM = Kernels("batch_norm", cpu=_cpu_batchnorm)


def _float_arrays(op, **tensors):
    """The arrays of the (non-None) Tensor operands, checked to share one float dtype."""
    arrays = {}
    for name, t in tensors.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError("%s must be a cextend Tensor, got %s" % (name, type(t).__name__))
        arrays[name] = None if t is None else t._data
    try:
        _checks.float_dtype(**arrays)
    except TypeError as error:
        raise type(error)("%s: %s" % (op, error)) from None      # a DtypeError stays one
    return [arrays[name] for name in tensors]


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """input (N, C, *); weight, bias (C,) or None; running_mean and
    running_var (C,) buffers or None (updated in place when training)."""
    kernels = BATCH_NORM.on(input=input, weight=weight, bias=bias, running_mean=running_mean,
                            running_var=running_var)
    x, w, b, rm, rv = _float_arrays("batch_norm", input=input, weight=weight, bias=bias,
                                    running_mean=running_mean, running_var=running_var)
    y, save_mean, save_invstd = kernels.batch_norm_forward(x, rm, rv, w, b, training=training, momentum=momentum,
                                                           eps=eps)
    if not _torch_folds(x, w, b, rm, rv):
        y = _unfolded(x, w, b, save_mean if training else rm,
                      save_invstd if training else None if rv is None else 1 / np.sqrt(rv + eps))
    result = _wrap(_in_format_of(y, x))
    if rec.needs_grad(input, weight, bias):
        node = rec.record(NativeBatchNormBackward0, (input, weight, bias), result)
        node.state = BatchNormState(bool(training), eps, save_mean, save_invstd)
        # torch's kernel updates the running stats without bumping their
        # version (a module can run twice before one backward), and its node
        # saves them: a later in-place change to them makes backward raise
        node._saved = (rec.save(input), None if weight is None else rec.save(weight),
                       None if running_mean is None else rec.save(running_mean),
                       None if running_var is None else rec.save(running_var))
    return result


def _in_format_of(y, x):
    """y laid out as torch's CPU kernels allocate batch norm's output and input gradient: in
    x.suggest_memory_format() (channels last for a channels-last 4-D or 5-D input)."""
    if type(y) is not np.ndarray or not suggests_channels_last(x):
        return y
    laid_out = empty_as(y, y.dtype, channels_last if x.ndim == 4 else channels_last_3d)
    laid_out[...] = y
    return laid_out


class BatchNormState:
    """What batch norm's nodes keep besides tensors: the mode, eps and the
    statistics it normalised with (the batch's, or the running stats)."""

    __slots__ = ("training", "eps", "save_mean", "save_invstd")

    def __init__(self, training, eps, save_mean, save_invstd):
        self.training, self.eps, self.save_mean, self.save_invstd = training, eps, save_mean, save_invstd


class NativeBatchNormBackward0(rec.BuiltinNode):
    def backward(self, grad, input, weight, running_mean, running_var):
        return native_batch_norm_backward(grad, input, weight, running_mean, running_var, self.state,
                                          (self.needs(0), self.needs(1), self.needs(2)))


def native_batch_norm_backward(grad, input, weight, running_mean, running_var, state, mask):
    """(dx, dw, db) from the C kernel, None where mask says not wanted;
    recorded under create_graph as torch's one NativeBatchNormBackwardBackward0
    of (grad, input, weight, running_mean, running_var)."""
    kernels = BATCH_NORM.on(grad=grad, input=input, weight=weight)
    need_x, need_w, need_b = mask
    dx, dw, db = kernels.batch_norm_backward(
        grad._data, input._data, None if weight is None else weight._data, state.save_mean, state.save_invstd,
        training=state.training, input=need_x, weight=need_w and weight is not None, bias=need_b)
    if dx is not None and type(input._data) is np.ndarray:
        dx = _in_format_of(dx, input._data)
    grads = tuple(None if g is None else _wrap(g) for g in (dx, dw, db))
    if rec.needs_grad(grad, input, weight):
        node = rec.record(NativeBatchNormBackwardBackward0, (grad, input, weight, running_mean, running_var), grads)
        node.state = state
        node._saved = (rec.save(grad), rec.save(input), None if weight is None else rec.save(weight), None, None)
    return grads


class NativeBatchNormBackwardBackward0(rec.FormulaNode):
    differentiable = (0, 1, 2)      # grad, input, weight; the running stats are constants

    def formulas(self, mask, grad, input, weight, running_mean, running_var):
        return _formulas(self.state, grad, input, weight, mask)


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


def _formulas(state, g, input, weight, mask):
    """The C backward kernel's formulas in Tensor ops, (dx, dw, db) where
    mask asks.  Training: the statistics are recomputed from input, so they
    differentiate; evaluation: they are the running stats, constants."""
    need_x, need_w, need_b = mask
    axes = (0,) + tuple(range(2, input.dim()))
    shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    if state.training:
        centred = input - input.mean(axes, keepdim=True)
        invstd = 1.0 / ((centred * centred).mean(axes, keepdim=True) + state.eps).sqrt()
        xhat = centred * invstd
    else:
        invstd = _wrap(state.save_invstd.reshape(shape))
        xhat = (input - _wrap(state.save_mean.reshape(shape))) * invstd
    grad_weight = (g * xhat).sum(axes) if need_w and weight is not None else None
    grad_bias = g.sum(axes) if need_b else None
    grad_input = None
    if need_x:
        scale = invstd if weight is None else weight.reshape(shape) * invstd
        if state.training:
            grad_input = scale * (g - g.mean(axes, keepdim=True) - xhat * (g * xhat).mean(axes, keepdim=True))
        else:
            grad_input = scale * g
    return grad_input, grad_weight, grad_bias
