"""Binary ops' common case in C (cextend._engine.binary) against the Python
definition it stands in for: every program below runs twice, once as
shipped and once with the compiled path switched off, and must give the
same bits, dtypes, strides, graph and gradients, and the same errors."""
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend import _engine
from cextend._ops import arithmetic

_RNG = [np.random.default_rng(7)]      # reseeded before each run of a program


def _reseed(seed):
    _RNG[0] = np.random.default_rng(seed)


def _python_only(monkeypatch):
    monkeypatch.setattr(arithmetic, "_binary_in_c", lambda op, input, other: None)


def _describe(t):
    """Everything of a result a program could observe."""
    if not isinstance(t, cx.Tensor):
        return ("value", t)
    data = t._data
    fn = t.grad_fn
    return ("tensor", data.dtype.str, data.shape, data.strides, data.tobytes(), t.requires_grad,
            t.is_leaf, type(fn).__name__ if fn is not None else None,
            tuple(type(e[0]).__name__ if e[0] is not None else None for e in fn.next_functions) if fn else ())


def _run(program):
    """(what the program returned, the grads of its leaves) or the error it raised."""
    try:
        leaves, outputs = program()
    except Exception as error:      # noqa: BLE001 -- compared as (type, message)
        return ("error", type(error).__name__, str(error))
    described = [_describe(o) for o in outputs]
    grads = []
    loss = sum((o.sum() for o in outputs if isinstance(o, cx.Tensor) and o.requires_grad), cx.zeros(()))
    if loss.requires_grad:
        try:
            loss.backward()
        except Exception as error:  # noqa: BLE001
            grads.append(("error", type(error).__name__, str(error)))
    grads += [_describe(leaf.grad) if leaf.grad is not None else None for leaf in leaves]
    return described, grads


def _tensor(shape, dtype=np.float32, grad=False, layout="c"):
    data = _RNG[0].standard_normal(shape).astype(dtype)
    if layout == "t":
        data = np.ascontiguousarray(data.T).T            # the same shape, transposed strides
    elif layout == "slice":
        data = np.repeat(data, 2, axis=-1)[..., ::2]     # every other element
    t = cx.from_numpy(data)
    return t.requires_grad_() if grad else t


def _programs():
    ops = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
           "pow": lambda a, b: a ** b, "torch.mul": lambda a, b: cx.mul(a, b),
           "torch.sub": lambda a, b: cx.sub(a, b)}
    shapes = [(1,), (7,), (0,), (), (3, 5), (1, 4), (2, 1, 3)]
    for name, op in ops.items():
        for shape in shapes:
            for dtype in (np.float32, np.float64, np.float16):
                for other_kind in ("float", "int", "tensor", "zero"):
                    for grads in ((False, False), (True, False), (False, True), (True, True)):
                        for layout in (("c", "c"), ("t", "c"), ("slice", "t")) if len(shape) > 1 else (("c", "c"),):
                            if other_kind != "tensor" and (grads[1] or layout[1] != "c"):
                                continue

                            def program(op=op, shape=shape, dtype=dtype, other_kind=other_kind, grads=grads,
                                        layout=layout):
                                a = _tensor(shape, dtype, grads[0], layout[0])
                                if other_kind == "float":
                                    b = 1.75
                                elif other_kind == "int":
                                    b = 3
                                elif other_kind == "zero":
                                    b = 0.0             # 1/0, 0/0: inf and nan, no warning
                                else:
                                    b = _tensor(shape, dtype, grads[1], layout[1])
                                leaves = [x for x in (a, b) if isinstance(x, cx.Tensor) and x.requires_grad]
                                return leaves, [op(a, b)]
                            yield "%s %s %s %s %s %s" % (name, shape, np.dtype(dtype).name, other_kind, grads,
                                                         layout), program


PROGRAMS = dict(_programs())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_compiled_path_gives_what_the_python_definition_gives(name, monkeypatch):
    seed = sorted(PROGRAMS).index(name)
    _reseed(seed)
    ours = _run(PROGRAMS[name])
    _python_only(monkeypatch)
    _reseed(seed)
    assert _run(PROGRAMS[name]) == ours


def _situations():
    """Programs the compiled path must hand back to Python, or share with it, whole."""
    def broadcast_error():
        return [], [_tensor((3,)) * _tensor((4,))]

    def mixed_dtypes():
        a = _tensor((3,), np.float32, True)
        return [a], [a * _tensor((3,), np.float64)]

    def integer_tensor():
        return [], [cx.arange(5) * 2, cx.arange(5) + cx.arange(5)]

    def a_view():
        a = _tensor((4, 3), grad=True)
        return [a], [a[1] * 2.0, a.t() - a.t(), a[:, 0] * a[:, 1]]

    def a_parameter():
        w = cx.nn.Parameter(cx.from_numpy(_RNG[0].standard_normal(5).astype(np.float32)))
        return [w], [w * 3.0, w - _tensor((5,))]

    def saved_then_changed():
        a, b = _tensor((4,), grad=True), _tensor((4,), grad=True)
        c, d = a * 1.0, b * 1.0
        out = c * d             # saves c and d
        with cx.no_grad():
            pass
        d.add_(1.0)             # in place after it was saved: backward must refuse
        return [a, b], [out]

    def no_grad():
        a = _tensor((4,), grad=True)
        with cx.no_grad():
            out = a * 2.0 + a
        return [a], [out]

    def double_backward():
        a = _tensor((3,), np.float64, True)
        y = a * a * a
        (g,) = cx.autograd.grad(y.sum(), a, create_graph=True)
        return [a], [g * 2.0]

    def anomaly():
        a = _tensor((3,), grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)    # anomaly mode's "will increase the runtime"
            with cx.autograd.detect_anomaly():
                out = (a * 2.0 - 1.0) / a
        return [a], [out]

    def bool_and_bfloat16_operands():
        a = _tensor((3,), grad=True)
        return [a], [a * True, a + cx.ones(3, dtype=cx.bfloat16)]

    def number_first():
        a = _tensor((3,), grad=True)
        return [a], [2.0 - a, 3 * a, 1.0 / a, 2.0 ** a]

    return {f.__name__: f for f in (broadcast_error, mixed_dtypes, integer_tensor, a_view, a_parameter,
                                    saved_then_changed, no_grad, double_backward, anomaly,
                                    bool_and_bfloat16_operands, number_first)}


SITUATIONS = _situations()


@pytest.mark.parametrize("name", sorted(SITUATIONS))
def test_situations_the_compiled_path_leaves_or_shares_come_out_the_same(name, monkeypatch):
    _reseed(11)
    ours = _run(SITUATIONS[name])
    _python_only(monkeypatch)
    _reseed(11)
    assert _run(SITUATIONS[name]) == ours


def test_the_compiled_path_takes_the_common_case_and_declines_the_rest():
    """It is really in use (a result), and says None where Python must decide."""
    a, b = cx.ones(3, requires_grad=True), cx.ones(3)
    taken = _engine.binary(arithmetic._MUL, a, b)
    assert isinstance(taken, cx.Tensor) and type(taken.grad_fn).__name__ == "MulBackward0"
    assert isinstance(_engine.binary(arithmetic._SUB, cx.ones(2, 2), 2), cx.Tensor)
    declined = [(a, cx.ones(3, dtype=cx.float64)),      # dtypes differ: promotion
                (cx.arange(3), 2),                      # an integer tensor
                (a[1:], 2.0),                           # a view
                (a, True),                              # a bool is not an int here
                (a, np.float32(2.0)),                   # a numpy scalar
                (a, [1.0, 2.0, 3.0])]                   # not an operand it knows
    for x, y in declined:
        assert _engine.binary(arithmetic._MUL, x, y) is None
    assert _engine.binary(arithmetic._MUL, cx.ones(3), cx.ones(4)) is None     # numpy's error: Python words


def test_the_compiled_path_leaves_a_capture_to_python():
    calls = []

    def step(x):
        calls.append(_engine.binary(arithmetic._MUL, x, 2.0))
        return x * 2.0 + 1.0
    captured = cx.capture(step)
    x = cx.ones(4)
    for _ in range(3):
        out = captured(x)
    np.testing.assert_array_equal(out.numpy(), np.full(4, 3.0, np.float32))
    assert any(c is None for c in calls)        # while recording, Python's path (which tells the capture)


def test_the_compiled_path_keeps_no_reference_of_its_own():
    """Taken, declined or failed in numpy, a call leaves every object it
    touched with the references it had (a leak here grows each step)."""
    import sys

    a = cx.from_numpy(np.ones((3, 4), np.float32)).requires_grad_()
    b = cx.from_numpy(np.ones((3, 4), np.float32))
    c = cx.from_numpy(np.ones(5, np.float32))
    t = cx.from_numpy(np.ones((4, 3), np.float32)).t()       # a transposed view
    watched = [a, b, a._data, b._data, c._data, np.dtype(np.float32), arithmetic._MUL, arithmetic._MUL.node,
               arithmetic._SUB.overloads, 2.5]

    def calls():
        _engine.binary(arithmetic._MUL, a, b)        # taken, recorded, saves both
        _engine.binary(arithmetic._SUB, a, 2.5)      # taken, an overload's node
        _engine.binary(arithmetic._MUL, b.t(), 2.5)  # taken, laid out like the input
        _engine.binary(arithmetic._MUL, a, c)        # numpy's ValueError: declined
        _engine.binary(arithmetic._MUL, t, 2.5)      # a view: declined
    calls()
    before = [sys.getrefcount(x) for x in watched]
    for _ in range(200):
        calls()
    assert [sys.getrefcount(x) for x in watched] == before


def test_an_array_rebound_while_the_op_runs_stays_alive():
    """op.check is Python code: rebinding the input's array there (another
    thread could too) must not free the array the op goes on to read."""
    x = cx.from_numpy(np.arange(3.0))

    def rebind(a, b, dtype):
        a._data = np.full(3, 7.0)
    op = arithmetic.Binary("mul_rebinding", np.multiply, check=rebind)
    for _ in range(50):
        x._data = np.arange(3.0) + 1.0
        out = _engine.binary(op, x, 2.0)
        np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])     # the array it started with
    assert x.tolist() == [7.0, 7.0, 7.0]


def test_a_failing_op_is_checked_once_by_each_path():
    calls = []
    op = arithmetic.Binary("add_counted", np.add, check=lambda a, b, dtype: calls.append(1))
    method = arithmetic._operator(cx.add, binary=op)         # as Tensor.__add__ is made
    with pytest.raises(RuntimeError, match="must match the size"):
        method(cx.ones(3), cx.ones(4))
    assert len(calls) == 2                  # compiled once (numpy refused: declined), Python once


def test_a_subclass_that_redefines_an_attribute_is_left_to_python():
    class AlwaysRequiresGrad(cx.Tensor):
        @property
        def _requires_grad(self):
            return True

        @_requires_grad.setter
        def _requires_grad(self, value):
            pass
    odd = cx.from_numpy(np.ones(3)).as_subclass(AlwaysRequiresGrad) if hasattr(cx.Tensor, "as_subclass") else None
    if odd is None or type(odd) is not AlwaysRequiresGrad:
        pytest.skip("as_subclass is not available to make the subclass instance")
    assert _engine.binary(arithmetic._MUL, odd, 2.0) is None
    parameter = cx.nn.Parameter(cx.ones(3))
    assert isinstance(_engine.binary(arithmetic._MUL, parameter, 2.0), cx.Tensor)
