"""Module: torch's attribute rules (issue 11 item 17: a submodule assigned
over a buffer removes the buffer), hooks around __call__, traversal,
get_submodule/get_parameter/get_buffer, load_state_dict(strict, assign),
conversions that keep parameter identity, train/eval, apply.  The same
structures are built in torch 2.13 and compared where torch is installed."""
import copy
import re

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out


def make_block_class(lib, nn_mod):
    class Block(nn_mod.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn_mod.Linear(4, 3)
            self.scale = nn_mod.Parameter(lib.ones(3))
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("cache", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.fc(x) * self.scale

    return Block


def both():
    """(cextend Block class, torch Block class)."""
    return make_block_class(cx, nn), make_block_class(torch, torch.nn)


# torch's wording -> ours, where only the library's name differs
_SPELLINGS = [("torch.nn.Parameter", "cextend.nn.Parameter"), ("torch.nn.Module", "cextend.nn.Module"),
              ("torch.nn.Buffer, torch.Tensor", "cextend.Tensor"), ("torch Tensor", "cextend Tensor")]


def error_of(fn):
    """The error fn raises, with library names normalised: quoted type names lose their module
    path ('torch.nn.modules.activation.ReLU' and 'cextend.nn.layers.ReLU' both read 'ReLU')."""
    with pytest.raises(Exception) as info:
        fn()
    message = re.sub(r"'(?:\w+\.)+(\w+)'", r"'\1'", str(info.value))
    for theirs, ours in _SPELLINGS:
        message = message.replace(theirs, ours)
    return type(info.value), message


def names(module):
    return ([n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()],
            [n for n, _ in module.named_modules()], list(module.state_dict()))


# -- attribute rules ----------------------------------------------------------------------------

@needs_torch
def test_submodule_replacing_a_buffer_removes_the_buffer_as_torch():
    """Issue 11 item 17."""
    results = []
    for lib, nn_mod, (Block,) in ((cx, nn, both()[:1]), (torch, torch.nn, both()[1:])):
        m = Block()
        m.steps = nn_mod.Linear(1, 1)           # a submodule over a persistent buffer
        m.cache = nn_mod.ReLU()                 # ... and over a non-persistent one
        assert "steps" not in m._buffers and "cache" not in m._non_persistent_buffers_set
        m.register_buffer("cache2", lib.zeros(1), persistent=False)
        results.append(names(m))
    assert results[0] == results[1]
    assert "steps" not in results[0][1] and "steps.weight" in results[0][3]


@needs_torch
def test_every_replacement_rule_equals_torch():
    def scenario(lib, nn_mod, Block):
        m = Block()
        m.fc = nn_mod.Parameter(lib.ones(2))        # parameter over a submodule
        m.steps = nn_mod.Parameter(lib.ones(1))     # parameter over a buffer
        m.plain = 3
        m.plain = nn_mod.Parameter(lib.ones(1))     # parameter over a plain attribute
        m.cache = lib.ones(2)                       # a tensor into a buffer slot stays a (non-persistent) buffer
        m.other = lib.ones(1)                       # a tensor elsewhere is a plain attribute
        del m.fc
        m.scale = None                              # a parameter slot takes None
        m.sub = nn_mod.ReLU()
        m.sub = None                                # ... and so does a module slot
        return names(m), "plain" in m.__dict__, "cache" in m._non_persistent_buffers_set, \
            isinstance(m.__dict__.get("other"), lib.Tensor)

    ours = scenario(cx, nn, both()[0])
    theirs = scenario(torch, torch.nn, both()[1])
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("action", [
    lambda lib, nn_mod, m: setattr(m, "scale", lib.ones(3)),            # tensor over a parameter
    lambda lib, nn_mod, m: setattr(m, "fc", 3),                         # non-module over a module
    lambda lib, nn_mod, m: setattr(m, "scale", nn_mod.ReLU()),          # a module over a parameter
    lambda lib, nn_mod, m: setattr(m, "steps", 3.0),                    # non-tensor over a buffer
    lambda lib, nn_mod, m: m.register_buffer("forward", lib.ones(1)),   # an existing attribute
    lambda lib, nn_mod, m: m.register_parameter("training", None),
    lambda lib, nn_mod, m: m.add_module("fc.x", nn_mod.ReLU()),
    lambda lib, nn_mod, m: m.register_buffer("", lib.ones(1)),
    lambda lib, nn_mod, m: m.register_buffer("a.b", lib.ones(1)),
    lambda lib, nn_mod, m: m.register_parameter("", None),
    lambda lib, nn_mod, m: m.register_parameter(3, None),
    lambda lib, nn_mod, m: m.register_parameter("w", lib.ones(1)),
    lambda lib, nn_mod, m: m.add_module("x", 3),
    lambda lib, nn_mod, m: m.add_module("", nn_mod.ReLU()),
    lambda lib, nn_mod, m: m.register_buffer("b", 3),
    lambda lib, nn_mod, m: delattr(m, "missing"),
])
def test_registration_errors_equal_torch(action):
    Ours, Theirs = both()
    assert error_of(lambda: action(cx, nn, Ours())) == error_of(lambda: action(torch, torch.nn, Theirs()))


@needs_torch
def test_assigning_before_init_raises_as_torch():
    def make(nn_mod, lib, what):
        class Early(nn_mod.Module):
            def __init__(self):
                if what == "param":
                    self.w = nn_mod.Parameter(lib.ones(1))
                elif what == "module":
                    self.m = nn_mod.ReLU()
                else:
                    self.register_buffer("b", lib.ones(1))
        return Early

    for what in ("param", "module", "buffer"):
        assert error_of(make(nn, cx, what)) == error_of(make(torch.nn, torch, what))


# -- traversal and lookup -----------------------------------------------------------------------

@needs_torch
def test_traversal_with_shared_modules_equals_torch():
    def build(nn_mod):
        shared = nn_mod.Linear(2, 2)
        inner = nn_mod.Sequential(shared, nn_mod.ReLU(), shared)
        return nn_mod.Sequential(inner, shared, nn_mod.Linear(2, 1))

    ours, theirs = build(nn), build(torch.nn)
    for remove_duplicate in (True, False):
        assert [n for n, _ in ours.named_modules(remove_duplicate=remove_duplicate)] == \
            [n for n, _ in theirs.named_modules(remove_duplicate=remove_duplicate)]
        assert [n for n, _ in ours.named_parameters(remove_duplicate=remove_duplicate)] == \
            [n for n, _ in theirs.named_parameters(remove_duplicate=remove_duplicate)]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_parameters(prefix="model", recurse=False)] == \
        [n for n, _ in theirs.named_parameters(prefix="model", recurse=False)]
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)


@needs_torch
@pytest.mark.parametrize("call", [
    lambda m: m.get_submodule("fc"), lambda m: m.get_submodule(""), lambda m: m.get_submodule("nope"),
    lambda m: m.get_submodule("scale"), lambda m: m.get_submodule("fc.weight"),
    lambda m: m.get_parameter("fc.weight"), lambda m: m.get_parameter("scale"),
    lambda m: m.get_parameter("steps"), lambda m: m.get_parameter("fc.nope"),
    lambda m: m.get_buffer("steps"), lambda m: m.get_buffer("scale"), lambda m: m.get_buffer("cache"),
])
def test_get_submodule_parameter_buffer_equal_torch(call):
    Ours, Theirs = both()
    ours, theirs = Ours(), Theirs()
    try:
        expected = call(theirs)
    except Exception:
        assert error_of(lambda: call(ours)) == error_of(lambda: call(theirs))
        return
    got = call(ours)
    if isinstance(expected, torch.nn.Module):
        assert type(got).__name__ == type(expected).__name__
    else:
        assert tuple(got.shape) == tuple(expected.shape)
        assert isinstance(got, nn.Parameter) == isinstance(expected, torch.nn.Parameter)


def test_set_submodule():
    m = nn.Sequential(nn.Sequential(nn.Linear(2, 2)))
    m.set_submodule("0.0", nn.ReLU())
    assert isinstance(m[0][0], nn.ReLU)
    with pytest.raises(AttributeError, match="has no attribute `x`"):
        m.set_submodule("0.x", nn.ReLU(), strict=True)
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name"):
        m.set_submodule("", nn.ReLU())


# -- hooks --------------------------------------------------------------------------------------

@needs_torch
def test_forward_hooks_equal_torch():
    def run(lib, nn_mod):
        log = []
        m = nn_mod.Linear(3, 2)
        with torch.no_grad() if lib is torch else cx.no_grad():
            m.weight.fill_(1.0)
            m.bias.fill_(0.5)
        h1 = m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", len(args))) or args[0] * 2)
        m.register_forward_pre_hook(lambda mod, args: log.append(("pre0", len(args))), prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs) if log.append(("prekw",)) is None
                                    else None, with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: out + 1)
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("postkw", tuple(out.shape))),
                                with_kwargs=True)
        x = lib.ones(4, 3)
        first = m(x).detach().numpy().copy()
        h1.remove()
        second = m(x).detach().numpy().copy()
        return log, first, second

    ours, theirs = run(cx, nn), run(torch, torch.nn)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])


def test_pre_hook_with_kwargs_must_return_a_pair_and_always_call_hooks_run_on_errors():
    m = nn.Linear(2, 2)
    m.register_forward_pre_hook(lambda mod, args, kwargs: "bad", with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of \\(new_args, "):
        m(cx.ones(1, 2))

    class Fails(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    f = Fails()
    f.register_forward_hook(lambda mod, args, out: seen.append("always"), always_call=True)
    f.register_forward_hook(lambda mod, args, out: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        f(cx.ones(1))
    assert seen == ["always"]


def test_hook_handles_work_as_context_managers():
    m = nn.ReLU()
    calls = []
    with m.register_forward_hook(lambda mod, args, out: calls.append(1)):
        m(cx.ones(1))
    m(cx.ones(1))
    assert calls == [1]


# -- state dicts --------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("edit", ["none", "drop", "extra", "both", "nested_extra", "none_param"])
@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_keys_and_errors_equal_torch(edit, strict):
    def run(lib, Block):
        m = Block()
        if edit == "none_param":
            m.register_parameter("maybe", None)
        sd = m.state_dict()
        if edit in ("drop", "both"):
            del sd["fc.bias"]
        if edit in ("extra", "both"):
            sd["extra"] = lib.zeros(1)
        if edit == "nested_extra":
            sd["fc.extra"] = lib.zeros(1)
        if edit == "none_param":
            sd["maybe"] = lib.zeros(1)
        try:
            result = m.load_state_dict(sd, strict=strict)
        except RuntimeError as e:
            return "error", str(e)
        return "ok", (list(result.missing_keys), list(result.unexpected_keys), repr(result))

    ours, theirs = run(cx, both()[0]), run(torch, both()[1])
    assert ours == theirs


@needs_torch
def test_size_mismatch_and_non_tensor_values_raise_even_when_not_strict():
    for edit in ("shape", "value"):
        messages = []
        for lib, Block in ((cx, both()[0]), (torch, both()[1])):
            m = Block()
            sd = m.state_dict()
            sd["fc.weight"] = lib.zeros(4, 3) if edit == "shape" else 1.5
            with pytest.raises(RuntimeError) as info:
                m.load_state_dict(sd, strict=False)
            messages.append(str(info.value).replace("torch.Size", "cextend.Size").replace("torch.Tensor",
                                                                                           "cextend.Tensor"))
        assert messages[0] == messages[1]


def test_load_copies_values_and_keeps_tensors_or_assigns_them():
    Ours = both()[0] if torch is not None else make_block_class(cx, nn)
    a, b = Ours(), Ours()
    with cx.no_grad():
        a.fc.weight.fill_(2.0)
    weight = b.fc.weight
    b.load_state_dict(a.state_dict())
    assert b.fc.weight is weight and np.all(weight.detach().numpy() == 2.0)
    new_weight = cx.full((3, 4), 7.0)
    sd = b.state_dict()
    sd["fc.weight"] = new_weight
    b.load_state_dict(sd, assign=True)
    assert isinstance(b.fc.weight, nn.Parameter) and b.fc.weight.requires_grad
    np.testing.assert_array_equal(b.fc.weight.detach().numpy(), np.full((3, 4), 7.0))
    new_weight.fill_(1.0)                       # assign shares storage with the given tensor
    assert b.fc.weight.detach().numpy()[0, 0] == 1.0


def test_a_one_element_checkpoint_loads_into_a_scalar_parameter():
    class Scalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(cx.tensor(0.0))

    m = Scalar()
    m.load_state_dict({"s": cx.tensor([3.0])})
    assert m.s.item() == 3.0


def test_load_state_dict_hooks():
    m = nn.Sequential(nn.Linear(2, 2))
    seen = []
    m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(list(keys.missing_keys)))
    m[0].register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: seen.append(prefix))
    sd = m.state_dict()
    del sd["0.bias"]
    m.load_state_dict(sd, strict=False)
    assert seen == ["0.", ["0.bias"]]
    m.register_load_state_dict_post_hook(lambda mod, keys: 1)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        m.load_state_dict(m.state_dict())


def test_state_dict_positional_arguments_warn_and_non_dict_input_raises():
    m = nn.Linear(2, 1)
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd = m.state_dict(None, "pre.")
    assert list(sd) == ["pre.weight", "pre.bias"]
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])


def test_state_dict_post_hook_can_edit_in_place():
    m = nn.Linear(2, 1)
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.pop(prefix + "bias"))
    with pytest.raises(RuntimeError, match="must return None"):
        m.state_dict()


# -- conversions and modes ----------------------------------------------------------------------

def test_to_and_casts_keep_parameter_and_grad_identity():
    Ours = make_block_class(cx, nn)
    m = Ours()
    m.register_buffer("counts", cx.zeros(2, dtype=cx.int64))
    m(cx.randn(2, 4)).sum().backward()
    weight, grad = m.fc.weight, m.fc.weight.grad
    opt = cx.optim.SGD(m.parameters(), lr=0.1)
    assert m.double() is m
    assert m.fc.weight is weight and weight.dtype == cx.float64
    assert weight.grad is grad and grad.dtype == cx.float64
    assert m.steps.dtype == cx.float64 and m.counts.dtype == cx.int64
    before = weight.detach().numpy().copy()
    opt.step()                                 # the optimizer built earlier still updates the weight
    assert not np.array_equal(before, weight.detach().numpy())
    m.to(cx.float32)
    assert weight.dtype == cx.float32
    m.half()
    assert weight.dtype == cx.float16 and m.counts.dtype == cx.int64
    m.float()
    m.to(cx.zeros(1, dtype=cx.float64))
    assert weight.dtype == cx.float64
    m.to("cpu")
    m.to(device="cpu", dtype=cx.float32)
    assert weight.dtype == cx.float32
    m.type(cx.float64)
    assert m.counts.dtype == cx.float64           # type() converts every tensor, as torch's


@needs_torch
def test_to_an_integer_dtype_raises_as_torch():
    assert error_of(lambda: nn.Linear(2, 2).to(cx.int64))[1].replace("cextend.", "") == \
        error_of(lambda: torch.nn.Linear(2, 2).to(torch.int64))[1].replace("torch.", "")


def test_requires_grad_train_eval_and_apply():
    class CountingTrain(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.fc = nn.Linear(2, 2)

        def train(self, mode=True):
            self.calls += 1
            return super().train(mode)

    child = CountingTrain()
    m = nn.Sequential(child, nn.ReLU())
    assert m.eval() is m and not child.training and not child.fc.training and child.calls == 1
    m.train()
    assert child.training and child.fc.training and child.calls == 2
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    assert m.requires_grad_(False) is m and not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())
    order = []
    m.apply(lambda mod: order.append(type(mod).__name__))
    assert order == ["Linear", "CountingTrain", "ReLU", "Sequential"]


def test_zero_grad_in_place_keeps_the_grad_tensor():
    m = nn.Linear(2, 2)
    m(cx.ones(1, 2)).sum().backward()
    grad = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is grad and not grad.numpy().any()
    m.zero_grad()
    assert m.weight.grad is None


def test_deepcopy_of_a_module_is_independent():
    m = nn.Sequential(nn.Linear(2, 2))
    clone = copy.deepcopy(m)
    assert clone[0].weight is not m[0].weight
    np.testing.assert_array_equal(clone[0].weight.detach().numpy(), m[0].weight.detach().numpy())
    with cx.no_grad():
        clone[0].weight.fill_(0.0)
    assert m[0].weight.detach().numpy().any()


@needs_torch
def test_repr_equals_torch_for_nested_modules():
    def build(nn_mod):
        class Net(nn_mod.Module):
            def __init__(self):
                super().__init__()
                self.body = nn_mod.Sequential(nn_mod.Linear(3, 4), nn_mod.ReLU())
                self.head = nn_mod.Linear(4, 1, bias=False)

            def forward(self, x):
                return self.head(self.body(x))
        return Net()

    assert repr(build(nn)) == repr(build(torch.nn))


def test_module_init_rejects_arguments_as_torch():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__(3)

    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        Bad()
