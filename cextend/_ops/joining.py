"""Joining tensors: cat and stack (with torch's dtype promotion)."""
import numpy as np

from cextend._memory_format import channels_last, empty_as, suggests_channels_last
from cextend._promotion import result_type
from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops.registry import Sample, register
from cextend.tensor import Tensor, _dim, _wrap


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor):
        raise TypeError("%s(): argument 'tensors' must be tuple of Tensors, not Tensor" % op)
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("%s(): expected a non-empty list of Tensors" % op)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError("%s(): expected Tensor as element %d in argument 0, but got %s"
                            % (op, i, type(t).__name__))
    return tensors


def _laid_out(data, arrays):
    """torch's cat output: channels last when every input suggests it, else
    contiguous (compute_output_memory_format)."""
    if type(data) is not np.ndarray:
        return data
    if data.ndim == 4 and all(suggests_channels_last(a) for a in arrays):
        laid_out = empty_as(data, data.dtype, channels_last)
        laid_out[...] = data
        return laid_out
    return np.asarray(data, order="C")


def _cat_backward(node, g):
    grads, start = [], 0
    for i, size in enumerate(node.sizes):
        if node.needs(i):
            grads.append(g.narrow(node.dim, start, size))
        else:
            grads.append(None)
        start += size
    return tuple(grads)


_CatNode = rec.node_class("CatBackward", _cat_backward)


def cat(tensors, dim=0, *, out=None):
    """Concatenate along an existing dimension (differentiable)."""
    tensors = _tensor_list(tensors, "cat")
    # torch skips 1-D empty tensors (legacy behaviour) when sizing the result.
    skipped = [t._data.ndim == 1 and t._data.shape[0] == 0 for t in tensors]
    parts = [t for t, skip in zip(tensors, skipped) if not skip] or tensors[:1]
    ref = parts[0]
    d = _dim(dim, ref._data.ndim)
    for i, t in enumerate(tensors):
        if skipped[i] and len(parts) < len(tensors):
            continue
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError("Tensors must have same number of dimensions: got %d and %d"
                               % (ref._data.ndim, t._data.ndim))
        for k in range(ref._data.ndim):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError("Sizes of tensors must match except in dimension %d. Expected size %d "
                                   "but got size %d for tensor number %d in the list."
                                   % (d, ref._data.shape[k], t._data.shape[k], i))
    rt = result_type(*[t for t in tensors])
    data = np.concatenate([t._data if t._data.dtype == rt else t._data.astype(rt) for t in parts], axis=d)
    data = _laid_out(data, [t._data for t in parts])
    if out is not None:
        _out.check_out(out, "cat", *tensors)
        return _out.write_out(out, data, "cat")
    result = _wrap(data)
    if rec.needs_grad(*tensors):
        node = rec.record(_CatNode, tuple(tensors), result)
        node.dim = d
        node.sizes = [0 if skip and len(parts) < len(tensors) else t._data.shape[d]
                      for t, skip in zip(tensors, skipped)]
    return result


def _stack_backward(node, g):
    return tuple(g.select(node.dim, i) if node.needs(i) else None for i in range(node.count))


_StackNode = rec.node_class("StackBackward", _stack_backward)


def stack(tensors, dim=0, *, out=None):
    """Stack along a new dimension (differentiable)."""
    tensors = _tensor_list(tensors, "stack")
    for i, t in enumerate(tensors):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError("stack expects each tensor to be equal size, but got %s at entry 0 and %s "
                               "at entry %d" % (list(tensors[0]._data.shape), list(t._data.shape), i))
    d = _dim(dim, tensors[0]._data.ndim + 1)
    rt = result_type(*tensors)
    data = np.stack([t._data if t._data.dtype == rt else t._data.astype(rt) for t in tensors], axis=d)
    if d == 0 and type(data) is np.ndarray and all(suggests_channels_last(t._data) for t in tensors):
        # torch stacks channels-last inputs keeping their layout under the new dim
        inner = empty_as(tensors[0]._data, data.dtype, channels_last)
        laid_out = np.lib.stride_tricks.as_strided(np.empty((data.shape[0], inner.size), data.dtype), data.shape,
                                                   (inner.size * data.itemsize,) + inner.strides)
        laid_out[...] = data
        data = laid_out
    elif type(data) is np.ndarray:
        data = np.asarray(data, order="C")      # contiguous, as torch's (a transposed input's too)
    if out is not None:
        _out.check_out(out, "stack", *tensors)
        return _out.write_out(out, data, "stack")
    result = _wrap(data)
    if rec.needs_grad(*tensors):
        node = rec.record(_StackNode, tuple(tensors), result)
        node.dim = d
        node.count = len(tensors)
    return result


def _cat_call(lib, *tensors, dim=0):
    return lib.cat(list(tensors), dim)


def _stack_call(lib, *tensors, dim=0):
    return lib.stack(list(tensors), dim)


register("cat", cat, method=False, aliases=("concat", "concatenate"), family="joining",
         call=_cat_call,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 2)), rng.standard_normal((3, 4)), dim=1),
                                   Sample(rng.standard_normal((2, 3)), rng.standard_normal((1, 3)))]))
register("stack", stack, method=False, family="joining", call=_stack_call,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 2)), rng.standard_normal((3, 2))),
                                   Sample(rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), dim=2)]))
