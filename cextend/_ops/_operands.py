"""Turning op arguments into Tensors or Python numbers, and numbers into arrays."""
import numbers

import numpy as np
from cextend._errors import ArgumentError
from cextend.tensor import _wrap

_SCALARS = (int, float, bool)


def is_tensor(x):
    return getattr(x, "_data", None) is not None


def operand(x):
    """A Tensor, a Python number (numpy scalars become Python numbers, which
    are "weak" in type promotion, as in torch), or NotImplemented."""
    t = type(x)
    if t in _SCALARS or is_tensor(x):
        return x
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, np.ndarray):
        return _wrap(x)
    return NotImplemented


def require_operand(x, op, name="other"):
    value = operand(x)
    if value is NotImplemented:
        raise TypeError("%s(): argument '%s' must be a Tensor or a number, not %s"
                        % (op, name, type(x).__name__))
    return value


def require_tensor(x, op, name="input"):
    if not is_tensor(x):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (op, name, type(x).__name__))
    return x


def as_array(x, dtype):
    """x's values in dtype: a Tensor's array (cast if needed) or the number itself."""
    if type(x) in _SCALARS:
        return x
    data = x._data
    return data if data.dtype == dtype else data.astype(dtype)


def scalar_value(x, op, name):
    """A Python number from a number or a one-element Tensor."""
    if is_tensor(x):
        if x._data.size != 1:
            raise RuntimeError("%s(): %s must be a number or a one-element tensor, got shape %s"
                               % (op, name, list(x._data.shape)))
        return x._data.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Number):
        raise TypeError("%s(): argument '%s' must be a number, not %s" % (op, name, type(x).__name__))
    return x


def broadcast_shapes(*shapes):
    """np.broadcast_shapes with torch's error (a RuntimeError naming the dim)."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise broadcast_error(*shapes) from None


def broadcast_error(*shapes):
    """torch's infer_size message for the first pair of shapes that clash."""
    current = ()
    for shape in shapes:
        ndim = max(len(current), len(shape))
        a = (1,) * (ndim - len(current)) + tuple(current)
        b = (1,) * (ndim - len(shape)) + tuple(shape)
        for i in range(ndim - 1, -1, -1):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                return RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                                    "non-singleton dimension %d" % (a[i], b[i], i))
        current = tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(a, b))
    # no clash: numpy refused the size of the result (more than memory can address)
    return ArgumentError("shapes %s broadcast to a tensor of size %s, more than memory can address"
                         % (", ".join(str(list(s)) for s in shapes), list(current)))
