"""Parameter: a Tensor that a Module registers as one of its parameters."""
import numpy as np

from cextend import _torch_function
from cextend.tensor import Tensor


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): shares data's storage."""

    _prints_as_tensor = True     # torch prints a Parameter's data as tensor(...)
    # as torch's: ops on a Parameter give plain Tensors (it opts out of __torch_function__)
    __torch_function__ = _torch_function._disabled_torch_function_impl

    def __init__(self, data=None, requires_grad=True):
        array = np.empty(0, np.float32) if data is None else data._data
        self._init(array, False)
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        return (Parameter, (Tensor.detach(self), self.requires_grad))
