"""__torch_function__, both forms of torch's "Extending torch" note: Tensor-like
classes that are not Tensors, and Tensor subclasses.

Every test builds its classes from `lib` and runs under cextend and torch
2.13 alike (torch's half is skipped where torch is not installed): what
torch does is what is promised (its test/test_overrides.py states most of it).
"""
import pickle
import warnings

import numpy as np
import pytest

import cextend


@pytest.fixture(params=["cextend", "torch"])
def lib(request):
    if request.param == "torch":
        return pytest.importorskip("torch")
    return cextend


def _name(lib, text):
    """A name as lib spells it ("torch.mean" / "cextend.mean")."""
    return text.replace("LIB", lib.__name__)


# -- the note's ScalarTensor, and test_overrides' DiagonalTensor family --------

def scalar_tensor_class(lib):
    handled = {}

    class ScalarTensor:
        def __init__(self, N, value):
            self._N, self._value = N, value

        def tensor(self):
            return self._value * lib.eye(self._N)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in handled or not all(issubclass(t, (lib.Tensor, ScalarTensor)) for t in types):
                return NotImplemented
            return handled[func](*args, **kwargs)

    def implements(function):
        def decorator(func):
            handled[function] = func
            return func
        return decorator

    @implements(lib.mean)
    def mean(input):
        return float(input._value) / input._N

    @implements(lib.cat)
    def cat(tensors, dim=0):
        return ("cat", len(tensors), dim)

    @implements(lib.nn.functional.relu)
    def relu(input, inplace=False):
        return ScalarTensor(input._N, max(input._value, 0))

    return ScalarTensor


def test_a_tensor_like_dispatches_on_the_function_it_handles(lib):
    ScalarTensor = scalar_tensor_class(lib)
    d = ScalarTensor(5, 2)
    assert lib.mean(d) == 0.4
    assert lib.nn.functional.relu(ScalarTensor(2, -3))._value == 0
    # inside a list (TensorList arguments), and with keyword arguments
    assert lib.cat([lib.ones(2), d]) == ("cat", 2, 0)
    assert lib.cat(tensors=(d, lib.ones(2)), dim=0) == ("cat", 2, 0)


def test_a_tensor_like_that_declines_is_a_type_error_naming_the_function(lib):
    ScalarTensor = scalar_tensor_class(lib)
    d = ScalarTensor(5, 2)
    with pytest.raises(TypeError, match=r"Multiple dispatch failed for '%s'; all __torch_function__ handlers "
                                        r"returned NotImplemented:\n\n  - tensor subclass <class '.*ScalarTensor'>"
                       % _name(lib, "LIB.add")):
        lib.add(d, 2)
    with pytest.raises(TypeError, match=r"Multiple dispatch failed for '%s'" % _name(lib, "LIB.mul")):
        lib.mul(lib.ones(2), other=d)       # found among the keyword arguments
    # torch.nn.functional's Python-level dispatch words it its own way
    with pytest.raises(TypeError, match=r"^no implementation found for '%s' on types that implement "
                                        r"__torch_function__: \[<class '.*ScalarTensor'>\]$"
                       % _name(lib, "LIB.nn.functional.relu6")):
        lib.nn.functional.relu6(d)
    # operators have Python's words: the override's TypeError becomes NotImplemented
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tensor' and 'ScalarTensor'"):
        lib.ones(2) + d


HANDLED_DIAGONAL, HANDLED_SUB, HANDLED_SUB_DIAGONAL = "diag", "sub", "subdiag"


def diagonal_family(lib):
    """test_overrides' classes: DiagonalTensor (a Tensor-like), its subclass
    SubDiagonalTensor, and SubTensor (a Tensor subclass with a plain-method
    __torch_function__), plus the pure-Python functions foo/bar/baz/quux
    that dispatch with has_torch_function / handle_torch_function."""
    has_torch_function = lib.overrides.has_torch_function
    handle_torch_function = lib.overrides.handle_torch_function
    Tensor = lib.Tensor
    tables = {HANDLED_DIAGONAL: {}, HANDLED_SUB: {}, HANDLED_SUB_DIAGONAL: {}}

    def foo(a, b, c=None):
        if any(type(t) is not Tensor for t in (a, b, c)) and has_torch_function((a, b, c)):
            return handle_torch_function(foo, (a, b, c), a, b, c=c)
        return a + b

    def bar(a):
        if type(a) is not Tensor and has_torch_function((a,)):
            return handle_torch_function(bar, (a,), a)
        return a

    def baz(a, b):
        if type(a) is not Tensor or type(b) is not Tensor and has_torch_function((a, b)):
            return handle_torch_function(baz, (a, b), a, b)
        return a + b

    def quux(a):
        if type(a) is not Tensor and has_torch_function((a,)):
            return handle_torch_function(quux, (a,), a)
        return a

    class DiagonalTensor:
        handled_functions = tables[HANDLED_DIAGONAL]

        def __init__(self, N, value):
            self._N, self._i = N, value

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in self.handled_functions:
                return NotImplemented
            return self.handled_functions[func](*args, **kwargs)

    class SubDiagonalTensor(DiagonalTensor):
        handled_functions = tables[HANDLED_SUB_DIAGONAL]

    class SubTensor(lib.Tensor):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in tables[HANDLED_SUB]:
                return NotImplemented
            return tables[HANDLED_SUB][func](*args, **kwargs)

    diag, sub, subdiag = tables[HANDLED_DIAGONAL], tables[HANDLED_SUB], tables[HANDLED_SUB_DIAGONAL]
    diag[lib.mean] = lambda mat: float(mat._i) / mat._N
    diag[lib.mm] = lambda mat1, mat2: 0
    diag[lib.div] = lambda input, other, out=None: -1

    def raises(*args):
        raise ValueError
    diag[lib.add] = raises
    diag[foo] = lambda a, b, c=None: -1
    diag[bar] = lambda a: -1
    diag[quux] = raises
    sub[lib.mean] = lambda mat: 0
    sub[lib.mm] = lambda mat1, mat2: -1
    sub[bar] = lambda mat: 1
    sub[lib.div] = lambda input, other, out=None: NotImplemented
    subdiag[lib.mean] = lambda mat: 10 * float(mat._i) / mat._N
    subdiag[bar] = lambda mat: 0
    subdiag[lib.mm] = lambda mat1, mat2: 1
    subdiag[lib.div] = lambda input, other, out=None: NotImplemented
    subdiag[foo] = lambda a, b, c=None: NotImplemented
    return DiagonalTensor, SubDiagonalTensor, SubTensor, foo, bar, baz, quux


@pytest.fixture
def quiet():
    # SubTensor's and DiagonalTensor's __torch_function__ are plain methods:
    # torch warns about that on every call (tested on its own below)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_mean_and_mm_semantics(lib, quiet):
    DiagonalTensor, SubDiagonalTensor, SubTensor, foo, bar, baz, quux = diagonal_family(lib)
    t1, t2, t3 = DiagonalTensor(5, 2), SubTensor([[1, 2], [1, 2]]), SubDiagonalTensor(5, 2)
    assert (lib.mean(t1), bar(t1), lib.mean(t2), bar(t2), lib.mean(t3), bar(t3)) == (0.4, -1, 0, 1, 4.0, 0)
    t1, t2, t3, t4 = DiagonalTensor(5, 2), lib.eye(5) * 2, SubTensor([[1, 2], [1, 2]]), SubDiagonalTensor(5, 2)
    assert [lib.mm(a, b) for a, b in [(t1, t1), (t1, t2), (t2, t1), (t3, t3), (t3, t2), (t2, t3)]] == \
        [0, 0, 0, -1, -1, -1]
    # unrelated: the leftmost first; a subclass before its superclass wherever it is
    assert [lib.mm(a, b) for a, b in [(t3, t1), (t1, t3), (t4, t4), (t4, t1), (t1, t4), (t4, t2), (t2, t4),
                                      (t3, t4), (t4, t3)]] == [-1, 0, 1, 1, 1, 1, 1, -1, 1]


def test_precedence_and_not_implemented_fallthrough(lib, quiet):
    DiagonalTensor, SubDiagonalTensor, SubTensor, foo, bar, baz, quux = diagonal_family(lib)
    t1, t2, t3 = DiagonalTensor(5, 2), SubDiagonalTensor(5, 2), SubTensor([[1, 2], [1, 2]])
    # the subclass declines (NotImplemented), so its superclass answers
    assert [lib.div(t1, t2), lib.div(t2, t1), foo(t1, t2), foo(t2, t1)] == [-1, -1, -1, -1]
    assert [lib.div(t1, t3), lib.div(t3, t1), foo(t1, t3), foo(t3, t1)] == [-1, -1, -1, -1]
    for a, b in [(t2, t3), (t3, t2)]:
        for f in (lib.div, foo):
            with pytest.raises(TypeError):
                f(a, b)
    for a in (t1, t2, t3):
        for b in (t1, t2, t3):
            for f in (lib.mul, baz):
                with pytest.raises(TypeError):
                    f(a, b)


def test_errors_raised_by_an_implementation_propagate(lib, quiet):
    DiagonalTensor, _, _, _, _, _, quux = diagonal_family(lib)
    with pytest.raises(ValueError):
        lib.add(DiagonalTensor(5, 2), DiagonalTensor(5, 2))
    with pytest.raises(ValueError):
        quux(DiagonalTensor(5, 2))


def test_handle_torch_function_names_a_python_function_when_all_decline(lib):
    _, _, _, foo, _, _, _ = diagonal_family(lib)

    class Declines:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    # at the Python level a plain Tensor is asked too (its default declines a foreign type)
    with pytest.raises(TypeError, match=r"^no implementation found for '%s\.foo' on types that implement "
                                        r"__torch_function__: \[<class '.*Declines'>, <class '%s\..*Tensor'>\]$"
                       % (__name__, lib.__name__)):
        foo(Declines(), lib.ones(1))


def test_a_plain_method_torch_function_still_works_with_torch_warning(lib):
    class Plain:
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return ("plain", self is args[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lib.mean(Plain()) == ("plain", True)
    # (torch warns once per process, so only cextend's warning is sure to be seen here)
    if lib is cextend:
        assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, (
            "Defining your `__torch_function__` as a plain method is deprecated and will be an error in future, "
            "please define it as a classmethod."))]
        assert caught[0].filename == __file__


def test_types_hold_the_distinct_overriding_types_subclasses_first(lib):
    seen = []

    def declining(cls, func, types, args=(), kwargs=None):
        seen.append((cls.__name__, [t.__name__ for t in types]))
        return NotImplemented

    class A(lib.Tensor):
        __torch_function__ = classmethod(declining)

    class B(A):
        __torch_function__ = classmethod(declining)

    class C(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(("C", [t.__name__ for t in types]))
            return "C answered"

    a, b, c = (lib.ones(1).as_subclass(k) for k in (A, B, C))
    # a plain Tensor is no overriding type; a repeated type is asked once
    assert lib.cat([a, lib.ones(1), c, b, a]) == "C answered"
    assert seen == [("B", ["B", "A", "C"]), ("A", ["B", "A", "C"]), ("C", ["B", "A", "C"])]
    seen.clear()
    with pytest.raises(TypeError, match=r"  - tensor subclass <class '.*B'>\n  - tensor subclass <class '.*A'>"):
        lib.add(a, b)
    assert seen == [("B", ["B", "A"]), ("A", ["B", "A"])]


# -- Tensor subclasses ------------------------------------------------------------

def test_subclass_results_keep_the_leaf_subclass(lib):
    class SubTensor2(lib.Tensor):
        pass

    class SubSubTensor2(SubTensor2):
        pass

    class SubTensor3(lib.Tensor):
        pass
    t1, t2 = lib.tensor([5]), lib.tensor([6])
    s1, s2 = SubTensor2([5]), SubTensor2([6])
    ss1, ss2 = SubSubTensor2([5]), SubSubTensor2([6])
    sn1, sn2 = SubTensor3([5]), SubTensor3([6])
    for result, kind in [(s1 + t2, SubTensor2), (t1 + s2, SubTensor2), (s1 + s2, SubTensor2),
                         (s1[0], SubTensor2), (ss1 + ss2, SubSubTensor2), (ss1 + s2, SubSubTensor2),
                         (s1 + ss2, SubSubTensor2), (ss1 + t2, SubSubTensor2), (t1 + ss2, SubSubTensor2),
                         (ss1[0], SubSubTensor2), (t1 - s2, SubTensor2), (2 * s1, SubTensor2),
                         (t1 < s2, SubTensor2), (lib.add(t1, s2), SubTensor2), (s1.sum(), SubTensor2),
                         (lib.nn.functional.relu(s1), SubTensor2), (-s1, SubTensor2)]:
        assert type(result) is kind
    assert (t1 - s2).tolist() == [-1.0] and (s1 - t2).tolist() == [-1.0]
    with pytest.raises(TypeError):
        s1 + sn2
    with pytest.raises(TypeError):
        sn1 + s2
    values, indices = SubTensor2([[1, 3], [4, 2]]).max(1)
    assert type(values) is SubTensor2 and type(indices) is SubTensor2
    assert values.tolist() == [3.0, 4.0] and indices.tolist() == [1, 0]
    assert type(s1.shape) is type(t1.shape) and tuple(s1.shape) == (1,)


def logging_tensor_class(lib, log):
    """The note's LoggingTensor: log every func's name, then let Tensor's
    default __torch_function__ run it."""
    class LoggingTensor(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is not lib.Tensor.__repr__:
                log.append((func.__name__, [type(a).__name__ for a in args], [t.__name__ for t in types]))
            if kwargs is None:
                kwargs = {}
            return super().__torch_function__(func, types, args, kwargs)
    return LoggingTensor


def test_logging_tensor_sees_the_funcs_and_arguments_torch_passes(lib):
    log = []
    LoggingTensor = logging_tensor_class(lib, log)
    x = lib.ones(2, 2).as_subclass(LoggingTensor)
    p = lib.ones(2, 2)
    steps = [lambda: x + 1, lambda: 1 + x, lambda: p - x, lambda: 1 - x, lambda: x * p, lambda: p < x,
             lambda: x == 1, lambda: x @ p, lambda: p @ x, lambda: x ** 2, lambda: 2 ** x, lambda: x / 2,
             lambda: x // 2, lambda: -x, lambda: abs(x), lambda: x[0], lambda: x.shape, lambda: x.dtype,
             lambda: x.sum(), lambda: x.add(p), lambda: lib.add(p, x), lambda: lib.stack([p, x]),
             lambda: x.view(4), lambda: x.max(0), lambda: x.size(), lambda: x.detach(), lambda: x.T,
             lambda: lib.nn.functional.relu(x), lambda: len(x), lambda: x.requires_grad]
    for step in steps:         # one handler call each: nothing inside a call is dispatched again
        log.clear()
        step()
        assert len(log) == 1, log
    log.clear()
    y = x.detach()
    y += 1
    y[0] = 5
    assert type(y) is LoggingTensor
    recorded = list(log)
    assert recorded == [("detach", ["LoggingTensor"], ["LoggingTensor"]),
                        ("add_", ["LoggingTensor", "int"], ["LoggingTensor"]),
                        ("__setitem__", ["LoggingTensor", "int", "int"], ["LoggingTensor"])]


LOGGED_STEPS = ["x + 1", "1 + x", "p - x", "1 - x", "x * p", "p < x", "x == 1", "x @ p", "p @ x", "x ** 2",
                "2 ** x", "x / 2", "x // 2", "-x", "abs(x)", "x[0]", "x[p > 0]", "x.shape", "x.dtype", "x.sum()",
                "x.add(p)", "lib.add(p, x, alpha=2)", "lib.stack([p, x])", "x.view(4)", "x.max(0)",
                "x.size()", "x.detach()", "lib.nn.functional.relu(x)", "len(x)", "x.requires_grad",
                "x.data", "x.grad", "x.is_leaf", "x.clone()", "x.tolist()", "x.dim()", "x.new_ones(2)",
                "x.expand_as(p)"]
# Not listed: a plain tensor's named method with a subclass argument
# (p.expand_as(x)), which torch dispatches and cextend does not.


def test_logging_tensor_logs_what_torch_logs():
    torch = pytest.importorskip("torch")
    logs = {}
    for lib in (cextend, torch):
        log = []
        LoggingTensor = logging_tensor_class(lib, log)
        x = lib.ones(2, 2).as_subclass(LoggingTensor)
        p = lib.ones(2, 2)
        logs[lib] = []
        for step in LOGGED_STEPS:
            log.clear()
            result = eval(step, {"lib": lib, "x": x, "p": p})
            logs[lib].append((step, list(log), type(result).__name__.replace(lib.__name__, "LIB")))
    assert logs[cextend] == logs[torch]


def test_autograd_flows_through_subclass_results(lib):
    log = []
    LoggingTensor = logging_tensor_class(lib, log)
    base = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    x = base.as_subclass(LoggingTensor)
    # as_subclass is an alias view in base's graph, as torch's
    assert type(x.grad_fn).__name__ == "AliasBackward0" and not x.is_leaf and x.requires_grad
    y = (x * x + x.exp()).sum()
    assert type(y) is LoggingTensor and y.requires_grad
    y.backward()
    assert np.allclose(base.grad.tolist(), [2 * v + np.exp(v) for v in (1.0, 2.0, 3.0)])
    # a subclass leaf of its own (the note's _make_subclass) gets its .grad, and keeps it as it is
    leaf = lib.Tensor._make_subclass(LoggingTensor, lib.tensor([1.0, 4.0]), True)
    assert type(leaf) is LoggingTensor and leaf.is_leaf and leaf.requires_grad
    (leaf.sqrt() * 2).sum().backward()
    assert leaf.grad.tolist() == [1.0, 0.5]
    assert leaf.grad is leaf.grad and type(leaf.grad) is lib.Tensor     # a field read is not wrapped
    g, = lib.autograd.grad((leaf * leaf).sum(), leaf)
    assert g.tolist() == [2.0, 8.0]


def test_disabled_torch_function_opts_a_subclass_out(lib):
    class Plain(lib.Tensor):
        __torch_function__ = lib._C._disabled_torch_function_impl

    x = lib.ones(2).as_subclass(Plain)
    assert type(x) is Plain
    assert type(x + 1) is lib.Tensor and type(x.sum()) is lib.Tensor and type(x[0]) is lib.Tensor
    assert not lib.overrides.has_torch_function((x,))
    param = lib.nn.Parameter(lib.ones(2))
    assert type(param * 2) is lib.Tensor and type(lib.add(param, 1)) is lib.Tensor
    assert not lib.overrides.has_torch_function((param,))


def test_dispatch_is_off_inside_disable_torch_function_subclass(lib):
    calls = []

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    ScalarTensor = scalar_tensor_class(lib)
    x = lib.ones(2).as_subclass(Sub)
    with lib._C.DisableTorchFunctionSubclass():
        assert not lib._C._is_torch_function_enabled()
        assert type(x + 1) is lib.Tensor and type(lib.mean(x)) is lib.Tensor
        with pytest.raises(TypeError):
            lib.mean(ScalarTensor(5, 2))      # not even a Tensor-like is asked
    assert lib._C._is_torch_function_enabled() and calls == []
    assert type(x + 1) is Sub and calls == [lib.Tensor.add]


def test_a_handler_receives_the_public_function_object(lib):
    received = []

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            received.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    x = lib.ones(2).as_subclass(Sub)
    lib.mean(x)
    x.mean()
    lib.nn.functional.relu(x)
    x.grad
    lib.nn.functional.linear(x, lib.ones(3, 2))
    lib.nn.functional.gelu(x)
    assert received[:3] == [lib.mean, lib.Tensor.mean, lib.nn.functional.relu]
    assert received[3] == lib.Tensor.grad.__get__ and received[3] in lib.overrides.get_default_nowrap_functions()
    assert received[4:] == [lib.nn.functional.linear, lib.nn.functional.gelu]
    assert lib.overrides.resolve_name(lib.mean) == _name(lib, "LIB.mean")
    assert lib.overrides.resolve_name(lib.Tensor.add) == _name(lib, "LIB.Tensor.add")
    assert lib.overrides.resolve_name(lib.Tensor.grad.__get__) == _name(lib, "LIB.Tensor.grad.__get__")
    assert lib.overrides.is_tensor_method_or_property(lib.Tensor.add)
    assert not lib.overrides.is_tensor_method_or_property(lib.add)
    overridable = lib.overrides.get_overridable_functions()
    assert lib.mean in overridable[lib] and lib.nn.functional.relu in overridable[lib.nn.functional]
    assert lib.Tensor.add in overridable[lib.Tensor]


def test_overrides_helpers(lib):
    ScalarTensor = scalar_tensor_class(lib)

    class Sub(lib.Tensor):
        pass
    s, d, p = lib.ones(1).as_subclass(Sub), ScalarTensor(2, 1), lib.ones(1)
    has = lib.overrides.has_torch_function
    assert (has((p,)), has((s,)), has((d,)), has((p, 1, d)), has(())) == (False, True, True, True, False)
    assert lib.overrides.has_torch_function_unary(s) and not lib.overrides.has_torch_function_unary(p)
    assert lib.overrides.has_torch_function_variadic(p, d) and not lib.overrides.has_torch_function_variadic(p, 1)
    like = lib.overrides.is_tensor_like
    assert (like(p), like(s), like(d), like(ScalarTensor), like(1), like(None)) == (True, True, True, True,
                                                                                     False, False)
    assert lib.Tensor.as_subclass in lib.overrides.get_ignored_functions()
    assert lib.add not in lib.overrides.get_ignored_functions()

    def dispatcher(a):
        return (a,)

    @lib.overrides.wrap_torch_function(dispatcher)
    def twice(a):
        return a + a

    class Handles:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return (func is twice, types == (Handles,))
    assert twice(Handles()) == (True, True)
    assert twice(p).tolist() == [2.0]


def test_as_subclass_refuses_a_class_that_is_not_a_tensor(lib):
    with pytest.raises(TypeError, match="Creating a Tensor subclass from a class that does not inherit from "
                                        "Tensor is not possible"):
        lib.ones(1).as_subclass(int)


def test_subclass_pickles_as_its_class_with_its_attributes(lib):
    t = lib.tensor([1.0, 2.0]).as_subclass(PicklableSub[lib.__name__])
    t.note = "kept"
    back = pickle.loads(pickle.dumps(t))
    assert type(back) is PicklableSub[lib.__name__] and back.tolist() == [1.0, 2.0] and back.note == "kept"


PicklableSub = {}
for _lib_name in ("cextend", "torch"):
    try:
        _module = __import__(_lib_name)
    except ImportError:
        continue
    PicklableSub[_lib_name] = type("PicklableSub_" + _lib_name, (_module.Tensor,), {"__module__": __name__})
    globals()[PicklableSub[_lib_name].__name__] = PicklableSub[_lib_name]


def test_a_handler_can_turn_a_method_call_into_anything(lib):
    class Everything(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return func.__name__

    e = lib.ones(2).as_subclass(Everything)
    assert (e.sum(), e + 1, e[0], e.shape, lib.mean(e), e.view(2)) == ("sum", "add", "__getitem__", "__get__",
                                                                        "mean", "view")
