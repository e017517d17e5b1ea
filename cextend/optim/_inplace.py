"""In-place array updates with the arithmetic of torch's CPU kernels.

Each optimizer step is written as the sequence of in-place tensor ops that
torch's single-tensor implementation performs; these helpers are those
ops on the arrays behind the tensors, with the same order of operations
inside each element:

    add_(a, b, alpha)          a + alpha * b
    addcmul_(a, t1, t2, v)     a + (v * t1) * t2
    addcdiv_(a, t1, t2, v)     a + (v * t1) / t2
    lerp_(a, end, w)           a + w * (end - a)          if |w| < 0.5
                               end - (end - a) * (1 - w)  otherwise

Scalars are Python floats, so numpy casts them to the array's dtype first,
as torch's kernels do (a float32 step computes in float32).

torch's CPU kernels fuse the multiply-adds above (FMA: one rounding for
a + b*c).  add/add_ of host float arrays run cextend's C kernel, a true
FMA in both dtypes, so they are torch's to the bit.  In the other
multiply-adds (addcmul_, lerp_), float32 is computed in float64 -- the
float32 product is exact there -- and rounded once, which reproduces
torch's float32 results (a double-rounding tie would be needed to differ);
float64 rounds twice, so single elements may differ from torch's in the
last bit.  The fused optimizer kernels (src/generic/training.c) round
exactly as these helpers do.  Other operations (sqrt) are torch's own vendor routines and
may differ by an ulp.

Written with Python operators (not ufunc `out=`), so the same code runs on
device arrays for the operations they provide (unfused there).
"""
import numpy as np

from cextend import _backend
from cextend.tensor import _wrap
from cextend import _dtype
from cextend.tensor import Tensor


def mul_(a, scalar):
    a *= scalar
    return a


def _fused(a):
    """Whether a multiply-add into `a` is computed fused: float32 host arrays, and the numpy
    scalars that operations on 0-d arrays return."""
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype == np.float32


def _round32(x64):
    return x64.astype(np.float32)


_FMA_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fma_add(a, b, alpha):
    """a + alpha * b rounded once (cextend's C kernel), for host float arrays of one dtype and
    shape in any layout (strided ones through contiguous copies); None for anything else."""
    fused = _backend.axpy(alpha, b, a)
    if fused is None and type(a) is np.ndarray and type(b) is np.ndarray and a.dtype in _FMA_DTYPES \
            and b.dtype == a.dtype and b.shape == a.shape:
        fused = _backend.axpy(alpha, np.array(b, order="C"), np.array(a, order="C"))
    return fused


def add(a, b, alpha=1.0):
    """torch.add(a, b, alpha=alpha): a new array."""
    if alpha == 1:
        return a + b
    fused = _fma_add(a, b, alpha)
    if fused is not None:
        return fused
    if _fused(a):
        return _round32(a.astype(np.float64) + np.float64(np.float32(alpha)) * b)
    return a + float(alpha) * b


def add_(a, b, alpha=1.0):
    if alpha == 1:
        a += b
    elif _backend.axpy(alpha, b, a, out=a) is not None:
        pass
    elif (fused := _fma_add(a, b, alpha)) is not None:
        a[...] = fused
    elif _fused(a):
        a[...] = add(a, b, alpha)
    else:
        a += float(alpha) * b
    return a


def addcmul_(a, t1, t2, value=1.0):
    product = t1 if value == 1 else float(value) * t1       # rounded to a's dtype, as torch's value * t1
    if _fused(a):
        a[...] = _round32(a.astype(np.float64) + product.astype(np.float64) * t2)
    else:
        a += product * t2
    return a


def addcdiv_(a, t1, t2, value=1.0):
    a += (float(value) * t1) / t2 if value != 1 else t1 / t2
    return a


def lerp_(a, end, weight):
    w = a.dtype.type(weight)
    difference = end - a
    if _fused(a):
        if abs(w) < 0.5:
            a[...] = _round32(a.astype(np.float64) + np.float64(w) * difference)
        else:
            a[...] = _round32(end.astype(np.float64) - difference.astype(np.float64) * np.float64(np.float32(1) - w))
    elif abs(w) < 0.5:
        a += w * difference
    else:
        a[...] = end - difference * (a.dtype.type(1) - w)
    return a


def maximum_(a, b):
    """torch.maximum(a, b, out=a): NaN propagates."""
    np.maximum(a, b, out=a)
    return a


def sqrt(a):
    return np.sqrt(a)


def zeros_like(array):
    """A Tensor of zeros with the array's shape, dtype and device."""
    return _wrap(np.zeros_like(array))


def full_like(array, value):
    out = np.zeros_like(array)
    out[...] = value
    return _wrap(out)


def step_tensor(value=0.0):
    """The 0-d `step` counter torch keeps in optimizer state: float32, or float64 while the
    default dtype is float64 (torch's _get_scalar_dtype)."""
    dtype = np.float64 if _dtype.DEFAULT_FLOAT.numpy == np.float64 else np.float32
    return _wrap(np.array(value, dtype=dtype))


def increment(step):
    """step_t += 1 on the counter tensor; returns the new value as a float."""
    step._data += 1
    step._bump_version()
    return float(step._data)


def bump(*tensors):
    """Record that these tensors changed in place (their version counters)."""
    for t in tensors:
        if t is not None:
            t._bump_version()


def scalar(value):
    """A hyperparameter as a Python number (1-element tensors allowed, as torch's lr)."""
    if isinstance(value, Tensor):
        return value.item()
    return value
