"""GlobalMaxPool: the max of each (H, W) plane, with int64 argmax indices."""
import numpy as np

from cextend import ops
from cextend.autograd.function import Function
from cextend.ops import cuda as _on_device
from cextend.functions._tensors import data, wrap


class GlobalMaxPool(Function):
    """input (*, H, W) -> (values (*), indices (*) int64, not differentiable).

    Ties go to the lowest flat H*W index and NaN wins, as numpy's argmax.
    """

    @staticmethod
    def forward(ctx, input):
        x = data(input, "input")
        values, indices = (_on_device.pool_forward(x) if input.is_cuda else ops.global_max_pool_forward(x))
        ctx.input_shape = input.shape
        ctx.indices = indices
        values, indices = wrap(values), wrap(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        return _ScatterToArgmax.apply(grad_values, ctx.indices, ctx.input_shape)


class _ScatterToArgmax(Function):
    """grad_values placed at each plane's argmax (the C backward kernel).
    Linear in grad_values: its backward gathers at the same indices."""

    @staticmethod
    def forward(ctx, grad_values, indices, input_shape):
        ctx.indices = indices
        if grad_values.is_cuda:
            return wrap(_on_device.pool_backward(grad_values._data, indices, tuple(input_shape)))
        return wrap(ops.global_max_pool_backward(grad_values._data, indices, input_shape))

    @staticmethod
    def backward(ctx, g):
        return _GatherAtArgmax.apply(g, ctx.indices), None, None


class _GatherAtArgmax(Function):
    @staticmethod
    def forward(ctx, grad_input, indices):
        if grad_input.is_cuda:
            raise TypeError("GlobalMaxPool's double backward is not supported on cuda tensors")
        ctx.indices, ctx.input_shape = indices, grad_input.shape
        shape = grad_input.shape
        planes = grad_input._data.reshape(indices.shape + (shape[-2] * shape[-1],))
        return wrap(np.take_along_axis(planes, indices[..., None], axis=-1)[..., 0])

    @staticmethod
    def backward(ctx, g):
        return _ScatterToArgmax.apply(g, ctx.indices, ctx.input_shape), None
