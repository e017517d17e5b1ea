"""bfloat16 through every op: upcast, compute in float32, round once.

torch's CPU kernels for bfloat16 load each value as float32, compute in
float32 and round the result to bfloat16 once.  cextend does the same one
level up, so no op body (and no C kernel) ever sees bfloat16 bits:
`install()` wraps every entry of the op table, and the factories, so that a
call with a bfloat16 tensor (or dtype=bfloat16) runs as

    result = op(x.float(), ...)           # exact: the bits shifted up
    result.to(bfloat16)                   # round to nearest even, once

where the result's dtype under torch's promotion (bfloat16 as a floating
type between float16 and float32, see cextend._promotion) is bfloat16.
Both conversions are differentiable, so gradients flow in float32 through
the op's own backward and reach a bfloat16 input rounded to bfloat16, as
torch's are; the price is that a bfloat16 result's grad_fn is
ToCopyBackward0 (the rounding) rather than the op's node.

Three kinds of op do not go through float32:
- views and pure data movement (view, transpose, slicing, split, ...) run on
  the stored bits themselves, so views share storage as they must;
- in-place ops on a bfloat16 tensor run on a float32 copy that is then
  copied back, rounded (x.copy_), which keeps versions, views and history;
- copy_ converts its source to the destination's dtype first.
A call with out= naming or fed by bfloat16 raises TypeError: the rounding
would have to happen inside the op's own out= handling.

The call with no bfloat16 in it takes a fast path: one scan of the
positional arguments (and keywords, when there are any).
"""
import functools
import sys

from cextend import _dtype
from cextend._promotion import result_type
from cextend.autograd.grad_mode import no_grad
from cextend.tensor import Tensor, _wrap
from cextend import _bfloat16

_BF16 = _dtype.bfloat16
_F32 = _dtype.float32
_F32_NUMPY = _F32.numpy
_V2 = _bfloat16.NUMPY

# Ops that only move or reinterpret stored elements: they run on the bits.
_NATIVE = frozenset((
    "view", "reshape", "transpose", "t", "permute", "squeeze", "unsqueeze", "expand", "broadcast_to",
    "broadcast_tensors", "narrow", "select", "diagonal", "unbind", "split", "chunk", "tensor_split",
    "hsplit", "vsplit", "dsplit", "flatten", "unflatten", "movedim", "detach", "clone",
    "__getitem__", "contiguous", "expand_as", "view_as", "reshape_as", "to", "type_as",
    "float", "double", "half", "long", "int", "bool", "byte", "bfloat16",
    "squeeze_", "unsqueeze_", "t_", "transpose_",
))

_FACTORIES = ("tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "range", "linspace",
              "logspace", "eye", "rand", "randn", "randint", "randperm", "normal", "zeros_like",
              "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
              "_new_tensor")


def _is_bf16(x):
    return isinstance(x, Tensor) and x._data.dtype.kind == "V"


def _mentions(values):
    """Whether bfloat16 appears among values: a tensor, a dtype, or either
    inside a list or tuple (cat's tensors, einsum's operands).  Every op call
    asks, so the common operands (plain tensors, numbers) are tested first by
    exact type."""
    for v in values:
        kind = type(v)
        if kind is Tensor:
            if v._data.dtype.kind == "V":
                return True
        elif kind is float or kind is int or kind is bool:
            continue
        elif v is _BF16:
            return True
        elif isinstance(v, Tensor):
            if v._data.dtype.kind == "V":
                return True
        elif kind is list or kind is tuple:
            for w in v:
                if w is _BF16 or isinstance(w, Tensor) and w._data.dtype.kind == "V":
                    return True
    return False


def _tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif type(v) is list or type(v) is tuple:
            for w in v:
                if isinstance(w, Tensor):
                    yield w


def _up(x):
    """bfloat16 tensors (also inside a list or tuple) as float32, differentiably;
    dtype=bfloat16 as float32."""
    if x is _BF16:
        return _F32
    if isinstance(x, Tensor):
        return x.float() if x._data.dtype.kind == "V" else x
    if type(x) is list or type(x) is tuple:
        return type(x)(_up(v) for v in x)
    return x


def _down(x):
    """float32 results (also inside tuples, named or not, and lists) rounded to bfloat16."""
    if isinstance(x, Tensor):
        if x._data.dtype != _F32_NUMPY:
            return x
        data = x._data
        if data.flags.writeable:
            # The float32 result is rounded where it lies, before anything
            # reads it: an op that saved its output for backward (tanh,
            # exp, sigmoid) then differentiates with the bfloat16 value, as
            # torch's does; the conversion below is then exact.
            data[...] = _bfloat16.to_float32(_bfloat16.bits_of(data))
        return x.to(_BF16)
    if isinstance(x, (list, tuple)):
        items = [_down(v) for v in x]
        if type(x) is list:
            return items
        if type(x) is tuple:
            return tuple(items)
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    return x


def _asked_dtype(args, kwargs):
    """The dtype the call names (dtype= or positionally), or None."""
    found = kwargs.get("dtype")
    if found is None:
        for a in args:
            if isinstance(a, _dtype.dtype):
                return a
    return found


def _refuse_out(name, kwargs):
    if kwargs.get("out") is not None:
        raise TypeError("%s(): out= is not supported where bfloat16 is involved (cextend computes "
                        "bfloat16 in float32 and rounds the returned result); assign the result instead"
                        % name)


def _rounds_to_bf16(args, kwargs):
    asked = _asked_dtype(args, kwargs)
    if asked is not None:
        return asked is _BF16
    tensors = list(_tensors(args)) + list(_tensors(kwargs.values()))
    return bool(tensors) and result_type(*tensors).kind == "V"


# torch converts the scalar operand of these ops (a Python number, a 0-d
# tensor of lower priority, add's alpha) to bfloat16 before computing in
# float32; mul, div, lerp and clamp keep it in float32 (their kernels read
# the original scalar).  Measured against torch 2.13 bit for bit.
_ROUNDS_SCALARS = frozenset((
    "add", "sub", "subtract", "rsub", "pow", "remainder", "fmod", "add_", "sub_", "subtract_", "pow_",
    "remainder_", "fmod_", "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__",
    "__pow__", "__rpow__", "__ipow__", "__mod__", "__rmod__", "__imod__",
))


def _round_scalar(x):
    """A Python number or 0-d float tensor as the bfloat16 nearest to it."""
    if type(x) is float or type(x) is int:
        return float(_bfloat16.to_float32(_bfloat16.scalar_bits(x)))
    if isinstance(x, Tensor) and x._data.ndim == 0 and x._data.dtype.kind == "f":
        return x.to(_BF16)
    return x


def _scalars_rounded(name, args, kwargs):
    if name not in _ROUNDS_SCALARS:
        return args, kwargs
    if "alpha" in kwargs:
        kwargs = dict(kwargs, alpha=_round_scalar(kwargs["alpha"]))
    return [_round_scalar(a) for a in args], kwargs


def _compute(fn, name):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        # _mentions inlined for the common operands: every op call of every
        # dtype passes here
        for v in args:
            kind = type(v)
            if kind is Tensor:
                if v._data.dtype.kind == "V":
                    break
            elif kind is not float and kind is not int and (v is _BF16 or _mentions((v,))):
                break
        else:
            if not kwargs or not _mentions(kwargs.values()):
                return fn(*args, **kwargs)
        return in_float32(fn, name, args, kwargs)
    op._bf16_original = fn
    return op


def in_float32(fn, name, args, kwargs):
    """fn on bfloat16 operands: computed in float32, the result rounded once."""
    _refuse_out(name, kwargs)
    rounds = _rounds_to_bf16(args, kwargs)
    if rounds:
        if name == "__rtruediv__" and type(args[1]) in (int, float):
            # torch's number / bfloat16: the reciprocal, rounded, times the number
            return args[0].reciprocal() * args[1]
        args, kwargs = _scalars_rounded(name, args, kwargs)
    result = fn(*[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()})
    return _down(result) if rounds else result


def binary(op, input, other, out):
    """A binary arithmetic op (cextend._ops.arithmetic.Binary) with a bfloat16 operand: its
    general path calls this, so the operators need no wrapper (they are every op's hot path)."""
    return in_float32(op, op.name, (input, other), {} if out is None else {"out": out})


def _inplace(fn, name):
    @functools.wraps(fn)
    def op(self, *args, **kwargs):
        if not (_mentions(args) or kwargs and _mentions(kwargs.values()) or _is_bf16(self)):
            return fn(self, *args, **kwargs)
        _refuse_out(name, kwargs)
        args = [_up(a) for a in args]
        kwargs = {k: _up(v) for k, v in kwargs.items()}
        if not _is_bf16(self):
            return fn(self, *args, **kwargs)
        args, kwargs = _scalars_rounded(name, args, kwargs)
        # the op runs on a float32 copy; copying it back rounds once and
        # records the change as every in-place op's (versions, views, history)
        wide = self.float()
        fn(wide, *args, **kwargs)
        self.copy_(wide)
        return self
    op._bf16_original = fn
    return op


def _copy(fn):
    @functools.wraps(fn)
    def copy_(self, src, *args, **kwargs):
        if isinstance(src, Tensor) and isinstance(self, Tensor):
            mine, theirs = self._data.dtype, src._data.dtype
            if mine != theirs and (mine.kind == "V" or theirs.kind == "V"):
                src = src.to(self.dtype)    # the byte copy that follows must see one dtype
        return fn(self, src, *args, **kwargs)
    copy_._bf16_original = fn
    return copy_


def _factory(fn, name):
    @functools.wraps(fn)
    def make(*args, **kwargs):
        if not (_mentions(args) or kwargs and _mentions(kwargs.values())):
            return fn(*args, **kwargs)
        _refuse_out(name, kwargs)
        asked = _asked_dtype(args, kwargs)
        if name == "as_tensor" and args and _is_bf16(args[0]) and asked in (None, _BF16):
            return args[0]              # as_tensor shares what already fits
        # with no dtype named, the result takes the dtype of the data (or
        # input) argument, which factories take first
        rounds = asked is _BF16 if asked is not None else bool(args) and _mentions(args[:1])
        requires_grad = kwargs.pop("requires_grad", False)
        with no_grad():
            made = fn(*[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()})
        if rounds:
            made = _wrap(_bfloat16.cast(made._data, _V2))
        if requires_grad:
            made.requires_grad_(True)
        return made
    make._bf16_original = fn
    return make


def _wrapped(name, fn, inplace=False):
    if fn is None or getattr(fn, "_bf16_original", None) is not None or getattr(fn, "_handles_bfloat16", False):
        return fn
    if name in _NATIVE:
        return fn
    if name == "copy_":
        return _copy(fn)
    if inplace:
        return _inplace(fn, name)
    return _compute(fn, name)


def _is_inplace_name(name):
    if name.startswith("__"):
        return name.startswith("__i") and name not in ("__invert__", "__index__") or name == "__setitem__"
    return name.endswith("_")


def install(ops, extra_methods, tensor_cls):
    """Wrap every op (and factory) for bfloat16, in the table and wherever a
    cextend module holds the function itself (`from ... import linear`)."""
    replaced = {}       # id(original) -> (original, its wrapper, how to wrap another spelling of it)

    def swap(name, fn, inplace=False):
        new = _wrapped(name, fn, inplace)
        if new is not fn:
            replaced[id(fn)] = (fn, new, lambda other: _wrapped(name, other, inplace))
        return new

    for info in ops.values():
        info.function = swap(info.name, info.function)
        if info.inplace is not None:
            info.inplace = swap(info.name + "_", info.inplace, inplace=True)
    for name in list(extra_methods):
        extra_methods[name] = swap(name, extra_methods[name], inplace=_is_inplace_name(name))
    for name in ("fill_", "zero_", "index_put_", "__setitem__"):
        if name not in extra_methods and name in tensor_cls.__dict__:
            setattr(tensor_cls, name, swap(name, tensor_cls.__dict__[name], inplace=True))
    # Tensor's own samplers (cextend._sampling) draw bfloat16 themselves: random_'s range
    # is bfloat16's (0 to 2**8), which a float32 copy would not give
    factories = sys.modules["cextend._factories"]
    for name in _FACTORIES:
        fn = getattr(factories, name, None)
        if fn is not None and getattr(fn, "_bf16_original", None) is None:
            replaced[id(fn)] = (fn, _factory(fn, name), lambda other, name=name: _factory(other, name))
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "cextend" or module_name.startswith("cextend.")):
            continue
        namespace = getattr(module, "__dict__", None)
        if namespace is None:
            continue
        for key, value in list(namespace.items()):
            if not callable(value) or getattr(value, "_bf16_original", None) is not None:
                continue
            hit = replaced.get(id(value))
            if hit is not None and hit[0] is value:
                namespace[key] = hit[1]
                continue
            # a wrapper made before this ran (functools.wraps: __torch_function__
            # dispatch) still calls the original: wrap the wrapper too
            inner = getattr(value, "__wrapped__", None)
            hit = replaced.get(id(inner)) if inner is not None else None
            if hit is not None and hit[0] is inner:
                namespace[key] = hit[2](value)
