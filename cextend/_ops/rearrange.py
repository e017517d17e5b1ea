"""Ops that rearrange elements into a new tensor (copies, unlike views):
flip, roll, repeat, tile, tril, triu, rot90, repeat_interleave."""
import numpy as np

from cextend._ops._layout import empty_like_preserve
from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops._operands import require_tensor
from cextend._ops.registry import Sample, method, register
from cextend.tensor import _wrap as _new_tensor
from cextend._memory_format import contiguous_format
from cextend._ops.gather_scatter import index_add
from cextend.tensor import _allocating, _dim, _sizes, _wrap as wrap
from cextend import _sizes as _limits


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


def _dims(x, dims, op):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    normalized = [_dim(d, x._data.ndim) for d in dims]
    if len(set(normalized)) != len(normalized):
        raise RuntimeError("dims has duplicates, original flip dims size=%d, but unique flip dims size=%d"
                           % (len(normalized), len(set(normalized))))
    return tuple(normalized)


_FlipNode = rec.node_class("FlipBackward", lambda node, g: flip(g, node.dims))


def flip(input, dims):
    x = require_tensor(input, "flip")
    d = _dims(x, dims, "flip")
    if x._data.ndim and type(x._data) is np.ndarray:
        data = empty_like_preserve(x._data)         # torch's flip allocates so
        data[...] = np.flip(x._data, d)
    else:
        data = np.flip(x._data, d).copy() if x._data.ndim else x._data.copy()
    t = _wrap(data)
    if rec.needs_grad(x):
        node = rec.record(_FlipNode, (x,), t)
        node.dims = d
    return t


def fliplr(input):
    x = require_tensor(input, "fliplr")
    if x._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(x, (1,))


def flipud(input):
    x = require_tensor(input, "flipud")
    if x._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(x, (0,))


def _flip_call(x, *dims):
    return flip(x, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


register("flip", flip, family="rearrange", integer_inputs=True,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), (0,)),
                                   Sample(rng.standard_normal((2, 3, 4)), (0, 2)),
                                   Sample(rng.standard_normal((5,)), [-1])]))
method("flip", lambda self, *dims: _flip_call(self, *dims))
register("fliplr", fliplr, family="rearrange", samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)))]))
register("flipud", flipud, family="rearrange", samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)))]))


_RollNode = rec.node_class("RollBackward", lambda node, g: roll(g, tuple(-s for s in node.shifts), node.dims))


def roll(input, shifts, dims=None):
    x = require_tensor(input, "roll")
    shifts_t = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    for shift in shifts_t:
        _limits.int64(shift, "shifts", "roll")
    if dims is None:
        if len(shifts_t) != 1:
            raise RuntimeError("roll: shifts and dims must align. shifts: %d, dims: 0" % len(shifts_t))
        data = np.roll(x._data.reshape(-1), shifts_t[0]).reshape(x._data.shape)
        t = _wrap(data)
        if rec.needs_grad(x):
            node = rec.record(_RollNode, (x,), t)
            node.shifts, node.dims = shifts_t, None
        return t
    dims_t = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts_t) != len(dims_t):
        raise RuntimeError("shifts and dimensions must align. shifts: %d, dims:%d" % (len(shifts_t), len(dims_t)))
    d = tuple(_dim(k, x._data.ndim) for k in dims_t)
    t = _wrap(np.asarray(np.roll(x._data, shifts_t, d), order="C"))     # torch's roll is contiguous
    if rec.needs_grad(x):
        node = rec.record(_RollNode, (x,), t)
        node.shifts, node.dims = shifts_t, d
    return t


register("roll", roll, family="rearrange", integer_inputs=True,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), 1, 0),
                                   Sample(rng.standard_normal((3, 4)), (2, -1), (1, 0)),
                                   Sample(rng.standard_normal((3, 4)), 5)]))


def _repeat_backward(node, g):
    """Sum over the copies: view g as (r0, s0, r1, s1, ...) and sum the r's."""
    shape = node.in_shape
    lead = len(node.repeats) - len(shape)
    full = (1,) * lead + tuple(shape)
    split = []
    for r, s in zip(node.repeats, full):
        split += [r, s]
    summed = g.reshape(split).sum(tuple(range(0, 2 * len(full), 2)))
    return summed.reshape(shape)


_RepeatNode = rec.node_class("RepeatBackward", _repeat_backward)


def repeat(self, *sizes):
    repeats = _sizes(sizes, "repeats")
    result = None
    if len(repeats) >= self._data.ndim:      # the result's size: refused if negative or unaddressable
        result = _limits.new_shape(tuple(r * s for r, s in zip(repeats, (1,) * (len(repeats) - self._data.ndim)
                                                               + self._data.shape)), "size", "repeat")
    if len(repeats) < self._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    t = _wrap(_allocating("repeat", result, lambda: np.array(np.tile(self._data, repeats), order="C")))
    if rec.needs_grad(self):
        node = rec.record(_RepeatNode, (self,), t)
        node.repeats, node.in_shape = repeats, self._data.shape
    return t


def tile(input, dims, *more):
    x = require_tensor(input, "tile")
    dims = _sizes((dims,) + more if more or not isinstance(dims, (tuple, list)) else (dims,), "dims")
    if len(dims) < x._data.ndim:
        dims = (1,) * (x._data.ndim - len(dims)) + dims
    return repeat(x, dims)


register("repeat", repeat, module=False, family="rearrange", integer_inputs=True,
         samples=lambda rng: iter([Sample(rng.standard_normal((2, 3)), (2, 1)),
                                   Sample(rng.standard_normal((3,)), (2, 3, 1)),
                                   Sample(rng.standard_normal(()), (4,))]))
register("tile", tile, family="rearrange",
         samples=lambda rng: iter([Sample(rng.standard_normal((2, 3)), (2,)),
                                   Sample(rng.standard_normal((3,)), (2, 2))]))


def _repeat_interleave_backward(node, g):
    d = node.dim
    idx = node.index
    zeros = g.new_zeros(node.in_shape)
    return index_add(zeros, d, wrap(idx), g).reshape(node.orig_shape)


_RepeatInterleaveNode = rec.node_class("RepeatInterleaveBackward", _repeat_interleave_backward)


def _repeat_each(x, repeats, dim):
    """An int repeats is, in torch, unsqueeze + expand + a contiguous clone +
    view: the result is a view (of that clone) with torch's history."""
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    _limits.int64(repeats, "repeats", "repeat_interleave")
    source = x.flatten() if dim is None else x
    d = _dim(dim, source.dim()) if dim is not None else 0
    if source.dim() == 0:
        source, d = source.reshape(1), 0
    spread = source.unsqueeze(d + 1)
    sizes = list(spread.shape)
    sizes[d + 1] = repeats
    shape = list(source.shape)
    shape[d] *= repeats
    _limits.new_shape(shape, "size", "repeat_interleave")
    return _allocating("repeat_interleave", shape,
                       lambda: spread.expand(sizes).clone(memory_format=contiguous_format).view(shape))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    x = require_tensor(input, "repeat_interleave")
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        return _repeat_each(x, repeats, dim)
    data = x._data if dim is not None else x._data.reshape(-1)
    d = _dim(dim, data.ndim) if dim is not None else 0
    counts = repeats._data if hasattr(repeats, "_data") else repeats
    counts = np.broadcast_to(np.asarray(counts, np.int64), (data.shape[d],)) if np.ndim(counts) == 0 \
        else np.asarray(counts, np.int64)
    if counts.shape != (data.shape[d],):
        raise RuntimeError("repeats must have the same size as input along dim")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    total = int(counts.sum(dtype=object)) if counts.size else 0
    _limits.new_shape(data.shape[:d] + (total,) + data.shape[d + 1:], "size", "repeat_interleave")

    def repeated():
        index = np.repeat(np.arange(data.shape[d]), counts)
        return index, np.take(data, index, axis=d)
    index, values = _allocating("repeat_interleave", None, repeated)
    t = _wrap(values)
    if rec.needs_grad(x):
        node = rec.record(_RepeatInterleaveNode, (x,), t)
        node.dim, node.index, node.in_shape, node.orig_shape = d, index, data.shape, x._data.shape
    return t


register("repeat_interleave", repeat_interleave, family="rearrange", gradcheck=False,
         samples=lambda rng: iter([Sample(rng.standard_normal((2, 3)), 2, 1)]))


def _clamped(diagonal, rows, cols):
    """diagonal moved into [-rows - 1, cols + 1], which keeps the same
    triangle, so numpy's index arithmetic cannot overflow (tril(2**62))."""
    return max(-rows - 1, min(diagonal, cols + 1))


def _triangle(op, keep):
    node_cls = rec.node_class(op.capitalize() + "Backward", lambda node, g: _tri(g, node.diagonal, keep, op))

    def _tri(x, diagonal, keep, name):
        if x._data.ndim < 2:
            raise RuntimeError("%s: input tensor must have at least 2 dimensions" % name)
        rows, cols = x._data.shape[-2:]
        mask = keep(np.ones((rows, cols), bool), _clamped(diagonal, rows, cols))
        t = _wrap(np.where(mask, x._data, x._data.dtype.type(0)))
        if rec.needs_grad(x):
            node = rec.record(node_cls, (x,), t)
            node.diagonal = diagonal
        return t

    def triangle(input, diagonal=0, *, out=None):
        x = require_tensor(input, op)
        if isinstance(diagonal, bool) or not isinstance(diagonal, int):
            raise TypeError("%s(): argument 'diagonal' (position 1) must be int, not %s"
                            % (op, type(diagonal).__name__))
        _limits.int64(diagonal, "diagonal", op)
        t = _tri(x, diagonal, keep, op)
        return t if out is None else _out.finish_out(out, t, op, x, strict="c_type")
    def triangle_(self, diagonal=0):
        # torch zeroes the other triangle in place and writes nothing else:
        # an expanded tensor is accepted, and its shared elements end as there
        x = require_tensor(self, op + "_")
        if isinstance(diagonal, bool) or not isinstance(diagonal, int):
            raise TypeError("%s_(): argument 'diagonal' (position 1) must be int, not %s"
                            % (op, type(diagonal).__name__))
        _limits.int64(diagonal, "diagonal", op + "_")
        if x._data.ndim < 2:
            raise RuntimeError("%s: input tensor must have at least 2 dimensions" % op)
        recording = rec.prepare_inplace(x, (), check_overlap=False)
        node = None
        if recording:
            node = rec.connect(rec.new_node(node_cls), (x,))
            node.diagonal = diagonal
        rows, cols = x._data.shape[-2:]
        x._data[..., ~keep(np.ones((rows, cols), bool), _clamped(diagonal, rows, cols))] = 0
        return rec.finish_inplace(x, node)

    triangle.__name__ = op
    register(op, triangle, inplace=triangle_,
             family="rearrange", integer_inputs=True,
             samples=lambda rng: iter([Sample(rng.standard_normal((3, 4))),
                                       Sample(rng.standard_normal((2, 3, 3)), 1),
                                       Sample(rng.standard_normal((4, 3)), -1)]))
    return triangle


tril = _triangle("tril", np.tril)
triu = _triangle("triu", np.triu)


def rot90(input, k=1, dims=(0, 1)):
    x = require_tensor(input, "rot90")
    if len(dims) != 2:
        raise RuntimeError("expected total rotation dims == 2, but got dims = %d" % len(dims))
    k %= 4
    d0, d1 = dims
    if k == 1:
        return flip(x, (d1,)).transpose(d0, d1).clone()
    if k == 2:
        return flip(x, (d0, d1))
    if k == 3:
        return flip(x, (d0,)).transpose(d0, d1).clone()
    return x.clone()


register("rot90", rot90, family="rearrange",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), k) for k in (1, 2, 3)]))
