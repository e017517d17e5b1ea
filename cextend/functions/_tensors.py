"""Between Tensors and the numpy-level kernels."""
from cextend.tensor import Tensor, _wrap


def data(t, name):
    """The array behind a Tensor argument, with a clear error for anything else."""
    if not isinstance(t, Tensor):
        raise TypeError("%s must be a cextend Tensor, got %s" % (name, type(t).__name__))
    return t._data


def wrap(array):
    return None if array is None else _wrap(array)
