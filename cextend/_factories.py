"""Tensor factories: tensor, randn, zeros, ..., from_numpy.

Floats default to float32 (as in torch); tensor(ndarray) and from_numpy
keep the array's dtype.
"""
import numbers

import numpy as np

from cextend import _dtype, _random
from cextend.tensor import Tensor, _sizes, _wrap


def _numpy_dtype(dtype, default=_dtype.DEFAULT_FLOAT):
    return (default if dtype is None else _dtype.as_dtype(dtype)).numpy


def _finish(array, requires_grad, device=None):
    if device is not None:
        from cextend.device import as_device
        if as_device(device).type == "cuda":
            from cextend._device import DeviceArray
            array = DeviceArray.from_host(array)
    t = _wrap(array)
    if requires_grad:
        t.requires_grad = True      # checks the dtype can require grad
    return t


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of data (nested lists, scalars, arrays, tensors)."""
    _check_device(device)
    if isinstance(data, Tensor):
        array = data._data.copy()
    elif isinstance(data, np.ndarray):
        _dtype.from_numpy(data.dtype)
        array = np.array(data, dtype=data.dtype.newbyteorder("="), copy=True)
    else:
        try:
            array = np.array(data)
        except ValueError as error:
            raise ValueError("tensor(): could not make a tensor from %r: %s" % (data, error)) from None
        kind = array.dtype.kind
        if kind == "f":
            array = array.astype(_dtype.DEFAULT_FLOAT.numpy)
        elif kind in "iu":
            array = array.astype(np.int64)
        elif kind != "b":
            raise TypeError("tensor(): data must be numbers (or nested lists of numbers), got %s"
                            % type(data).__name__)
    if dtype is not None:
        array = array.astype(_numpy_dtype(dtype))
    return _finish(array, requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """Like tensor(), but shares memory with a numpy array or Tensor of the right dtype."""
    if isinstance(data, Tensor) and (dtype is None or _dtype.as_dtype(dtype) == data.dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or _numpy_dtype(dtype) == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A tensor sharing memory with a numpy array (dtype kept)."""
    if not isinstance(array, np.ndarray):
        raise TypeError("from_numpy: expected np.ndarray, got %s" % type(array).__name__)
    if not array.dtype.isnative:
        raise TypeError("from_numpy: arrays in non-native byte order are not supported; convert it "
                        "with array.astype(array.dtype.newbyteorder('='))")
    _dtype.from_numpy(array.dtype)
    return _wrap(array)


def _check_device(device):
    if device is not None:
        from cextend.device import as_device
        as_device(device).require_available("tensor factory")


def _filled(make, size, dtype, requires_grad, device):
    _check_device(device)
    return _finish(make(_sizes(size), _numpy_dtype(dtype)), requires_grad, device)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.zeros, size, dtype, requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.ones, size, dtype, requires_grad, device)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.empty, size, dtype, requires_grad, device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None and isinstance(fill_value, numbers.Integral) and not isinstance(fill_value, bool):
        dtype = _dtype.int64
    return _filled(lambda s, d: np.full(s, fill_value, d), (size,), dtype, requires_grad, device)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    """Standard normal samples from the global generator (see manual_seed)."""
    numpy_dtype = _numpy_dtype(dtype)
    _check_device(device)
    rng = generator or _random.generator()
    draw = rng.standard_normal(_sizes(size), dtype=np.float64).astype(numpy_dtype)
    return _finish(draw, requires_grad, device)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    numpy_dtype = _numpy_dtype(dtype)
    _check_device(device)
    rng = generator or _random.generator()
    return _finish(rng.random(_sizes(size)).astype(numpy_dtype), requires_grad, device)


def randint(low, high=None, size=None, dtype=None, device=None, generator=None):
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    _check_device(device)
    rng = generator or _random.generator()
    return _wrap(rng.integers(low, high, _sizes((size,))).astype(_numpy_dtype(dtype, _dtype.int64)))


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    _check_device(device)
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = _dtype.int64 if integral else _dtype.DEFAULT_FLOAT
    return _finish(np.arange(start, end, step).astype(_numpy_dtype(dtype)), requires_grad)


def range(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Legacy: values from start to end *inclusive* (default float32).
    Deprecated, as in torch: use arange, which stops before end."""
    import warnings
    warnings.warn("cextend.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use cextend.arange, "
                  "which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    _check_device(device)
    count = int(np.floor((end - start) / step)) + 1
    values = start + step * np.arange(max(count, 0))
    return _finish(values.astype(_numpy_dtype(dtype)), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _finish(np.linspace(start, end, steps).astype(_numpy_dtype(dtype)), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _finish(np.eye(n, m, dtype=_numpy_dtype(dtype)), requires_grad)


def _like(make, t, dtype, requires_grad):
    numpy_dtype = t._data.dtype if dtype is None else _numpy_dtype(dtype)
    return _finish(make(t._data.shape, numpy_dtype), requires_grad)


def zeros_like(t, dtype=None, requires_grad=False):
    return _like(np.zeros, t, dtype, requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return _like(np.ones, t, dtype, requires_grad)


def empty_like(t, dtype=None, requires_grad=False):
    return _like(np.empty, t, dtype, requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False):
    return _like(lambda s, d: np.full(s, fill_value, d), t, dtype, requires_grad)


def randn_like(t, dtype=None, requires_grad=False):
    return randn(t.shape, dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad)


def rand_like(t, dtype=None, requires_grad=False):
    return rand(t.shape, dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad)
