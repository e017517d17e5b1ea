"""Reverse-mode automatic differentiation: Function, backward, grad, gradcheck."""
from cextend.autograd.engine import backward, grad
from cextend.autograd.function import Function, once_differentiable
from cextend.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from cextend.autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError


def Variable(data, requires_grad=False, volatile=False):
    """Legacy spelling: Variables and Tensors merged in torch 0.4, and
    Variable(t) returns the Tensor itself (requires_grad=True marks a leaf)."""
    import warnings
    from cextend.tensor import Tensor
    if not isinstance(data, Tensor):
        raise TypeError("Variable data has to be a tensor, but got %s" % type(data).__name__)
    if volatile:
        warnings.warn("volatile was removed and now has no effect. Use `with cextend.no_grad():` "
                      "instead.", UserWarning, stacklevel=2)
    if requires_grad:
        data.requires_grad_()
    return data

__all__ = ["Variable", "Function", "once_differentiable", "backward", "grad", "gradcheck", "gradgradcheck",
           "GradcheckError", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]
