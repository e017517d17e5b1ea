"""2-D pooling as built-in ops, with torch's nodes and save rules.

Each op's backward is itself an op (torch's *_backward), recorded under
create_graph as torch's *BackwardBackward0 node: linear in the incoming
gradient, whose own derivative is the matching forward map (the gather at
each window's argmax for max pooling, the pooling itself for the averages),
and zeros for the input it reads (torch's zeros_like(self)).  Operands are
batched (N, C, H, W) floating tensors; cextend.nn.functional checks and
batches them.
"""
import numpy as np

from cextend.autograd import record as rec
from cextend._ops._kernels import Kernels
from cextend.ops import pool as _cpu_pool
from cextend.tensor import _wrap

POOLING = Kernels("pooling", cpu=_cpu_pool)


def _zeros_for_input(node, i):
    """torch's zeros_like(self): the formula gives the pooled input no gradient but a zero one."""
    shape, dtype = node._input_meta[i]
    return _wrap(np.zeros(shape, dtype))


# -- max pooling: values and the argmax indices ---------------------------------------------

def _with_indices(node_cls, input, values, indices):
    values, indices = _wrap(values), _wrap(indices)
    if rec.needs_grad(input):
        node = rec.record(node_cls, (input,), (values, indices))
        # torch saves self and the indices it returns (result1): a second
        # backward, or an in-place change to either, raises as there
        node._saved = (rec.save(input), rec.save(indices))
    return values, indices


def max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, int64 indices into each H*W plane); a NaN always wins (the
    last one of a window), else the first maximum."""
    values, indices = POOLING.on(input=input).max_pool2d_forward(input._data, kernel_size, stride, padding,
                                                                dilation, ceil_mode)
    return _with_indices(MaxPool2DWithIndicesBackward0, input, values, indices)


def adaptive_max_pool2d(input, output_size):
    values, indices = POOLING.on(input=input).adaptive_max_pool2d_forward(input._data, tuple(output_size))
    return _with_indices(AdaptiveMaxPool2DBackward0, input, values, indices)


class _ArgmaxPoolNode(rec.BuiltinNode):
    multi_output = True
    backward_node = None

    def backward(self, grads, input, indices):
        return (scatter_to_argmax(grads[0], input, indices, self.backward_node),)


def scatter_to_argmax(grad, input, indices, node_cls):
    """torch's max_pool2d_with_indices_backward: grad added at each window's argmax."""
    dx = _wrap(POOLING.on(grad=grad, input=input).max_pool2d_backward(grad._data, indices._data, input.shape))
    if rec.needs_grad(grad, input):
        node = rec.record(node_cls, (grad, input), dx)
        node._saved = (rec.save(indices), rec.save(input))
    return dx


class _ArgmaxPoolBackwardNode(rec.BuiltinNode):
    def backward(self, gg, indices, input):
        # torch's max_pool_double_backward: gg gathered at the argmax
        gathered = gg.flatten(-2).gather(-1, indices.flatten(-2)).view(indices.shape) if self.needs(0) else None
        return gathered, _zeros_for_input(self, 1) if self.needs(1) else None


class MaxPool2DWithIndicesBackwardBackward0(_ArgmaxPoolBackwardNode):
    pass


class AdaptiveMaxPool2DBackwardBackward0(_ArgmaxPoolBackwardNode):
    pass


class MaxPool2DWithIndicesBackward0(_ArgmaxPoolNode):
    backward_node = MaxPool2DWithIndicesBackwardBackward0


class AdaptiveMaxPool2DBackward0(_ArgmaxPoolNode):
    backward_node = AdaptiveMaxPool2DBackwardBackward0


# -- average pooling ------------------------------------------------------------------------

class AvgParams:
    __slots__ = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")

    def __init__(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def args(self):
        return (self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                self.divisor_override)


def avg_pool2d(input, params):
    y = _wrap(POOLING.on(input=input).avg_pool2d_forward(input._data, *params.args()))
    if rec.needs_grad(input):
        node = rec.record(AvgPool2DBackward0, (input,), y)
        node.params = params
        node._saved = (rec.save(input),)        # torch's AvgPool2DBackward0 saves self
    return y


class AvgPool2DBackward0(rec.BuiltinNode):
    def backward(self, grad, input):
        return avg_pool2d_backward(grad, input, self.params)


def avg_pool2d_backward(grad, input, params):
    dx = _wrap(POOLING.on(grad=grad, input=input).avg_pool2d_backward(grad._data, input.shape, *params.args()))
    if rec.needs_grad(grad, input):
        # torch's node keeps only the input's shape: nothing is saved
        rec.record(AvgPool2DBackwardBackward0, (grad, input), dx).params = params
    return dx


class AvgPool2DBackwardBackward0(rec.BuiltinNode):
    def backward(self, gg):
        return (avg_pool2d(gg, self.params) if self.needs(0) else None,
                _zeros_for_input(self, 1) if self.needs(1) else None)


def adaptive_avg_pool2d(input, output_size):
    y = _wrap(POOLING.on(input=input).adaptive_avg_pool2d_forward(input._data, output_size))
    if rec.needs_grad(input):
        node = rec.record(AdaptiveAvgPool2DBackward0, (input,), y)
        node._saved = (rec.save(input),)        # torch's AdaptiveAvgPool2DBackward0 saves self
    return y


class AdaptiveAvgPool2DBackward0(rec.BuiltinNode):
    def backward(self, grad, input):
        return adaptive_avg_pool2d_backward(grad, input)


def adaptive_avg_pool2d_backward(grad, input):
    dx = _wrap(POOLING.on(grad=grad, input=input).adaptive_avg_pool2d_backward(grad._data, input.shape))
    if rec.needs_grad(grad, input):
        rec.record(AdaptiveAvgPool2DBackwardBackward0, (grad, input), dx).output_size = tuple(grad.shape[2:])
    return dx


class AdaptiveAvgPool2DBackwardBackward0(rec.BuiltinNode):
    def backward(self, gg):
        return (adaptive_avg_pool2d(gg, self.output_size) if self.needs(0) else None,
                _zeros_for_input(self, 1) if self.needs(1) else None)
