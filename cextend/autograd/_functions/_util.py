"""Small helpers shared by the built-in Functions."""
import numpy as np


def raw(x):
    """The numpy value behind a Tensor, or the Python scalar itself."""
    from cextend.tensor import Tensor
    return x._data if isinstance(x, Tensor) else x


def wrap(array):
    from cextend.tensor import _wrap
    return _wrap(array)


def view_of(array, base):
    """A Tensor for `array`, a numpy view into base's storage: it shares
    base's version counter, so in-place changes through either are seen."""
    from cextend.tensor import _wrap
    out = _wrap(array)
    out._base = base._base if base._base is not None else base
    out._version_counter = base._version_counter
    return out


def maybe_view_of(array, base):
    """view_of when numpy returned a view of base's data, else a fresh Tensor."""
    # numpy returns either a view or a fresh allocation, so the cheap
    # bounds test is exact here.
    if np.may_share_memory(array, base._data):
        return view_of(array, base)
    return wrap(array)


def constant(array):
    """A Tensor that never requires grad (masks, signs)."""
    return wrap(array)
