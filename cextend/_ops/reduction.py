"""Reductions: sum, mean, max/min (all, along a dim, elementwise), amax,
argmax, all/any.  Backward spreads the gradient back over the reduced
dims (expand), which is itself differentiable.  max/min with a dim return
torch's named tuples (.values, .indices)."""
import collections
import functools

import numpy as np

from cextend import _backend, _capture, _dtype
from cextend._fpe import quietly
from cextend._device import DeviceArray, empty_like
from cextend.autograd import record as rec
from cextend._ops import _out
from cextend._ops import samples as S
from cextend._ops._layout import c_strides, restrided
from cextend._ops._operands import is_tensor, require_tensor
from cextend._ops.arithmetic import maximum, minimum, where
from cextend._ops.registry import register
from cextend.autograd.grad_mode import is_grad_enabled
from cextend.tensor import _wrap
from cextend._promotion import _torch_name as name
from cextend.tensor import _dim



def _structseq_repr(self):
    # torch.return_types.max(\nvalues=...,\nindices=...)
    return "cextend.return_types.%s(\n%s)" % (type(self).__name__, ",\n".join(
        "%s=%r" % (field, value) for field, value in zip(self._fields, self)))


def _named(name, fields=("values", "indices")):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "cextend.return_types"
    cls.__repr__ = _structseq_repr
    return cls


return_types = {name: _named(name) for name in ("max", "min", "sort", "topk", "kthvalue", "median",
                                                 "nanmedian", "mode", "cummax", "cummin", "aminmax")}
return_types["aminmax"] = _named("aminmax", ("min", "max"))
# what torch returns when out= is given: the out tensors, in a "*_out" tuple
return_types.update({name + "_out": _named(name + "_out", return_types[name]._fields)
                     for name in list(return_types)})


def reduce_dims(x, dim, op="sum"):
    """Reduced dims as a sorted tuple: None and () mean all (torch 2.x)."""
    n = x._data.ndim
    if dim is None:
        return tuple(range(n))
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:
        return tuple(range(n))
    normalized = [_dim(d, n) for d in dims]
    if n == 0:
        return ()       # dim 0 or -1 of a 0-d tensor: nothing to reduce (as torch)
    if len(set(normalized)) != len(normalized):
        repeated = next(d for d in normalized if normalized.count(d) > 1)
        raise RuntimeError("dim %d appears multiple times in the list of dims" % repeated)
    return tuple(sorted(normalized))


def _keepdim_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def spread(g, in_shape, dims, keepdim):
    """g broadcast back over the reduced dims, differentiably when a graph is
    being recorded; else filled into a fresh contiguous array (cheaper, and
    what the C kernels downstream like)."""
    keep = _keepdim_shape(in_shape, dims)
    data = g._data
    if type(data) is np.ndarray and not (is_grad_enabled() and g.requires_grad):
        out = np.empty(in_shape, data.dtype)        # the common case, without a reshape op's checks
        out[...] = data.reshape(keep) if data.shape != keep else data
        if _capture._active is not None:
            _capture.copy(out, data.reshape(keep))
        return _wrap(out)
    if not keepdim and data.shape != keep:
        g = g.reshape(keep)
    if is_grad_enabled() and g.requires_grad:
        return g.expand(in_shape)
    out = empty_like(in_shape, g._data.dtype, like=g._data)
    out[...] = g._data.reshape(keep) if g._data.shape != keep else g._data
    return _wrap(out)


# -- sum and mean -------------------------------------------------------------------------

def _sum_backward(node, g):
    return spread(g, node.in_shape, node.dims, node.keepdim)


def _mean_backward(node, g):
    return spread(g, node.in_shape, node.dims, node.keepdim) / node.count


_SumNode = rec.node_class("SumBackward", _sum_backward)
_MeanNode = rec.node_class("MeanBackward", _mean_backward)
_SumDimNode = rec.overload(_SumNode, 1)        # torch's sum.dim_IntList: sum(dim)
_MeanDimNode = rec.overload(_MeanNode, 1)


def _reduction_dtype(x, dtype, op):
    if dtype is not None:
        return _dtype.as_dtype(dtype).numpy
    kind = x._data.dtype.kind
    return np.dtype(np.int64) if kind in "iub" else x._data.dtype


def out_reduction_dtype(out, dtype, name):
    """With out=, torch reduces in out's dtype (the input cast to it first);
    dtype=, when given, must name out's."""
    _out.check_out(out, name, differentiable=False)
    wanted = out._data.dtype
    if dtype is not None and _dtype.as_dtype(dtype).numpy != wanted:
        raise RuntimeError("Expected out tensor to have dtype %s, but got %s instead"
                           % (_out.c_type_name(_dtype.as_dtype(dtype).numpy), _out.c_type_name(wanted)))
    return wanted


def _record_reduce(node_cls, x, out, dims, keepdim, **attrs):
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), out)
        node.in_shape = x._data.shape
        node.dims = dims
        node.keepdim = keepdim
        for k, v in attrs.items():
            setattr(node, k, v)
    return out


_ALL_DIMS = [()] + [tuple(range(n)) for n in range(1, 9)]     # reduce_dims(x, None) for small ndim


def reduce_sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    data = getattr(input, "_data", None)
    if dim is None and dtype is None and out is None and type(data) is np.ndarray and data.dtype.kind == "f" \
            and data.ndim < 9:
        # A float tensor's total (a loss, say): the general path's sum without its checks,
        # numpy's bits from one C call where the data is contiguous.
        dims = _ALL_DIMS[data.ndim]
        result = _backend.total_sum(data)
        if result is None:
            result = np.asarray(quietly(_sum_in, data, dims, False), data.dtype)
        if _capture._active is not None:
            _capture.computed(functools.partial(_sum_in, dims=dims, keepdim=False), (data,), result)
        return _record_reduce(_SumNode, input, _wrap(result), dims, False)
    x = require_tensor(input, "sum")
    dims = reduce_dims(x, dim)
    if out is not None and dim is None:
        _out.no_out(out, "sum")
    rt = _reduction_dtype(x, dtype, "sum") if out is None else out_reduction_dtype(out, dtype, "sum")
    data = x._data if x._data.dtype == rt else x._data.astype(rt)
    result = quietly(lambda: _sum_in(data, dims, keepdim))     # inf + -inf is NaN, silently
    result = _array(result, rt)
    if out is not None:
        _out.check_out(out, "sum", x)
        return _out.write_out(out, result, "sum", reads=(x,))
    result = _contiguous(result)
    if _capture._active is not None:
        _capture.computed(functools.partial(_sum_in, dims=dims, keepdim=keepdim), (data,), result)
    return _record_reduce(_SumNode if dim is None else _SumDimNode, x, _wrap(result), dims, keepdim)


def _sum_in(data, dims, keepdim):
    """A sum in data's own dtype: a bool sum (out= a bool tensor) is any()."""
    if data.dtype == np.bool_:
        return data.any(axis=dims, keepdims=keepdim)
    return data.sum(axis=dims, keepdims=keepdim)


def _contiguous(value):
    """A reduction's result, C-contiguous as torch allocates it
    (resize_reduction), whatever the input's layout; 0-d stays 0-d."""
    if type(value) is not np.ndarray:
        return value
    value = np.asarray(value, order="C")
    if value.ndim > 1 and 1 in value.shape:      # numpy's keepdims leaves other strides on size-1 dims
        value = restrided(value, c_strides(value.shape, value.itemsize))
    return value


def _array(value, dtype):
    if type(value) is np.ndarray or type(value) is DeviceArray:
        return value
    return np.asarray(value, dtype)


def reduce_mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    x = require_tensor(input, "mean")
    rt = _dtype.as_dtype(dtype).numpy if dtype is not None else x._data.dtype
    if rt.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. %s dtype must be either a floating "
                           "point or complex dtype. Got: %s" % (
                               "Optional" if dtype is not None else "Input", _torch_name(rt)))
    dims = reduce_dims(x, dim)
    data = x._data if x._data.dtype == rt else x._data.astype(rt)
    data = _dtype.in_opmath(data)           # float16 sums in float32, as torch's
    count = 1
    for d in dims:
        count *= data.shape[d]
    # sum / count (numpy's mean warns "Mean of empty slice"; torch gives NaN silently)
    mean = functools.partial(_mean_in, dims=dims, keepdim=keepdim, count=count, dtype=rt)
    result = _array(quietly(mean, data), rt)
    if out is not None:
        _out.check_out(out, "mean", x)
        return _out.write_out(out, result, "mean", reads=(x,))
    result = _contiguous(result)
    if _capture._active is not None:
        _capture.computed(mean, (data,), result)
    return _record_reduce(_MeanNode if dim is None else _MeanDimNode, x, _wrap(result), dims,
                          keepdim, count=count)


def _mean_in(data, dims, keepdim, count, dtype):
    return np.true_divide(data.sum(axis=dims, keepdims=keepdim), count).astype(dtype, copy=False)


def _torch_name(dt):
    return name(dt)


def _nansum_backward(node, g, x):
    return spread(g, node.in_shape, node.dims, node.keepdim) * (x == x)


_NansumNode = rec.node_class("NansumBackward", _nansum_backward)


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """sum, counting NaN as zero."""
    x = require_tensor(input, "nansum")
    dims = reduce_dims(x, dim)
    rt = _reduction_dtype(x, dtype, "nansum") if out is None else out_reduction_dtype(out, dtype, "nansum")
    if x._data.dtype.kind == "f" and rt.kind != "f" and x._data.size:
        # a float input runs torch's nansum kernel in out's dtype, which has only float forms
        raise NotImplementedError("\"nansum_cpu\" not implemented for '%s'" % _torch_name(rt))
    data = x._data if x._data.dtype == rt else x._data.astype(rt)
    result = _array(quietly(np.nansum, data, dims, None, None, keepdim) if rt.kind == "f"
                    else _sum_in(data, dims, keepdim), rt)
    if out is not None:
        _out.check_out(out, "nansum", x)
        return _out.write_out(out, result, "nansum", reads=(x,))
    t = _record_reduce(_NansumNode, x, _wrap(_contiguous(result)), dims, keepdim)
    if t._grad_fn is not None:
        t._grad_fn._saved = (rec.save(x),)
    return t


register("sum", reduce_sum, samples=S.reduction(), family="reduction", integer_inputs=True)
register("nansum", nansum, samples=S.reduction(), family="reduction", integer_inputs=True)
register("mean", reduce_mean, samples=S.reduction(), family="reduction")


# -- max / min ------------------------------------------------------------------------------

def _evenly_backward(node, g, x, result):
    """Gradient of max()/min()/amax() shared evenly among the extremes (NaN wins)."""
    keep = _keepdim_shape(node.in_shape, node.dims)
    r = result if node.keepdim else result.reshape(keep)
    if np.isnan(result._data).any():
        mask = x.isnan().logical_and(r.isnan()).logical_or(x == r)
    else:
        mask = x == r
    count = mask.sum(node.dims, keepdim=True)
    gg = g if node.keepdim else g.reshape(keep)
    return where(mask, gg / count, 0.0)


def _scale_by_count_backward(node, g, x, result):
    """amax/amin: torch's scale_grad_by_count, (g / count) * mask; nothing
    equals a NaN result, so its gradient is NaN (0/0), as in torch."""
    keep = _keepdim_shape(node.in_shape, node.dims)
    r = result if node.keepdim else result.reshape(keep)
    mask = x == r
    gg = g if node.keepdim else g.reshape(keep)
    return (gg / mask.sum(node.dims, keepdim=True)) * mask


_MaxAllNode = rec.node_class("MaxBackward1", _evenly_backward)    # torch's max() is overload 1, max(dim) 0
_MinAllNode = rec.node_class("MinBackward1", _evenly_backward)
_AmaxNode = rec.node_class("AmaxBackward", _scale_by_count_backward)
_AminNode = rec.node_class("AminBackward", _scale_by_count_backward)


def _extreme_all(x, is_max, name, node_cls, dims=None, keepdim=False):
    data = x._data
    all_dims = tuple(range(data.ndim)) if dims is None else dims
    if data.size == 0 and (dims is None or any(data.shape[d] == 0 for d in all_dims)):
        if dims is None:
            raise RuntimeError("%s(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument." % name)
        raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (name, all_dims[0]))
    reducer = np.max if is_max else np.min
    result = np.asarray(reducer(data, axis=all_dims, keepdims=keepdim))
    out = _wrap(_contiguous(result))
    if rec.needs_grad(x):
        node = rec.record(node_cls, (x,), out)
        node.in_shape = data.shape
        node.dims = all_dims
        node.keepdim = keepdim
        node._saved = (rec.save(x), rec.save_output(out))
    return out


def _dim_backward(node, grads, indices):
    g = grads[0]
    if g is None:
        return None
    return index_scatter(g, indices, node.dim, node.in_shape, node.keepdim)


_MaxDimNode = rec.node_class("MaxBackward", _dim_backward, multi_output=True)
_MinDimNode = rec.node_class("MinBackward", _dim_backward, multi_output=True)


def _extreme_dim(x, dim, keepdim, is_max, name):
    data = x._data
    d = _dim(dim, data.ndim)
    if data.ndim and data.shape[d] == 0:
        raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (name, d))
    if data.ndim == 0:
        values, indices = data.copy(), np.zeros((), np.int64)
    else:
        arg = (np.argmax if is_max else np.argmin)(data, axis=d, keepdims=True)
        values = np.take_along_axis(data, arg, axis=d)
        indices = arg.astype(np.int64)
        if not keepdim:
            values, indices = np.squeeze(values, d), np.squeeze(indices, d)
    values, indices = _wrap(np.asarray(values)), _wrap(np.asarray(indices))
    if rec.needs_grad(x):
        node = rec.record(_MaxDimNode if is_max else _MinDimNode, (x,), (values, None))
        node.dim, node.keepdim, node.in_shape = (d if data.ndim else 0), keepdim, data.shape
        node._saved = (rec.save(indices),)     # a saved variable in torch: freed, version-checked
    return return_types[name](values, indices)


def _max_or_min(is_max, name):
    binary = maximum if is_max else minimum
    node_cls = _MaxAllNode if is_max else _MinAllNode

    def extreme(input, dim=None, keepdim=False, *, out=None):
        x = require_tensor(input, name)
        if is_tensor(dim):
            return binary(x, dim, out=out)
        if dim is None:
            if keepdim:
                raise TypeError("%s() received an invalid combination of arguments: keepdim without dim"
                                % name)
            if out is not None:
                _out.check_out(out, name, x)
                return _out.write_out(out, _extreme_all(x, is_max, name, node_cls)._data, name)
            return _extreme_all(x, is_max, name, node_cls)
        if out is not None:
            _out.check_out(out[0] if isinstance(out, (tuple, list)) and out else out, name, x)
            values, indices = _extreme_dim(x, dim, keepdim, is_max, name)
            return _out.write_outs(out, values, indices, name, return_types[name + "_out"])
        return _extreme_dim(x, dim, keepdim, is_max, name)
    extreme.__name__ = name
    return extreme


reduce_max = _max_or_min(True, "max")
reduce_min = _max_or_min(False, "min")
register("max", reduce_max, samples=S.reduction(multi_dim=False), family="reduction", integer_inputs=True)
register("min", reduce_min, samples=S.reduction(multi_dim=False), family="reduction", integer_inputs=True)


def _amax_or_amin(is_max, name):
    node_cls = _AmaxNode if is_max else _AminNode

    def extreme(input, dim=(), keepdim=False, *, out=None):
        x = require_tensor(input, name)
        dims = reduce_dims(x, dim)
        if out is not None:
            _out.check_out(out, name, x)
            if out._data.dtype != x._data.dtype:
                raise RuntimeError("Expected the dtype for input and out to match, but got %s for input's "
                                   "dtype and %s for out's dtype." % (x.dtype.name, out.dtype.name))
        result = _extreme_all(x, is_max, name, node_cls, dims, keepdim)
        return result if out is None else _out.write_out(out, result._data, name, strict=True, reads=(x,))
    extreme.__name__ = name
    return extreme


amax = _amax_or_amin(True, "amax")
amin = _amax_or_amin(False, "amin")
register("amax", amax, samples=S.reduction(), family="reduction", integer_inputs=True)
register("amin", amin, samples=S.reduction(), family="reduction", integer_inputs=True)


def _arg(is_max, name):
    def arg(input, dim=None, keepdim=False, *, out=None):
        result = _arg_result(input, dim, keepdim)
        if out is None:
            return result
        _out.check_out(out, name, differentiable=False)
        return _out.write_out(out, result._data, name, strict="c_type")

    def _arg_result(input, dim, keepdim):
        x = require_tensor(input, name)
        data = x._data
        if data.dtype.kind == "b":
            raise RuntimeError("%s(): does not support bool input" % name)
        if dim is None:
            if data.size == 0:
                raise IndexError("%s(): Expected reduction dim to be specified for input.numel() == 0."
                                 % name)
            flat = (np.argmax if is_max else np.argmin)(data)
            result = np.asarray(flat, np.int64)
            if keepdim:
                result = result.reshape((1,) * data.ndim)
            return _wrap(_contiguous(result))
        d = _dim(dim, data.ndim)
        if data.ndim == 0:
            return _wrap(np.zeros((), np.int64))
        if data.shape[d] == 0:
            raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (name, d))
        return _wrap((np.argmax if is_max else np.argmin)(data, axis=d, keepdims=keepdim).astype(np.int64))
    arg.__name__ = name
    return arg


argmax = _arg(True, "argmax")
argmin = _arg(False, "argmin")
register("argmax", argmax, samples=S.reduction(multi_dim=False), gradcheck=False, family="reduction",
         integer_inputs=True)
register("argmin", argmin, samples=S.reduction(multi_dim=False), gradcheck=False, family="reduction",
         integer_inputs=True)


def _logical_reduction(ufunc_reduce, name):
    def reduce(input, dim=None, keepdim=False, *, out=None):
        x = require_tensor(input, name)
        dims = reduce_dims(x, dim)
        result = np.asarray(ufunc_reduce(x._data.astype(bool, copy=False), axis=dims, keepdims=keepdim))
        if x._data.dtype == np.uint8:
            result = result.astype(np.uint8)
        if out is not None:
            _out.check_out(out, name, differentiable=False)
            if out._data.dtype.kind != "b" and out._data.dtype != result.dtype:
                raise RuntimeError("%s only supports bool tensor for result, got: %s"
                                   % (name, out.dtype.name.capitalize()))
            return _out.write_out(out, result, name)
        return _wrap(_contiguous(result))
    reduce.__name__ = name
    register(name, reduce, samples=S.reduction(), gradcheck=False, family="reduction", integer_inputs=True)
    return reduce


reduce_all = _logical_reduction(np.all, "all")
reduce_any = _logical_reduction(np.any, "any")


# -- the scatter that max(dim)'s backward uses --------------------------------------------

def _scatter_back(node, gg):
    return _gather_op(gg, node.indices, node.dim, node.keepdim)


_IndexScatterNode = rec.node_class("ValueSelectingReductionBackward", _scatter_back)


def index_scatter(g, indices, dim, shape, keepdim):
    """zeros(shape) with g put at `indices` along dim (one index per slot)."""
    idx = indices._data if is_tensor(indices) else indices
    out = np.zeros(shape, g._data.dtype)
    if len(shape) == 0:
        out[...] = g._data
    else:
        full = idx if keepdim else np.expand_dims(idx, dim)
        values = g._data if keepdim else np.expand_dims(g._data, dim)
        np.put_along_axis(out, full, values, axis=dim)
    result = _wrap(_contiguous(out))
    if rec.needs_grad(g):
        node = rec.record(_IndexScatterNode, (g,), result)
        node.indices, node.dim, node.keepdim = idx, dim, keepdim
    return result


def _gather_back_to_scatter(node, g):
    return index_scatter(g, node.indices, node.dim, node.in_shape, node.keepdim)


_GatherAlongNode = rec.node_class("GatherBackward", _gather_back_to_scatter)


def _gather_op(t, indices, dim, keepdim):
    data = t._data
    if data.ndim == 0:
        result = data.copy()
    else:
        full = indices if keepdim else np.expand_dims(indices, dim)
        result = np.take_along_axis(data, full, axis=dim)
        if not keepdim:
            result = np.squeeze(result, dim)
    out = _wrap(_contiguous(np.asarray(result)))
    if rec.needs_grad(t):
        node = rec.record(_GatherAlongNode, (t,), out)
        node.indices, node.dim, node.keepdim, node.in_shape = indices, dim, keepdim, data.shape
    return out
