"""Tensor factories: tensor, randn, zeros, ..., from_numpy.

Floats default to float32 (as in torch); tensor(ndarray) and from_numpy
keep the array's dtype.
"""
import math
import numbers

import numpy as np

from cextend._scalars import checked_scalar
from cextend import _dtype, _random, _sizes
from cextend._errors import ArgumentError
from cextend.tensor import Tensor, _allocating, _new_sizes, _wrap
from cextend._memory_format import empty_as
from cextend._device import DeviceArray
from cextend.device import as_device


def _numpy_dtype(dtype, default=None):
    """The numpy dtype for dtype=; None means `default` (the default float,
    read at call time so set_default_dtype applies)."""
    if dtype is not None:
        return _dtype.as_dtype(dtype).numpy
    return (default or _dtype.DEFAULT_FLOAT).numpy


def _finish(array, requires_grad, device=None):
    if device is not None:
        if as_device(device).type == "cuda":
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
    elif isinstance(data, (list, tuple)) and _holds_tensors(data):
        return tensor(_unwrap_nested(data), dtype=dtype, device=device, requires_grad=requires_grad)
    elif isinstance(data, (np.ndarray, np.generic)):      # numpy scalars keep their dtype too
        data = np.asarray(data)
        _dtype.from_numpy(data.dtype)
        array = np.array(data, dtype=data.dtype.newbyteorder("="), copy=True)
    else:
        try:
            array = np.array(data)
        except ValueError as error:
            raise ValueError("tensor(): could not make a tensor from %r: %s" % (data, error)) from None
        kind = array.dtype.kind
        if kind == "u" or kind == "O" and _holds_ints(data):
            # Python ints past int64: numpy made uint64 (which would wrap) or objects
            array, kind = _big_ints(data, dtype), "f"
        if kind not in "fiub":
            raise TypeError("tensor(): data must be numbers (or nested lists of numbers), got %s"
                            % type(data).__name__)
        if dtype is None:       # with a dtype, convert once (no detour through float32)
            if kind == "f":
                array = array.astype(_dtype.DEFAULT_FLOAT.numpy)
            elif kind in "iu":
                array = array.astype(np.int64)
    if dtype is not None:
        array = array.astype(_numpy_dtype(dtype))
    return _finish(array, requires_grad, device)


def _holds_ints(data):
    if isinstance(data, (list, tuple)):
        return all(_holds_ints(d) for d in data)
    return isinstance(data, numbers.Integral)


def _big_ints(data, dtype):
    """data holding a Python int outside int64: float values for a floating
    dtype (as torch converts them), else the ArgumentError torch's
    ValueError is ("Overflow when unpacking long long")."""
    if dtype is not None and _numpy_dtype(dtype).kind in "fc":
        return np.array(data, dtype=np.float64)
    flat = np.ravel(np.array(data, dtype=object))
    value = next(int(v) for v in flat if not _sizes.in_int64(int(v)))
    raise ArgumentError("tensor(): %d is outside int64's range (from -2**63 to 2**63 - 1); give a floating "
                        "dtype to keep it as a float" % value)


def _holds_tensors(data):
    return any(isinstance(d, Tensor) or (isinstance(d, (list, tuple)) and _holds_tensors(d)) for d in data)


def _unwrap_nested(data):
    """Nested lists of scalar tensors as nested lists of numbers (their dtype
    kept: a list of float tensors stays floating)."""
    if isinstance(data, Tensor):
        if data._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return data._data.item()
    return [_unwrap_nested(d) for d in data]


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
    if any(s < 0 for s in array.strides):
        # torch's message: a tensor sharing the memory cannot step backwards
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    return _wrap(array)


def _check_device(device):
    if device is not None:
        as_device(device).require_available("tensor factory")


def _filled(make, size, dtype, requires_grad, device):
    _check_device(device)
    sizes = _new_sizes(size)
    return _finish(_allocating(make.__name__, sizes, make, sizes, _numpy_dtype(dtype)), requires_grad, device)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.zeros, size, dtype, requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.ones, size, dtype, requires_grad, device)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _filled(np.empty, size, dtype, requires_grad, device)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = _dtype.bool
        elif isinstance(fill_value, numbers.Integral):
            dtype = _dtype.int64
    def full(s, d):
        return np.full(s, checked_scalar(fill_value, d), d)
    return _filled(full, (size,), dtype, requires_grad, device)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    """Standard normal samples from the global generator (see manual_seed)."""
    numpy_dtype = _numpy_dtype(dtype)
    _check_device(device)
    rng = _random.numpy_rng(generator, "randn")
    sizes = _new_sizes(size)
    draw = _allocating("randn", sizes, lambda: rng.standard_normal(sizes, dtype=np.float64).astype(numpy_dtype))
    return _finish(draw, requires_grad, device)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    numpy_dtype = _numpy_dtype(dtype)
    _check_device(device)
    rng = _random.numpy_rng(generator, "rand")
    sizes = _new_sizes(size)
    return _finish(_allocating("rand", sizes, lambda: rng.random(sizes).astype(numpy_dtype)), requires_grad, device)


def randint(low=0, high=None, size=None, *, dtype=None, device=None, generator=None,
            requires_grad=False):
    """Integers uniform in [low, high); randint(high, size) and randint(low, high, size)."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError("random_ expects 'from' to be less than 'to', but got from=%d >= to=%d" % (low, high))
    _check_device(device)
    rng = _random.numpy_rng(generator, "randint")
    sizes, numpy_dtype = _new_sizes((size,)), _numpy_dtype(dtype, _dtype.int64)
    return _finish(_allocating("randint", sizes, lambda: rng.integers(low, high, sizes).astype(numpy_dtype)),
                   requires_grad, device)


def randint_like(t, low=0, high=None, *, dtype=None, requires_grad=False, generator=None):
    if high is None:
        low, high = 0, low
    return randint(low, high, t.shape, dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad,
                   generator=generator)


def randperm(n, *, dtype=None, device=None, generator=None, requires_grad=False):
    """A random permutation of 0..n-1 (int64 by default)."""
    n = _int_argument(n, "n", "randperm")
    if n < 0:
        raise ArgumentError("randperm(): n must be non-negative, got %d" % n)
    sizes = _new_sizes((n,))
    rng = _random.numpy_rng(generator, "randperm")
    numpy_dtype = _numpy_dtype(dtype, _dtype.int64)
    return _finish(_allocating("randperm", sizes, lambda: rng.permutation(n).astype(numpy_dtype)), requires_grad,
                   device)


def _int_argument(value, name, op):
    """An int argument (a 0-d integral Tensor too): TypeError for another
    kind, ArgumentError (torch: ValueError) outside int64."""
    if isinstance(value, Tensor) and value._data.ndim == 0 and value._data.dtype.kind in "iu":
        value = int(value._data)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s(): argument '%s' must be int, not %s" % (op, name, type(value).__name__))
    return _sizes.int64(int(value), name, op)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, out=None):
    """Samples of N(mean, std): mean and std may be tensors (broadcast) or numbers (with size)."""
    rng = _random.numpy_rng(generator, "normal")
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: size is required "
                            "when mean and std are numbers")
        if std < 0:
            raise RuntimeError("normal expects std >= 0.0, but found std %g" % std)
        sizes, numpy_dtype = _new_sizes((size,)), _numpy_dtype(dtype)
        return _wrap(_allocating("normal", sizes, lambda: rng.normal(mean, std, sizes).astype(numpy_dtype)))
    ref = mean if mean_t else std
    m = mean._data if mean_t else mean
    sd = std._data if std_t else std
    if np.any(np.asarray(sd) < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = np.broadcast_shapes(np.shape(m), np.shape(sd))
    draw = rng.standard_normal(shape) * sd + m
    return _wrap(np.asarray(draw, ref._data.dtype if ref._data.dtype.kind == "f" else _numpy_dtype(None)))


def _range_bounds(op, start, end, step):
    """(start, end, step) as Python numbers, checked as torch checks them:
    numbers (TypeError), finite, a non-zero step pointing from start to end
    (RuntimeError); ints within int64."""
    values = []
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor):
            v = v.item()
        if not isinstance(v, numbers.Real):
            raise TypeError("%s(): argument '%s' must be a number, not %s" % (op, name, type(v).__name__))
        if isinstance(v, numbers.Integral):
            v = _sizes.int64(int(v), name, op)
        values.append(v)
    start, end, step = values
    for name, v in zip(("start", "end", "step"), values):
        if not math.isfinite(v):
            raise ArgumentError("%s(): argument '%s' must be finite, got %s (the range %s -> %s, step %s)"
                                % (op, name, v, start, end, step))
    if step == 0:
        raise ArgumentError("%s(): argument 'step' must be nonzero" % op)
    if (end - start) * step < 0:
        raise ArgumentError("%s(): upper bound and larger bound inconsistent with step sign (start %s, end %s, "
                            "step %s)" % (op, start, end, step))
    return start, end, step


def _range_count(op, start, end, step, round_up):
    """How many values a range holds, refused (ArgumentError) when it is more
    than memory can address (torch: RuntimeError)."""
    span = (end - start) / step
    if not span <= _sizes.MAX_ELEMENTS:
        raise ArgumentError("%s(): the range %s -> %s (step %s) would have %.6g elements, more than memory "
                            "can address" % (op, start, end, step, span))
    return max(int(math.ceil(span) if round_up else math.floor(span) + 1), 0)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    start, end, step = _range_bounds("arange", start, end, step)
    _check_device(device)
    integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    if dtype is None:
        dtype = _dtype.int64 if integral else _dtype.DEFAULT_FLOAT
    numpy_dtype = _numpy_dtype(dtype)
    count = _range_count("arange", start, end, step, round_up=True)

    def values():
        # torch: start + i * step in double, then cast (not numpy's accumulated steps)
        if numpy_dtype.kind in "iu" and integral:
            return (start + np.arange(count, dtype=np.int64) * step).astype(numpy_dtype)
        return (start + np.arange(count, dtype=np.float64) * step).astype(numpy_dtype)
    return _finish(_allocating("arange", (count,), values), requires_grad, device)


def range(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Legacy: values from start to end *inclusive* (default float32).
    Deprecated, as in torch: use arange, which stops before end."""
    import warnings
    warnings.warn("cextend.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use cextend.arange, "
                  "which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    start, end, step = _range_bounds("range", start, end, step)
    _check_device(device)
    count = _range_count("range", start, end, step, round_up=False)
    numpy_dtype = _numpy_dtype(dtype)
    return _finish(_allocating("range", (count,), lambda: (start + step * np.arange(count)).astype(numpy_dtype)),
                   requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    """steps values from start to end, computed as torch does: from start for
    the first half and back from end for the second, in the output dtype."""
    return _finish(_linspace("linspace", start, end, steps, dtype, device), requires_grad, device)


def _linspace(op, start, end, steps, dtype, device=None):
    steps = _int_argument(steps, "steps", op)
    if steps < 0:
        raise ArgumentError("%s(): number of steps must be non-negative, got %d" % (op, steps))
    sizes = _new_sizes((steps,))
    _check_device(device)
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    numpy_dtype = _numpy_dtype(dtype)
    work = numpy_dtype if numpy_dtype.kind == "f" else np.dtype(np.float64)

    def values():
        if steps == 1:
            return np.full(1, start, work).astype(numpy_dtype)
        index = np.arange(steps)
        step = (work.type(end) - work.type(start)) / work.type(max(steps - 1, 1))
        halfway = steps // 2
        return np.where(index < halfway, work.type(start) + step * index.astype(work),
                        work.type(end) - step * (steps - index - 1).astype(work)).astype(numpy_dtype)
    return _allocating(op, sizes, values)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None):
    numpy_dtype = _numpy_dtype(dtype)
    exponents = _linspace("logspace", start, end, steps, _dtype.float64, device)
    return _finish(np.power(base, exponents).astype(numpy_dtype), requires_grad, device)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    n = _int_argument(n, "n", "eye")
    m = n if m is None else _int_argument(m, "m", "eye")
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise ArgumentError("eye(): %s must be non-negative, got %d" % (name, value))
    sizes = _new_sizes((n, m))
    _check_device(device)
    numpy_dtype = _numpy_dtype(dtype)
    return _finish(_allocating("eye", sizes, np.eye, n, m, 0, numpy_dtype), requires_grad)


def _like(make, t, dtype, requires_grad, device=None, memory_format=None):
    if not isinstance(t, Tensor):
        raise TypeError("expected a Tensor as input, got %s" % type(t).__name__)
    numpy_dtype = t._data.dtype if dtype is None else _numpy_dtype(dtype)
    on_device = device if device is not None else ("cuda" if t.is_cuda else None)
    shape = t._data.shape
    values = _allocating(make.__name__ + "_like", shape,
                         lambda: _laid_out_like(make(shape, numpy_dtype), t, memory_format))
    return _finish(values, requires_grad, on_device)


def _laid_out_like(values, t, memory_format):
    """values laid out as torch's *_like(t) (preserve_format by default: a
    transposed t gives a transposed result, so a later view() agrees)."""
    if type(t._data) is not np.ndarray or (t._data.flags.c_contiguous and memory_format is None):
        return values
    out = empty_as(t._data, values.dtype, memory_format)
    out[...] = values
    return out


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(np.zeros, input, dtype, requires_grad, device, memory_format)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(np.ones, input, dtype, requires_grad, device, memory_format)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(np.empty, input, dtype, requires_grad, device, memory_format)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    def full(s, d):
        return np.full(s, fill_value, d)
    return _like(full, input, dtype, requires_grad, device, memory_format)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, generator=None):
    values = randn(input.shape, dtype=input.dtype if dtype is None else dtype, requires_grad=requires_grad,
                   generator=generator)
    values._data = _laid_out_like(values._data, input, memory_format)
    return values


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, generator=None):
    values = rand(input.shape, dtype=input.dtype if dtype is None else dtype, requires_grad=requires_grad,
                  generator=generator)
    values._data = _laid_out_like(values._data, input, memory_format)
    return values


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)


Tensor.new_tensor = _new_tensor     # a factory: defined here, with tensor()
