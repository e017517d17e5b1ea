"""torch.overrides: the helpers of the __torch_function__ protocol.

A Python function of one's own joins the protocol as torch's Python-level
functions do:

    def f(a, b):
        if has_torch_function((a, b)):
            return handle_torch_function(f, (a, b), a, b)
        ...

cextend's own functions and a Tensor subclass's methods already dispatch
(cextend._torch_function says where and how).  torch._C's switches are
cextend._C's too: DisableTorchFunctionSubclass, DisableTorchFunction,
_disabled_torch_function_impl, _is_torch_function_enabled.
"""
import functools
import sys

from cextend import _torch_function as _tf
from cextend import _C
from cextend.tensor import Tensor

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_default_nowrap_functions",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "resolve_name", "is_tensor_like", "is_tensor_method_or_property",
           "wrap_torch_function"]

DisableTorchFunctionSubclass = _tf.DisableTorchFunctionSubclass
DisableTorchFunction = _tf.DisableTorchFunction

# `torch._C.DisableTorchFunctionSubclass()` runs unchanged under `import cextend as torch`.
_C.DisableTorchFunctionSubclass = _tf.DisableTorchFunctionSubclass
_C.DisableTorchFunction = _tf.DisableTorchFunction
_C._disabled_torch_function_impl = _tf._disabled_torch_function_impl
_C._is_torch_function_enabled = _tf._is_torch_function_enabled


def has_torch_function(relevant_args):
    """Whether an element of relevant_args overrides (exact Tensors and
    nn.Parameters do not), with dispatch not switched off."""
    return bool(_tf.overloaded_args(tuple(relevant_args), None, nested=False))


def has_torch_function_unary(arg):
    return bool(_tf.overloaded_args((arg,), None, nested=False))


def has_torch_function_variadic(*args):
    return bool(_tf.overloaded_args(args, None, nested=False))


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the overriding __torch_function__s of relevant_args' elements for
    public_api(*args, **kwargs), in torch's order; TypeError if all return
    NotImplemented."""
    found = _tf.overloaded_args(tuple(relevant_args), None, nested=False, tensors=True)
    name = "%s.%s" % (public_api.__module__, public_api.__name__)
    return _tf.handle(public_api, found, args, kwargs, name, python_style=True, stacklevel=3)


def wrap_torch_function(dispatcher):
    """A decorator: the function dispatches on the Tensor-likes that
    dispatcher(*args, **kwargs) returns."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def is_tensor_like(inp):
    """A Tensor, or anything whose type has a __torch_function__."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def _tensor_funcs():
    funcs = {}
    for name, (original, _) in _tf.subclass_wrappers().items():
        if isinstance(original, property):
            funcs[original.__get__] = "cextend.Tensor.%s.__get__" % name
        else:
            funcs.setdefault(original, "cextend.Tensor.%s" % name)
    return funcs


def _public_funcs():
    """{what module.name holds now: (module, "module.name")} for the dispatching
    functions still reached there (directly or under a later functools.wraps wrapper)."""
    funcs = {}
    for wrapper, qualified in _tf.PUBLIC.items():
        module_name, name = qualified.rsplit(".", 1)
        module = sys.modules.get(module_name)
        current = inner = getattr(module, name, None)
        while inner is not None and inner is not wrapper:
            inner = getattr(inner, "__wrapped__", None)
        if inner is not None:
            funcs[current] = (module, qualified)
    return funcs


def get_overridable_functions():
    """{namespace: [functions a __torch_function__ receives]} for cextend,
    cextend.nn.functional and cextend.Tensor (its properties by __get__)."""
    result = {}
    for function, (module, _) in _public_funcs().items():
        result.setdefault(module, []).append(function)
    result[Tensor] = list(_tensor_funcs())
    return result


def resolve_name(f):
    """The name under which f, as a __torch_function__ receives it, is reached
    ("cextend.mean", "cextend.Tensor.add", "cextend.Tensor.grad.__get__"); None if unknown."""
    public = _public_funcs().get(f)
    return public[1] if public is not None else _tensor_funcs().get(f)


def is_tensor_method_or_property(func):
    """Whether func is a Tensor method or a property's __get__ as
    __torch_function__ receives them (their first argument is the tensor)."""
    return func in _tensor_funcs() or getattr(func, "__name__", None) == "__get__"


def get_default_nowrap_functions():
    """The funcs whose results the default Tensor.__torch_function__ leaves
    as they are: field reads, where `t.grad is t.grad` should hold."""
    _tf.subclass_wrappers()
    return set(_tf.NOWRAP)


def get_ignored_functions():
    """Public callables that do not dispatch: cextend's and cextend.nn.functional's
    functions that take no tensor, and Tensor's that torch leaves out too."""
    ignored, public = set(), _public_funcs()
    # the package and its nn.functional are imported before this module is (cextend/__init__.py)
    for module in (sys.modules["cextend"], sys.modules["cextend.nn.functional"]):
        for name, value in vars(module).items():
            if (not name.startswith("_") and callable(value) and not isinstance(value, type)
                    and value not in public and type(value).__name__ == "function"):
                ignored.add(value)
    for name in ("as_subclass", "_make_subclass", "__torch_function__", "__init_subclass__", "__iter__",
                 "__hash__"):
        value = getattr(Tensor, name, None)
        if value is not None:
            ignored.add(value)
    return ignored
