"""Where torch puts advanced indexing's result dims, and how it lays them out.

numpy and torch agree on x[key] for most keys, with one exception: an
integer among tensor indices.  numpy treats the integer as one more
advanced index (so x[0, :, idx] has two advanced indices a slice apart,
and their dims go first: shape (len(idx), n)); torch selects the integer
first (a view), and only then indexes, so idx alone decides (shape
(n, len(idx))).  `Placement` moves the block of indexed dims from numpy's
position to torch's.

The result's strides follow torch's TensorIterator: the indexed tensor,
restrided so the indexed dims have stride 0, and the index tensors decide
the dim order (TensorIterator::reorder_dimensions), which decides whether
a later view() of the result works.
"""
import numbers

import numpy as np

from cextend._ops._layout import _broadcast_strides, _dim_order


def _is_int(p):
    return isinstance(p, numbers.Integral) and not isinstance(p, (bool, np.bool_))


class Placement:
    """The indexed block's position in numpy's result and in torch's."""

    def __init__(self, numpy_at, torch_at, count):
        self.numpy_at, self.torch_at, self.count = numpy_at, torch_at, count

    def to_torch(self, array):
        return self._move(array, self.numpy_at, self.torch_at)

    def to_numpy(self, array):
        return self._move(array, self.torch_at, self.numpy_at)

    def _move(self, array, start, to):
        if start == to or not self.count:
            return array
        return np.moveaxis(array, range(start, start + self.count), range(to, to + self.count))


class _Parts:
    """A key's parts (a tuple), each with the input and output dims it takes."""

    def __init__(self, parts, key, ndim):
        self.parts = parts
        self.key = key                  # numpy's form: arrays for lists and tensors
        self.kinds = []
        self.in_dims = []
        for p, k in zip(parts, key):
            if p is None:
                kind, used = "new", 0
            elif p is Ellipsis:
                kind, used = "ellipsis", 0
            elif type(p) is slice:
                kind, used = "slice", 1
            elif _is_int(p):
                kind, used = "int", 1
            else:
                array = np.asarray(k)
                kind, used = "index", (array.ndim if array.dtype == np.bool_ else 1)
            self.kinds.append(kind)
            self.in_dims.append(used)
        rest = ndim - sum(self.in_dims)
        self.out_dims = [1 if kind in ("new", "slice") else (rest if kind == "ellipsis" else 0)
                         for kind in self.kinds]

    def positions(self, kinds):
        return [i for i, kind in enumerate(self.kinds) if kind in kinds]

    def block_start(self, kinds):
        """Where the indexed dims go: after the dims of the parts before the
        first index when the indices are adjacent, else in front."""
        at = self.positions(kinds)
        if at != list(range(at[0], at[-1] + 1)):
            return 0
        return sum(self.out_dims[:at[0]])


def placement(parts, key, ndim, result_ndim):
    """The Placement for x[parts] (numpy's key: `key`), or None where numpy
    already puts the block where torch does."""
    if any(isinstance(p, (bool, np.bool_)) for p in parts):
        return None                     # x[True, idx]: numpy's own rules, as torch's
    info = _Parts(parts, key, ndim)
    if not info.positions(("index",)) or not info.positions(("int",)):
        return None
    count = result_ndim - sum(info.out_dims)
    numpy_at = info.block_start(("index", "int"))
    torch_at = info.block_start(("index",))
    return Placement(numpy_at, torch_at, count) if numpy_at != torch_at else None


def torch_layout(base, parts, key, result):
    """result (x[key] in torch's dim order), laid out as torch's index op lays
    out its output."""
    if type(result) is not np.ndarray or result.ndim < 2 or any(isinstance(p, (bool, np.bool_)) for p in parts):
        return result
    info = _Parts(parts, key, base.ndim)
    # the view torch indexes: ints selected, slices and None applied,
    # indexed dims kept whole
    basic = []
    for p, kind, used in zip(parts, info.kinds, info.in_dims):
        basic.extend([slice(None)] * used if kind == "index" else [p])
    view = base[tuple(basic) + (() if any(p is Ellipsis for p in parts) else (Ellipsis,))]
    indexed = []            # the view's dims that the index tensors take
    dim = 0
    for kind, used, out in zip(info.kinds, info.in_dims, info.out_dims):
        if kind == "index":
            indexed.extend(range(dim, dim + used))
            dim += used
        elif kind != "int":
            dim += out
    others = [d for d in range(view.ndim) if d not in indexed]
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    before = [d for d in others if d < indexed[0]] if adjacent else []
    after = [d for d in others if d not in before]
    count = result.ndim - len(others)
    source_strides = ([view.strides[d] for d in before] + [0] * count + [view.strides[d] for d in after])
    indices = _index_operands([np.asarray(key[i]) for i in info.positions(("index",))])
    shape = result.shape
    index_strides = [(0,) * len(before) + _broadcast_strides(ix, shape[len(before):len(before) + count])
                     + (0,) * len(after) for ix in indices]
    perm = _dim_order(shape, [source_strides] + index_strides)
    if perm == list(range(result.ndim - 1, -1, -1)):
        return result if result.flags.c_contiguous else np.ascontiguousarray(result)
    wanted = tuple(reversed(perm))
    laid_out = np.empty([shape[d] for d in wanted], result.dtype).transpose(np.argsort(wanted))
    laid_out[...] = result
    return laid_out


def _index_operands(arrays):
    """The index tensors as torch's TensorIterator sees them: a mask becomes
    the columns of its nonzero() (a (count, k) array), then all broadcast."""
    columns = []
    for a in arrays:
        if a.dtype == np.bool_:
            nonzero = np.ascontiguousarray(np.stack(np.nonzero(a), axis=1)) if a.ndim else a.reshape(1)
            columns.extend(nonzero[:, j] for j in range(a.ndim))
        else:
            columns.append(a)
    try:
        return np.broadcast_arrays(*columns)
    except ValueError:
        return columns
