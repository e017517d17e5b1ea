"""Pooling Functions on the C kernels: max_pool2d, avg_pool2d, adaptive_avg_pool2d.

Each backward is linear in the incoming gradient, and its own backward is
the matching forward map (gather at the argmax for max pooling, the
pooling itself for the averages), so double backward works.
"""
import numpy as np

from cextend.ops import pool as _ops_pool
from cextend._ops._record import reads_through
from cextend.autograd.function import Function
from cextend.functions._tensors import wrap
from cextend.functions.conv import float_operands


class MaxPool2dFunction(Function):
    """input (N, C, H, W) -> (values, int64 indices into each H*W plane).
    A NaN always wins (the last NaN of a window), else the first maximum."""

    _torch_node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        x, = float_operands("max_pool2d", input=input)
        values, indices = _ops_pool.max_pool2d_forward(x, kernel_size, stride, padding, dilation, ceil_mode)
        indices = wrap(indices)
        ctx.mark_non_differentiable(indices)
        # torch saves self and the indices it returns (result1): a second
        # backward, or an in-place change to either, raises as there.
        ctx.save_for_backward(input, indices)
        return wrap(values), indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        input, indices = ctx.saved_tensors
        grad = _ScatterToIndices.apply(grad_values, indices._data, input.shape)
        return reads_through("MaxPool2DWithIndicesBackwardBackward", grad, input), None, None, None, None, None


class _ScatterToIndices(Function):
    """grad added at each window's argmax (the C backward kernel)."""

    @staticmethod
    def forward(ctx, grad, indices, input_shape):
        ctx.indices = indices
        return wrap(_ops_pool.max_pool2d_backward(grad._data, indices, input_shape))

    @staticmethod
    def backward(ctx, g):
        return _GatherAtIndices.apply(g, ctx.indices), None, None


class _GatherAtIndices(Function):
    """g at each window's argmax; 0 for an empty window (index past the plane)."""

    @staticmethod
    def forward(ctx, g, indices):
        ctx.indices, ctx.input_shape = indices, g.shape
        n, c, h, w = g.shape
        planes = g._data.reshape(n, c, h * w)
        inside = indices < h * w
        flat = np.where(inside, indices, 0).reshape(n, c, indices.shape[2] * indices.shape[3])
        gathered = np.take_along_axis(planes, flat, axis=2).reshape(indices.shape)
        return wrap(np.where(inside, gathered, 0).astype(g._data.dtype))

    @staticmethod
    def backward(ctx, gg):
        return _ScatterToIndices.apply(gg, ctx.indices, ctx.input_shape), None


class AvgPool2dFunction(Function):
    """torch's avg_pool2d on input (N, C, H, W)."""

    _torch_node_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
        x, = float_operands("avg_pool2d", input=input)
        ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        ctx.save_for_backward(input)        # torch's AvgPool2DBackward0 saves self
        return wrap(_ops_pool.avg_pool2d_forward(x, *ctx.params))

    @staticmethod
    def backward(ctx, grad):
        input, = ctx.saved_tensors
        grad = _AvgPool2dBackward.apply(grad, input.shape, ctx.params)
        return (reads_through("AvgPool2DBackwardBackward", grad, input, saves=False),) + (None,) * 6


class _AvgPool2dBackward(Function):
    """avg_pool2d's input gradient; its adjoint is avg_pool2d itself."""

    @staticmethod
    def forward(ctx, grad, input_shape, params):
        ctx.params = params
        return wrap(_ops_pool.avg_pool2d_backward(grad._data, input_shape, *params))

    @staticmethod
    def backward(ctx, gg):
        return AvgPool2dFunction.apply(gg, *ctx.params), None, None


class AdaptiveAvgPool2dFunction(Function):
    """torch's adaptive_avg_pool2d on input (N, C, H, W)."""

    _torch_node_name = "AdaptiveAvgPool2DBackward0"

    @staticmethod
    def forward(ctx, input, output_size):
        x, = float_operands("adaptive_avg_pool2d", input=input)
        ctx.save_for_backward(input)        # torch's AdaptiveAvgPool2DBackward0 saves self
        return wrap(_ops_pool.adaptive_avg_pool2d_forward(x, output_size))

    @staticmethod
    def backward(ctx, grad):
        input, = ctx.saved_tensors
        grad = _AdaptiveAvgPool2dBackward.apply(grad, input.shape)
        return reads_through("AdaptiveAvgPool2DBackwardBackward", grad, input, saves=False), None


class _AdaptiveAvgPool2dBackward(Function):
    @staticmethod
    def forward(ctx, grad, input_shape):
        ctx.output_size = grad.shape[2:]
        return wrap(_ops_pool.adaptive_avg_pool2d_backward(grad._data, input_shape))

    @staticmethod
    def backward(ctx, gg):
        return AdaptiveAvgPool2dFunction.apply(gg, tuple(ctx.output_size)), None
