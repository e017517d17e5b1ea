"""Learning-rate schedulers: the same lr sequence as torch 2.13's (chainable
steps, closed-form step(epoch), outside changes to the lr, resuming from a
state_dict), ReduceLROnPlateau in every mode, and torch's errors/warnings."""
import math
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend import optim
from cextend.optim import lr_scheduler
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out


class Warmup:
    """A callable object (its __dict__ is saved in LambdaLR's state_dict)."""

    def __init__(self, length):
        self.length = length

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.length)


SCHEDULERS = [
    ("StepLR", dict(step_size=7, gamma=0.5)),
    ("StepLR", dict(step_size=1, gamma=0.9)),
    ("MultiStepLR", dict(milestones=[3, 10, 10, 25], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.93)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.001)),
    ("CosineAnnealingLR", dict(T_max=7)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e + e % 3)),
    ("LambdaLR", dict(lr_lambda=[lambda e: 1.0 / (e + 1), Warmup(5)])),
]
EPOCHS = 45


def sched_id(case):
    return case[0] + "-" + "-".join("%s=%s" % (k, v if not callable(v) and not isinstance(v, list) else "fn")
                                    for k, v in case[1].items())


def make_optimizer(lib, opt_module):
    p = lib.zeros(3, requires_grad=True)
    q = lib.zeros(2, requires_grad=True)
    return opt_module.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)


def pair(name, kwargs):
    ours, theirs = make_optimizer(cx, optim), make_optimizer(torch, torch.optim)
    return (ours, getattr(lr_scheduler, name)(ours, **kwargs),
            theirs, getattr(torch.optim.lr_scheduler, name)(theirs, **kwargs))


def lrs(opt):
    return [g["lr"] for g in opt.param_groups]


@needs_torch
@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_lr_sequence_equals_torch(case):
    o, so, t, st = pair(*case)
    assert so.get_last_lr() == st.get_last_lr() == lrs(o)
    for epoch in range(EPOCHS):
        o.step()
        t.step()
        so.step()
        st.step()
        assert so.get_last_lr() == st.get_last_lr(), epoch
        assert lrs(o) == lrs(t) == so.get_last_lr()
        assert so.last_epoch == st.last_epoch == epoch + 1


@needs_torch
@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_chainable_steps_compose_with_outside_lr_changes(case):
    """Chainable schedulers scale the current lr, so a manual change persists (as in torch)."""
    o, so, t, st = pair(*case)
    for epoch in range(EPOCHS):
        if epoch == 12:
            for opt in (o, t):
                for g in opt.param_groups:
                    g["lr"] *= 0.5
        o.step()
        t.step()
        so.step()
        st.step()
        assert lrs(o) == lrs(t), epoch


@needs_torch
@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_step_with_epoch_uses_the_closed_form_and_warns(case):
    o, so, t, st = pair(*case)
    o.step()
    t.step()
    for epoch in (5, 17, 3, 30, 30, 0):
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
            so.step(epoch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st.step(epoch)
        assert so.get_last_lr() == st.get_last_lr(), epoch


@needs_torch
@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_state_dict_keys_equal_torch_and_resume_continues_the_sequence(case):
    name, kwargs = case
    o, so, t, st = pair(name, kwargs)
    for _ in range(9):
        o.step()
        so.step()
        t.step()
        st.step()
    state = so.state_dict()
    assert sorted(state) == sorted(st.state_dict())
    for key, value in st.state_dict().items():
        if key != "lr_lambdas":
            assert state[key] == value, key
    # resume: a fresh optimizer (with the saved groups) and scheduler, then load
    o2 = make_optimizer(cx, optim)
    o2.load_state_dict(o.state_dict())
    so2 = getattr(lr_scheduler, name)(o2, **kwargs)
    so2.load_state_dict(state)
    for _ in range(20):
        for opt, sched in ((o, so), (o2, so2), (t, st)):
            opt.step()
            sched.step()
        assert lrs(o2) == lrs(o) == lrs(t)


def test_lambda_lr_saves_callable_objects_but_not_functions():
    opt = make_optimizer(cx, optim)
    warm = Warmup(5)
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 1.0, warm])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"length": 5}]
    warm.length = 99
    sched.load_state_dict(state)
    assert warm.length == 5 and "lr_lambdas" in state


def test_closed_forms_by_formula():
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    with pytest.warns(UserWarning):
        sched.step(4)
    assert sched.get_last_lr()[0] == pytest.approx(0.01 + 0.5 * (0.1 - 0.01) * (1 + math.cos(math.pi * 4 / 10)),
                                                   rel=1e-15)
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.MultiStepLR(opt, milestones=[2, 5], gamma=0.1)
    for _ in range(5):
        opt.step()
        sched.step()
    assert sched.get_last_lr() == pytest.approx([0.1 * 0.01, 0.5 * 0.01], rel=1e-15)


def test_resuming_with_last_epoch_needs_initial_lr():
    opt = make_optimizer(cx, optim)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        lr_scheduler.StepLR(opt, step_size=3, last_epoch=4)
    lr_scheduler.StepLR(opt, step_size=3)
    sched = lr_scheduler.StepLR(opt, step_size=3, last_epoch=4)
    assert sched.last_epoch == 5


def test_not_an_optimizer_raises():
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], step_size=1)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.ReduceLROnPlateau([])


def test_lambda_count_must_match_groups():
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(make_optimizer(cx, optim), [lambda e: 1.0])


def test_stepping_the_scheduler_first_warns_as_torch():
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = make_optimizer(cx, optim)
    sched2 = lr_scheduler.StepLR(opt2, step_size=2)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched2.get_lr()


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=2),
    dict(mode="min", threshold_mode="abs", threshold=0.05, patience=1, cooldown=2),
    dict(mode="max", threshold_mode="abs", threshold=0.01, patience=0, min_lr=0.02),
    dict(patience=2, cooldown=1, factor=0.5, min_lr=[0.01, 0.2]),
    dict(patience=0, factor=0.9, eps=0.01),
]


@needs_torch
@pytest.mark.parametrize("kwargs", PLATEAU, ids=lambda k: "-".join("%s=%s" % kv for kv in k.items()) or "default")
def test_reduce_on_plateau_equals_torch(kwargs):
    o, t = make_optimizer(cx, optim), make_optimizer(torch, torch.optim)
    so = lr_scheduler.ReduceLROnPlateau(o, **kwargs)
    st = torch.optim.lr_scheduler.ReduceLROnPlateau(t, **kwargs)
    rng = np.random.default_rng(0)
    for epoch in range(80):
        metric = float(rng.random() * 0.3 + 10.0 / (epoch + 1)) * (1 if kwargs.get("mode") != "max" else -1)
        if epoch % 2:                                            # 0-d tensors are accepted too
            so.step(cx.tensor(metric))
            st.step(torch.tensor(metric))
        else:
            so.step(metric)
            st.step(metric)
        assert so.get_last_lr() == st.get_last_lr(), epoch
        assert lrs(o) == lrs(t)
        assert (so.best, so.num_bad_epochs, so.cooldown_counter) == (st.best, st.num_bad_epochs,
                                                                     st.cooldown_counter)
    assert sorted(so.state_dict()) == sorted(st.state_dict())


def test_reduce_on_plateau_state_dict_round_trip():
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=1)
    for m in (1.0, 0.5, 0.4, 0.3):
        sched.step(m)
    state = sched.state_dict()
    other = lr_scheduler.ReduceLROnPlateau(make_optimizer(cx, optim))
    other.load_state_dict(state)
    assert (other.mode, other.best, other.num_bad_epochs, other.mode_worse) == ("max", 1.0, sched.num_bad_epochs,
                                                                                -math.inf)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(factor=1.0), dict(mode="mid"), dict(threshold_mode="pct"),
                                    dict(min_lr=[0.1])])
def test_reduce_on_plateau_errors_equal_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.ReduceLROnPlateau(make_optimizer(torch, torch.optim), **kwargs)
    with pytest.raises(ValueError) as ours:
        lr_scheduler.ReduceLROnPlateau(make_optimizer(cx, optim), **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_reduce_on_plateau_after_a_new_group_with_per_group_min_lr_raises():
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
    opt.add_param_group({"params": [cx.zeros(1, requires_grad=True)]})
    sched.step(1.0)
    with pytest.raises(RuntimeError, match="The number of param groups in the `optimizer` \\(3\\) differs"):
        sched.step(2.0)
