"""Module hooks that torch's own tests use (test_nn.py, nn/test_module_hooks.py):
the global module hooks of cextend.nn.modules.module, full backward hooks
and pre-hooks (what they see, what they may replace, when they fire), the
deprecated register_backward_hook, and the errors torch raises.

Each program runs with cextend and, where torch 2.13 is installed, with
torch; the two must agree (call orders, gradients in float64, error types
and messages), and each test also states the answer it expects, so it
still checks something without torch.
"""
import warnings

import numpy as np
import pytest

import cextend as cx
from parity_helpers import LIBS, each_lib, real_torch
from rng_isolation import keep_global_rng

pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # nn.Linear's init draws from the global RNG


def _module_module(lib):
    """torch.nn.modules.module, or cextend's."""
    return lib.nn.modules.module


@pytest.fixture(autouse=True)
def _no_global_hooks_left():
    """Each test leaves no global hook behind (and the global backward-hook kind unset)."""
    yield
    for lib in LIBS:
        mm = _module_module(lib)
        leftovers = [name for name in ("_global_forward_pre_hooks", "_global_forward_hooks",
                                       "_global_backward_pre_hooks", "_global_backward_hooks",
                                       "_global_buffer_registration_hooks", "_global_module_registration_hooks",
                                       "_global_parameter_registration_hooks") if getattr(mm, name)]
        for name in leftovers:
            getattr(mm, name).clear()
        impl = cx.nn.module if lib is cx else mm
        impl._global_is_full_backward_hook = None
        assert not leftovers, "a test left global hooks behind: %s" % leftovers


def _both(program):
    """program(cextend), and program(torch) where installed (else None)."""
    return program(cx), (program(real_torch) if real_torch is not None else None)


def _agree(program, expected=None):
    """program's results with cextend equal torch's (where installed) and, if given, `expected`."""
    ours, theirs = _both(program)
    if expected is not None:
        assert ours == expected
    if theirs is not None:
        assert ours == theirs
    return ours


def _arr(t):
    return None if t is None else np.array(t.detach().numpy())        # a copy: torch may reuse a gradient


def _assert_close_nested(a, b):
    """Two nested tuples/lists of arrays (or None) agree to float64 precision."""
    if a is None or b is None:
        assert a is None and b is None, (a, b)
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _assert_close_nested(x, y)
    elif isinstance(a, str):
        assert a == b
    else:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def _grads(gs):
    return tuple(_arr(g) for g in gs)


def _error(fn):
    """(exception type name, message) of what fn raises."""
    try:
        fn()
    except Exception as e:          # the type and message are what is compared
        return type(e).__name__, str(e)
    return None


# -- the global hooks' import path and handles ------------------------------------------------

def test_the_global_hook_functions_are_where_torch_has_them():
    mm = cx.nn.modules.module
    for name in ("register_module_forward_pre_hook", "register_module_forward_hook",
                 "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
                 "register_module_backward_hook", "register_module_buffer_registration_hook",
                 "register_module_module_registration_hook", "register_module_parameter_registration_hook"):
        assert callable(getattr(mm, name)), name
    assert mm.Module is cx.nn.Module
    assert mm._global_forward_hooks is cx.nn.module._global_forward_hooks   # the same dict, read live
    assert mm._global_is_full_backward_hook is None


# -- global forward hooks: before the module's own --------------------------------------------

@each_lib
def test_global_forward_hooks_run_before_the_modules_own(lib):
    nn, mm = lib.nn, _module_module(lib)
    order = []
    m = nn.Linear(2, 2)
    handles = [
        m.register_forward_pre_hook(lambda mod, args: order.append("own pre")),
        mm.register_module_forward_pre_hook(lambda mod, args: order.append("global pre")),
        m.register_forward_hook(lambda mod, args, out: order.append("own")),
        mm.register_module_forward_hook(lambda mod, args, out: order.append("global")),
        m.register_forward_pre_hook(lambda mod, args: order.append("own pre, prepended"), prepend=True),
    ]
    m(lib.ones(1, 2))
    assert order == ["global pre", "own pre, prepended", "own pre", "global", "own"]
    for h in handles:
        h.remove()
    order.clear()
    m(lib.ones(1, 2))
    assert order == [] and not mm._global_forward_hooks and not mm._global_forward_pre_hooks


@each_lib
def test_global_forward_hooks_see_every_module_and_may_replace_values(lib):
    nn, mm = lib.nn, _module_module(lib)
    seen = []

    def pre(mod, args):
        seen.append(("pre", type(mod).__name__))
        if isinstance(mod, nn.ReLU):
            return (args[0] - 10,)          # a replacement input

    def post(mod, args, out):
        seen.append(("post", type(mod).__name__))
        if isinstance(mod, nn.Sequential):
            return out * 2                  # a replacement output

    model = nn.Sequential(nn.Identity(), nn.ReLU())
    with mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post):
        out = model(lib.tensor([[5.0, 20.0]]))
    assert seen == [("pre", "Sequential"), ("pre", "Identity"), ("post", "Identity"), ("pre", "ReLU"),
                    ("post", "ReLU"), ("post", "Sequential")]
    assert out.tolist() == [[0.0, 20.0]]
    assert not mm._global_forward_hooks and not mm._global_forward_pre_hooks   # the with blocks removed them


@each_lib
def test_global_forward_hook_with_kwargs_and_always_call(lib):
    nn, mm = lib.nn, _module_module(lib)
    calls = []

    class Fails(nn.Module):
        def forward(self, x, *, boom=False):
            if boom:
                raise ValueError("forward failed")
            return x

    m = Fails()
    h1 = mm.register_module_forward_hook(lambda mod, args, kwargs, out: calls.append(("kw", sorted(kwargs))),
                                         with_kwargs=True)
    h2 = mm.register_module_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    h3 = m.register_forward_hook(lambda mod, args, out: calls.append(("own always", out)), always_call=True)
    m(lib.ones(1), boom=False)
    assert [c[0] for c in calls] == ["kw", "always", "own always"] and calls[0][1] == ["boom"]
    calls.clear()
    with pytest.raises(ValueError, match="forward failed"):
        m(lib.ones(1), boom=True)
    # the with_kwargs hook is not an always_call one; the always_call ones run (global first), with None
    assert calls == [("always", None), ("own always", None)]
    for h in (h1, h2, h3):
        h.remove()


@each_lib
def test_a_failing_always_call_hook_is_silenced_with_a_warning(lib):
    nn, mm = lib.nn, _module_module(lib)

    class Fails(nn.Module):
        def forward(self, x):
            raise KeyError("in forward")

    def bad(mod, args, out):
        raise RuntimeError("in the hook")

    with mm.register_module_forward_hook(bad, always_call=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(KeyError):
                Fails()(lib.ones(1))
    messages = [str(w.message) for w in caught]
    assert any("global module forward hook with ``always_call=True`` raised an exception" in m and "in the hook" in m
               for m in messages), messages


# -- registration hooks ------------------------------------------------------------------------

def _registration_program(lib):
    nn, mm = lib.nn, _module_module(lib)
    log = []

    def on_buffer(mod, name, buf):
        log.append(("buffer", type(mod).__name__, name, None if buf is None else buf.tolist()))
        if name == "doubled":
            return buf * 2

    def on_param(mod, name, param):
        log.append(("param", type(mod).__name__, name, list(param.shape)))

    def on_module(mod, name, sub):
        log.append(("module", type(mod).__name__, name, type(sub).__name__))
        if name == "swap":
            return nn.Tanh()

    handles = [mm.register_module_buffer_registration_hook(on_buffer),
               mm.register_module_parameter_registration_hook(on_param),
               mm.register_module_module_registration_hook(on_module)]
    try:
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 1)                   # registers weight, bias, then the submodule
                self.register_buffer("doubled", lib.ones(2))
                self.register_buffer("empty", None)
                self.swap = nn.ReLU()                       # attribute assignment runs the hook too
                self.add_module("none", None)
                self.register_parameter("nothing", None)    # None parameters skip the hook, as torch's
                self.scale = nn.Parameter(lib.ones(3))

        net = Net()
        net.steps = lib.zeros(1)                            # a plain attribute: no hook
        net.doubled = lib.tensor([5.0, 6.0])                # assigning into a buffer slot: the hook again
        result = (log, type(net.swap).__name__, net.doubled.tolist())
    finally:
        for h in handles:
            h.remove()
    log_after = len(log)
    nn.Linear(1, 1)
    return result + (len(log) == log_after,)


def test_registration_hooks_see_every_registration_and_may_replace_it():
    expected = ([("param", "Linear", "weight", [1, 2]), ("param", "Linear", "bias", [1]),
                 ("module", "Net", "fc", "Linear"), ("buffer", "Net", "doubled", [1.0, 1.0]),
                 ("buffer", "Net", "empty", None), ("module", "Net", "swap", "ReLU"),
                 ("module", "Net", "none", "NoneType"), ("param", "Net", "scale", [3]),
                 ("buffer", "Net", "doubled", [5.0, 6.0])],
                "Tanh", [10.0, 12.0], True)
    _agree(_registration_program, expected)


# -- full backward hooks: what they see ---------------------------------------------------------

def _linear64(lib, rng, n_in=3, n_out=2):
    m = lib.nn.Linear(n_in, n_out).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(rng.standard_normal((n_out, n_in))))
        m.bias.copy_(lib.tensor(rng.standard_normal(n_out)))
    return m


def _full_hook_program(lib):
    rng = np.random.default_rng(1)
    m = _linear64(lib, rng)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("full", _grads(gi), _grads(go))))
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", _grads(go))))
    x = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    g = lib.tensor(rng.standard_normal((4, 2)))
    out = m(x)
    out.backward(g)
    return seen, _arr(x.grad), _arr(m.weight), _arr(g), _arr(m.weight.grad)


def test_full_backward_hook_gets_the_gradients_wrt_inputs_and_outputs():
    ours, theirs = _both(_full_hook_program)
    seen, x_grad, weight, g, _ = ours
    assert [s[0] for s in seen] == ["pre", "full"]
    np.testing.assert_allclose(seen[0][1][0], g)                      # pre: grad_output
    np.testing.assert_allclose(seen[1][1][0], g @ weight)             # grad_input: d out / d x
    np.testing.assert_allclose(seen[1][2][0], g)                      # grad_output again
    np.testing.assert_allclose(x_grad, g @ weight)
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _multi_output_program(lib):
    """Two outputs (one unused), a second input without grad, a non-Tensor argument."""
    rng = np.random.default_rng(2)
    nn = lib.nn

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = _linear64(lib, rng)

        def forward(self, x, y, k):
            return self.lin(x) * k, (x * y).sum(1), x.exp()

    m = Two()
    seen = []
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", _grads(go))))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("full", _grads(gi), _grads(go))))
    x = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    y = lib.tensor(rng.standard_normal((4, 3)))
    a, b, _unused = m(x, y, 2.0)
    (a.sum() + (b * b).sum()).backward()
    return seen, _arr(x.grad), _arr(y), _arr(b)


def test_full_backward_hook_with_several_outputs_an_unused_one_and_inputs_without_grad():
    ours, theirs = _both(_multi_output_program)
    seen, x_grad, y, b = ours
    assert [s[0] for s in seen] == ["pre", "full"]
    pre_go = seen[0][1]
    assert len(pre_go) == 3 and pre_go[2] is None                     # the unused output: None
    np.testing.assert_allclose(pre_go[0], np.ones((4, 2)))
    np.testing.assert_allclose(pre_go[1], 2 * b)
    gi = seen[1][1]
    assert len(gi) == 3 and gi[2] is None                             # the float argument: None
    np.testing.assert_allclose(gi[0], x_grad)
    np.testing.assert_allclose(gi[1], np.zeros((4, 3)))               # y needs no grad: zeros, as torch's
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _kwargs_program(lib):
    rng = np.random.default_rng(3)
    nn = lib.nn

    class Scaled(nn.Module):
        def forward(self, x, *, scale):
            return x * scale

    m = Scaled()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(_grads(gi)))
    x = lib.tensor(rng.standard_normal(3), requires_grad=True)
    s = lib.tensor(rng.standard_normal(3), requires_grad=True)
    m(x, scale=s).sum().backward()
    return seen, _arr(s), _arr(x)


def test_keyword_arguments_are_not_in_grad_input():
    ours, theirs = _both(_kwargs_program)
    seen, s, _ = ours
    assert len(seen) == 1 and len(seen[0]) == 1                       # only x, the positional input
    np.testing.assert_allclose(seen[0][0], s)
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _replacing_program(lib):
    rng = np.random.default_rng(4)
    m = _linear64(lib, rng)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 3,))
    m2 = _linear64(lib, rng)
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0 + 1,))
    x = lib.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    x2 = lib.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    (m(x) * 5).sum().backward()
    (m2(x2) * 5).sum().backward()
    return _arr(x.grad), _arr(m.weight), _arr(x2.grad), _arr(m2.weight), _arr(m2.weight.grad), _arr(x2)


def test_hooks_returning_replacements():
    ours, theirs = _both(_replacing_program)
    x_grad, w, x2_grad, w2, w2_grad, x2 = ours
    np.testing.assert_allclose(x_grad, 3 * 5 * np.ones((2, 2)) @ w)   # the hook's grad_input, tripled
    # the pre-hook replaced grad_output by ones: the module's insides see 1, not 5
    np.testing.assert_allclose(x2_grad, np.ones((2, 2)) @ w2)
    np.testing.assert_allclose(w2_grad, np.ones((2, 2)).T @ x2)
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _remove_program(lib):
    m = lib.nn.Linear(2, 2)
    calls = []
    h_full = m.register_full_backward_hook(lambda mod, gi, go: calls.append("full"))
    h_pre = m.register_full_backward_pre_hook(lambda mod, go: calls.append("pre"))
    x = lib.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    first = list(calls)
    h_full.remove()
    m(x).sum().backward()
    second = calls[len(first):]
    h_pre.remove()
    out = m(x)
    third_no_hook_view = out.grad_fn.name()
    out.sum().backward()
    return first, second, len(calls) == len(first) + len(second), third_no_hook_view


def test_handle_remove_stops_the_hook():
    _agree(_remove_program, (["pre", "full"], ["pre"], True, "AddmmBackward0"))


def _order_program(lib):
    nn, mm = lib.nn, _module_module(lib)
    order = []
    inner = nn.Linear(2, 2)
    outer = nn.Sequential(inner, nn.Tanh())
    for name, mod in (("inner", inner), ("outer", outer)):
        mod.register_full_backward_pre_hook(lambda m, go, name=name: order.append(name + " pre"))
        mod.register_full_backward_hook(lambda m, gi, go, name=name: order.append(name + " full"))
    inner.register_full_backward_hook(lambda m, gi, go: order.append("inner full, prepended"), prepend=True)
    inner.register_full_backward_pre_hook(lambda m, go: order.append("inner pre, prepended"), prepend=True)
    handles = [mm.register_module_full_backward_pre_hook(
                   lambda m, go: order.append("global pre " + type(m).__name__)),
               mm.register_module_full_backward_hook(
                   lambda m, gi, go: order.append("global full " + type(m).__name__))]
    try:
        outer(lib.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return order


def test_backward_hook_order_global_first_nested_modules_and_prepend():
    _agree(_order_program, [
        "global pre Sequential", "outer pre",
        "global pre Tanh",
        "global full Tanh",
        "global pre Linear", "inner pre, prepended", "inner pre",
        "global full Linear", "inner full, prepended", "inner full",
        "global full Sequential", "outer full"])


def _no_input_grad_program(lib):
    """No input requires grad, a parameter does: the hook fires with grad_input all None (and a
    warning); returning a gradient then is an error."""
    m = lib.nn.Linear(2, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, [list(g.shape) for g in go])))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(lib.ones(1, 2)).sum().backward()
    warned = any("Full backward hook is firing when gradients are computed with respect to module outputs"
                 in str(w.message) for w in caught)
    m2 = lib.nn.Linear(2, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: (lib.ones(1, 2),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        error = _error(lambda: m2(lib.ones(1, 2)).sum().backward())
    m3 = lib.nn.Linear(2, 2)
    m3.register_full_backward_hook(lambda mod, gi, go: (None,))       # all None: allowed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m3(lib.ones(1, 2)).sum().backward()
    return seen, warned, error, m3.weight.grad is not None


def test_full_backward_hook_when_no_input_requires_grad():
    _agree(_no_input_grad_program, (
        [((None,), [[1, 2]])], True,
        ("RuntimeError", "Backward hook for Modules where no input requires gradient should always return None or "
                         "None for all gradients."),
        True))


def _no_output_grad_program(lib):
    calls = []
    m = lib.nn.Linear(2, 2)
    m.requires_grad_(False)
    m.register_full_backward_hook(lambda mod, gi, go: calls.append("full"))
    out = m(lib.ones(1, 2))
    with lib.no_grad():
        m.requires_grad_(True)
        out2 = m(lib.ones(1, 2, requires_grad=True))
    return calls, out.requires_grad, out2.requires_grad, out2.grad_fn is None


def test_hooks_never_fire_when_no_output_requires_grad_and_nothing_is_wrapped_under_no_grad():
    _agree(_no_output_grad_program, ([], False, False, True))


def _views_program(lib):
    """With full hooks, forward gets views made by BackwardHookFunction, and the caller too."""
    nn = lib.nn
    got = []

    class Peek(nn.Module):
        def forward(self, x, n):
            got.append((x.grad_fn.name(), x._base is not None, n))
            return x * 2

    m = Peek()
    m.register_full_backward_pre_hook(lambda mod, go: None)
    x = lib.ones(3, requires_grad=True)
    out = m(x, 7)
    return got, out.grad_fn.name(), out._base is not None


def test_forward_and_the_caller_get_views_from_backward_hook_function():
    _agree(_views_program, ([("BackwardHookFunctionBackward", True, 7)], "BackwardHookFunctionBackward", True))


def _grad_program(lib):
    """autograd.grad (no .grad accumulation) goes through the hooks too."""
    rng = np.random.default_rng(5)
    m = _linear64(lib, rng)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(_grads(gi)))
    x = lib.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    (gx,) = lib.autograd.grad(m(x).pow(2).sum(), x)
    return seen, _arr(gx)


def test_autograd_grad_runs_the_hooks():
    ours, theirs = _both(_grad_program)
    seen, gx = ours
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0][0], gx)
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _global_full_program(lib):
    rng = np.random.default_rng(6)
    mm = _module_module(lib)
    seen = []
    handle = mm.register_module_full_backward_hook(
        lambda mod, gi, go: seen.append((type(mod).__name__, _grads(gi), _grads(go))))
    try:
        model = lib.nn.Sequential(_linear64(lib, rng), lib.nn.Tanh())
        x = lib.tensor(rng.standard_normal((2, 3)), requires_grad=True)
        model(x).sum().backward()
    finally:
        handle.remove()
    kind_after_remove = mm._global_is_full_backward_hook
    return seen, _arr(x.grad), kind_after_remove


def test_global_full_backward_hook_sees_every_module():
    ours, theirs = _both(_global_full_program)
    seen, x_grad, kind = ours
    assert [s[0] for s in seen] == ["Tanh", "Linear", "Sequential"]
    np.testing.assert_allclose(seen[2][1][0], x_grad)
    np.testing.assert_allclose(seen[1][1][0], x_grad)
    assert kind is True                           # torch keeps the kind after the handle is removed
    if theirs is not None:
        _assert_close_nested(ours, theirs)


# -- errors --------------------------------------------------------------------------------------

def _errors_program(lib):
    nn, mm = lib.nn, _module_module(lib)
    results = []
    m = nn.Linear(2, 2)
    m.register_backward_hook(lambda mod, gi, go: None)
    results.append(_error(lambda: m.register_full_backward_hook(lambda mod, gi, go: None)))
    m2 = nn.Linear(2, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: None)
    results.append(_error(lambda: m2.register_backward_hook(lambda mod, gi, go: None)))
    h = mm.register_module_full_backward_hook(lambda mod, gi, go: None)
    results.append(_error(lambda: mm.register_module_backward_hook(lambda mod, gi, go: None)))
    h.remove()

    class InPlace(nn.Module):
        def forward(self, x):
            return x.mul_(2)

    m3 = InPlace()
    m3.register_full_backward_hook(lambda mod, gi, go: None)
    results.append(_error(lambda: m3(lib.ones(2, requires_grad=True) * 1)))
    m4 = nn.ReLU(inplace=True)
    m4.register_full_backward_pre_hook(lambda mod, go: None)
    results.append(_error(lambda: m4(lib.ones(2, requires_grad=True) * 1)))
    m5 = nn.Linear(2, 2)
    m5.register_full_backward_hook(lambda mod, gi, go: None)
    out = m5(lib.ones(1, 2, requires_grad=True))
    results.append(_error(lambda: out.add_(1)))                     # the caller's output is such a view too
    m6 = nn.Linear(2, 2)
    m6.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    results.append(_error(lambda: m6(lib.ones(1, 2, requires_grad=True)).sum().backward()))
    m7 = nn.Linear(2, 2)
    m7.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    results.append(_error(lambda: m7(lib.ones(1, 2, requires_grad=True)).sum().backward()))
    return results


def test_backward_hook_errors_as_torch():
    view_inplace = ("RuntimeError", "Output 0 of BackwardHookFunction is a view and is being modified inplace. This "
                    "view was created inside a custom Function (or because an input was returned as-is) and the "
                    "autograd logic to handle view+inplace would override the custom backward associated with the "
                    "custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this "
                    "by cloning the output of the custom Function.")
    _agree(_errors_program, [
        ("RuntimeError", "Cannot use both regular backward hooks and full backward hooks on a single Module. Please "
                         "use only one of them."),
        ("RuntimeError", "Cannot use both regular backward hooks and full backward hooks on a single Module. Please "
                         "use only one of them."),
        ("RuntimeError", "Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                         "Please use only one of them."),
        view_inplace, view_inplace, view_inplace,
        ("RuntimeError", "Backward hook returned an invalid number of grad_input, got 2, but expected 1"),
        ("RuntimeError", "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"),
    ])


@each_lib
def test_non_tensor_output_warns_that_backward_hooks_need_tensors(lib):
    nn = lib.nn

    class Dict(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    m = Dict()
    m.register_full_backward_hook(lambda mod, gi, go: None)
    with pytest.warns(UserWarning, match="For backward hooks to be called, module output should be a Tensor or a "
                                         "tuple of Tensors but received <class 'dict'>"):
        m(lib.ones(2, requires_grad=True))


# -- the deprecated register_backward_hook ------------------------------------------------------

def _legacy_program(lib):
    """A one-node forward: the legacy hook sees that node's gradients (grad w.r.t. x and w)."""
    rng = np.random.default_rng(7)
    nn = lib.nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.tensor(rng.standard_normal(3)))

        def forward(self, x):
            return x * self.w

    m = Scale()
    seen = []
    handle = m.register_backward_hook(lambda mod, gi, go: seen.append((_grads(gi), _grads(go))))
    x = lib.tensor(rng.standard_normal(3), requires_grad=True)
    g = lib.tensor(rng.standard_normal(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(x).backward(g)
    warned = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    handle.remove()
    m(x).backward(g)
    return seen, _arr(x), _arr(m.w), _arr(g), warned


def test_register_backward_hook_sees_the_output_nodes_gradients():
    ours, theirs = _both(_legacy_program)
    seen, x, w, g, warned = ours
    # torch warns even here: a leaf input has no grad_fn, so the node's inputs "differ" from the module's
    assert len(seen) == 1 and len(warned) == 1 and "forward contains multiple autograd Nodes" in warned[0]
    (gx, gw), (go,) = seen[0]
    np.testing.assert_allclose(gx, g * w)
    np.testing.assert_allclose(gw, g * x)
    np.testing.assert_allclose(go, g)
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _legacy_warning_program(lib):
    nn = lib.nn

    class TwoOps(nn.Module):
        def forward(self, x):
            return (x * 2).exp()

    m = TwoOps()
    m.register_backward_hook(lambda mod, gi, go: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(lib.ones(2, requires_grad=True))
    return [str(w.message)[:60] for w in caught if issubclass(w.category, FutureWarning)]


def test_register_backward_hook_warns_when_forward_has_several_nodes():
    _agree(_legacy_warning_program, ["Using a non-full backward hook when the forward contains mul"])


def _twice_program(lib):
    """One module called twice in a graph, then differentiated twice: each call has its own hooks' state."""
    rng = np.random.default_rng(9)
    m = _linear64(lib, rng, 3, 3)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("full", _grads(gi), _grads(go))))
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", _grads(go))))
    x = lib.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    y = m(m(x).tanh())
    (gx,) = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
    calls_first = len(seen)
    gx.sum().backward()
    return seen, _arr(gx), calls_first, len(seen), _arr(x.grad)


def test_a_module_called_twice_and_a_double_backward():
    ours, theirs = _both(_twice_program)
    seen, gx, calls_first, calls, _ = ours
    assert [s[0] for s in seen[:calls_first]] == ["pre", "full", "pre", "full"] and calls == 8
    np.testing.assert_allclose(seen[3][1][0], gx)          # the first call's grad_input is d/dx
    if theirs is not None:
        _assert_close_nested(ours, theirs)


def _legacy_errors_and_warnings_program(lib):
    """torch's test_hook_invalid_outputs and test_hook_non_full_warning."""
    nn = lib.nn
    out = []
    module = nn.Sigmoid()
    x = lib.ones(2, 2, requires_grad=True)

    def bw_fail1(mod, grad_input, grad_output):
        return grad_input[:-1]

    def bw_fail2(mod, grad_input, grad_output):
        return grad_input + (lib.ones(2, 2),)

    for fail in (bw_fail1, bw_fail2):
        with module.register_backward_hook(fail), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(_error(lambda: module(x).sum().backward()))
    a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)

    class ListIn(nn.Module):
        def forward(self, pair):
            return pair[0].clone(), pair[1].clone()

    class ListOut(nn.Module):
        def forward(self, a, b):
            return [a.clone(), b.clone()]

    class TwoNodes(nn.Module):
        def forward(self, a, b):
            return a.clone(), b.clone()

    for cls, args in ((ListIn, ([a, b],)), (ListOut, (a, b)), (TwoNodes, (a, b))):
        m = cls()
        m.register_backward_hook(lambda *grads: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(*args)
        out.append([(w.category.__name__, str(w.message)[:70]) for w in caught])
    return out


def test_register_backward_hook_errors_and_warnings_as_torch():
    _agree(_legacy_errors_and_warnings_program, [
        ("RuntimeError", "hook 'bw_fail1' has returned an incorrect number of values (got 0, but expected 1)"),
        ("RuntimeError", "hook 'bw_fail2' has returned an incorrect number of values (got 2, but expected 1)"),
        [("FutureWarning", "Using non-full backward hooks on a Module that does not take as input ")],
        [("FutureWarning", "Using non-full backward hooks on a Module that does not return a singl")],
        [("FutureWarning", "Using a non-full backward hook when outputs are generated by different")],
    ])


def _inplace_and_extra_input_program(lib):
    """torch's test_hook_inplace (the view kept by forward, its base changed) and test_hook_extra_input."""
    nn = lib.nn

    class Keeps(nn.Module):
        def forward(self, inp):
            self.inp = inp
            return inp.clone()

    mod = Keeps()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    base = lib.ones(3, requires_grad=True).clone()
    mod(base)
    base[0] *= 1
    kept = _error(lambda: mod.inp + 2)

    class Extra(nn.Module):
        def forward(self, non_tensor, tensor):
            return tensor.clone(), non_tensor

    seen = []
    m2 = Extra()
    m2.register_full_backward_hook(lambda m, gi, go: seen.append(([g is None for g in gi], [g is None for g in go])))
    o, flag = m2(True, lib.ones(2, requires_grad=True))
    o.sum().backward()
    return kept, seen, flag


def test_a_kept_input_view_whose_base_changed_and_non_tensor_arguments():
    _agree(_inplace_and_extra_input_program, (
        ("RuntimeError", "Output 0 of BackwardHookFunction is a view and its base or another view of its base has been "
                         "modified inplace. This view was created inside a custom Function (or because an input was "
                         "returned as-is) and the autograd logic to handle view+inplace would override the custom "
                         "backward associated with the custom Function, leading to incorrect gradients. This behavior "
                         "is forbidden. You can fix this by cloning the output of the custom Function."),
        [([True, False], [False, True])], True))
