"""isclose, allclose and equal: the checks torch code runs on its results.

They follow ATen's definitions (TensorCompare.cpp) rather than numpy's,
which differ: torch measures the tolerance against `other` only, in the
operands' own dtype (float32 stays float32), demands equal dtypes, and
counts equal infinities as close before any arithmetic.
"""
import numpy as np

from cextend import _dtype
from cextend._ops import samples as S
from cextend._promotion import _torch_name
from cextend._ops._operands import broadcast_shapes, require_tensor
from cextend._ops.registry import register
from cextend.tensor import _wrap


def _check_tolerances(rtol, atol):
    if rtol < 0:
        raise RuntimeError("rtol must be greater than or equal to zero, but got %s" % rtol)
    if atol < 0:
        raise RuntimeError("atol must be greater than or equal to zero, but got %s" % atol)


def _close_array(a, b, rtol, atol, equal_nan):
    broadcast_shapes(a.shape, b.shape)
    with np.errstate(all="ignore"):
        close = np.equal(a, b)
        if equal_nan and a.dtype.kind == "f":
            close |= np.isnan(a) & np.isnan(b)
        if rtol == 0 and atol == 0:
            return close
        # Bool operands are measured in the default float dtype, integers
        # keep their own (a - b wraps as torch's does) and their tolerance
        # is a default-dtype tensor, so the comparison runs in that dtype.
        default = _dtype.DEFAULT_FLOAT.numpy
        if a.dtype.kind == "b":
            a, b = a.astype(default), b.astype(default)
        tolerance_dtype = a.dtype if a.dtype.kind == "f" else default
        allowed = tolerance_dtype.type(atol) + np.abs(tolerance_dtype.type(rtol) * b.astype(tolerance_dtype))
        actual = np.abs(a - b)
        if actual.dtype != allowed.dtype:
            actual = actual.astype(np.result_type(actual.dtype, allowed.dtype) if actual.dtype.kind == "f"
                                   else allowed.dtype)
        close |= np.isfinite(actual) & (actual <= allowed)
    return close


def _close(name, input, other, rtol, atol, equal_nan):
    require_tensor(input, name, "input")
    require_tensor(other, name, "other")
    a, b = input._data, other._data
    if a.dtype != b.dtype:
        raise RuntimeError("%s did not match %s" % (_torch_name(a.dtype), _torch_name(b.dtype)))
    _check_tolerances(rtol, atol)
    return _close_array(np.asarray(a), np.asarray(b), rtol, atol, equal_nan)


@register("isclose", samples=S.binary(distinct=True, tensor_other=True), gradcheck=False,
          family="comparison", integer_inputs=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (a bool tensor)."""
    return _wrap(np.asarray(_close("isclose", input, other, rtol, atol, equal_nan)))


@register("allclose", samples=S.binary(distinct=True, tensor_other=True), gradcheck=False,
          family="comparison", integer_inputs=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True where isclose holds everywhere (a Python bool, as torch returns)."""
    return bool(np.all(_close("allclose", input, other, rtol, atol, equal_nan)))


@register("equal", samples=S.binary(distinct=True, tensor_other=True), gradcheck=False,
          family="comparison", integer_inputs=True)
def equal(input, other):
    """True when both have the same size and the same elements (NaN is never equal)."""
    require_tensor(input, "equal", "input")
    require_tensor(other, "equal", "other")
    if tuple(input.shape) != tuple(other.shape):
        return False
    with np.errstate(all="ignore"):
        return bool(np.array_equal(np.asarray(input._data), np.asarray(other._data)))
