"""Argument checks for the kernel API, in plain numpy.

Every check names the argument and says what was expected, so a misuse
surfaces as a clear TypeError/ValueError in Python (the dtype and
value ones also RuntimeErrors, as torch raises them) long before C sees it.
(C re-checks pointers and sizes as a last line of defence.)
"""
import numbers

import numpy as np

from cextend import _sizes
from cextend._errors import ArgumentError, DtypeError  # noqa: F401  (this module's errors, named here too)

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
INDEX_DTYPE = np.dtype(np.int64)


def array(value, name):
    """value itself, if it is a numpy array; TypeError naming `name` if not."""
    if not isinstance(value, np.ndarray):
        raise TypeError("%s must be a numpy.ndarray, got %s" % (name, type(value).__name__))
    return value


def float_dtype(**operands):
    """The one float dtype shared by every operand given (None ones are skipped).

    Raises TypeError for non-native byte order, a non-float32/64 dtype, or
    operands of different dtypes.
    """
    first_name = first_dtype = None
    for name, arr in operands.items():
        if arr is None:
            continue
        dtype = array(arr, name).dtype
        if dtype.byteorder not in ("=", "|") and not dtype.isnative:
            raise DtypeError("%s must be in native byte order, got dtype '%s'; convert it with "
                            "%s.astype(%s.dtype.newbyteorder('='))" % (name, dtype.str, name, name))
        if dtype not in FLOAT_DTYPES:
            raise DtypeError("%s must be float32 or float64, got %s" % (name, dtype))
        if first_dtype is None:
            first_name, first_dtype = name, dtype
        elif dtype != first_dtype:
            raise DtypeError("%s is %s but %s is %s: all operands must share one dtype"
                            % (name, dtype, first_name, first_dtype))
    return first_dtype


def index_array(value, name):
    """An int64 array in native byte order (argmax indices)."""
    array(value, name)
    if value.dtype != INDEX_DTYPE:
        raise DtypeError("%s must be int64, got %s" % (name, value.dtype))
    return value


def ndim(arr, name, expected, shape_hint):
    """arr has exactly `expected` dimensions; shape_hint names them, e.g. '(M, K)'."""
    if arr.ndim != expected:
        raise ArgumentError("%s must be %d-D %s, got shape %s" % (name, expected, shape_hint, arr.shape))


def min_ndim(arr, name, minimum, shape_hint):
    if arr.ndim < minimum:
        raise ArgumentError("%s must have at least %d dimension(s) %s, got shape %s"
                         % (name, minimum, shape_hint, arr.shape))


def shape(arr, name, expected, what):
    """arr.shape == expected; `what` says where the expectation comes from."""
    if arr.shape != tuple(expected):
        raise ArgumentError("%s must have shape %s (%s), got %s" % (name, tuple(expected), what, arr.shape))


def real_scalar(value, name):
    """A real Python or numpy number (not bool, complex, array or string)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be a real number, got %s" % (name, type(value).__name__))
    return value


def sizes(value, name):
    """A shape argument (a sequence of ints) as a tuple: TypeError for another
    kind, ArgumentError for a negative size or more elements than memory can
    address (numpy's own errors name neither the argument nor the problem)."""
    try:
        shape = tuple(value)
    except TypeError:
        raise TypeError("%s must be a tuple of ints, got %s" % (name, type(value).__name__)) from None
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral):
            raise TypeError("%s must be a tuple of ints, got an element of type %s" % (name, type(d).__name__))
    shape = tuple(int(d) for d in shape)
    for d in shape:
        if d < 0:
            raise ArgumentError("%s must not hold a negative size, got %s" % (name, shape))
    _sizes.check_ndim(shape, name)
    _sizes.check_count(shape, name)
    return shape


def empty(shape, dtype, op):
    """np.empty for a kernel's result; a failed allocation is an
    OutOfMemoryError (a MemoryError and a RuntimeError) naming op."""
    try:
        return np.empty(shape, dtype)
    except MemoryError as error:
        raise _sizes.out_of_memory(op, error, shape) from None


def output(out, name, expected_shape, dtype):
    """A fresh array, or the user's `out` after checking it can take the result."""
    if out is None:
        return empty(expected_shape, dtype, "the output")
    array(out, name)
    if out.dtype != dtype:
        raise DtypeError("%s must have dtype %s, got %s" % (name, dtype, out.dtype))
    if out.shape != tuple(expected_shape):
        raise ArgumentError("%s must have shape %s, got %s" % (name, tuple(expected_shape), out.shape))
    if not out.flags.writeable:
        raise ArgumentError("%s is read-only" % name)
    if not out.flags.c_contiguous:
        raise ArgumentError("%s must be C-contiguous" % name)
    if not out.flags.aligned:
        raise ArgumentError("%s must be aligned to its dtype (%d bytes)" % (name, dtype.itemsize))
    return out


def overlaps(out, *inputs):
    """True when out may share memory with any input (conservative bounds test)."""
    return out is not None and any(a is not None and np.may_share_memory(out, a) for a in inputs)


def into(out, inputs, shape, dtype, compute):
    """Run compute(result) on a checked output, detouring through a fresh
    array when `out` overlaps an input so the inputs are read unmodified."""
    result = output(out, "out", shape, dtype)
    if overlaps(out, *inputs):
        fresh = np.empty(shape, dtype=dtype)
        compute(fresh)
        np.copyto(result, fresh)
    else:
        compute(result)
    return result
