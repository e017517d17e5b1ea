"""bfloat16 as torch's CPU has it: 16-bit storage, float32 arithmetic.

numpy has no bfloat16, and cextend takes no dependency for one (ml_dtypes).
A bfloat16 tensor's `_data` is a numpy array of the unstructured void dtype
"V2" holding the raw bits (the top half of a float32).  Why V2 and not
uint16: numpy refuses every arithmetic ufunc, reduction and read-as-float
cast on a void array, so an op that was not taught bfloat16 fails loudly
instead of computing on integer bits; while every pure data movement
(views, slicing, transposes, fancy indexing, concatenation, byte copies)
works on it unchanged, so views share storage as they must.

Values move between the two forms only here: `to_float32` is exact (the
bits shifted up), `from_float` rounds to nearest, ties to even, as
c10::BFloat16 does, with every NaN becoming 0xFFFF (torch's vectorised
conversion, which is what its CPU kernels use).  A float64 source goes
through float32 first, double rounding included, because torch's
conversion does the same.
"""
import numpy as np

NUMPY = np.dtype("V2")
_NAN_BITS = np.uint16(0xFFFF)


def is_bf16(numpy_dtype):
    # no other void dtype ever reaches a tensor, so the kind alone decides
    return numpy_dtype.kind == "V"


def _host(array):
    if type(array) is not np.ndarray:
        raise TypeError("bfloat16 tensors live in host memory only; got %s" % type(array).__name__)
    return array


def to_float32(array):
    """The float32 values of a V2 (bfloat16 bits) array, same shape and layout."""
    bits = _host(array).view(np.uint16)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def bits_of(values):
    """The bfloat16 bits (uint16) nearest to values (any real numpy array or number)."""
    f = np.asarray(values)
    if f.dtype != np.float32:
        with np.errstate(over="ignore"):    # past float32's range is inf, as torch's cast
            f = f.astype(np.float32)         # float64/ints: through float32, as torch converts
    u = f.view(np.uint32)
    rounded = ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
               ).astype(np.uint16)
    return np.where(np.isnan(f), _NAN_BITS, rounded).astype(np.uint16, copy=False)


def from_float(values):
    """A V2 array of the bfloat16 values nearest to `values`."""
    return np.asarray(bits_of(values)).view(NUMPY)


def cast(array, numpy_dtype):
    """array converted to numpy_dtype where one side (or both) is bfloat16."""
    numpy_dtype = np.dtype(numpy_dtype)
    if is_bf16(array.dtype):
        if is_bf16(numpy_dtype):
            return _host(array).copy()
        values = to_float32(array)
        if numpy_dtype == np.float32:
            return values
        with np.errstate(invalid="ignore", over="ignore"):     # inf/NaN to int: C's cast, as torch
            return values.astype(numpy_dtype)
    return from_float(_host(array))


def scalar_bits(value):
    """The V2 0-d array for a Python number."""
    return from_float(np.float64(value))


def python_values(array):
    """tolist()/item() of a V2 array: Python floats."""
    return to_float32(array).tolist()


def filled(shape, value):
    """A new V2 array of shape filled with the bfloat16 nearest to value."""
    return np.full(shape, scalar_bits(value).view(np.uint16)).view(NUMPY)


def add_arrays(a, b):
    """a + b for V2 arrays (gradient accumulation): float32 sum, rounded once."""
    return from_float(to_float32(a) + to_float32(b))


def upcast_grad(g):
    """A gradient a builtin node receives, as float32 if it is bfloat16.

    Every builtin backward then computes in float32 (numpy refuses V2), and
    the engine rounds what it returns to each bfloat16 input (fit_gradient),
    once, as torch's bfloat16 backward kernels do."""
    if g is not None and g._data.dtype.kind == "V":
        return g.float()        # differentiable: create_graph records through it
    return g
