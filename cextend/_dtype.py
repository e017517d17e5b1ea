"""cextend's dtypes: thin names over numpy dtypes, spelled as torch spells them.

`cextend.float32 is cextend.float`, `cextend.float64 is cextend.double`,
`cextend.int64 is cextend.long`.  Anywhere a dtype is accepted, a numpy
dtype or type (np.float64, "float32", Python's float = float64) works too.
bfloat16 has no numpy dtype: its `.numpy` is the void dtype "V2" its bits
are stored in (see cextend._bfloat16).
"""
import numpy as np

from cextend import _bfloat16


class dtype:
    """A tensor element type; `.numpy` is the numpy dtype behind it."""

    __slots__ = ("name", "numpy", "is_floating_point", "itemsize")

    def __init__(self, name, numpy_dtype, is_floating_point=None):
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = self.numpy.kind == "f" if is_floating_point is None else is_floating_point
        self.itemsize = self.numpy.itemsize

    def __repr__(self):
        return "cextend." + self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = half = dtype("float16", np.float16)
float32 = float = dtype("float32", np.float32)
float64 = double = dtype("float64", np.float64)
int32 = int = dtype("int32", np.int32)
int64 = long = dtype("int64", np.int64)
uint8 = dtype("uint8", np.uint8)
bool = dtype("bool", np.bool_)
bfloat16 = dtype("bfloat16", _bfloat16.NUMPY, is_floating_point=True)

_BY_NUMPY = {d.numpy: d for d in (float16, float32, float64, int32, int64, uint8, bool, bfloat16)}
DEFAULT_FLOAT = float32


def from_numpy(numpy_dtype):
    """Our dtype for a numpy dtype; TypeError for one cextend does not hold."""
    numpy_dtype = np.dtype(numpy_dtype)
    found = _BY_NUMPY.get(numpy_dtype.newbyteorder("=") if not numpy_dtype.isnative else numpy_dtype)
    if found is None:
        raise TypeError("cextend tensors hold float16/32/64, bfloat16, int32/64, uint8 or bool, "
                        "not %s" % numpy_dtype)
    return found


def as_dtype(value):
    """Normalise anything dtype-like (ours, numpy's, a name, a Python type)."""
    if isinstance(value, dtype):
        return value
    try:
        return from_numpy(np.dtype(value))
    except TypeError:
        raise TypeError("dtype must be a cextend dtype (e.g. cextend.float64), got %r" % (value,)) from None


def is_floating(numpy_dtype):
    """Whether tensors of this numpy dtype are floating point (bfloat16's V2 is)."""
    return numpy_dtype.kind == "f" or numpy_dtype.kind == "V"


def opmath(numpy_dtype):
    """The dtype torch computes a reduction of numpy_dtype in (its opmath
    type): float32 for float16, whose range a sum of a few thousand
    moderate values overflows, and for bfloat16; the dtype itself otherwise."""
    numpy_dtype = np.dtype(numpy_dtype)
    return np.dtype(np.float32) if numpy_dtype == np.float16 or numpy_dtype.kind == "V" else numpy_dtype


def in_opmath(array):
    """array in its opmath dtype (a float32 copy of a float16 or bfloat16 one)."""
    wide = opmath(array.dtype)
    if wide == array.dtype:
        return array
    return _bfloat16.to_float32(array) if array.dtype.kind == "V" else array.astype(wide)
