"""Index-driven ops: gather/scatter along a dim, index_select/add/fill/copy,
masked_select/scatter, nonzero, take.  Index tensors are int64 and checked
in Python (torch's messages) before numpy sees them; each op's backward is
another op of this family, so derivatives of any order exist."""
import numpy as np

from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops._layout import empty_like_preserve
from cextend._overlap import check_no_overlap, check_no_partial, check_not_read_while_written
from cextend._ops._operands import is_tensor, operand, require_tensor
from cextend._ops.indexing import inplace_via
from cextend._ops.registry import Const, Sample, register
from cextend.autograd import grad_mode, views
from cextend.autograd.graph import SavedTensor
from cextend.tensor import _wrap as _new_tensor
from cextend._ops.arithmetic import _fill_scalar
from cextend._ops.reduction import reduce_dims
from cextend._promotion import _torch_name as name
from cextend.tensor import _dim as normalize
from cextend._ops.joining import cat


_wrap = _new_tensor     # a Tensor around an array (module-level: no import per call)


def _torch_name(t):
    return name(t._data.dtype)


def _dim(x, dim):
    return normalize(dim, max(x._data.ndim, 1))


def _index_data(index, op, name="index"):
    require_tensor(index, op, name)
    data = index._data
    if data.dtype != np.int64:
        if data.dtype.kind in "iu":
            data = data.astype(np.int64)
        else:
            raise RuntimeError("%s(): Expected dtype int64 for %s" % (op, name))
    return data


class IndexOutOfRange(IndexError, RuntimeError):
    """An index outside a dimension.  torch raises IndexError from some of
    these kernels and RuntimeError from others (even for one op, by its
    path), so this is both: an `except` written for torch catches it."""


def _check_bounds(index, size, dim, op, wraps=False):
    """Refuse an index outside [0, size) -- or [-size, size) where torch
    wraps negative indices (index_fill_); gather, scatter, index_select,
    index_add and index_copy do not."""
    low = -size if wraps else 0
    if index.size and (index.min() < low or index.max() >= size):
        bad = index[(index < low) | (index >= size)].flat[0]
        raise IndexOutOfRange("%s(): index %d is out of bounds for dimension %d with size %d%s"
                              % (op, bad, dim, size, "" if bad >= 0 or wraps else
                                 " (a negative index does not count from the end in %s, as in torch)" % op))


def _coordinates(index, dim):
    """The full coordinate tuple for writing along dim at index's positions."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _check_gather_shapes(x, d, index, op, other=None):
    if index.ndim != max(x._data.ndim, 1) and not (x._data.ndim == 0 and index.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as %s tensor"
                           % ("input" if op == "gather" else "self"))
    for k in range(index.ndim):
        if k != d and x._data.ndim and index.shape[k] > x._data.shape[k]:
            raise RuntimeError("Size does not match at dimension %d expected index %s to be smaller "
                               "than self %s apart from dimension %d"
                               % (k, list(index.shape), list(x._data.shape), d))
        if other is not None and index.shape[k] > other.shape[k]:
            raise RuntimeError("Size does not match at dimension %d expected index %s to be smaller "
                               "than src %s" % (k, list(index.shape), list(other.shape)))


def _refuse_aliased_out(out, dtype, inputs, partial=()):
    """torch's assert_no_overlap(out, input) of the index ops: out may not
    share memory with what they read (an out of another dtype is refused
    for its dtype first)."""
    if out._data.dtype != dtype:
        return
    check_no_overlap(out._data, [t for t in inputs if is_tensor(t)])
    check_no_partial(out._data, [t for t in partial if is_tensor(t)])


# -- gather / scatter ---------------------------------------------------------------

def _gather_backward(node, g, index, self=None):
    zeros = _wrap(np.zeros(node.in_shape, g._data.dtype))
    return scatter_add(zeros, node.dim, index, g), None, None


_GatherNode = rec.node_class("GatherBackward", _gather_backward)


def gather(input, dim, index, *, sparse_grad=False, out=None):
    x = require_tensor(input, "gather")
    d = _dim(x, dim)
    idx = _index_data(index, "gather")
    data = x._data if x._data.ndim else x._data.reshape(1)
    _check_gather_shapes(x, d, idx, "gather")
    if idx.ndim == 0:
        idx = idx.reshape(1)
    _check_bounds(idx, data.shape[d], d, "gather")
    source = data[tuple(slice(0, n) if k != d else slice(None) for k, n in enumerate(idx.shape))]
    result = np.take_along_axis(source, idx, axis=d).reshape(index._data.shape)
    if out is not None:
        _out.check_out(out, "gather", x)
        _refuse_aliased_out(out, result.dtype, (x,), partial=(index,))
        return _out.write_out(out, result, "gather", strict="c_type")
    t = _wrap(result)
    if rec.needs_grad(x):
        node = rec.record(_GatherNode, (x, None, index), t)
        node.dim, node.in_shape = d, x._data.shape
        # torch's gather_backward takes self: it is saved, so changing it in
        # place before backward raises
        node._saved = (SavedTensor(index), rec.save(x))
    return t


def _scatter_core(x, d, index, src, op, reduce=None):
    """A copy of x with src written (or added) at index along dim d."""
    idx = _index_data(index, op)
    if idx.size == 0:
        return x._data.copy()
    src_data = src._data if is_tensor(src) else None
    _check_gather_shapes(x, d, idx, op, src_data if src_data is not None and src_data.ndim else None)
    target = x._data.copy() if x._data.ndim else x._data.reshape(1).copy()
    idx = idx.reshape(1) if idx.ndim == 0 else idx
    _check_bounds(idx, target.shape[d], d, op)
    coords = _coordinates(idx, d)
    if src_data is None:
        values = np.asarray(src, target.dtype)
    else:
        part = src_data if src_data.ndim == 0 else src_data[tuple(slice(0, n) for n in idx.shape)]
        values = np.broadcast_to(part, idx.shape).astype(target.dtype, copy=False)
    if reduce is None:
        target[coords] = values
    elif reduce == "add":
        np.add.at(target, coords, values)
    elif reduce == "multiply":
        np.multiply.at(target, coords, values)
    else:
        raise RuntimeError("reduce argument must be either add or multiply.")
    return target.reshape(x._data.shape)


def _scatter_backward(node, g, index, src_is_tensor):
    grad_self = scatter(g, node.dim, index, 0.0) if node.needs(0) else None
    grad_src = gather(g, node.dim, index) if node.needs(3) else None
    return grad_self, None, None, grad_src


_ScatterNode = rec.node_class("ScatterBackward", _scatter_backward)


def _scatter_add_backward(node, g, index):
    return (g if node.needs(0) else None), None, None, (gather(g, node.dim, index) if node.needs(3) else None)


_ScatterAddNode = rec.node_class("ScatterAddBackward", _scatter_add_backward)


def _scatter_value(src, op):
    if "value" in op:
        return src
    value = operand(src)
    if value is NotImplemented:
        raise TypeError("%s(): argument 'src' must be Tensor or a number" % op)
    return value


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    x = require_tensor(input, "scatter")
    if src is None:
        src = value
    src = _scatter_value(src, "scatter")
    d = _dim(x, dim)
    if is_tensor(src) and src._data.dtype != x._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    data = _scatter_core(x, d, index, src, "scatter", reduce)
    if out is not None:
        _out.check_out(out, "scatter", x, src)
        _refuse_aliased_out(out, data.dtype, (index, src))
        return _out.write_out(out, data, "scatter", strict="c_type")
    t = _wrap(data)
    if reduce is None and rec.needs_grad(x, src):
        node = rec.record(_ScatterNode, (x, None, index, src if is_tensor(src) else None), t)
        node.dim = d
        node._saved = (SavedTensor(index), is_tensor(src))
    elif reduce is not None and rec.needs_grad(x, src):
        raise RuntimeError("scatter(): the backward of reduce=%r is not implemented" % reduce)
    return t


def scatter_add(input, dim, index, src, *, out=None):
    x = require_tensor(input, "scatter_add")
    require_tensor(src, "scatter_add", "src")
    d = _dim(x, dim)
    if src._data.dtype != x._data.dtype:
        raise RuntimeError("scatter_add(): Expected self.dtype to be equal to src.dtype")
    data = _scatter_core(x, d, index, src, "scatter_add", "add")
    if out is not None:
        _out.check_out(out, "scatter_add", x, src)
        _refuse_aliased_out(out, data.dtype, (index, src))
        return _out.write_out(out, data, "scatter_add", strict="c_type")
    t = _wrap(data)
    if rec.needs_grad(x, src):
        node = rec.record(_ScatterAddNode, (x, None, index, src), t)
        node.dim = d
        node._saved = (SavedTensor(index) if node.needs(3) else None,)    # only src's gradient reads it
    return t


def _inplace_via(function, expanded_ok=False):
    """x.op_(...) (rec.inplace_via), refusing index and source tensors that
    share memory with x, as torch's assert_no_overlap."""
    inplace = inplace_via(function, expanded_ok)

    def checked(self, *args, **kwargs):
        check_no_overlap(self._data, [a for a in args + tuple(kwargs.values()) if is_tensor(a)])
        return inplace(self, *args, **kwargs)
    return checked


def _masked_scatter_inplace(self, mask, source):
    # torch reads source as it writes self (in its loop order): from self's
    # own memory the answer is that order's
    check_not_read_while_written(self._data, (source,))
    return _masked_scatter_via_copy(self, mask, source)


def _gather_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), 1, Const([[0, 0, 3], [1, 2, 0], [3, 3, 3]]))
    yield Sample(rng.standard_normal((3, 4)), 0, Const([[2, 1, 0, 0]]))
    yield Sample(rng.standard_normal((2, 3, 2)), -1, Const(np.zeros((2, 3, 1), np.int64)))


def _scatter_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), 1, Const([[0, 2], [1, 3], [3, 0]]), rng.standard_normal((3, 2)))
    yield Sample(rng.standard_normal((3, 4)), 0, Const([[2, 1, 0, 0]]), rng.standard_normal((1, 4)))
    yield Sample(rng.standard_normal((3, 4)), 1, Const([[0], [2], [1]]), 1.5)


def _scatter_add_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), 1, Const([[0, 0], [1, 3], [3, 3]]), rng.standard_normal((3, 2)))
    yield Sample(rng.standard_normal((3, 4)), 0, Const([[2, 2, 0, 0]]), rng.standard_normal((1, 4)))


register("gather", gather, samples=_gather_samples, family="indexing")
register("scatter", scatter, inplace=_inplace_via(scatter), samples=_scatter_samples, family="indexing")
register("scatter_add", scatter_add, inplace=_inplace_via(scatter_add), samples=_scatter_add_samples,
         family="indexing")


# -- index_select / index_add / index_fill / index_copy ------------------------------

def _index_vector(index, op):
    idx = _index_data(index, op)
    if idx.ndim > 1:
        raise IndexError("%s(): Index is supposed to be a vector" % op)
    return idx.reshape(-1)


def _index_select_backward(node, g, index):
    zeros = _wrap(np.zeros(node.in_shape, g._data.dtype))
    return index_add(zeros, node.dim, index, g), None, None


_IndexSelectNode = rec.node_class("IndexSelectBackward", _index_select_backward)


def index_select(input, dim, index, *, out=None):
    x = require_tensor(input, "index_select")
    d = _dim(x, dim)
    idx = _index_vector(index, "index_select")
    data = x._data if x._data.ndim else x._data.reshape(1)
    _check_bounds(idx, data.shape[d], d, "index_select")
    result = np.take(data, idx, axis=d)
    if x._data.ndim == 0:
        result = result.reshape(index._data.shape)
    if out is not None:
        _out.check_out(out, "index_select", x)
        _refuse_aliased_out(out, result.dtype, (x, index))
        return _out.write_out(out, result, "index_select", strict="index_select(): self and result must have the same scalar type")
    t = _wrap(result)
    if rec.needs_grad(x):
        node = rec.record(_IndexSelectNode, (x, None, index), t)
        node.dim, node.in_shape = d, x._data.shape
        node._saved = (SavedTensor(index),)
    return t


def _index_add_backward(node, g, index, source=None):
    grad_source = None
    if node.needs(3):
        grad_source = index_select(g, node.dim, index)
        if node.alpha != 1:
            grad_source = grad_source * node.alpha
        if node.source_shape != grad_source._data.shape:
            grad_source = grad_source.reshape(node.source_shape)
    return (g if node.needs(0) else None), None, None, grad_source


_IndexAddNode = rec.node_class("IndexAddBackward", _index_add_backward)


def _index_write(x, d, idx, source_data, op, mode, layout="C", wraps=False):
    """A copy of x with source written (or added) at positions idx along d;
    layout "preserve": the copy keeps x's dim order (torch's clone)."""
    if layout == "preserve" and x._data.ndim > 1:
        data = empty_like_preserve(x._data)
        data[...] = x._data
    else:
        data = x._data.copy() if x._data.ndim else x._data.reshape(1).copy()
    _check_bounds(idx, data.shape[d], d, op, wraps)
    moved = np.moveaxis(data, d, 0)          # a view: writes land in data
    if np.ndim(source_data):
        shape = list(data.shape)
        shape[d] = idx.size
        values = np.moveaxis(np.asarray(source_data).reshape(shape), d, 0)
    else:
        values = source_data
    if mode == "add":
        np.add.at(moved, idx, values)
    else:
        moved[idx] = values
    return data.reshape(x._data.shape)


def _check_source(x, d, idx, source, op):
    src = source._data
    expected = list(x._data.shape) if x._data.ndim else [1]
    expected[d] = idx.size
    if src.ndim and list(src.shape) != expected and src.size != int(np.prod(expected)):
        raise RuntimeError("%s(): source tensor shape %s must match self shape %s except at dim %d "
                           "(expected %s)" % (op, list(src.shape), list(x._data.shape), d, expected))
    if src.dtype != x._data.dtype:
        raise RuntimeError("%s(): self (%s) and source (%s) must have the same scalar type"
                           % (op, x._data.dtype, src.dtype))


def index_add(input, dim, index, source, *, alpha=1, out=None):
    x = require_tensor(input, "index_add")
    require_tensor(source, "index_add", "source")
    d = _dim(x, dim)
    idx = _index_vector(index, "index_add")
    _check_source(x, d, idx, source, "index_add")
    values = source._data if alpha == 1 else source._data * alpha
    data = _index_write(x, d, idx, values, "index_add", "add")
    if out is not None:
        _out.check_out(out, "index_add", x, source)
        _refuse_aliased_out(out, data.dtype, (index, source))
        return _out.write_out(out, data, "index_add", strict="c_type")
    t = _wrap(data)
    if rec.needs_grad(x, source):
        node = rec.record(_IndexAddNode, (x, None, index, source), t)
        node.dim, node.alpha, node.source_shape = d, alpha, source._data.shape
        # torch saves the index and source (expand_as) only for source's gradient
        node._saved = (SavedTensor(index), SavedTensor(source)) if node.needs(3) else (None, None)
    return t


def _index_copy_backward(node, g, index, source=None):
    grad_self = index_fill(g, node.dim, index, 0.0) if node.needs(0) else None
    grad_source = None
    if node.needs(3):
        grad_source = index_select(g, node.dim, index)
        if node.source_shape != grad_source._data.shape:
            grad_source = grad_source.reshape(node.source_shape)
    return grad_self, None, None, grad_source


_IndexCopyNode = rec.node_class("IndexCopyBackward", _index_copy_backward)


def index_copy(input, dim, index, source, *, out=None):
    x = require_tensor(input, "index_copy")
    require_tensor(source, "index_copy", "source")
    d = _dim(x, dim)
    idx = _index_vector(index, "index_copy")
    _check_source(x, d, idx, source, "index_copy")
    data = _index_write(x, d, idx, source._data, "index_copy", "copy")
    if out is not None:
        _out.check_out(out, "index_copy", x, source)
        _refuse_aliased_out(out, data.dtype, (index, source))
        return _out.write_out(out, data, "index_copy", strict="c_type")
    t = _wrap(data)
    if rec.needs_grad(x, source):
        node = rec.record(_IndexCopyNode, (x, None, index, source), t)
        node.dim, node.source_shape = d, source._data.shape
        # torch's formula reads source (its shape) when source needs a
        # gradient: saved then, so an in-place change to it raises
        node._saved = (SavedTensor(index), SavedTensor(source)) if node.needs(3) else (SavedTensor(index),)
    return t


def _index_fill_backward(node, g, index):
    grad_self = index_fill(g, node.dim, index, 0.0) if node.needs(0) else None
    # torch's formula: index_select, which counts no negative index from the
    # end, so a negative index makes the value's gradient raise, as there
    grad_value = index_select(g, node.dim, index).sum() if node.needs(3) else None
    return grad_self, None, None, grad_value


_IndexFillNode = rec.node_class("IndexFillBackward", _index_fill_backward)


def index_fill(input, dim, index, value):
    x = require_tensor(input, "index_fill")
    d = _dim(x, dim)
    idx = _index_vector(index, "index_fill")
    value = operand(value)
    if is_tensor(value) and value._data.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           "%d dimension(s)." % value._data.ndim)
    fill = _fill_scalar(value._data if is_tensor(value) else value, x._data.dtype)
    data = _index_write(x, d, idx, np.asarray(fill), "index_fill", "copy", layout="preserve", wraps=True)
    t = _wrap(data)
    if rec.needs_grad(x, value):
        node = rec.record(_IndexFillNode, (x, None, index, value if is_tensor(value) else None), t)
        node.dim = d
        node._saved = (SavedTensor(index),)
    return t


def _index_fill_inplace(self, dim, index, value):
    """index_fill_: an integer self with a value requiring grad records
    history as torch does (a later view or op of it then raises)."""
    recorded = (grad_mode.is_grad_enabled() and self._data.dtype.kind != "f" and is_tensor(value)
                and rec.needs_grad(self, value))
    if not recorded:
        return _index_fill_via_copy(self, dim, index, value)
    rec.prepare_inplace(self, (value,), check_overlap=False)
    with grad_mode.no_grad():
        _index_fill_via_copy(self, dim, index, value)
    node = rec.connect(_IndexFillNode(), (self, None, index, value))
    node.dim = _dim(self, dim)
    node._saved = (SavedTensor(index),)
    views.rebase_history(self, node)
    return self


_index_fill_via_copy = inplace_via(index_fill, expanded_ok=True)


def _index_samples(rng, with_source=True, value=False):
    def samples(rng):
        if value:
            yield Sample(rng.standard_normal((3, 4)), 1, Const([0, 2]), -1.5)
            yield Sample(rng.standard_normal((3, 4)), 0, Const([1]), rng.standard_normal(()))
        elif with_source:
            yield Sample(rng.standard_normal((3, 4)), 1, Const([0, 2, 0]), rng.standard_normal((3, 3)))
            yield Sample(rng.standard_normal((3, 4)), 0, Const([2, 1]), rng.standard_normal((2, 4)))
        else:
            yield Sample(rng.standard_normal((3, 4)), 1, Const([0, 2, 0]))
            yield Sample(rng.standard_normal((3, 4)), 0, Const([2]))
            yield Sample(rng.standard_normal((5,)), 0, Const(np.zeros((0,), np.int64)))
    return samples


def _index_copy_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), 1, Const([3, 0]), rng.standard_normal((3, 2)))
    yield Sample(rng.standard_normal((3, 4)), 0, Const([2, 0]), rng.standard_normal((2, 4)))


register("index_select", index_select, samples=_index_samples(None, with_source=False), family="indexing")
register("index_add", index_add, inplace=_inplace_via(index_add), samples=_index_samples(None),
         family="indexing")
register("index_copy", index_copy, inplace=_inplace_via(index_copy), samples=_index_copy_samples,
         family="indexing")
register("index_fill", index_fill, inplace=_index_fill_inplace, samples=_index_samples(None, value=True),
         family="indexing")


# -- masks ---------------------------------------------------------------------------

def _masked_select_backward(node, g, mask, input=None):
    zeros = _wrap(np.zeros(node.out_shape, g._data.dtype))
    full = masked_scatter(zeros, mask.expand(node.out_shape), g)
    return full.sum_to_size(node.in_shape), None


_MaskedSelectNode = rec.node_class("MaskedSelectBackward", _masked_select_backward)


def _check_bool_mask(mask, op):
    require_tensor(mask, op, "mask")
    if mask._data.dtype.kind != "b":
        raise RuntimeError("%s: expected BoolTensor for mask" % op)


def masked_select(input, mask, *, out=None):
    x = require_tensor(input, "masked_select")
    _check_bool_mask(mask, "masked_select")
    shape = np.broadcast_shapes(x._data.shape, mask._data.shape)
    data = np.broadcast_to(x._data, shape)[np.broadcast_to(mask._data, shape)]
    if out is not None:
        _out.check_out(out, "masked_select", x)
        _refuse_aliased_out(out, data.dtype, (x, mask))
        return _out.write_out(out, data, "masked_select", strict="masked_select(): self and result must have the same scalar type")
    t = _wrap(np.array(data))
    if rec.needs_grad(x):
        node = rec.record(_MaskedSelectNode, (x, None), t)
        node.in_shape, node.out_shape = x._data.shape, shape
        # torch's formula reads self (masked_select_backward(grad, self, mask)):
        # saved, so an in-place change to it before backward raises
        node._saved = (SavedTensor(mask), SavedTensor(x))
    return t


def _masked_scatter_backward(node, g, mask):
    grad_self = g.masked_fill(mask, 0) if node.needs(0) else None
    grad_source = None
    if node.needs(2):
        picked = masked_select(g, mask)
        count = picked._data.size
        rest = node.source_numel - count
        flat = cat([picked, picked.new_zeros(rest)]) if rest else picked
        grad_source = flat.reshape(node.source_shape)
    return grad_self, None, grad_source


_MaskedScatterNode = rec.node_class("MaskedScatterBackward", _masked_scatter_backward)


def masked_scatter(input, mask, source):
    x = require_tensor(input, "masked_scatter")
    _check_bool_mask(mask, "masked_scatter")
    require_tensor(source, "masked_scatter", "source")
    if source._data.dtype != x._data.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got%s and %s"
                           % (_torch_name(x), _torch_name(source)))
    m = np.broadcast_to(mask._data, x._data.shape)
    count = int(m.sum())
    if count > source._data.size:
        raise RuntimeError("masked_scatter: expected source to have at least %d elements, got %d"
                           % (count, source._data.size))
    data = x._data.copy()
    data[m] = source._data.reshape(-1)[:count]
    t = _wrap(data)
    if rec.needs_grad(x, source):
        node = rec.record(_MaskedScatterNode, (x, None, source), t)
        node.source_shape, node.source_numel = source._data.shape, source._data.size
        node._saved = (SavedTensor(mask),)
    return t


def _masked_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), Const(rng.random((3, 4)) > 0.5))
    yield Sample(rng.standard_normal((3, 4)), Const(rng.random((4,)) > 0.5))
    yield Sample(rng.standard_normal((4,)), Const(rng.random((2, 4)) > 0.5))


def _masked_scatter_samples(rng):
    yield Sample(rng.standard_normal((3, 4)), Const(rng.random((3, 4)) > 0.5), rng.standard_normal((12,)))
    yield Sample(rng.standard_normal((3, 4)), Const(rng.random((4,)) > 0.5), rng.standard_normal((4, 4)))


register("masked_select", masked_select, samples=_masked_samples, family="indexing")
_masked_scatter_via_copy = inplace_via(masked_scatter)
register("masked_scatter", masked_scatter, inplace=_masked_scatter_inplace,
         samples=_masked_scatter_samples, family="indexing")


def nonzero(input, *, out=None, as_tuple=False):
    x = require_tensor(input, "nonzero")
    data = x._data
    if as_tuple:
        if data.ndim == 0:
            return (_wrap(np.zeros(int(bool(data)), np.int64)),)
        return tuple(_wrap(i.astype(np.int64)) for i in np.nonzero(data))
    coords = np.argwhere(data).astype(np.int64) if data.ndim else \
        np.zeros((int(bool(data)), 0), np.int64)
    if out is None:
        return _wrap(coords)
    _out.check_out(out, "nonzero", differentiable=False)
    if out._data.dtype != np.int64:
        raise RuntimeError("nonzero: Expected out tensor to have scalar type Long but got scalar type%s"
                           % name(out._data.dtype))
    return _out.write_out(out, coords, "nonzero")


def argwhere(input):
    return nonzero(input)


def count_nonzero(input, dim=None):
    x = require_tensor(input, "count_nonzero")
    dims = reduce_dims(x, dim)
    return _wrap(np.asarray(np.count_nonzero(x._data, axis=dims), np.int64, order="C"))     # contiguous, as torch's


def _nonzero_samples(rng):
    yield Sample(rng.standard_normal((3, 4)) > 0)
    yield Sample(np.array(2.0))


register("nonzero", nonzero, gradcheck=False, samples=_nonzero_samples, family="indexing", integer_inputs=True)
register("argwhere", argwhere, gradcheck=False, samples=_nonzero_samples, family="indexing", integer_inputs=True)
register("count_nonzero", count_nonzero, gradcheck=False, family="indexing", integer_inputs=True,
         samples=lambda rng: iter([Sample(np.round(rng.standard_normal((3, 4)))),
                                   Sample(np.round(rng.standard_normal((3, 4))), 1)]))


def _take_backward(node, g, index, self=None):
    zeros = _wrap(np.zeros(node.in_shape, g._data.dtype))
    return _put(zeros, index, g, True), None


_TakeNode = rec.node_class("TakeBackward", _take_backward)


def take(input, index, *, out=None):
    x = require_tensor(input, "take")
    idx = _index_data(index, "take")
    flat = x._data.reshape(-1)
    if idx.size and (idx.min() < -flat.size or idx.max() >= flat.size):
        bad = idx[(idx < -flat.size) | (idx >= flat.size)].flat[0]
        raise IndexError("out of range: tried to access index %d on a tensor of %d elements."
                         % (bad, flat.size))
    t = _wrap(np.array(flat[idx]))
    if out is not None:
        _out.check_out(out, "take", x)
        _refuse_aliased_out(out, t._data.dtype, (x, index))
        return _out.write_out(out, t._data, "take", strict="take(): self and out expected to have the same "
                             "dtype, but got self.dtype = %(result)s and out.dtype = %(out)s")
    if rec.needs_grad(x):
        node = rec.record(_TakeNode, (x, None), t)
        node.in_shape = x._data.shape
        # torch's take_backward takes self: saved, so an in-place change of
        # it before backward raises
        node._saved = (SavedTensor(index), rec.save(x))
    return t


def _put_backward(node, g, index, source=None):
    grad_self = (g if node.accumulate else _put(g, index, g.new_zeros(index.shape), False)) \
        if node.needs(0) else None
    grad_source = take(g, index).reshape(node.source_shape) if node.needs(2) else None
    return grad_self, None, grad_source


_PutNode = rec.node_class("PutBackward", _put_backward)


def _put(x, index, source, accumulate):
    idx = _index_data(index, "put")
    if source._data.dtype != x._data.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got self.dtype = %s "
                           "and source.dtype = %s" % (_torch_name(x), _torch_name(source)))
    data = np.asarray(x._data, order="C")     # written through its flat (C order) view
    if data is x._data:
        data = data.copy()
    flat = data.reshape(-1)
    if idx.size and (idx.min() < -flat.size or idx.max() >= flat.size):
        raise IndexError("out of range: tried to access index %d on a tensor of %d elements."
                         % (idx.max(), flat.size))
    values = source._data.reshape(-1).astype(data.dtype, copy=False)
    if accumulate:
        np.add.at(flat, idx.reshape(-1), values)
    else:
        flat[idx.reshape(-1)] = values
    t = _wrap(_as_laid_out(data, x._data))
    if rec.needs_grad(x, source):
        node = rec.record(_PutNode, (x, None, source), t)
        node.accumulate, node.source_shape = accumulate, source._data.shape
        # torch saves source for its own gradient (reshape_as): changing it in
        # place before backward then raises
        node._saved = (SavedTensor(index), SavedTensor(source) if node.needs(2) else None)
    return t


def _as_laid_out(data, like):
    """data in a fresh array laid out as torch's clone of `like`."""
    if like.ndim < 2 or data.strides == like.strides:
        return data
    out = empty_like_preserve(like)
    out[...] = data
    return out


def put(input, index, source, accumulate=False):
    return _put(require_tensor(input, "put"), index, require_tensor(source, "put", "source"), accumulate)


register("take", take, family="indexing",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), Const([[0, 5], [11, 5]])),
                                   Sample(rng.standard_normal((5,)), Const([-1, 2]))]))
register("put", put, inplace=_inplace_via(put), family="indexing",
         samples=lambda rng: iter([Sample(rng.standard_normal((3, 4)), Const([0, 5]), rng.standard_normal((2,))),
                                   Sample(rng.standard_normal((3, 4)), Const([1, 1]), rng.standard_normal((2,)),
                                          True)]))
