"""The other learning-rate schedulers (LinearLR, ConstantLR, PolynomialLR, MultiplicativeLR,
CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR, SequentialLR, ChainedScheduler): the lr
(and cycled momentum) sequence equals torch 2.13's float for float, matches a closed-form
formula written here, survives a state_dict round trip, and bad arguments raise torch's
errors."""
import copy
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
except ImportError:  # the comparisons with torch skip; the closed forms still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

BASE = (0.1, 0.5)           # the two groups' lrs
EPOCHS = 60


class Halving:
    """A callable object (MultiplicativeLR saves its __dict__)."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 if epoch % self.every == 0 else 1.0


class Scale:
    """A callable scale_fn object (CyclicLR saves its __dict__)."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, x):
        return 1.0 / (1.0 + self.rate * x)


def make_optimizer(lib, opt_module, kind="SGD"):
    p = lib.zeros(3, requires_grad=True)
    q = lib.zeros(2, requires_grad=True)
    groups = [{"params": [p]}, {"params": [q], "lr": BASE[1]}]
    if kind == "Adam":
        return opt_module.Adam(groups, lr=BASE[0], betas=(0.9, 0.99))
    return opt_module.SGD(groups, lr=BASE[0], momentum=0.9)


def lrs(opt):
    return [g["lr"] for g in opt.param_groups]


def momenta(opt):
    return [g["betas"] if "betas" in g else g["momentum"] for g in opt.param_groups]


# -- closed forms, written from each scheduler's definition ------------------------------------

def linear_closed(e, start_factor=1 / 3, end_factor=1.0, total_iters=5):
    return [b * (start_factor + (end_factor - start_factor) * min(e, total_iters) / total_iters) for b in BASE]


def constant_closed(e, factor=1 / 3, total_iters=5):
    return [b * (factor if e < total_iters else 1.0) for b in BASE]


def polynomial_closed(e, total_iters=5, power=1.0):
    return [b * (1 - min(e, total_iters) / total_iters) ** power for b in BASE]


def multiplicative_closed(e, lr_lambda):
    return [b * math.prod(lr_lambda(k) for k in range(1, e + 1)) for b in BASE]


def warm_restarts_closed(epoch, T_0, T_mult=1, eta_min=0.0):
    """SGDR at a (possibly fractional) epoch: find the period the epoch falls in."""
    start, period = 0, T_0
    while epoch >= start + period:
        start += period
        period *= T_mult
    t_cur = epoch - start
    return [eta_min + (b - eta_min) * (1 + math.cos(math.pi * t_cur / period)) / 2 for b in BASE]


def cyclic_closed(e, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular", gamma=1.0,
                  scale_fn=None, scale_mode="cycle", **_):
    down = step_size_up if step_size_down is None else step_size_down
    period = step_size_up + down
    position, cycle = e % period, e // period + 1
    height = position / step_size_up if position <= step_size_up else 1 - (position - step_size_up) / down
    if scale_fn is not None:
        scale = scale_fn(cycle if scale_mode == "cycle" else e)
    else:
        scale = {"triangular": 1.0, "triangular2": 0.5 ** (cycle - 1), "exp_range": gamma ** e}[mode]
    base = base_lr if isinstance(base_lr, list) else [base_lr] * 2
    top = max_lr if isinstance(max_lr, list) else [max_lr] * 2
    return [b + (m - b) * height * scale for b, m in zip(base, top)]


def one_cycle_closed(e, max_lr, total_steps, pct_start=0.3, anneal_strategy="cos", div_factor=25.0,
                     final_div_factor=1e4, three_phase=False, **_):
    def anneal(start, end, pct):
        if anneal_strategy == "cos":
            return end + (start - end) * (1 + math.cos(math.pi * pct)) / 2
        return start + (end - start) * pct
    initial = max_lr / div_factor
    minimum = initial / final_div_factor
    up = pct_start * total_steps - 1
    if three_phase:
        phases = [(up, initial, max_lr), (2 * up, max_lr, initial), (total_steps - 1, initial, minimum)]
    else:
        phases = [(up, initial, max_lr), (total_steps - 1, max_lr, minimum)]
    start = 0.0
    for i, (end, a, b) in enumerate(phases):
        if e <= end or i == len(phases) - 1:
            return [anneal(a, b, (e - start) / (end - start))] * 2
        start = end


# (name, kwargs, closed form of the lr at epoch e or None, optimizer kind, epochs)
SCHEDULERS = [
    ("LinearLR", dict(), linear_closed),
    ("LinearLR", dict(start_factor=0.25, end_factor=0.75, total_iters=13),
     lambda e: linear_closed(e, 0.25, 0.75, 13)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.0, total_iters=7), lambda e: linear_closed(e, 1.0, 0.0, 7)),
    ("ConstantLR", dict(), constant_closed),
    ("ConstantLR", dict(factor=0.2, total_iters=11), lambda e: constant_closed(e, 0.2, 11)),
    ("PolynomialLR", dict(), polynomial_closed),
    ("PolynomialLR", dict(total_iters=17, power=2.5), lambda e: polynomial_closed(e, 17, 2.5)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.97), lambda e: multiplicative_closed(e, lambda k: 0.97)),
    ("MultiplicativeLR", dict(lr_lambda=[Halving(4), Halving(7)]), None),
    ("CosineAnnealingWarmRestarts", dict(T_0=7), lambda e: warm_restarts_closed(e, 7)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01),
     lambda e: warm_restarts_closed(e, 3, 2, 0.01)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=5), None),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=4, step_size_down=7,
                      mode="triangular2"), None),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=6, mode="exp_range", gamma=0.97,
                      base_momentum=0.7, max_momentum=0.95), None),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=3, scale_fn=Scale(0.5), scale_mode="iterations",
                      cycle_momentum=False), None),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=3, scale_fn=lambda x: 0.9 ** x), None),
    ("OneCycleLR", dict(max_lr=0.2, total_steps=EPOCHS + 1), None),
    ("OneCycleLR", dict(max_lr=0.2, epochs=7, steps_per_epoch=9, anneal_strategy="linear", pct_start=0.45,
                        div_factor=10.0, final_div_factor=100.0), None),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=EPOCHS + 1, three_phase=True, base_momentum=0.8,
                        max_momentum=0.9), None),
]
SCHEDULERS = [(name, kwargs, closed, kind) for name, kwargs, closed in SCHEDULERS
              for kind in (["SGD", "Adam"] if name in ("CyclicLR", "OneCycleLR") else ["SGD"])]


def closed_form(name, kwargs, closed):
    if closed is not None:
        return closed
    if name == "CyclicLR":
        return lambda e: cyclic_closed(e, **kwargs)
    if name == "OneCycleLR":
        total = kwargs.get("total_steps") or kwargs["epochs"] * kwargs["steps_per_epoch"]
        return lambda e: one_cycle_closed(e, **dict(kwargs, total_steps=total))
    return lambda e: multiplicative_closed_per_group(e, kwargs["lr_lambda"])


def multiplicative_closed_per_group(e, fns):
    return [b * math.prod(fn(k) for k in range(1, e + 1)) for b, fn in zip(BASE, fns)]


def sched_id(case):
    name, kwargs, _, kind = case
    text = "-".join("%s=%s" % (k, "fn" if callable(v) or isinstance(v, list) and callable(v[0]) else v)
                    for k, v in kwargs.items())
    return "%s-%s-%s" % (name, kind, text)


def epochs_of(name, kwargs):
    if name == "OneCycleLR":
        return (kwargs.get("total_steps") or kwargs["epochs"] * kwargs["steps_per_epoch"]) - 1
    return EPOCHS


def build(lib, opt_module, sched_module, case):
    name, kwargs, _, kind = case
    opt = make_optimizer(lib, opt_module, kind)
    return opt, getattr(sched_module, name)(opt, **copy.copy(kwargs))


def run(opt, sched, epochs):
    """The lrs (and momenta) after construction and after each step."""
    seen = [(sched.get_last_lr(), lrs(opt), momenta(opt))]
    for _ in range(epochs):
        opt.step()
        sched.step()
        seen.append((sched.get_last_lr(), lrs(opt), momenta(opt)))
    return seen


@needs_torch
@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_lr_and_momentum_sequences_equal_torch(case):
    epochs = epochs_of(case[0], case[1])
    ours = run(*build(cx, optim, lr_scheduler, case), epochs)
    theirs = run(*build(torch, torch.optim, torch.optim.lr_scheduler, case), epochs)
    assert len(ours) == len(theirs) == epochs + 1
    for epoch, (mine, their) in enumerate(zip(ours, theirs)):
        assert mine == their, epoch             # float for float: the same formulas, in the same order


@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_lr_sequence_matches_the_closed_form(case):
    name, kwargs = case[0], case[1]
    expected = closed_form(name, kwargs, case[2])
    opt, sched = build(cx, optim, lr_scheduler, case)
    for epoch, (last, groups, _) in enumerate(run(opt, sched, epochs_of(name, kwargs))):
        assert last == groups
        np.testing.assert_allclose(last, expected(epoch), rtol=1e-12, atol=1e-17, err_msg=str(epoch))


CYCLED = [case for case in SCHEDULERS if case[0] in ("CyclicLR", "OneCycleLR") and case[1].get("cycle_momentum", True)]


@pytest.mark.parametrize("case", CYCLED, ids=sched_id)
def test_cycled_momentum_moves_against_the_lr(case):
    """The momentum (beta1 for Adam; beta2 kept) stays between base_momentum and max_momentum;
    for a triangular cycle it is max_momentum where the lr is base_lr and base_momentum where
    the lr peaks, linearly in between."""
    name, kwargs, _, kind = case
    opt, sched = build(cx, optim, lr_scheduler, case)
    base_m = kwargs.get("base_momentum", 0.8 if name == "CyclicLR" else 0.85)
    max_m = kwargs.get("max_momentum", 0.9 if name == "CyclicLR" else 0.95)
    triangular = name == "CyclicLR" and kwargs.get("mode", "triangular") == "triangular" and "scale_fn" not in kwargs
    for lr_list, _, m_list in run(opt, sched, epochs_of(name, kwargs)):
        for lr, m in zip(lr_list, m_list):
            if kind == "Adam":
                assert m[1] == 0.99
                m = m[0]
            assert base_m - 1e-12 <= m <= max_m + 1e-12
            if triangular:
                low, high = kwargs["base_lr"], kwargs["max_lr"]
                assert (m - base_m) / (max_m - base_m) == pytest.approx((high - lr) / (high - low), abs=1e-12)


@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_state_dict_round_trip_continues_the_sequence(case):
    name, kwargs, _, kind = case
    epochs = epochs_of(name, kwargs)
    opt, sched = build(cx, optim, lr_scheduler, case)
    run(opt, sched, epochs // 2)
    state = copy.deepcopy(sched.state_dict())
    assert "optimizer" not in state
    opt2 = make_optimizer(cx, optim, kind)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    sched2 = getattr(lr_scheduler, name)(opt2, **copy.copy(kwargs), last_epoch=sched.last_epoch) \
        if name not in ("CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts") \
        else getattr(lr_scheduler, name)(opt2, **copy.copy(kwargs))
    sched2.load_state_dict(state)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))      # the loaded lrs (and momenta) win
    rest = epochs - epochs // 2
    assert run(opt2, sched2, rest)[1:] == run(opt, sched, rest)[1:]


@needs_torch
@pytest.mark.parametrize("case", SCHEDULERS, ids=sched_id)
def test_state_dict_keys_and_values_equal_torch(case):
    o, so = build(cx, optim, lr_scheduler, case)
    t, st = build(torch, torch.optim, torch.optim.lr_scheduler, case)
    run(o, so, 9)
    run(t, st, 9)
    ours, theirs = so.state_dict(), st.state_dict()
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        if key == "_scale_fn_ref":
            continue
        if key == "lr_lambdas" or key == "_scale_fn_custom":
            assert ours[key] == value, key          # None for functions, the __dict__ of objects
        elif not callable(value):
            assert ours[key] == value, key
    for ours_group, their_group in zip(o.param_groups, t.param_groups):     # initial_lr, max_lr, momenta...
        assert {k: v for k, v in ours_group.items() if k != "params"} == \
            {k: v for k, v in their_group.items() if k != "params"}


def test_callable_objects_are_saved_and_functions_are_not():
    opt = make_optimizer(cx, optim)
    halving = Halving(4)
    sched = lr_scheduler.MultiplicativeLR(opt, [lambda e: 1.0, halving])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"every": 4}]
    halving.every = 99
    sched.load_state_dict(state)
    assert halving.every == 4 and "lr_lambdas" in state

    scale = Scale(0.5)
    sched = lr_scheduler.CyclicLR(make_optimizer(cx, optim), 0.01, 0.1, scale_fn=scale)
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"rate": 0.5} and "_scale_fn_ref" not in state
    scale.rate = 7
    sched.load_state_dict(state)
    assert scale.rate == 0.5
    sched = lr_scheduler.CyclicLR(make_optimizer(cx, optim), 0.01, 0.1, mode="exp_range", gamma=0.5)
    state = sched.state_dict()
    assert state["_scale_fn_custom"] is None
    sched.load_state_dict(state)
    assert sched.scale_fn(3) == 0.125                   # the built-in scale function is rebuilt


# -- step(epoch): the closed forms ---------------------------------------------------------------

CLOSED = [case for case in SCHEDULERS if case[0] in ("LinearLR", "ConstantLR", "PolynomialLR")]


@pytest.mark.parametrize("case", CLOSED, ids=sched_id)
def test_step_with_epoch_uses_the_closed_form_and_warns(case):
    name, kwargs, closed, _ = case
    opt, sched = build(cx, optim, lr_scheduler, case)
    opt.step()
    for epoch in (5, 17, 3, 30, 30, 0, 2):
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
            sched.step(epoch)
        np.testing.assert_allclose(sched.get_last_lr(), closed(epoch), rtol=1e-15)
        if torch is not None:
            t, st = build(torch, torch.optim, torch.optim.lr_scheduler, case)
            t.step()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                st.step(epoch)
            assert st.get_last_lr() == sched.get_last_lr()


FRACTIONAL = [dict(T_0=5), dict(T_0=3, T_mult=2, eta_min=0.005), dict(T_0=2, T_mult=3)]


@pytest.mark.parametrize("kwargs", FRACTIONAL, ids=lambda k: "-".join("%s=%s" % kv for kv in k.items()))
def test_warm_restarts_take_fractional_epochs(kwargs):
    """step(epoch + i / iters) after each batch, as torch's documentation shows; also
    jumping back and forth between epochs."""
    epochs = [e + i / 7 for e in range(20) for i in range(7)] + [3.5, 0.25, 11.0, 2.0, 40.75]
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, **kwargs)
    theirs = None
    if torch is not None:
        t = make_optimizer(torch, torch.optim)
        theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(t, **kwargs)
    for epoch in epochs:
        with warnings.catch_warnings():
            warnings.simplefilter("error")              # torch's override does not warn for epoch=
            sched.step(epoch)
        np.testing.assert_allclose(sched.get_last_lr(), warm_restarts_closed(epoch, **kwargs), rtol=1e-12,
                                   atol=1e-15)
        assert sched.last_epoch == math.floor(epoch)
        if theirs is not None:
            theirs.step(epoch)
            assert theirs.get_last_lr() == sched.get_last_lr(), epoch
            assert (theirs.T_cur, theirs.T_i) == (sched.T_cur, sched.T_i)


def test_warm_restarts_negative_epoch_raises():
    sched = lr_scheduler.CosineAnnealingWarmRestarts(make_optimizer(cx, optim), T_0=3)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


# -- SequentialLR and ChainedScheduler ---------------------------------------------------------------

def sequential(lib, opt_module, sched_module):
    opt = make_optimizer(lib, opt_module)
    warmup = sched_module.LinearLR(opt, start_factor=0.1, total_iters=4)
    decay = sched_module.ExponentialLR(opt, gamma=0.9)
    cosine = sched_module.CosineAnnealingLR(opt, T_max=6, eta_min=0.001)
    return opt, sched_module.SequentialLR(opt, [warmup, decay, cosine], milestones=[4, 11])


def chained(lib, opt_module, sched_module):
    opt = make_optimizer(lib, opt_module)
    first = sched_module.ConstantLR(opt, factor=0.5, total_iters=3)
    second = sched_module.ExponentialLR(opt, gamma=0.95)
    third = sched_module.MultiplicativeLR(opt, lr_lambda=lambda e: 0.99)
    return opt, sched_module.ChainedScheduler([first, second, third])


def nested(lib, opt_module, sched_module):
    opt = make_optimizer(lib, opt_module)
    chain = sched_module.ChainedScheduler([sched_module.ConstantLR(opt, factor=0.5, total_iters=2),
                                           sched_module.ExponentialLR(opt, gamma=0.9)], optimizer=opt)
    tail = sched_module.PolynomialLR(opt, total_iters=8, power=2.0)
    return opt, sched_module.SequentialLR(opt, [chain, tail], milestones=[5])


COMBINED = [sequential, chained, nested]


def sequential_closed(e):
    if e < 4:
        return linear_closed(e, 0.1, 1.0, 4)
    if e < 11:
        return [b * 0.9 ** (e - 4) for b in BASE]
    return [0.001 + (b - 0.001) * (1 + math.cos(math.pi * (e - 11) / 6)) / 2 for b in BASE]


def chained_closed(e):
    return [b * (0.5 if e < 3 else 1.0) * 0.95 ** e * 0.99 ** e for b in BASE]


# a scheduler nested in SequentialLR is stepped at its construction step: torch warns too
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
@pytest.mark.parametrize("make", COMBINED, ids=lambda f: f.__name__)
def test_combined_schedulers(make):
    opt, sched = make(cx, optim, lr_scheduler)
    ours = run(opt, sched, 30)
    closed = {sequential: sequential_closed, chained: chained_closed}.get(make)
    if closed is not None:
        for epoch, (last, groups, _) in enumerate(ours):
            np.testing.assert_allclose(last, closed(epoch), rtol=1e-12, err_msg=str(epoch))
    if torch is not None:
        t, st = make(torch, torch.optim, torch.optim.lr_scheduler)
        assert run(t, st, 30) == ours


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
@pytest.mark.parametrize("make", COMBINED, ids=lambda f: f.__name__)
def test_combined_state_dict_round_trip(make):
    opt, sched = make(cx, optim, lr_scheduler)
    run(opt, sched, 7)
    state = copy.deepcopy(sched.state_dict())
    assert "_schedulers" in state and all(isinstance(s, dict) for s in state["_schedulers"])
    if torch is not None:
        t, st = make(torch, torch.optim, torch.optim.lr_scheduler)
        run(t, st, 7)
        assert list(state) == list(st.state_dict())
    opt2, sched2 = make(cx, optim, lr_scheduler)
    sched2.load_state_dict(state)
    assert "_schedulers" in state                          # the caller's dict is left whole
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert run(opt2, sched2, 15)[1:] == run(opt, sched, 15)[1:]


# -- errors ------------------------------------------------------------------------------------------

ERRORS = [
    ("LinearLR", dict(start_factor=0.0), "Starting multiplicative factor expected to be greater than 0"),
    ("LinearLR", dict(end_factor=1.5), "Ending multiplicative factor expected to be between 0 and 1."),
    ("ConstantLR", dict(factor=1.5), "Constant multiplicative factor expected to be between 0 and 1."),
    ("MultiplicativeLR", dict(lr_lambda=[lambda e: 1.0]), "Expected 2 lr_lambdas, but got 1"),
    ("MultiplicativeLR", dict(lr_lambda=0.5), "lr_lambda should be a function, but got float"),
    ("CosineAnnealingWarmRestarts", dict(T_0=0), "Expected positive integer T_0, but got 0"),
    ("CosineAnnealingWarmRestarts", dict(T_0=2.5), "Expected positive integer T_0, but got 2.5"),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=0), "Expected integer T_mult >= 1, but got 0"),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, eta_min="0"), "Expected float or int eta_min"),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, mode="sawtooth"), "mode is invalid and scale_fn is None"),
    ("CyclicLR", dict(base_lr=[0.1], max_lr=1.0), "base_lr must have the same length as optimizer.param_groups"),
    ("OneCycleLR", dict(max_lr=0.1), "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=0), "Expected positive integer total_steps, but got 0"),
    ("OneCycleLR", dict(max_lr=0.1, epochs=0, steps_per_epoch=3), "Expected positive integer epochs, but got 0"),
    ("OneCycleLR", dict(max_lr=0.1, epochs=2, steps_per_epoch=1.5),
     "Expected positive integer steps_per_epoch, but got 1.5"),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, pct_start=1), "Expected float between 0 and 1 pct_start"),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, anneal_strategy="exp"),
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
]


@pytest.mark.parametrize("name, kwargs, message", ERRORS, ids=lambda x: x if isinstance(x, str) else "")
def test_bad_arguments_raise_torchs_errors(name, kwargs, message):
    errors = []
    libs = [(cx, optim, lr_scheduler)] + ([(torch, torch.optim, torch.optim.lr_scheduler)] if torch else [])
    for lib, opt_module, sched_module in libs:
        with pytest.raises((ValueError, TypeError)) as info:
            getattr(sched_module, name)(make_optimizer(lib, opt_module), **kwargs)
        errors.append((type(info.value), str(info.value)))
    assert message in errors[0][1]
    assert errors[0] == errors[-1]


def test_cycle_momentum_needs_a_momentum():
    p = cx.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum`"):
        lr_scheduler.CyclicLR(optim.Rprop([p]), 0.01, 0.1)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum`"):
        lr_scheduler.OneCycleLR(optim.Adagrad([p]), 0.1, total_steps=10)
    lr_scheduler.CyclicLR(optim.Rprop([p]), 0.01, 0.1, cycle_momentum=False)


def test_one_cycle_past_total_steps_raises():
    opt = make_optimizer(cx, optim)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched.step()


def test_combiners_check_their_schedulers():
    opt, other = make_optimizer(cx, optim), make_optimizer(cx, optim)
    mine = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    with pytest.raises(ValueError, match="SequentialLR expects at least one scheduler"):
        lr_scheduler.SequentialLR(opt, [], milestones=[])
    with pytest.raises(ValueError, match="ChainedScheduler expects at least one scheduler to be chained"):
        lr_scheduler.ChainedScheduler([])
    with pytest.raises(ValueError, match="number of schedulers 1 and the number of milestones to be equal to 1"):
        lr_scheduler.SequentialLR(opt, [mine], milestones=[3])
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        lr_scheduler.SequentialLR(other, [mine], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([mine, lr_scheduler.ReduceLROnPlateau(opt)])
    with pytest.raises(TypeError, match="ChainedScheduler at index 0 should have `optimizer` as its attribute"):
        lr_scheduler.ChainedScheduler([object()], optimizer=opt)


def test_exported_where_torch_exports_them():
    names = ["LinearLR", "ConstantLR", "CyclicLR", "OneCycleLR", "SequentialLR", "ChainedScheduler",
             "PolynomialLR", "MultiplicativeLR", "CosineAnnealingWarmRestarts"]
    for name in names:
        assert name in lr_scheduler.__all__
        assert getattr(cx.optim.lr_scheduler, name) is getattr(lr_scheduler, name)
    if torch is not None:
        assert sorted(lr_scheduler.__all__) == sorted(torch.optim.lr_scheduler.__all__)
