"""The torch 0.3/0.4 surface that old scripts still use.

- Tensor types: `FloatTensor(2, 3)`, `LongTensor([1, 2])`, `isinstance(x,
  FloatTensor)`, `x.type()` -> 'torch.FloatTensor', `x.type(DoubleTensor)`.
  The strings say "torch." because code compares them with torch's names.
- `set_default_dtype` / `get_default_dtype`.
"""
import numbers

import numpy as np

from cextend import _dtype
from cextend.tensor import Size, Tensor, _new_sizes, _wrap
from cextend._ops.shape import detach

_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


class tensortype(type):
    """The metaclass of the legacy tensor types: isinstance checks the dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._data.dtype == cls.dtype.numpy and not obj.is_cuda

    def __repr__(cls):
        return "<class 'cextend.%s'>" % cls.__name__


def _make_type(name, dtype):
    def __new__(cls, *args, device=None):
        if not args:
            return _wrap(np.empty((0,), dtype.numpy))
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0]._data.dtype != dtype.numpy:
                raise TypeError("expected %s (got %s): the legacy constructor does not convert dtypes; "
                                "use .to(%r)" % (dtype.name, args[0].dtype.name, dtype))
            return detach(args[0])
        if len(args) == 1 and not isinstance(args[0], (numbers.Integral, Size)):
            return _wrap(np.array(args[0], dtype=dtype.numpy))
        return _wrap(np.empty(_new_sizes(args), dtype.numpy))
    return tensortype(name, (), {"__new__": __new__, "dtype": dtype, "is_cuda": False,
                                 "__module__": "cextend"})


TYPES = {name: _make_type(name, _dtype.as_dtype(dt)) for dt, name in _TYPE_NAMES.items()}


def type_name(t):
    name = _TYPE_NAMES.get(t._data.dtype.name, t._data.dtype.name)
    return ("torch.cuda." if t.is_cuda else "torch.") + name


def tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """x.type() -> 'torch.FloatTensor'; x.type(T) converts to T (a legacy
    type, its name as a string, or a dtype)."""
    if dtype is None:
        return type_name(self)
    if isinstance(dtype, str):
        short = dtype.split(".")[-1]
        wanted = next((dt for dt, name in _TYPE_NAMES.items() if name == short), None)
        if wanted is None:
            raise ValueError("invalid type: '%s'" % dtype)
        if ".cuda." in dtype:
            return self.to(device="cuda", dtype=_dtype.as_dtype(wanted))
        return self.to(_dtype.as_dtype(wanted))
    if isinstance(dtype, tensortype):
        return self.to(dtype.dtype)
    return self.to(_dtype.as_dtype(dtype))


def set_default_dtype(d):
    """The dtype of float tensors made from Python floats and of nn parameters."""
    dt = _dtype.as_dtype(d)
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.DEFAULT_FLOAT = dt
    Tensor._default_dtype = dt.numpy


def get_default_dtype():
    return _dtype.DEFAULT_FLOAT


class FatalError(RuntimeError):
    """torch.FatalError (torch 0.3/0.4): what a THError inside a torch.utils.ffi
    function raised.  The TH shim raises it for the same errors; it is also a
    RuntimeError, which newer code catches."""
