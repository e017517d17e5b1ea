"""Indexing: x[key], x[key] = v, copy_/fill_, gather/scatter, index_*.

Basic keys (ints, slices, None, Ellipsis) give views, so `x[0].fill_(5)`
changes x, and `x[key] = v` is `x[key].copy_(v)`: an in-place op on a view,
which rewrites x's history (CopySlices) when v requires grad.  Advanced
keys (integer or boolean tensors, lists) copy; the index tensors are saved
with their version, so changing one before backward raises instead of
routing the gradient to the wrong elements.
"""
import numbers

import numpy as np

from cextend import _sizes as _limits
from cextend._overlap import check_no_overlap, check_no_partial, same_layout
from cextend._scalars import checked_scalar
from cextend._device import DeviceArray
from cextend._ops import _advanced_index as _advanced
from cextend.autograd import record as rec
from cextend._ops._layout import none_index_strides, restrided
from cextend._ops._operands import as_array, is_tensor, operand
from cextend._ops.registry import method
from cextend._ops.shape import _SelectNode, _SliceNode, _slice_view
from cextend.autograd.graph import SavedTensor
from cextend.tensor import _wrap
from cextend._promotion import _torch_name

_BASIC = (int, slice, type(None), type(Ellipsis))


def _parts(key):
    parts = key if type(key) is tuple else (key,)
    if any(is_tensor(p) and getattr(p._data, "ndim", 1) == 0 for p in parts):
        parts = tuple(_scalar_index(p) for p in parts)
    return parts


def _scalar_index(p):
    """torch reads a 0-d integer or bool tensor index as a number (item()):
    x[torch.tensor(1)] selects (a view), x[torch.tensor(True)] adds a dim;
    nothing of the tensor is kept for backward."""
    if not is_tensor(p) or getattr(p._data, "ndim", 1) != 0 or p._data.dtype.kind not in "iub":
        return p
    value = p._data.item()
    return bool(value) if p._data.dtype.kind == "b" else int(value)


def _is_basic(parts):
    for p in parts:
        if type(p) not in _BASIC and not (isinstance(p, numbers.Integral) and not isinstance(p, (bool, np.bool_))):
            return False
    return True


def _selects_everything(parts, shape):
    """A key of full slices and at most one Ellipsis: torch's indexing skips
    such slices (applySlice returns self), so x[:] = v writes into x itself."""
    explicit = [p for p in parts if p is not Ellipsis]
    if len(parts) - len(explicit) > 1 or len(explicit) > len(shape):
        return False
    if Ellipsis in parts:
        before = parts.index(Ellipsis)
        sizes = shape[:before] + shape[len(shape) - (len(explicit) - before):]
    else:
        sizes = shape[:len(explicit)]
    return all(type(p) is slice and p.step in (None, 1) and p.start in (None, 0)
               and (p.stop is None or (isinstance(p.stop, numbers.Integral) and p.stop >= size))
               for p, size in zip(explicit, sizes))


def _basic_key(parts, ndim):
    """A numpy key that returns a view even when every dim is indexed by an int."""
    parts = tuple(int(p) if isinstance(p, numbers.Integral) and type(p) is not int else p for p in parts)
    if Ellipsis not in parts:
        parts = parts + (Ellipsis,)
    return parts


def _index_array(p, what="index"):
    """An advanced index part as a numpy array (and the Tensor it came from)."""
    if is_tensor(p):
        data = p._data
        if type(data) is DeviceArray:
            raise TypeError("indexing with a cuda tensor is not supported; move it with .cpu()")
        if data.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if data.dtype == np.uint8:
            data = data.astype(bool)
        return data, p
    if isinstance(p, (list, tuple)):
        array = np.asarray(p)
        if array.dtype.kind not in "iub" and array.size:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return array.astype(np.int64) if array.dtype.kind != "b" and array.size else \
            (array if array.size else array.astype(np.int64)), None
    if isinstance(p, np.ndarray):
        return p, None
    if isinstance(p, (bool, np.bool_)):
        return np.asarray(bool(p)), None
    return p, None


def _advanced_key(parts):
    key = []
    sources = []
    for p in parts:
        array, source = _index_array(p)
        key.append(array)
        if source is not None:
            sources.append(source)
    return tuple(key), sources


def _legacy_scalar_index(x, parts):
    """torch 0.4's `loss.data[0]` on a 0-d tensor: the tensor itself, with its
    warning (torch 2 raises IndexError; a documented deviation, see README)."""
    if x._data.ndim == 0 and len(parts) == 1 and type(parts[0]) is int and parts[0] == 0:
        import warnings
        warnings.warn("invalid index of a 0-dim tensor. This will be an error in PyTorch 0.5. Use "
                      "tensor.item() to convert a 0-dim tensor to a Python number", UserWarning,
                      stacklevel=3)
        return True
    return False


def _check_key(x, parts):
    if type(x._data) is DeviceArray:
        raise TypeError("indexing is not supported on cuda tensors; move the tensor with .cpu() first")
    if x._data.ndim == 0:
        for p in parts:
            if isinstance(p, numbers.Integral) and not isinstance(p, (bool, np.bool_)) or isinstance(p, slice):
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


def _check_steps(x, parts):
    """A negative step is refused, after what torch checks first: too many
    indices, and each integer to its left against its dim (torch numbers
    the dim by the index's position)."""
    shape = x._data.shape
    basic = len(shape) > 0 and all(p is None or p is Ellipsis or type(p) is slice or _is_int(p) for p in parts)
    if basic and sum(p is not None and p is not Ellipsis for p in parts) > len(shape):
        raise IndexError("too many indices for tensor of dimension %d" % len(shape))
    dim, bounded = 0, basic
    for position, p in enumerate(parts):
        if p is Ellipsis:
            bounded = False         # where the parts after it land is the ellipsis's business
        elif type(p) is slice:
            if p.step is not None and p.step < 0:
                raise ValueError("step must be greater than zero")
            dim += 1
        elif p is not None:
            if bounded and _is_int(p) and dim < len(shape) and not -shape[dim] <= p < shape[dim]:
                _limits.int64(p, "index")       # torch: ValueError outside int64
                raise IndexError("index %d is out of bounds for dimension %d with size %d" % (p, position, shape[dim]))
            dim += 1


_PLAIN_BOUNDS = (int, type(None))


def _is_int(p):
    return isinstance(p, numbers.Integral) and not isinstance(p, (bool, np.bool_))


def getitem(self, key):
    if type(key) is slice and key.step is None and type(key.start) in _PLAIN_BOUNDS \
            and type(key.stop) in _PLAIN_BOUNDS and self._data.ndim:
        # x[a:b], a batch of a dataset: nothing for the general checks to refuse
        return _slice_view(self, self._data[key], lambda t: t[key], _SliceNode)
    parts = _parts(key)
    _check_steps(self, parts)
    if _legacy_scalar_index(self, parts):
        return _slice_view(self, self._data.view(), lambda t: t.view_as(t), _SliceNode)
    _check_key(self, parts)
    if _is_basic(parts):
        np_key = _basic_key(parts, self._data.ndim)
        try:
            data = self._data[np_key]
        except IndexError as error:
            raise IndexError(str(error).replace("axis", "dimension")) from None
        if None in parts:
            data = restrided(data, none_index_strides(self._data, parts, data))
        node = _SelectNode if any(isinstance(p, int) for p in parts) else _SliceNode
        return _slice_view(self, data, lambda t: t[np_key], node)
    np_key, sources = _advanced_key(parts)
    try:
        data = self._data[np_key]
    except IndexError as error:
        raise IndexError(str(error).replace("axis", "dimension")) from None
    moved = _advanced.placement(parts, np_key, self._data.ndim, data.ndim)
    if moved is not None:
        data = moved.to_torch(data)
    data = _advanced.torch_layout(self._data, parts, np_key, data)
    if np.may_share_memory(data, self._data):
        data = data.copy()
    out = _wrap(data)
    if rec.needs_grad(self):
        node = rec.record(_IndexNode, (self,), out)
        node._saved = tuple(SavedTensor(s) for s in sources)
        if not node._saved:
            # torch turns list indices into tensors and saves them: freed
            # after a backward, so a second one raises as it does
            node._saved = (None,)
            node._keeps_wrapped_number = True
        node.key = np_key
        node.placement = moved
        node.in_shape = self._data.shape
    return out


def _index_backward(node, g, *index_tensors):
    return index_put_zeros(g, node.key, node.in_shape, node.placement)


_IndexNode = rec.node_class("IndexBackward", _index_backward)


def _accumulate_backward(node, gg):
    return gg[node.key] if len(node.key) != 1 else _take(gg, node.key)


def _take(t, key):
    return getitem(t, key if type(key) is tuple and len(key) > 1 else (key[0] if type(key) is tuple else key))


_IndexPutZerosNode = rec.node_class("IndexPutBackward", _accumulate_backward)


def index_put_zeros(g, key, shape, placement=None):
    """zeros(shape) with g added at key, repeated indices accumulating (the
    backward of advanced indexing; its own backward is indexing again).
    placement: where g's indexed dims are, if not where numpy puts them."""
    out = np.zeros(shape, g._data.dtype)
    np.add.at(out, key, g._data if placement is None else placement.to_numpy(g._data))
    result = _wrap(out)
    if rec.needs_grad(g):
        node = rec.record(_IndexPutZerosNode, (g,), result)
        node.key = key
    return result


method("__getitem__", getitem)


# -- writing ----------------------------------------------------------------------------

def _copy_backward(node, g):
    # standing for x.op_() (rec.inplace_via), the old x gets its gradient
    # through op's node alone, as from torch's one node: no zeros added in
    # (0 + -0.0 would lose the sign torch's gradient keeps)
    overwritten = rec.zeros_grad(g) if node.needs(0) and node._fused is None else None
    return overwritten, (g if node.needs(1) else None)


_CopyNode = rec.node_class("CopyBackwards", _copy_backward)
_CopyNode.name = lambda node: "torch::autograd::CopyBackwards"     # hand-written in torch: qualified


def copy_(self, src, non_blocking=False):
    """Copy src's values into self (broadcast, cast to self's dtype)."""
    return copy_into(self, src)


def copy_into(self, src, expanded_ok=False, node_cls=_CopyNode):
    """copy_, where expanded_ok lets an op that torch runs on an expanded
    self (index_fill_ and the like) write through it; node_cls: the copy's
    node, when it stands for an in-place op's (rec.inplace_via)."""
    src = operand(src)
    if not is_tensor(src):
        raise TypeError("copy_(): argument 'src' must be Tensor, not %s" % type(src).__name__)
    try:
        shape = np.broadcast_shapes(src._data.shape, self._data.shape)
    except ValueError:
        shape = None
    if shape != self._data.shape:
        raise RuntimeError("The size of tensor a (%s) must match the size of tensor b (%s) at "
                           "non-singleton dimension" % (list(self._data.shape), list(src._data.shape)))
    # torch skips a copy onto the very same elements (x.copy_(x), even expanded)
    same = _same_elements(self._data, src._data)
    # torch: copying into an integer tensor records nothing (no gradient
    # can flow through an integer), so it makes no view checks either;
    # every other in-place op would (fill_ of an int64 view records).
    differentiable = self._data.dtype.kind in "fV"      # V: bfloat16
    if expanded_ok and not same:
        recording = rec.prepare_inplace(self, (src,), check_overlap=False, differentiable=differentiable)
        check_no_partial(self._data, (src,))
    else:
        recording = rec.prepare_inplace(self, (src,), check_overlap=not same, differentiable=differentiable)
    node = rec.connect(node_cls(), (self, src)) if recording else None
    source = src._data
    if expanded_ok and 0 in self._data.strides:
        _write_changed(self._data, source)
    else:
        np.copyto(self._data, source, casting="unsafe")
    return rec.finish_inplace(self, node)


def inplace_via(function, expanded_ok=False):
    """x.op_(...) as x.copy_(op(x, ...)): one recorded in-place copy, so
    views, versions and history behave as for every other in-place op.
    The op reads a copy of x when it records history: what it saves must not
    be the tensor the copy_ overwrites (torch saves original_self alike)."""
    def inplace(self, *args, **kwargs):
        source = self.clone() if rec.needs_grad(self) else self
        result = function(source, *args, **kwargs)
        if result._data.shape != self._data.shape:
            raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                               % (list(self._data.shape), list(result._data.shape)))
        op_node = result._grad_fn
        # torch's one node for x.op_() is op's (LogitBackward0): the copy is
        # recorded under that name, and reads and frees op's node with its own
        node_cls = _CopyNode if op_node is None else rec.renamed(_CopyNode, type(op_node).__name__)
        done = copy_into(self, result, expanded_ok=expanded_ok, node_cls=node_cls)
        node = self._grad_fn
        if op_node is not None and node is not None:
            copy_node = getattr(node, "fn", node)       # a view's copy sits inside its CopySlices
            if type(copy_node) is node_cls:
                copy_node._fused = op_node
        return done
    return inplace


def _write_changed(target, source):
    """Write only the elements whose bits change: through an expanded
    target this is what torch's in-place kernel leaves (index_fill_ of one
    row writes every row that shares its memory), where a whole copy would
    let the last row written win."""
    source = np.broadcast_to(np.asarray(source, target.dtype), target.shape)
    bits = np.dtype("u%d" % target.dtype.itemsize) if target.dtype.itemsize in (1, 2, 4, 8) else None
    if bits is None or target.dtype.kind == "b":
        changed = target != source
    else:
        changed = target.view(bits) != np.ascontiguousarray(source).view(bits)
    np.copyto(target, source, where=changed)


def _same_elements(a, b):
    if a is b:
        return True
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype and same_layout(a, b)
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


method("copy_", copy_)


def _fill_backward(node, g):
    return (rec.zeros_grad(g) if node.needs(0) else None), (g.sum() if node.needs(1) else None)


_FillNode = rec.node_class("FillBackward", _fill_backward)


def fill_(self, value):
    value = operand(value)
    if value is NotImplemented:
        raise TypeError("fill_(): argument 'value' must be a number or a 0-dim Tensor")
    if is_tensor(value) and value._data.ndim != 0:
        raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with %d "
                           "dimensions." % value._data.ndim)
    # torch's fill_ of a number writes through an expanded tensor; its
    # fill_ of a tensor refuses one
    if is_tensor(value):
        rec.check_writable(self)
    recording = rec.prepare_inplace(self, (value,), check_overlap=False)
    node = rec.connect(_FillNode(), (self, value)) if recording else None
    fill = value._data if is_tensor(value) else checked_scalar(value, self._data.dtype)
    self._data[...] = fill
    return rec.finish_inplace(self, node)


method("fill_", fill_)
method("zero_", lambda self: fill_(self, 0))


def _copy_to(target, value):
    """torch's copy_to: a value of the target's shape is copied as is (so
    x[...] = x is a copy onto the same elements); a 0-d value fills (read
    once: it may lie inside the target); another shape loses its leading
    ones first."""
    if value._data.shape == target._data.shape:
        copy_(target, value)
    elif value._data.ndim == 0 and type(value._data) is np.ndarray:
        fill_(target, value)
    else:
        value = _without_leading_ones(value)
        # (a value left 0-d expands with stride 0: the very same elements as an
        # expanded target, but not as a target of size-1 dims, whose strides
        # torch compares too)
        if type(value._data) is np.ndarray and (value._data.ndim or any(n > 1 for n in target._data.shape)):
            try:        # torch's expand_inplace: the overlap check sees the expanded value
                value = value.expand(target._data.shape)
            except RuntimeError:
                pass    # copy_ names the mismatch
        copy_(target, value)


def _fill_with_tensor(target, number):
    """torch's setitem makes a number a 0-d tensor and fills with it: unlike
    fill_(number), that refuses an expanded target."""
    rec.check_writable(target)
    fill_(target, number)


def setitem(self, key, value):
    """self[key] = value: a copy into a view for basic keys, index_put_ otherwise."""
    value = operand(value)
    if value is NotImplemented:
        raise TypeError("can't assign a %s to a Tensor" % type(value).__name__)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")   # torch's argument parser
    checked = None if is_tensor(value) else checked_scalar(value, self._data.dtype)   # inf into int raises
    parts = _parts(key)
    if type(self._data) is DeviceArray and parts in ((Ellipsis,), (slice(None),)):
        fill_(self, value) if not is_tensor(value) else copy_(self, value)
        return
    _check_key(self, parts)
    if _selects_everything(parts, self._data.shape):
        if is_tensor(value):
            _copy_to(self, value)
        else:
            _fill_with_tensor(self, value)
        return
    if _is_basic(parts):
        region = getitem(self, key)
        if is_tensor(value):
            _copy_to(region, value)
        else:
            _fill_with_tensor(region, value)
        return
    if is_tensor(value):
        value = _without_leading_ones(value)
    np_key, sources = _advanced_key(parts)
    if len(np_key) == 1 and getattr(np_key[0], "dtype", None) == np.bool_ and \
            (not is_tensor(value) or value._data.ndim == 0):
        # torch: one boolean mask and a single value is masked_fill_ (which casts)
        mask = np_key[0]
        # a mask indexes the leading dims: line it up with them
        mask = _wrap_index(mask.reshape(mask.shape + (1,) * (self._data.ndim - mask.ndim)))
        if len(parts) == 1 and is_tensor(parts[0]):
            # the saved mask is the caller's tensor: changing it later must raise at backward
            mask._version_counter = parts[0]._version_counter
        self.masked_fill_(mask, value)
        return
    arrange = None
    if is_tensor(value) and value._data.ndim:
        result_shape = np.broadcast_to(np.zeros((), bool), self._data.shape)[np_key].shape
        moved = _advanced.placement(parts, np_key, self._data.ndim, len(result_shape))
        if moved is not None:
            # value lines up with torch's x[key]: numpy's wants its dims moved
            torch_shape = moved.to_torch(np.empty(result_shape, bool)).shape
            arrange = lambda raw: moved.to_numpy(_broadcast_value(raw, torch_shape))
    index_put_(self, np_key, value if checked is None else _wrap(np.asarray(checked)), sources=sources,
               arrange=arrange)


def _broadcast_value(raw, shape):
    try:
        return np.broadcast_to(raw, shape)
    except ValueError:
        raise RuntimeError("shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of "
                           "shape %s" % (list(np.shape(raw)), list(shape))) from None


def _wrap_index(array):
    return _wrap(np.asarray(array))


def _without_leading_ones(value):
    """torch drops a source's leading size-1 dims before assigning it
    (x0d[...] = t of shape (1,) works); a differentiable reshape."""
    shape = value._data.shape
    first = 0
    while first < len(shape) and shape[first] == 1:
        first += 1
    return value.reshape(shape[first:]) if first else value


method("__setitem__", setitem)


def _index_put_backward(node, g, *index_tensors):
    key = node.key
    grad_self = grad_value = None
    if node.needs(0) and node.accumulate:
        grad_self = g
    elif node.needs(0):
        keep = np.ones(g._data.shape, bool)
        keep[key] = False
        grad_self = g.masked_fill(_wrap(~keep), 0.0)    # exact zeros, even where g is NaN
    if node.needs(1):
        grad_value = getitem(g, key)
    return grad_self, grad_value


_IndexPutNode = rec.node_class("IndexPutBackward", _index_put_backward)


def index_put_(self, indices, values, accumulate=False, sources=None, arrange=None):
    """self[indices] = values (or += with accumulate), indices a tuple of index tensors.
    (setitem passes numpy's key, the index tensors in sources, and arrange:
    what lines the value up with numpy's order of the indexed dims.)"""
    if sources is None:
        np_key, sources = _advanced_key(tuple(indices))
    else:
        np_key = indices
    value = operand(values)
    if is_tensor(value):
        if value._data.dtype != self._data.dtype:
            raise RuntimeError("Index put requires the source and destination dtypes match, got %s for the "
                               "destination and %s for the source." % (_torch_name(self._data.dtype),
                                                                      _torch_name(value._data.dtype)))
        check_no_overlap(self._data, (value,))
    # index_put does not refuse an expanded target (torch checks only the source)
    recording = rec.prepare_inplace(self, (value,), check_overlap=False)
    node = rec.connect(_IndexPutNode(), (self, value)) if recording else None
    raw = as_array(value, self._data.dtype)
    if arrange is not None:
        raw = arrange(raw)
    try:
        if accumulate:
            np.add.at(self._data, np_key, raw)
        else:
            self._data[np_key] = raw
    except IndexError as error:
        raise IndexError(str(error).replace("axis", "dimension")) from None
    except ValueError as error:
        raise RuntimeError("shape mismatch: value tensor of shape %s cannot be broadcast to indexing "
                           "result (%s)" % (list(np.shape(raw)), error)) from None
    rec.finish_inplace(self, node)
    if node is not None:
        node.key = np_key
        node._saved = tuple(SavedTensor(s) for s in sources)
        if not node._saved:     # list indices: torch saves them as tensors (freed by a backward)
            node._saved = (None,)
            node._keeps_wrapped_number = True
        node.accumulate = accumulate
    return self


method("index_put_", index_put_)


def index_put(input, indices, values, accumulate=False):
    """index_put_ on a clone (torch's: the clone keeps input's layout)."""
    return index_put_(input.clone(), indices, values, accumulate)


method("index_put", index_put)
