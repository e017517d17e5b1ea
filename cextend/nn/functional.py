"""Functional forms of the layers: linear, relu, log_softmax, losses."""
import numpy as np

from cextend.autograd.function import Function
from cextend.tensor import Tensor, _dim, _wrap


from cextend._ops.linalg import linear  # noqa: E402,F401  (input (*, in) . weight^T + bias, on the C kernels)


def relu(input):
    return input.relu()


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


class LogSoftmax(Function):
    """log(softmax(x)) along dim, computed stably by shifting by the max."""

    @staticmethod
    def forward(ctx, x, dim):
        data = x._data
        shifted = data - np.max(data, axis=dim, keepdims=True) if data.size else data
        out = _wrap(shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True)))
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        # d/dx: g - softmax * sum(g), written in Tensor ops so it differentiates again.
        return g - out.exp() * g.sum(ctx.dim, keepdim=True), None


def log_softmax(input, dim):
    return LogSoftmax.apply(input, _dim(dim, input.dim()))


def softmax(input, dim):
    return log_softmax(input, dim).exp()


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError("reduction must be 'mean', 'sum' or 'none', got %r" % (reduction,))


def mse_loss(input, target, reduction="mean"):
    if input.shape != target.shape:
        raise ValueError("mse_loss: input shape %s and target shape %s must match"
                         % (list(input.shape), list(target.shape)))
    diff = input - target
    return _reduce(diff * diff, reduction)


def nll_loss(input, target, reduction="mean"):
    """Negative log-likelihood of class indices: input (N, C) log-probabilities, target (N,) int64."""
    if not isinstance(target, Tensor) or target.dtype.is_floating_point or target.dtype.name == "bool":
        raise TypeError("nll_loss: target must be an integer Tensor of class indices, got %s"
                        % (target.dtype.name if isinstance(target, Tensor) else type(target).__name__))
    if input.dim() != 2 or target.dim() != 1 or target.shape[0] != input.shape[0]:
        raise ValueError("nll_loss: expected input (N, C) and target (N,), got %s and %s"
                         % (list(input.shape), list(target.shape)))
    classes = input.shape[1]
    labels = target._data
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        bad = labels[(labels < 0) | (labels >= classes)][0]
        raise IndexError("nll_loss: target %d is out of bounds for %d classes" % (bad, classes))
    picked = input[np.arange(labels.shape[0]), labels]
    return _reduce(-picked, reduction)


def cross_entropy(input, target, reduction="mean"):
    """Softmax cross-entropy from logits (N, C) and class indices (N,)."""
    return nll_loss(log_softmax(input, 1), target, reduction)
