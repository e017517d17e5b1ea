"""__torch_function__ dispatch: torch's protocol for Tensor-likes and Tensor subclasses.

An argument "overrides" when its type has a __torch_function__ that is not
_disabled_torch_function_impl and the type is not exactly Tensor.  A call
with such arguments goes to their __torch_function__s instead: subclasses
before superclasses, otherwise left to right, the next one on NotImplemented,
TypeError when all decline (torch's rules, NEP 18's).

Where the checks sit, and why there:
- Public functions (the cextend namespace, cextend.nn.functional) are
  wrapped once (public_function); the wrapper is the public identity, so
  `HANDLED_FUNCTIONS[cextend.mean]` is what a handler receives.  Its fast
  path is a set lookup per argument's type: a call whose arguments are all
  of known non-overriding types goes straight to the op.
- Tensor's own methods stay unwrapped: a plain tensor's method call costs
  nothing extra (the per-op autograd overhead is benchmarked).  A Tensor
  subclass gets dispatching copies of Tensor's methods, operators and
  properties when it is defined (prepare_subclass), so everything called
  on a subclass instance dispatches, with `func` the Tensor attribute that
  torch passes (Tensor.add for `x + y`, Tensor.grad.__get__ for `x.grad`).
  Binary operators with a plain tensor on the left reach the subclass
  through Python's reflected-operand rule.  Not covered: a plain tensor's
  named method with an overriding argument (`plain.add(sub)`), which torch
  dispatches and this calls directly.

This module imports nothing from cextend at import time: tensor.py imports it.
"""
import functools
import sys
import threading
import types as _types
import warnings

# Set by cextend._ops.shape when it is imported (it imports this module, not
# the other way round): the alias view as_subclass makes, and detach.
alias = None
detach = None

_ENABLED, _SUBCLASSES_DISABLED, _ALL_DISABLED = 0, 1, 2


class _State(threading.local):
    level = _ENABLED         # torch keeps this per thread too


_state = _State()


class _DisabledImpl:
    """torch._C._disabled_torch_function_impl: a subclass that sets its
    __torch_function__ to this opts out of the protocol (nn.Parameter does).
    Not a descriptor, so class and instance access give this same object."""

    __slots__ = ()
    __name__ = __qualname__ = "_disabled_torch_function_impl"

    def __call__(self, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<built-in function _disabled_torch_function_impl>"

    def __reduce__(self):
        return "_disabled_torch_function_impl"


_disabled_torch_function_impl = _DisabledImpl()


class _Disable:
    _level = _SUBCLASSES_DISABLED

    def __enter__(self):
        self._saved = _state.level
        _state.level = max(self._saved, self._level)
        return self

    def __exit__(self, *exc):
        _state.level = self._saved
        return False


class DisableTorchFunctionSubclass(_Disable):
    """torch._C.DisableTorchFunctionSubclass: inside it no argument overrides
    (what the default Tensor.__torch_function__ runs func under)."""


class DisableTorchFunction(_Disable):
    """torch._C.DisableTorchFunction (cextend has no torch-function modes, so
    it disables what DisableTorchFunctionSubclass does)."""
    _level = _ALL_DISABLED


def _is_torch_function_enabled():
    return _state.level == _ENABLED


# Types known not to override: a set lookup is the whole cost of a call
# whose arguments are all of these.  Types met on the slow path without an
# override join it (numpy scalars, nn.Parameter, dtypes ...); a class that
# gains a __torch_function__ after its instances were first passed to an op
# is not noticed.  Lists and tuples never join: their items are checked.
_PLAIN = {int, float, bool, complex, str, bytes, type(None), slice, type(Ellipsis), range}
_CONTAINERS = (list, tuple)
Tensor = None               # set by tensor.py once the class exists


def _overrides(kind):
    tf = getattr(kind, "__torch_function__", None)
    return tf is not None and tf is not _disabled_torch_function_impl and kind is not Tensor


def _collect(obj, found, kinds, tensors):
    kind = type(obj)
    if kind is Tensor:
        if not tensors:
            return
    elif kind in _PLAIN:
        return
    elif isinstance(obj, _CONTAINERS):
        return
    elif not _overrides(kind):
        _PLAIN.add(kind)
        return
    if kind in kinds:
        return
    kinds.add(kind)
    # torch's order: left to right, but a subclass goes before the first
    # argument whose type it subclasses
    for i, other in enumerate(found):
        if issubclass(kind, type(other)):
            found.insert(i, obj)
            return
    found.append(obj)


def overloaded_args(args, kwargs, nested=True, tensors=False):
    """The arguments whose __torch_function__ to try, in torch's order
    (items of list and tuple arguments included where `nested`, as torch
    checks its TensorList and index arguments).  `tensors`: plain Tensors
    too, as torch's Python-level handle_torch_function counts them (their
    default __torch_function__ declines a call that involves other types)."""
    if _state.level:
        return []
    found, kinds = [], set()
    for values in (args, kwargs.values() if kwargs else ()):
        for a in values:
            if nested and isinstance(a, _CONTAINERS):
                for item in a:
                    _collect(item, found, kinds, tensors)
            else:
                _collect(a, found, kinds, tensors)
    return found


_PLAIN_METHOD = ("Defining your `__torch_function__` as a plain method is deprecated and will be an error "
                 "in future, please define it as a classmethod.")
# (torch's Python-level handler words it with a backtick missing)
_PLAIN_METHOD_PY = ("Defining your `__torch_function__ as a plain method is deprecated and will be an error "
                    "in future, please define it as a classmethod.")


def handle(func, overloaded, args, kwargs, name, python_style=False, stacklevel=3):
    """Call the overloaded arguments' __torch_function__ in order; the first
    result that is not NotImplemented is the call's.  python_style: torch's
    handle_torch_function (its words, its warning class); else the wording
    of torch's C++ dispatch, which serves torch.* functions and methods."""
    kinds = tuple(type(a) for a in overloaded)
    if kwargs is None:
        kwargs = {}
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            if python_style:
                warnings.warn(_PLAIN_METHOD_PY, DeprecationWarning, stacklevel=stacklevel)
            else:
                warnings.warn(_PLAIN_METHOD, UserWarning, stacklevel=stacklevel)
        result = method(func, kinds, args, kwargs)
        if result is not NotImplemented:
            return result
    if python_style:
        raise TypeError("no implementation found for '%s' on types that implement __torch_function__: %s"
                        % (name, [type(a) for a in overloaded]))
    raise TypeError("Multiple dispatch failed for '%s'; all __torch_function__ handlers returned "
                    "NotImplemented:\n\n%s\n" % (name, "".join("  - tensor subclass %s\n" % type(a)
                                                               for a in overloaded)))


# -- public functions ------------------------------------------------------

PUBLIC = {}                 # wrapper -> its public name ("cextend.mean")


def public_function(raw, module, name, python_style=False):
    """raw under its public name, checking its arguments for overrides."""
    plain = _PLAIN
    qualified = "%s.%s" % (module, name)

    def public(*args, **kwargs):
        for a in args:
            kind = type(a)
            if kind not in plain:
                if kind is not list and kind is not tuple:
                    return _slow(args, kwargs)
                for b in a:
                    if type(b) not in plain:
                        return _slow(args, kwargs)
        if not kwargs:
            return raw(*args)
        for a in kwargs.values():
            kind = type(a)
            if kind not in plain:
                if kind is not list and kind is not tuple:
                    return _slow(args, kwargs)
                for b in a:
                    if type(b) not in plain:
                        return _slow(args, kwargs)
        return raw(*args, **kwargs)

    def _slow(args, kwargs):
        found = overloaded_args(args, kwargs)
        if not found:
            return raw(*args, **kwargs)
        if python_style:
            found = overloaded_args(args, kwargs, tensors=True)
        return handle(_identity(), found, args, kwargs, qualified, python_style, stacklevel=4)

    def _identity():
        # A handler keys on what users reach as module.name: where that is a
        # later wrapper around this one (functools.wraps), it is the func.
        current = getattr(sys.modules.get(module), name, None)
        inner = current
        while inner is not None and inner is not public:
            inner = getattr(inner, "__wrapped__", None)
        return public if inner is None else current

    functools.update_wrapper(public, raw)
    public.__name__ = public.__qualname__ = name
    public.__module__ = module
    PUBLIC[public] = qualified
    return public


def wrap_namespace(namespace, module, names=None, python_style=False, skip=()):
    """Replace the public Python functions of a namespace dict by their
    dispatching wrappers (all of them, or those in `names`)."""
    for name in list(names if names is not None else namespace):
        raw = namespace.get(name)
        if (name.startswith("_") or name in skip or not isinstance(raw, _types.FunctionType)
                or raw in PUBLIC):
            continue
        namespace[name] = public_function(raw, module, name, python_style)


# -- Tensor subclasses -----------------------------------------------------

# What torch passes as func for an operator: its named op where it has one.
_OPERATOR_FUNCS = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__mod__": "remainder", "__pow__": "pow", "__matmul__": "matmul",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__ne__": "ne",
    "__neg__": "neg", "__abs__": "abs", "__pos__": "positive",
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__ipow__": "pow_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
}
# A reflected operator with a tensor on the left is the left's forward op:
# `plain - sub` reaches sub.__rsub__(plain) here, and torch passes sub(plain, sub).
_REFLECTED = {
    "__radd__": ("add", "+"), "__rsub__": ("sub", "-"), "__rmul__": ("mul", "*"),
    "__rtruediv__": ("div", "/"), "__rfloordiv__": ("__floordiv__", "//"), "__rmod__": ("remainder", "%"),
    "__rpow__": ("pow", "** or pow()"), "__rmatmul__": ("matmul", "@"), "__rand__": ("__and__", "&"),
    "__ror__": ("__or__", "|"), "__rxor__": ("__xor__", "^"), "__rlshift__": ("__lshift__", "<<"),
    "__rrshift__": ("__rshift__", ">>"),
}
_BINARY = {"__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
           "__matmul__", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__",
           "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}
# Not dispatched (torch's ignored list, and what the object model needs as is).
_UNDISPATCHED = {"__init__", "__new__", "__init_subclass__", "__torch_function__", "__iter__", "__hash__",
                 "__dir__", "__subclasshook__", "__delitem__", "__getattribute__", "__getattr__",
                 "__setattr__", "__delattr__", "__class__", "__dict__", "__weakref__", "__doc__",
                 "__module__", "__slots__", "__array_ufunc__", "__array_priority__", "__reduce__",
                 "__sizeof__", "__getstate__", "__setstate__", "__class_getitem__", "as_subclass",
                 "_make_subclass"}

_ready = False
_pending = []
_wrappers = {}              # name -> (Tensor's attribute it was made from, the subclass's version)
NOWRAP = set()              # funcs whose results the default __torch_function__ returns as they are


def _tensor_func(name):
    return Tensor.__dict__.get(name)


def _method_wrapper(name, raw):
    func, shown_name = raw, name
    if name in _OPERATOR_FUNCS and _tensor_func(_OPERATOR_FUNCS[name]) is not None:
        shown_name = _OPERATOR_FUNCS[name]
        func = _tensor_func(shown_name)
    qualified = "cextend.Tensor.%s" % shown_name

    if name in _REFLECTED:
        forward, symbol = _REFLECTED[name]
        forward_func = _tensor_func(forward) or raw
        forward_name = "cextend.Tensor.%s" % forward

        def op(self, other):
            found = overloaded_args((self, other), None)
            if not found:
                return raw(self, other)
            if isinstance(other, Tensor):
                call, args, shown = forward_func, (other, self), forward_name
            else:
                call, args, shown = func, (self, other), qualified
            try:
                return handle(call, found, args, {}, shown)
            except TypeError:
                if type(other) is Tensor:
                    # else Python would try other's unchecked forward op next
                    raise TypeError("unsupported operand type(s) for %s: 'Tensor' and '%s'"
                                    % (symbol, type(self).__name__)) from None
                return NotImplemented
    elif name in _BINARY:
        def op(self, other):
            found = overloaded_args((self, other), None)
            if not found:
                return raw(self, other)
            try:
                return handle(func, found, (self, other), {}, qualified)
            except TypeError:
                return NotImplemented       # as torch's operators: Python's own error follows
    elif name == "__reduce_ex__":
        def op(self, protocol):
            found = overloaded_args((self,), None)
            rebuild, args = raw(self, protocol) if not found else handle(func, found, (self, protocol), {},
                                                                         qualified)
            state = {k: v for k, v in self.__dict__.items() if not hasattr(Tensor, k)}
            return _rebuild_subclass, (rebuild, type(self), args, state)
    else:
        def op(*args, **kwargs):
            found = overloaded_args(args, kwargs)
            if not found:
                return raw(*args, **kwargs)
            return handle(func, found, args, kwargs, qualified)
    functools.update_wrapper(op, raw)
    return op


def _property_wrapper(name, prop):
    get_func, set_func = prop.__get__, prop.__set__
    fget, fset = prop.fget, prop.fset

    def getter(self):
        found = overloaded_args((self,), None)
        if not found:
            return fget(self)
        return handle(get_func, found, (self,), {}, "cextend.Tensor.%s.__get__" % name)

    def setter(self, value):
        found = overloaded_args((self, value), None)
        if not found:
            return fset(self, value)
        handle(set_func, found, (self, value), {}, "cextend.Tensor.%s.__set__" % name)

    return property(getter, setter if fset is not None else None, prop.fdel, prop.__doc__)


def _rebuild_subclass(rebuild, kind, args, state):
    """pickle's rebuild of a subclass instance: the tensor, then its class
    and its own attributes (torch's _rebuild_from_type_v2, except that the
    tensor is retyped rather than aliased, so a leaf stays a leaf)."""
    tensor = retype(rebuild(*args), kind)
    if state:
        tensor.__dict__.update(state)
    return tensor


def subclass_wrappers():
    """Tensor's methods, operators and properties as a subclass gets them."""
    for name, value in list(Tensor.__dict__.items()):
        if name in _UNDISPATCHED or (name.startswith("_") and not (name.startswith("__") and name.endswith("__"))):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            continue
        made = _wrappers.get(name)
        if made is not None and made[0] is value:
            continue
        if isinstance(value, property):
            if value.fget is None:
                continue
            _wrappers[name] = (value, _property_wrapper(name, value))
        elif callable(value):
            _wrappers[name] = (value, _method_wrapper(name, value))
    grad = Tensor.__dict__.get("grad")
    if isinstance(grad, property):
        NOWRAP.add(grad.__get__)
    return _wrappers


def prepare_subclass(cls):
    """Give a Tensor subclass the dispatching versions of whatever of
    Tensor's it inherits unchanged (nothing where it opts out)."""
    if not _ready:
        _pending.append(cls)        # subclasses defined while cextend imports: done at ready()
        return
    if getattr(cls, "__torch_function__", None) is _disabled_torch_function_impl:
        return
    for name, (original, wrapper) in subclass_wrappers().items():
        for klass in cls.__mro__:
            if name in klass.__dict__:
                if klass is Tensor:
                    setattr(cls, name, wrapper)
                break


def ready():
    """Called once Tensor has all its methods (the op table installed)."""
    global _ready
    _ready = True
    # A handler logs or compares func.__name__: Tensor.sum's is "sum" as in
    # torch, not its implementation's ("reduce_sum", "<lambda>"); an
    # implementation under several names keeps its first.
    named = set()
    for name, value in Tensor.__dict__.items():
        if isinstance(value, _types.FunctionType) and id(value) not in named:
            named.add(id(value))
            value.__name__ = name
    while _pending:
        prepare_subclass(_pending.pop(0))


def convert(ret, cls):
    """torch's _convert: Tensor results as cls (an alias of them), into tuples and lists."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        ret = as_subclass(ret, cls)
    if isinstance(ret, _CONTAINERS):
        kind = type(ret)
        items = (convert(r, cls) for r in ret)
        ret = kind._make(items) if hasattr(kind, "_make") else kind(items)
    return ret


_SLOTS = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_version_counter", "_base")


def retype(tensor, cls):
    """tensor as an instance of cls: the same object where the layouts
    allow (a subclass without __slots__ of its own), else a copy of its state."""
    try:
        tensor.__class__ = cls
        return tensor
    except TypeError:
        pass
    new = object.__new__(cls)
    for slot in _SLOTS:
        setattr(new, slot, getattr(tensor, slot))
    new.__dict__.update(tensor.__dict__)
    return new


def as_subclass(self, cls):
    """Tensor.as_subclass(cls): a cls instance over self's memory, an alias
    view that stays in self's graph (AliasBackward0, as torch's)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    with DisableTorchFunctionSubclass():
        return retype(alias(self), cls)


def make_subclass(cls, data, require_grad=False):
    """Tensor._make_subclass(cls, data, require_grad): a new cls leaf sharing data's memory."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    if not isinstance(data, Tensor):
        raise TypeError("_make_subclass(): argument 'data' (position 2) must be Tensor, not %s"
                        % type(data).__name__)
    with DisableTorchFunctionSubclass():
        out = retype(detach(data), cls)
        Tensor.requires_grad_(out, require_grad)
    return out
