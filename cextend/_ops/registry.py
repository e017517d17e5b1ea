"""The op table: each op declared once, everything else derived from it.

An entry (OpInfo) names the callable that implements the op and how it is
reached: `cextend.NAME(input, ...)`, `Tensor.NAME(...)`, the in-place
`Tensor.NAME_(...)`, aliases, and whether it takes `out=`.  An op on C
kernels names them per device (`kernels`, a cextend._ops._kernels.Kernels):
the op body asks it for its operands' device and never tests one itself.  It also
carries a sample-input generator and the flags the tests read: the
gradcheck / gradgradcheck suite (tests/test_op_table.py) and the
differential tester against torch (tests/difftest) walk this table, so a
new op is tested everywhere by adding its entry.

The families (arithmetic, pointwise, reduction, shape, indexing, linalg)
register their entries at import; `install()` then attaches the methods to
Tensor and the functions to the cextend namespace, so tensor.py stays the
data structure it is.
"""
import numpy as np

from cextend import _torch_function


class Sample:
    """One call of an op: positional and keyword arguments.

    Floating numpy arrays become float Tensors (that require grad in the
    gradient tests); `Const` wraps arrays that stay plain (index tensors,
    masks, targets); anything else is passed as it is.
    """

    __slots__ = ("args", "kwargs", "note")

    def __init__(self, *args, note="", **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.note = note

    def __repr__(self):
        def show(a):
            if isinstance(a, np.ndarray):
                return "array%s:%s" % (list(a.shape), a.dtype)
            return repr(a)
        parts = [show(a) for a in self.args] + ["%s=%s" % (k, show(v)) for k, v in self.kwargs.items()]
        return "Sample(%s)%s" % (", ".join(parts), " # " + self.note if self.note else "")


class Const:
    """A sample argument made into a Tensor that never requires grad."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = np.asarray(array)

    def __repr__(self):
        return "Const(%s)" % self.array.tolist()


class OpInfo:
    """An op's declaration.  See the module docstring."""

    def __init__(self, name, function, method=True, module=True, inplace=None, aliases=(),
                 samples=None, gradcheck=True, gradgradcheck=True, difftest=True, family="",
                 integer_inputs=False, call=None, tolerance=None,
                 layouts=("contiguous", "transposed", "sliced"), kernels=None):
        self.name = name
        self.function = function
        self.method = method
        self.module = module
        self.inplace = inplace
        self.aliases = tuple(aliases)
        self.samples = samples
        self.gradcheck = gradcheck
        self.gradgradcheck = gradgradcheck and gradcheck
        self.difftest = difftest
        self.family = family
        self.integer_inputs = integer_inputs     # samples are meaningful on int tensors too
        self.call = call                         # call(lib, *args): how to call it in cextend or torch
        self.tolerance = tolerance               # (rtol, atol) override for float32 comparisons
        self.layouts = layouts                   # input layouts the op accepts (gradcheck runs each)
        self.kernels = kernels                   # its kernels per device, if it has C kernels

    def __repr__(self):
        return "<OpInfo %s>" % self.name


OPS = {}
_EXTRA_METHODS = {}


def register(name, function=None, **info):
    """Declare an op; usable as a decorator on the implementing function."""
    def add(fn):
        if name in OPS:
            raise ValueError("op %r is declared twice" % name)
        OPS[name] = OpInfo(name, fn, **info)
        return fn
    return add(function) if function is not None else add


def method(name, function):
    """A Tensor method that is not an op of its own (dunders, spellings)."""
    _EXTRA_METHODS[name] = function
    return function


# Factories outside the table that take a tensor, so dispatch on it as torch's do.
_LIKE_FACTORIES = ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
                   "randint_like")


def install(tensor_cls, namespace):
    """Attach every op to Tensor and to the module namespace.

    Tensor gets the implementations themselves (a plain tensor's method
    call pays nothing for __torch_function__; subclasses get dispatching
    versions, see cextend._torch_function); the namespace gets each
    spelling's own dispatching wrapper, the function that __torch_function__
    handlers receive and key on."""
    module = namespace.get("__name__", "cextend")
    for info in OPS.values():
        for spelling in (info.name,) + info.aliases:
            if info.method:
                setattr(tensor_cls, spelling, info.function)
            if info.module:
                namespace[spelling] = _torch_function.public_function(info.function, module, spelling)
            if info.inplace is not None:
                setattr(tensor_cls, spelling + "_", info.inplace)
    for name, function in _EXTRA_METHODS.items():
        setattr(tensor_cls, name, function)
    _torch_function.wrap_namespace(namespace, module, names=[n for n in _LIKE_FACTORIES if n in namespace])
    _torch_function.ready()
