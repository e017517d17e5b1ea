"""tensor_split, hsplit, vsplit, dsplit: pieces of a tensor along one dim, each a view.

As torch's composite tensor_split, each piece is its own slice of the
input (SliceBackward0, sharing the input's storage and version counter):
with indices, piece i runs from indices[i - 1] to indices[i] under
slice's rules (negative positions count from the end, positions are
clamped to the dim, a stop before its start gives an empty piece); with
a number of sections, the first size % sections pieces have one element
more than the others.
"""
import numbers

import numpy as np

from cextend._ops._operands import is_tensor, require_tensor
from cextend._ops._nn_checks import torch_name
from cextend._ops.registry import Sample, register
from cextend._ops.shape import _SliceNode, _slice_view
from cextend.tensor import _dim


def _slice(x, d, start, stop):
    """x.slice(d, start, stop), with torch's clamping."""
    size = x._data.shape[d]
    if start < 0:
        start += size
    if stop < 0:
        stop += size
    start = min(max(start, 0), size)
    stop = min(max(stop, start), size)
    key = (slice(None),) * d + (slice(start, stop),)
    return _slice_view(x, x._data[key], lambda t: t[key], _SliceNode)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _invalid(op, value, dim_name="int dim = 0"):
    return TypeError("%s() received an invalid combination of arguments - got (Tensor, %s), but expected one of:\n"
                     " * (Tensor input, tuple of ints indices, %s)\n"
                     " * (Tensor input, Tensor tensor_indices_or_sections, %s)\n"
                     " * (Tensor input, int sections, %s)" % (op, type(value).__name__, dim_name, dim_name, dim_name))


def _by_sections(x, sections, d):
    if sections <= 0:
        raise RuntimeError("number of sections must be larger than 0, got %d" % sections)
    size = x._data.shape[d]
    step, extra = divmod(size, sections)
    pieces, start = [], 0
    for i in range(sections):
        stop = start + step + (1 if i < extra else 0)
        pieces.append(_slice(x, d, start, stop))
        start = stop
    return tuple(pieces)


def _by_indices(x, indices, d):
    pieces, start = [], 0
    for stop in indices:
        pieces.append(_slice(x, d, start, stop))
        start = stop
    pieces.append(_slice(x, d, start, x._data.shape[d]))
    return tuple(pieces)


def _index_list(value, op):
    if isinstance(value, (list, tuple)) and all(_is_int(i) for i in value):
        return [int(i) for i in value]
    raise _invalid(op, value)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """Views of input along dim: `sections` nearly equal pieces (the first size % sections
    one longer), or the pieces between `indices`; a 0-d int64 tensor is a number of sections,
    a 1-d one indices."""
    x = require_tensor(input, "tensor_split")
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections) if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() missing required argument 'indices_or_sections' (or got it twice)")
    value = given[0]
    if x._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    if not _is_int(dim):
        raise _invalid("tensor_split", dim)
    d = _dim(dim, x._data.ndim)
    if is_tensor(value):
        data = value._data
        if getattr(data, "dtype", None) is None or type(data) is not np.ndarray:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, but it's on %s"
                               % value.device)
        if data.dtype != np.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got %s"
                               % torch_name(data.dtype))
        if data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               "one-dimensional tensor, but got a tensor with %d dims" % data.ndim)
        if data.ndim == 0:
            return _by_sections(x, int(data), d)
        return _by_indices(x, [int(i) for i in data], d)
    if _is_int(value) and indices is None:
        return _by_sections(x, int(value), d)
    return _by_indices(x, _index_list(value, "tensor_split"), d)


def _split_along(op, input, indices_or_sections, dim, min_dims):
    x = require_tensor(input, op)
    ndim = x._data.ndim
    if ndim < min_dims:
        if min_dims == 1:
            raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with "
                               "%d dimensions!" % ndim)
        raise RuntimeError("torch.%s requires a tensor with at least %d dimension, but got a tensor with %d "
                           "dimensions!" % (op, min_dims, ndim))
    if _is_int(indices_or_sections):
        sections = int(indices_or_sections)
        size = x._data.shape[dim]
        if sections == 0 or size % sections != 0:
            raise RuntimeError("torch.%s attempted to split along dimension %d, but the size of the dimension %d "
                               "is not divisible by the split_size %d!" % (op, dim, size, sections))
        return _by_sections(x, sections, dim)
    if isinstance(indices_or_sections, (list, tuple)) and all(_is_int(i) for i in indices_or_sections):
        return _by_indices(x, [int(i) for i in indices_or_sections], dim)
    raise TypeError("%s() received an invalid combination of arguments - got (Tensor, %s), but expected one of:\n"
                    " * (Tensor input, int sections)\n * (Tensor input, tuple of ints indices)"
                    % (op, type(indices_or_sections).__name__))


def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 of a 1-d tensor); a number of sections must divide the dim."""
    x = require_tensor(input, "hsplit")
    return _split_along("hsplit", x, indices_or_sections, 1 if x._data.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """tensor_split along dim 0 of a tensor of at least 2 dims."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """tensor_split along dim 2 of a tensor of at least 3 dims."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def _tensor_split_samples(rng):
    yield Sample(rng.standard_normal((5, 3)), 2)
    yield Sample(rng.standard_normal((2, 7)), 3, 1, note="sections that do not divide")
    yield Sample(rng.standard_normal((7, 2)), [1, 4], note="indices")
    yield Sample(rng.standard_normal((3, 5)), (4, 1, -1), -1, note="decreasing and negative indices")
    yield Sample(rng.standard_normal((3,)), 5, note="more sections than elements")
    yield Sample(rng.standard_normal((0, 3)), 2, note="empty")


register("tensor_split", tensor_split, samples=_tensor_split_samples, family="shape")
register("hsplit", hsplit, samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), 2),
                                                     Sample(rng.standard_normal((6,)), [2, 5])]),
         family="shape")
register("vsplit", vsplit, samples=lambda rng: iter([Sample(rng.standard_normal((4, 3)), 2),
                                                     Sample(rng.standard_normal((5, 2)), [3])]),
         family="shape")
register("dsplit", dsplit, samples=lambda rng: iter([Sample(rng.standard_normal((2, 1, 4)), 2),
                                                     Sample(rng.standard_normal((1, 2, 5)), [1, 3])]),
         family="shape")
