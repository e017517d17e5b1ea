"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue,
median, nanmedian, mode.  NaN sorts as the largest value (last ascending,
first descending) and equal values keep their order (stable), as torch's
CPU sort does; the value gradients go back to the selected indices."""
import numpy as np

from cextend import _sizes as _limits

from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops._layout import empty_like_preserve
from cextend._ops._operands import require_tensor
from cextend._ops.reduction import index_scatter, return_types, _evenly_backward
from cextend._ops.registry import Sample, register
from cextend.tensor import _wrap as _new_tensor
from cextend.tensor import _dim as normalize


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


def _dim(x, dim):
    return normalize(dim, x._data.ndim)


def sort_order(data, axis, descending):
    """Stable argsort along axis with NaN largest (torch's order)."""
    if data.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    moved = np.moveaxis(data, axis, -1)
    if data.dtype.kind == "f":
        keys = (np.where(np.isnan(moved), 0, -moved.astype(np.float64)), ~np.isnan(moved))
        order = np.lexsort(keys, axis=-1)
    elif data.dtype.kind == "b":
        order = np.argsort(~moved, axis=-1, kind="stable")
    else:
        order = np.argsort(~moved.astype(np.int64), axis=-1, kind="stable")
    return np.moveaxis(order, -1, axis)


def _select_backward(node, grads, indices):
    g = grads[0]
    if g is None:
        return None
    return index_scatter(g, indices._data, node.dim, node.in_shape, keepdim=True)


_SortNode = rec.node_class("SortBackward", _select_backward, multi_output=True)
_TopkNode = rec.node_class("TopkBackward", _select_backward, multi_output=True)


def _values_at(x, d, order, name, node_cls, keepdim=True, named=None, like_input=False):
    """like_input: the results laid out as the input (sort's are, as torch's
    empty_like); otherwise contiguous."""
    data = x._data
    if data.ndim == 0:
        values, indices = data.copy(), np.zeros((), np.int64)
    else:
        values = np.take_along_axis(data, order, axis=d)
        indices = order.astype(np.int64)
    if like_input:
        v, i = _wrap(_laid_out_like(values, data)), _wrap(_laid_out_like(indices, data))
    else:
        v, i = _wrap(np.array(values, order="C")), _wrap(np.array(indices, order="C"))
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), (v, None))
        node.dim, node.in_shape = (d if data.ndim else 0), data.shape
        node._saved = (rec.save(i),)        # the returned indices: changing them in place raises
    return return_types[named or name](v, i)


def _laid_out_like(result, data):
    """result in a fresh array laid out as torch's empty_like(data)."""
    out = empty_like_preserve(data, result.dtype)
    out[...] = result
    return out


def _with_out(result, out, name, x):
    """The result written into out=(values, indices), if given."""
    if out is None:
        return result
    _out.check_out(out[0] if isinstance(out, (tuple, list)) and out else out, name, x)
    return _out.write_outs(out, result[0], result[1], name, return_types[name + "_out"])


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    x = require_tensor(input, "sort")
    d = _dim(x, dim)
    return _with_out(_values_at(x, d, sort_order(x._data, d, descending), "sort", _SortNode, like_input=True),
                     out, "sort", x)


def argsort(input, dim=-1, descending=False, stable=False):
    x = require_tensor(input, "argsort")
    d = _dim(x, dim)
    return _wrap(_laid_out_like(np.asarray(sort_order(x._data, d, descending), np.int64), x._data))


def msort(input, *, out=None):
    values = sort(input, 0).values
    if out is None:
        return values
    _out.check_out(out, "msort", input)
    return _out.write_out(out, values._data, "msort", strict="c_type")


def _sort_samples(rng):
    yield Sample(rng.standard_normal((3, 5)))
    yield Sample(rng.standard_normal((3, 5)), 0, True)
    yield Sample(rng.standard_normal((4,)), descending=True)
    yield Sample(rng.standard_normal(()))


register("sort", sort, samples=_sort_samples, family="sorting", integer_inputs=True)
register("argsort", argsort, samples=_sort_samples, gradcheck=False, family="sorting", integer_inputs=True)
register("msort", msort, samples=lambda rng: iter([Sample(rng.standard_normal((4, 3)))]), family="sorting")


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    x = require_tensor(input, "topk")
    if x._data.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    d = _dim(x, dim)
    size = x._data.shape[d] if x._data.ndim else 1
    if not 0 <= k <= size:
        _limits.int64(k, "k", "topk")      # torch: ValueError outside int64
        raise RuntimeError("selected index k out of range")
    order = sort_order(x._data, d, largest)
    if x._data.ndim:
        order = np.take(order, np.arange(k), axis=d)
    return _with_out(_values_at(x, d, order, "topk", _TopkNode), out, "topk", x)


register("topk", topk, family="sorting", integer_inputs=True,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 5)), 2),
                                   Sample(rng.standard_normal((3, 5)), 1, 0, False),
                                   Sample(rng.standard_normal((6,)), 0)]))


def _kth_backward(node, grads, indices):
    g = grads[0]
    if g is None:
        return None
    return index_scatter(g, indices._data, node.dim, node.in_shape, node.keepdim)


_KthvalueNode = rec.node_class("KthvalueBackward", _kth_backward, multi_output=True)
_MedianDimNode = rec.node_class("MedianBackward", _kth_backward, multi_output=True)


def _kth(x, k, d, keepdim, name, node_cls, nan_ignoring=False):
    data = x._data
    if data.ndim == 0:
        values, indices = data.copy(), np.zeros((), np.int64)
    else:
        if data.shape[d] == 0:
            raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (name, d))
        order = sort_order(data, d, False)
        if callable(k):
            position = k(data, d)
            pick = np.take_along_axis(order, position, axis=d)
        else:
            pick = np.take(order, [k - 1], axis=d)
        values = np.take_along_axis(data, pick, axis=d)
        indices = pick.astype(np.int64)
        if not keepdim:
            values, indices = np.squeeze(values, d), np.squeeze(indices, d)
    v, i = _wrap(np.asarray(values)), _wrap(np.asarray(indices))
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), (v, None))
        node.dim, node.in_shape, node.keepdim = (d if data.ndim else 0), data.shape, keepdim
        node._saved = (rec.save(i),)
    return return_types[name](v, i)


def _no_bool(x, kernel):
    if x._data.dtype.kind == "b":
        raise NotImplementedError("\"%s\" not implemented for 'Bool'" % kernel)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    x = require_tensor(input, "kthvalue")
    _no_bool(x, "kthvalue_cpu")
    d = _dim(x, dim)
    size = x._data.shape[d] if x._data.ndim else 1
    if not 1 <= k <= size:
        _limits.int64(k, "k", "kthvalue")      # torch: ValueError outside int64
        raise RuntimeError("kthvalue(): selected number k out of range for dimension %d" % d)
    return _with_out(_kth(x, k, d, keepdim, "kthvalue", _KthvalueNode), out, "kthvalue", x)


register("kthvalue", kthvalue, family="sorting", integer_inputs=True,
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 5)), 2),
                                   Sample(rng.standard_normal((3, 5)), 3, 0, True)]))


def _mode_position(data, d):
    """Where the mode sits in each slice's stable ascending order: the most
    frequent value, the smallest among equally frequent ones, at its last
    position (torch's CPU kernel reports the last occurrence)."""
    ordered = np.moveaxis(np.sort(data, axis=d, kind="stable"), d, -1)
    rows = ordered.reshape(-1, ordered.shape[-1])
    position = np.empty(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        counts = np.diff(np.r_[starts, row.size])
        best = int(np.argmax(counts))       # first maximum: the smallest value
        position[r] = starts[best] + counts[best] - 1
    return np.expand_dims(position.reshape(ordered.shape[:-1]), d)


_ModeNode = rec.node_class("ModeBackward", _kth_backward, multi_output=True)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along dim, and the index of its last occurrence."""
    x = require_tensor(input, "mode")
    d = _dim(x, dim)
    return _with_out(_kth(x, _mode_position, d, keepdim, "mode", _ModeNode), out, "mode", x)


register("mode", mode, family="sorting", integer_inputs=True, gradcheck=False,  # ties: no finite differences
         samples=lambda rng: iter([Sample(rng.integers(0, 3, (3, 7)).astype(float)),
                                   Sample(rng.integers(0, 2, (4, 3)).astype(float), 0, True),
                                   Sample(rng.standard_normal(()))]))


def _lower_median_position(data, d, ignore_nan):
    n = data.shape[d]
    if not ignore_nan:
        # a NaN anywhere in the slice makes the median NaN (it sorts last)
        has_nan = np.isnan(data).any(axis=d, keepdims=True) if data.dtype.kind == "f" else False
        position = np.full(has_nan.shape if data.dtype.kind == "f" else
                           tuple(1 if i == d else s for i, s in enumerate(data.shape)), (n - 1) // 2)
        if data.dtype.kind == "f":
            first_nan = n - np.isnan(data).sum(axis=d, keepdims=True)
            position = np.where(has_nan, first_nan, position)
        return position.astype(np.int64)
    valid = n - np.isnan(data).sum(axis=d, keepdims=True) if data.dtype.kind == "f" else \
        np.full(tuple(1 if i == d else s for i, s in enumerate(data.shape)), n)
    return np.maximum((valid - 1) // 2, 0).astype(np.int64)


_MedianAllNode = rec.node_class("MedianBackward", _evenly_backward)


def _median(input, dim, keepdim, name, ignore_nan):
    x = require_tensor(input, name)
    _no_bool(x, name + "_cpu")
    data = x._data
    if dim is None:
        if data.size == 0:
            return _wrap(np.asarray(np.nan, data.dtype)) if data.dtype.kind == "f" else \
                _raise_empty(name)
        flat = data.reshape(-1)
        position = _lower_median_position(flat, 0, ignore_nan)
        order = sort_order(flat, 0, False)
        value = flat[order[position[0]]]
        t = _wrap(np.asarray(value))
        if rec.needs_grad(x):
            node = rec.record(_MedianAllNode, (x,), t)
            node.in_shape, node.dims, node.keepdim = data.shape, tuple(range(data.ndim)), False
            node._saved = (rec.save(x), rec.save_output(t))
        return t
    d = _dim(x, dim)
    return _kth(x, lambda a, ax: _lower_median_position(a, ax, ignore_nan), d, keepdim, name,
                _MedianDimNode)


def _raise_empty(name):
    raise IndexError("%s(): Expected reduction dim to be specified for input.numel() == 0." % name)


def median(input, dim=None, keepdim=False, *, out=None):
    if dim is None:
        _out.no_out(out, "median")
        return _median(input, dim, keepdim, "median", ignore_nan=False)
    return _with_out(_median(input, dim, keepdim, "median", ignore_nan=False), out, "median", input)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    if dim is None:
        _out.no_out(out, "nanmedian")
        return _median(input, dim, keepdim, "nanmedian", ignore_nan=True)
    return _with_out(_median(input, dim, keepdim, "nanmedian", ignore_nan=True), out, "nanmedian", input)


def _median_samples(rng):
    yield Sample(rng.standard_normal((3, 5)))
    yield Sample(rng.standard_normal((3, 4)), 1)
    yield Sample(rng.standard_normal((3, 4)), 0, True)


register("median", median, samples=_median_samples, family="sorting", integer_inputs=True)
register("nanmedian", nanmedian, samples=_median_samples, family="sorting")
