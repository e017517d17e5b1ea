"""A Python number written into a tensor of a given dtype, checked as torch checks it.

fill_, full, masked_fill, index_fill and `x[i] = number` convert the number
with c10's checked_convert: a value the dtype cannot hold raises
"value cannot be converted to type int64_t without overflow" instead of
wrapping (numpy's cast would store -2**63 for inf, or wrap 300 to 44 in
uint8).  The rules, read from c10/util/TypeCast.h and overflows():

- integer targets: a float must be finite and within [lowest, max] before
  truncation (255.9 does not fit uint8, -2.5 fits int32 as -2); an int must
  be within [lowest, max], except that unsigned targets take negative ints
  down to -max (they wrap: -1 is 255 in uint8, as in C);
- float32/float64 targets: a finite value beyond the type's range raises
  (inf and NaN pass); float16 rounds to inf, as torch's Half does;
- bool takes anything.
A Python int beyond 64 bits is refused first, with Python's OverflowError
as in torch.  0-d tensors used as values are cast without these checks, as
torch casts them.
"""
import numbers

import numpy as np

_C_NAMES = {"int64": "int64_t", "int32": "int", "uint8": "uint8_t", "float32": "float", "float64": "double"}


def _refuse(dtype):
    return RuntimeError("value cannot be converted to type %s without overflow"
                        % _C_NAMES.get(dtype.name, dtype.name))


def checked_scalar(value, dtype):
    """value (a Python or numpy number) as a numpy scalar of `dtype`."""
    dtype = np.dtype(dtype)
    if isinstance(value, (bool, np.bool_)):
        return dtype.type(bool(value))
    if isinstance(value, numbers.Integral):
        value = int(value)
        if not -2 ** 63 <= value < 2 ** 64:
            raise OverflowError("int too big to convert")
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            low = -int(info.max) if dtype.kind == "u" else int(info.min)
            if not low <= value <= info.max:
                raise _refuse(dtype)
            return dtype.type(value % (int(info.max) + 1) if value < 0 and dtype.kind == "u" else value)
        if dtype.kind == "f" and dtype.itemsize >= 4 and abs(value) > float(np.finfo(dtype).max):
            raise _refuse(dtype)
        return dtype.type(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not (np.isfinite(value) and info.min <= value <= info.max):
                raise _refuse(dtype)
            return dtype.type(int(value))
        if dtype.kind == "f" and dtype.itemsize >= 4 and np.isfinite(value) and abs(value) > float(np.finfo(dtype).max):
            raise _refuse(dtype)
        with np.errstate(over="ignore"):
            return dtype.type(value)
    return dtype.type(value)
