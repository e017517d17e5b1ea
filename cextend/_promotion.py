"""Type promotion as torch does it (torch.result_type), not as numpy does.

Operands fall into three priority classes: tensors with dimensions, 0-d
tensors, and Python numbers ("wrapped" scalars).  Within a class dtypes
promote normally; across classes a lower class only matters when it
raises the *category* (bool < integer < floating), and a Python float
then counts as the default float dtype.  So a float32 tensor times a
0-d float64 tensor stays float32, an int64 tensor times 0.5 is float32,
and an int64 tensor plus a 0-d float64 tensor is float64.
"""
import numpy as np

from cextend import _dtype

_BOOL = np.dtype(np.bool_)
_INT64 = np.dtype(np.int64)
_FLOAT32 = np.dtype(np.float32)


def category(numpy_dtype):
    """0 for bool, 1 for integers, 2 for floating point (bfloat16's V2 included)."""
    kind = numpy_dtype.kind
    return 2 if kind == "f" or kind == "V" else (0 if kind == "b" else 1)


def promote_types(a, b):
    """torch.promote_types for two numpy dtypes (None means "no operand yet")."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if a.kind == "V" or b.kind == "V":
        # bfloat16 and float16 share no wider 16-bit type: both become float32,
        # and a float32 or float64 partner wins, as in torch's table
        return max(_FLOAT32, a if b.kind == "V" else b, key=lambda d: d.itemsize)
    # Same category: the wider float, or numpy's (= torch's) integer lattice.
    return np.promote_types(a, b)


def _combine_categories(higher, lower):
    """The result when `lower`-priority operands meet `higher`-priority ones."""
    if higher is None:
        return lower
    if lower is None or category(higher) == 2:
        return higher
    if higher.kind == "b" or category(lower) == 2:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value):
    """The dtype a Python number takes part in promotion with."""
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, int):
        return _INT64
    return _dtype.DEFAULT_FLOAT.numpy


def result_type(*operands):
    """The numpy dtype of an elementwise op over Tensors and Python numbers."""
    dimensioned = zero_dim = wrapped = None
    for x in operands:
        data = getattr(x, "_data", None)
        if data is not None:
            if data.ndim:
                dimensioned = promote_types(dimensioned, data.dtype)
            else:
                zero_dim = promote_types(zero_dim, data.dtype)
        elif x is not None:
            wrapped = promote_types(wrapped, scalar_dtype(x))
    return _combine_categories(dimensioned, _combine_categories(zero_dim, wrapped))


def binary_result_type(a, b):
    """result_type(a, b) with a fast path for two tensors of one dtype."""
    da = getattr(a, "_data", None)
    db = getattr(b, "_data", None)
    if da is not None:
        if db is not None:
            if da.dtype == db.dtype:
                return da.dtype
        elif da.dtype.kind == "f" and type(b) is float or type(b) is int and da.dtype.kind in "iuf":
            return da.dtype
    return result_type(a, b)


def float_result(numpy_dtype):
    """What an op that always computes in floating point (true division,
    sin, mean) uses for inputs of this dtype: integers become the default float."""
    return numpy_dtype if category(numpy_dtype) == 2 else _dtype.DEFAULT_FLOAT.numpy


def can_cast(from_dtype, to_dtype):
    """torch.can_cast: no float -> integer, no non-bool -> bool."""
    if category(from_dtype) == 2 and category(to_dtype) != 2:
        return False
    if from_dtype.kind != "b" and to_dtype.kind == "b":
        return False
    return True


def check_inplace_cast(result, target):
    """An in-place op must be able to store its result type in the tensor's dtype."""
    if not can_cast(result, target):
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (_torch_name(result), _torch_name(target)))


_TORCH_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                "void16": "BFloat16"}


def _torch_name(numpy_dtype):
    """torch's ScalarType names, used in its error messages (Float, Long, ...)."""
    return _TORCH_NAMES.get(np.dtype(numpy_dtype).name, np.dtype(numpy_dtype).name)
