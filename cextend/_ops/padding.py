"""Reflect, replicate and circular padding as ops with torch's nodes, for
the convolution layers' padding_mode (torch pads explicitly before them).

Reflect and replicate are built-in ops (ReflectionPad2DBackward0, ...),
whose backward is an op too (ReflectionPad2DBackwardBackward0: the padding
of the incoming gradient, and zeros for the input, as torch's
zeros_like(self)).  Circular padding is torch's own composition
(_pad_circular): an empty result, then slice copies.
"""
import numpy as np

from cextend.autograd import record as rec
from cextend._ops._kernels import Kernels
from cextend.ops import pad as _cpu_pad
from cextend.tensor import _wrap

PAD = Kernels("pad", cpu=_cpu_pad)

_NODE_PREFIX = {"reflect": "ReflectionPad", "replicate": "ReplicationPad"}


class PadParams:
    __slots__ = ("rows", "cols", "mode", "dims")

    def __init__(self, rows, cols, mode, dims):
        self.rows, self.cols, self.mode, self.dims = rows, cols, mode, dims


def pad(input, pads, mode, dims):
    """input (*, H, W) padded by pads = (left, right, top, bottom); dims: how
    many trailing dims torch's op pads (1 for Conv1d: ReflectionPad1D)."""
    if mode == "circular":
        return _pad_circular(input, pads[:2 * dims])
    rows, cols = PAD.on(input=input).index_maps(input.shape[-2], input.shape[-1], pads, mode)
    return _padded(input, PadParams(rows, cols, mode, dims))


def _padded(input, params):
    result = _wrap(PAD.on(input=input).pad_forward(input._data, params.rows, params.cols))
    if rec.needs_grad(input):
        node = rec.record(_node(params.mode, params.dims, ""), (input,), result)
        node.params = params
        node._saved = (rec.save(input),)        # torch's node saves self
    return result


def pad_backward(grad, input, params):
    dx = _wrap(PAD.on(grad=grad, input=input).pad_backward(grad._data, params.rows, params.cols, input.shape))
    if rec.needs_grad(grad, input):
        rec.record(_node(params.mode, params.dims, "Backward"), (grad, input), dx).params = params
    return dx


class _PadNode(rec.BuiltinNode):
    def backward(self, grad, input):
        return pad_backward(grad, input, self.params)


class _PadBackwardNode(rec.BuiltinNode):
    def backward(self, gg):
        shape, dtype = self._input_meta[1] if self.needs(1) else (None, None)
        return (_padded(gg, self.params) if self.needs(0) else None,
                _wrap(np.zeros(shape, dtype)) if self.needs(1) else None)


_NODES = {}


def _node(mode, dims, kind):
    """ReflectionPad2DBackward0 and its kin: one real class per name."""
    name = "%s%dD%sBackward0" % (_NODE_PREFIX[mode], dims, "Backward" if kind else "")
    if name not in _NODES:
        _NODES[name] = type(name, (_PadBackwardNode if kind else _PadNode,), {"__module__": __name__})
    return _NODES[name]


def _pad_circular(input, pads):
    """torch's _pad_circular: the input copied into the middle of an empty
    result, then each padded border copied from the opposite side of the
    result itself (last dim first; corners are written more than once)."""
    ndim = input.dim()
    out_shape = list(input.shape)
    for i in range(len(pads) // 2):
        dim = ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        if max(before, after) > input.shape[dim]:
            raise ValueError("Padding value causes wrapping around more than once.")
        out_shape[dim] += before + after
    out = input.new_empty(out_shape)
    out_slice, in_slice = out, input
    for i in range(len(pads) // 2):
        dim = ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        out_slice = _slice(out_slice, dim, max(before, 0), out_shape[dim] - max(after, 0))
        in_slice = _slice(in_slice, dim, max(-before, 0), input.shape[dim] - max(-after, 0))
    out_slice.copy_(in_slice)
    for i in range(len(pads) // 2):
        dim = ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        if before > 0:
            end = out_shape[dim] - max(after, 0)
            _slice(out, dim, 0, before).copy_(_slice(out, dim, end - before, end))
        if after > 0:
            start = max(before, 0)
            _slice(out, dim, out_shape[dim] - after, out_shape[dim]).copy_(_slice(out, dim, start, start + after))
    return out


def _slice(t, dim, start, end):
    return t[(slice(None),) * dim + (slice(start, end),)]
