"""LinearFunction: y = input . weight^T + bias on the C kernels."""
import math

from cextend import ops
from cextend.autograd.function import Function
from cextend.autograd.grad_mode import is_grad_enabled
from cextend.ops import cuda as _on_device
from cextend.functions._tensors import data, wrap


class LinearFunction(Function):
    """input (*, K), weight (M, K), bias (M,) or None  ->  (*, M)."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):
        x, w = data(input, "input"), data(weight, "weight")
        b = None if bias is None else data(bias, "bias")
        ctx.save_for_backward(input, weight, bias)
        if _on_device.is_cuda("LinearFunction", input=input, weight=weight, bias=bias):
            return wrap(_on_device.linear_forward(x, w, b))
        return wrap(ops.linear_forward(x, w, b))

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        need_input, need_weight = ctx.needs_input_grad[:2]
        need_bias = bias is not None and ctx.needs_input_grad[2]
        if is_grad_enabled():
            return _differentiable_backward(grad_output, input, weight, need_input, need_weight, need_bias)
        if input.is_cuda:
            return tuple(wrap(g) for g in _on_device.linear_backward(
                grad_output._data, input._data, weight._data, input=need_input, weight=need_weight, bias=need_bias))
        dx, dw, db = ops.linear_backward(grad_output._data, input._data, weight._data,
                                         input=need_input, weight=need_weight, bias=need_bias)
        return wrap(dx), wrap(dw), wrap(db)


def _differentiable_backward(grad_output, input, weight, need_input, need_weight, need_bias):
    """The same gradients as compositions of LinearFunction, recorded for
    double backward:  dx = linear(g, w^T),  dw = linear(g^T, x^T),  db = sum g."""
    k, m = weight.shape[1], weight.shape[0]
    rows = math.prod(input.shape[:-1])
    g2 = grad_output.reshape(rows, m)
    grad_input = grad_weight = grad_bias = None
    if need_input:
        grad_input = LinearFunction.apply(grad_output, weight.t())
    if need_weight:
        grad_weight = LinearFunction.apply(g2.t(), input.reshape(rows, k).t())
    if need_bias:
        grad_bias = g2.sum(0)
    return grad_input, grad_weight, grad_bias


def linear(input, weight, bias=None):
    """Functional form: LinearFunction.apply(input, weight, bias)."""
    return LinearFunction.apply(input, weight, bias)
