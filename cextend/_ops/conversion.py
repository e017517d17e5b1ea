"""Copies and conversions: clone, contiguous, to(dtype / device)."""
import numpy as np

from cextend._memory_format import contiguous_format, empty_as, is_contiguous_in, preserve_format

from cextend._fpe import quietly
from cextend import _bfloat16, _capture, _dtype
from cextend._device import DeviceArray
from cextend.autograd import record as rec
from cextend._ops import samples as S
from cextend._ops._operands import require_tensor
from cextend._ops._layout import empty_like_preserve
from cextend._ops.registry import method, register
from cextend.device import as_device
from cextend.tensor import Tensor, _wrap

_CloneNode = rec.node_class("CloneBackward", lambda node, g: g)


def clone(input, *, memory_format=None):
    x = require_tensor(input, "clone")
    # torch's preserve_format: a dense tensor keeps its strides (a transposed
    # tensor's clone is transposed too); numpy's order "K" does the same.
    data = x._data
    if type(data) is not np.ndarray:
        copy = data.copy()
    else:
        copy = empty_as(data, data.dtype, memory_format)
        copy[...] = data
    out = _wrap(copy)
    if rec.needs_grad(x):
        rec.record(_CloneNode, (x,), out)
    return out


register("clone", clone, samples=S.unary(), family="conversion")


def contiguous(self, memory_format=None):
    data = self._data
    if memory_format not in (None, contiguous_format) and type(data) is np.ndarray:
        wanted = empty_as(data, data.dtype, memory_format)      # refuses a rank the format has no place for
        if data.ndim < 2 or data.strides == wanted.strides or np.moveaxis(data, 1, -1).flags.c_contiguous:
            return self
        return clone(self, memory_format=memory_format)
    if type(data) is DeviceArray or data.flags.c_contiguous:
        return self
    return clone(self, memory_format=contiguous_format)


method("contiguous", contiguous)


def _to_copy_backward(node, g):
    return to_dtype(g, node.in_dtype)


_ToCopyNode = rec.node_class("ToCopyBackward", _to_copy_backward)


def _preserve_format(data, source):
    """data laid out as torch's .to() copy of source (empty_like with
    preserve_format: a dense source's strides, else dense in its dim order)."""
    wanted = empty_like_preserve(source, data.dtype)
    if wanted.strides == data.strides:
        return data
    wanted[...] = data
    return wanted


def to_dtype(x, numpy_dtype, copy=False):
    """x in another dtype (x itself when nothing changes and no copy is asked)."""
    numpy_dtype = np.dtype(numpy_dtype)
    source = x._data.dtype
    if numpy_dtype == source and not copy:
        return x
    if (numpy_dtype.kind == "V" or source.kind == "V") and numpy_dtype != source:
        data = _bfloat16.cast(x._data, numpy_dtype)     # numpy's own cast would copy raw bytes
    else:
        data = quietly(x._data.astype, numpy_dtype)      # inf/NaN to int: C's cast, no warning
    if type(data) is np.ndarray and data.ndim > 1 and not x._data.flags.c_contiguous:
        data = _preserve_format(data, x._data)
    if _capture._active is not None and numpy_dtype.kind != "V" and source.kind != "V":
        _capture.computed(np.asarray, (x._data,), data)         # replayed as an unsafe cast: astype's
    out = _wrap(data)
    if _dtype.is_floating(numpy_dtype) and rec.needs_grad(x):
        node = rec.record(_ToCopyNode, (x,), out)
        node.in_dtype = x._data.dtype
    return out


def _to_device_backward(node, g):
    return to_device(g, node.source)


_ToDeviceNode = rec.node_class("ToCopyBackward", _to_device_backward)


def to_device(x, target):
    """A copy on "cuda" or "cpu"; differentiable (the gradient goes back)."""
    source = "cuda" if type(x._data) is DeviceArray else "cpu"
    if target == source:
        return x
    if x._data.dtype.kind == "V":
        raise TypeError("to(): cextend keeps bfloat16 tensors in host memory only; convert to float32 "
                        "before moving to %s" % target)
    data = DeviceArray.from_host(x._data) if target == "cuda" else x._data.to_host()
    out = _wrap(data)
    if rec.needs_grad(x):
        node = rec.record(_ToDeviceNode, (x,), out)
        node.source = source
    return out


def type_as(self, other):
    return to_dtype(self, other._data.dtype)


method("type_as", type_as)
for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("long", _dtype.int64), ("int", _dtype.int32), ("bool", _dtype.bool),
                   ("byte", _dtype.uint8), ("bfloat16", _dtype.bfloat16)):
    method(_name, (lambda numpy_dtype: lambda self: to_dtype(self, numpy_dtype))(_dt.numpy))


def to(self, *args, **kwargs):
    """to(dtype), to(device), to(other_tensor): a converted tensor (self if nothing changes)."""
    target = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError("to() got unexpected keyword(s) %s" % ", ".join(sorted(kwargs)))
    for arg in args:
        if isinstance(arg, Tensor):
            target = arg.dtype
            device = arg.device
        elif isinstance(arg, str) or type(arg).__name__ == "device":
            device = arg
        elif isinstance(arg, bool):
            continue
        else:
            target = arg
    moved = self
    if device is not None:
        device = as_device(device)
        if device.type != self.device.type:
            device.require_available("to")
            moved = to_device(self, device.type)
    if memory_format not in (None, preserve_format) and type(moved._data) is np.ndarray:
        return _to_format(self, moved, target, memory_format, copy)
    if target is None:
        return moved.clone() if copy and moved is self else moved
    return to_dtype(moved, _dtype.as_dtype(target).numpy, copy=copy and moved is self)


def _to_format(self, moved, target, memory_format, copy):
    """to(..., memory_format=fmt): one copy in the target dtype laid out in fmt (torch's _to_copy),
    or self when it already is all that and no copy is asked."""
    numpy_dtype = moved._data.dtype if target is None else _dtype.as_dtype(target).numpy
    laid_out = empty_as(moved._data, numpy_dtype, memory_format)     # refuses a rank the format has no place for
    if moved is self and not copy and numpy_dtype == self._data.dtype and \
            is_contiguous_in(self._data, memory_format):
        return self
    source = moved._data
    if (numpy_dtype.kind == "V" or source.dtype.kind == "V") and numpy_dtype != source.dtype:
        source = _bfloat16.cast(source, numpy_dtype)     # numpy's own cast would copy raw bytes
    quietly(lambda: np.copyto(laid_out, source, casting="unsafe"))     # inf/NaN to int: C's cast
    out = _wrap(laid_out)
    if _dtype.is_floating(numpy_dtype) and _dtype.is_floating(moved._data.dtype) and rec.needs_grad(moved):
        node = rec.record(_ToCopyNode, (moved,), out)
        node.in_dtype = moved._data.dtype
    return out


method("to", to)
