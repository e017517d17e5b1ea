"""torch.autograd.Variable, the pre-0.4 spelling of a Tensor that code of
the ffi era still uses.

As in torch, Variable(t) is not t: it is a new leaf sharing t's storage
(t.detach()), with requires_grad as asked, so gradients reach the
Variable's .grad and never t's.  Every Tensor is an instance of Variable.
"""
import warnings
from cextend import _factories
from cextend.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False): a Tensor."""

    def __new__(cls, data=None, requires_grad=False, volatile=False, name=None):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with cextend.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            variable = _factories.empty(0)
        elif isinstance(data, Tensor):
            variable = data.detach()
        else:
            raise TypeError("Variable data has to be a tensor, but got %s" % type(data).__name__)
        if not isinstance(requires_grad, bool):
            raise TypeError("Variable(): argument 'requires_grad' must be bool, not %s"
                            % type(requires_grad).__name__)
        if requires_grad:
            variable.requires_grad_()
        return variable
