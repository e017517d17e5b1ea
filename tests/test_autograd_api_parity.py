"""Public autograd API as torch 2.13 defines it, found wrong by porting
torch's own test_autograd.py: each program runs in cextend and, where torch
is installed, in torch, and both must give the same observable outcome
(values, .grad, which hooks ran, and whether and what they raise).
"""
import numpy as np
import pytest

import cextend

try:
    import torch
except ImportError:     # the torch runs skip; the stated answers still run
    torch = None

LIBRARIES = [cextend] + ([torch] if torch is not None else [])
each_library = pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.__name__)


def _both(program):
    """program(lib) in every library here; all must return equal results."""
    results = [program(lib) for lib in LIBRARIES]
    for other in results[1:]:
        assert other == results[0], (results[0], other)
    return results[0]


def _outcome(call):
    try:
        return ("ok", call())
    except Exception as e:      # the type and message are compared
        return ("raises", type(e).__name__, str(e))


# -- Variable(x) is a new leaf on x's storage, not x ---------------------------------------------

def test_variable_of_a_tensor_is_a_detached_alias_that_collects_its_own_grad():
    def program(lib):
        x = lib.tensor([1.0, 2.0])
        v = lib.autograd.Variable(x, requires_grad=True)
        (v * 3).sum().backward()
        x.add_(1)                                       # the storage is shared
        return (v is x, x.requires_grad, x.grad is None, v.grad.tolist(), v.tolist(), v.is_leaf,
                isinstance(x, lib.autograd.Variable))
    assert _both(program) == (False, False, True, [3.0, 3.0], [2.0, 3.0], True, True)


def test_variable_of_a_non_leaf_is_detached():
    def program(lib):
        y = lib.tensor([1.0], requires_grad=True) * 2
        w = lib.autograd.Variable(y)
        r = lib.autograd.Variable(y, requires_grad=True)
        return (w.requires_grad, w.grad_fn is None, r.requires_grad, r.is_leaf,
                lib.autograd.Variable().tolist(), _outcome(lambda: lib.autograd.Variable([1.0]))[0])
    assert _both(program) == (False, True, True, True, [], "raises")


def test_reentrant_backward_through_a_variable_counts_its_gradient_once():
    """A Function whose backward runs a backward of its own on a Variable
    of its saved input (test_autograd's reentrant pattern)."""
    def program(lib):
        class Reenter(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                with lib.enable_grad():
                    inner = lib.autograd.Variable(x, requires_grad=True)
                    (inner * inner).sum().backward()
                return g * 2 + inner.grad
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        Reenter.apply(x).sum().backward()
        return x.grad.tolist()
    assert _both(program) == [4.0, 6.0]


# -- no_grad and its kin on generator functions -------------------------------------------------

@each_library
def test_no_grad_on_a_generator_holds_inside_each_step_only(lib):
    @lib.no_grad()
    def steps():
        sent = yield lib.is_grad_enabled()
        yield (sent, lib.is_grad_enabled())
        try:
            yield "waiting"
        except ValueError:
            yield ("caught", lib.is_grad_enabled())
        return "done"
    it = steps()
    assert next(it) is False and lib.is_grad_enabled()
    assert it.send(3) == (3, False) and lib.is_grad_enabled()
    assert next(it) == "waiting"
    assert it.throw(ValueError("x")) == ("caught", False)
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == "done" and lib.is_grad_enabled()


@each_library
def test_enable_grad_and_set_grad_enabled_on_generators(lib):
    @lib.enable_grad()
    def on():
        yield lib.is_grad_enabled()

    @lib.set_grad_enabled(False)
    def off():
        x = lib.tensor([1.0], requires_grad=True)
        yield (x * 2).requires_grad

    with lib.no_grad():
        assert list(on()) == [True] and not lib.is_grad_enabled()
    assert list(off()) == [False] and lib.is_grad_enabled()


# -- backward(inputs=...) runs the hooks torch runs -----------------------------------------------

def _hooks_run(lib, inputs_kind, api="backward"):
    log = []
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    c = b * 3
    out = (c * c).sum()
    accumulate = b.grad_fn.next_functions[0][0]
    accumulate.register_prehook(lambda g: log.append("a node pre"))
    accumulate.register_hook(lambda gi, go: log.append("a node post"))
    for name, t in (("b", b), ("c", c)):
        t.grad_fn.register_prehook(lambda g, name=name: log.append(name + " node pre"))
        t.grad_fn.register_hook(lambda gi, go, name=name: log.append(name + " node post"))
    b.register_hook(lambda g: log.append("b tensor"))
    a.register_hook(lambda g: log.append("a tensor"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("a accumulated %s" % t.grad.tolist()))
    inputs = {"all": None, "leaf": [a], "non-leaf": [b], "both": [a, b], "last": [c]}[inputs_kind]
    if api == "backward":
        out.backward(inputs=inputs)
    else:
        lib.autograd.grad(out, inputs)
    return log, None if a.grad is None else a.grad.tolist()


@pytest.mark.parametrize("inputs_kind", ["all", "leaf", "non-leaf", "both", "last"])
def test_backward_with_inputs_runs_pre_post_and_accumulate_hooks_as_torch(inputs_kind):
    log, grad = _both(lambda lib: _hooks_run(lib, inputs_kind))
    if inputs_kind in ("all", "leaf", "both"):
        assert log[-3:] == ["a node pre", "a accumulated [72.0, 144.0]", "a node post"]
        assert grad == [72.0, 144.0]
    if inputs_kind == "non-leaf":
        assert log[-2:] == ["b node pre", "b node post"] and grad is None
    if inputs_kind == "last":
        assert log == ["c node pre", "c node post"]


@pytest.mark.parametrize("inputs_kind", ["leaf", "non-leaf", "both", "last"])
def test_autograd_grad_runs_no_hook_of_the_inputs_nodes(inputs_kind):
    log, grad = _both(lambda lib: _hooks_run(lib, inputs_kind, api="grad"))
    assert grad is None and not any(entry.startswith("a node") or entry.startswith("a acc") for entry in log)


@each_library
def test_post_accumulate_grad_hooks_only_on_leaves_that_require_grad(lib):
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        lib.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (lib.tensor([1.0], requires_grad=True) * 2).register_post_accumulate_grad_hook(lambda t: None)
    x = lib.tensor([1.0], requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.item()))
    (x * 2).sum().backward()
    handle.remove()
    (x * 2).sum().backward()
    assert seen == [2.0] and x.grad.item() == 4.0


# -- gradcheck refuses an output whose shape changes under perturbation ---------------------------

def _shape_changes_with_value(x):
    n = 2 if x[0].item() > 1.0 else 3      # x[0] == 1.0: minus-eps gives 3 elements, plus-eps 2
    return x[:n] * 2


@each_library
@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("raise_exception", [True, False])
def test_gradcheck_raises_when_a_perturbation_changes_the_output_shape(lib, fast_mode, raise_exception):
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    where = "" if fast_mode else " on index (0,)"
    with pytest.raises(AssertionError, match=r"same shape when inputs are perturbed%s by 1e-06, but got: "
                                             r"shapes \S+\(\[3\]\) and \S+\(\[2\]\)" % where.replace("(", r"\(")
                                             .replace(")", r"\)")):
        lib.autograd.gradcheck(_shape_changes_with_value, (x,), fast_mode=fast_mode,
                               raise_exception=raise_exception)


def test_gradcheck_raises_when_perturbed_outputs_differ_from_the_unperturbed_shape():
    # torch raises too (a RuntimeError from its Jacobian's allocation)
    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        return _outcome(lambda: lib.autograd.gradcheck(lambda x: x[:3 if x[0].item() == 1.0 else 2] * 2, (x,)))[:2]
    assert _both(program) == ("raises", "RuntimeError")


# -- narrow takes an int or a 0-dim integral Tensor ------------------------------------------------

@pytest.mark.parametrize("start", ["0-d float", "0-d bool", "1-d int", "float", "bool"])
def test_narrow_refuses_a_start_that_is_not_an_integer(start):
    def program(lib):
        value = {"0-d float": lib.tensor(0.0), "0-d bool": lib.tensor(True), "1-d int": lib.tensor([0]),
                 "float": 0.0, "bool": True}[start]
        return _outcome(lambda: lib.tensor([[1.0, 2.0], [3.0, 4.0]]).narrow(0, value, 1))[:2]
    expected = ("raises", "RuntimeError") if start.startswith(("0-d", "1-d")) else ("raises", "TypeError")
    assert _both(program) == expected


def test_narrow_with_integral_tensors_and_negative_start():
    def program(lib):
        y = lib.tensor(np.arange(12.0).reshape(4, 3))
        return (y.narrow(0, lib.tensor(1), 2).tolist(), lib.narrow(y, 1, lib.tensor(-2, dtype=lib.int32), 2).tolist(),
                y.narrow(0, -1, lib.tensor(1)).tolist(), _outcome(lambda: y.narrow(0, 0, -1))[:2])
    assert _both(program) == ([[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]],
                              [[1.0, 2.0], [4.0, 5.0], [7.0, 8.0], [10.0, 11.0]], [[9.0, 10.0, 11.0]],
                              ("raises", "RuntimeError"))


# -- backward(inputs=[y]) frees y's node: torch's one node for a 1-d convolution ---------------

@pytest.mark.parametrize("op", ["conv1d", "conv_transpose1d"])
def test_backward_with_a_1d_convolution_output_as_input_frees_its_node(op):
    """cextend composes a 1-d convolution (unsqueeze, 2-d convolution,
    squeeze); torch records one node, which backward(inputs=[y]) runs with
    nothing wanted and frees: a second backward through y raises."""
    def program(lib):
        x = lib.tensor(np.arange(12.0).reshape(2, 2, 3))
        w = lib.tensor(np.ones((2, 3, 2) if op == "conv_transpose1d" else (3, 2, 2)), requires_grad=True)
        y = getattr(lib.nn.functional, op)(x, w)
        (y * 2).sum().backward(inputs=[y])
        first = y.grad.tolist()
        return first, _outcome(lambda: (y * 3).sum().backward())[:2], w.grad
    first, second, w_grad = _both(program)
    assert second == ("raises", "RuntimeError") and w_grad is None
    assert np.all(np.array(first) == 2.0)
