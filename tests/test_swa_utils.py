"""cextend.optim.swa_utils: AveragedModel (SWA, EMA, custom averages, buffers) against torch
2.13 and against the averages computed here with numpy; update_bn against the statistics
computed by hand; SWALR's lr sequence against torch and its formula."""
import copy
import math

import numpy as np
import pytest

import cextend as cx
from cextend import optim
from cextend.optim import swa_utils
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out


def make_model(lib, rng, dtype=np.float64):
    """Linear(3, 5) -> BatchNorm1d(5) -> ReLU -> Linear(5, 1), its weights drawn from rng."""
    dt = getattr(lib, np.dtype(dtype).name)
    model = lib.nn.Sequential(lib.nn.Linear(3, 5, dtype=dt), lib.nn.BatchNorm1d(5, dtype=dt), lib.nn.ReLU(),
                              lib.nn.Linear(5, 1, dtype=dt))
    set_state(lib, model, {k: rng.standard_normal(tuple(v.shape)).astype(dtype)
                           for k, v in model.state_dict().items() if k.endswith(("weight", "bias"))})
    return model


def set_state(lib, model, arrays):
    with lib.no_grad():
        for name, value in list(model.named_parameters()) + list(model.named_buffers()):
            if name in arrays:
                value.copy_(lib.tensor(np.asarray(arrays[name])))


def snapshot(model):
    return {k: np.array(v.detach().numpy()) for k, v in model.state_dict().items()}


def perturb(rng, model_state):
    """A new set of weights (and, for the buffers, new running statistics)."""
    out = {}
    for k, v in model_state.items():
        if v.dtype.kind == "f":
            out[k] = v + rng.standard_normal(v.shape).astype(v.dtype) * (0.1 if "running" not in k else 0.5)
        else:
            out[k] = v + rng.integers(1, 4)
    return out


def run_averaging(lib, dtype, make_averaged, updates=6, seed=0):
    """A model whose weights (and buffers) change between updates; returns the averaged
    model's state after each update, and the model's states."""
    rng = np.random.default_rng(seed)
    model = make_model(lib, rng, dtype)
    averaged = make_averaged(lib, model)
    states, averages = [], []
    state = snapshot(model)
    for _ in range(updates):
        state = perturb(rng, state)
        set_state(lib, model, state)
        states.append(state)
        averaged.update_parameters(model)
        averages.append({k[len("module."):]: np.array(v.detach().numpy()) for k, v in averaged.state_dict().items()
                         if k.startswith("module.")})
        assert averaged.n_averaged.item() == len(averages)
    return states, averages


def lib_swa(lib):
    return lib.optim.swa_utils


AVERAGES = {
    "swa": lambda lib, model: lib_swa(lib).AveragedModel(model),
    "swa-buffers": lambda lib, model: lib_swa(lib).AveragedModel(model, use_buffers=True),
    "ema": lambda lib, model: lib_swa(lib).AveragedModel(model, multi_avg_fn=lib_swa(lib).get_ema_multi_avg_fn(0.9)),
    "ema-buffers": lambda lib, model: lib_swa(lib).AveragedModel(
        model, multi_avg_fn=lib_swa(lib).get_ema_multi_avg_fn(0.75), use_buffers=True),
    "swa-multi": lambda lib, model: lib_swa(lib).AveragedModel(model, multi_avg_fn=lib_swa(lib).get_swa_multi_avg_fn()),
    "ema-avg_fn": lambda lib, model: lib_swa(lib).AveragedModel(model, avg_fn=lib_swa(lib).get_ema_avg_fn(0.8)),
    "swa-avg_fn": lambda lib, model: lib_swa(lib).AveragedModel(model, avg_fn=lib_swa(lib).get_swa_avg_fn()),
    "custom-avg_fn": lambda lib, model: lib_swa(lib).AveragedModel(
        model, avg_fn=lambda avg, p, n: avg * 0.5 + p * 0.5 + n * 0.0),
}


def expected_average(kind, states):
    """The averaged model's state after each update, from the definitions (float64 numpy)."""
    use_buffers = kind.endswith("buffers")
    out, current, n = [], None, 0
    for state in states:
        if current is None:
            current = {k: v.astype(np.float64) for k, v in state.items()}
        else:
            new = {}
            for k, v in state.items():
                averaged_here = use_buffers or ("running" not in k and "num_batches" not in k)
                if not averaged_here:
                    new[k] = v.astype(np.float64)                     # buffers follow the model
                elif kind.startswith("ema") and v.dtype.kind == "f":
                    decay = {"ema": 0.9, "ema-buffers": 0.75, "ema-avg_fn": 0.8}[kind]
                    new[k] = decay * current[k] + (1 - decay) * v
                elif kind.startswith("ema"):
                    new[k] = np.asarray(current[k] * 0.75 + v * 0.25).astype(np.int64)
                elif kind == "custom-avg_fn":
                    new[k] = 0.5 * current[k] + 0.5 * v
                elif kind == "swa-multi" and v.dtype.kind == "f":
                    # a lerp_ by 1 / (n + 1) of the int64 counter tensor: a float32 weight
                    new[k] = current[k] + float(np.float32(1 / (n + 1))) * (v - current[k])
                elif v.dtype.kind == "f":
                    new[k] = current[k] + (v - current[k]) / (n + 1)
                else:
                    new[k] = np.trunc(current[k] + (v - current[k]) / (n + 1))
            current = new
        n += 1
        out.append(current)
    return out


@pytest.mark.parametrize("kind", list(AVERAGES))
def test_averages_match_their_definitions(kind):
    states, averages = run_averaging(cx, np.float64, AVERAGES[kind])
    for n, (got, expected) in enumerate(zip(averages, expected_average(kind, states))):
        assert sorted(got) == sorted(expected)
        for key in got:
            # the SWA average of n snapshots is their mean
            np.testing.assert_allclose(got[key], expected[key], rtol=1e-13, atol=1e-14, err_msg="%d %s" % (n, key))
    if kind in ("swa", "swa-avg_fn"):
        for key in ("0.weight", "3.bias"):
            np.testing.assert_allclose(averages[-1][key], np.mean([s[key] for s in states], axis=0), rtol=1e-13)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", list(AVERAGES))
def test_averages_equal_torch(kind, dtype):
    ours_states, ours = run_averaging(cx, dtype, AVERAGES[kind])
    theirs_states, theirs = run_averaging(torch, dtype, AVERAGES[kind])
    for mine, their in zip(ours, theirs):
        assert list(mine) == list(their)
        for key in mine:
            assert mine[key].dtype == their[key].dtype, key
            if (kind.startswith("ema") or kind == "swa-multi") and dtype == np.float64:
                # lerp_ in float64: cextend rounds the product and the sum separately (an ulp)
                np.testing.assert_allclose(mine[key], their[key], rtol=1e-15, atol=1e-16, err_msg=key)
            else:
                np.testing.assert_array_equal(mine[key], their[key], err_msg=key)


def test_swa_multi_avg_fn_weight_is_float32_for_a_counter_tensor():
    """1 / (n + 1) of the int64 counter is a float32 tensor, as torch computes it."""
    fn = swa_utils.get_swa_multi_avg_fn()
    for n in (1, 2, 6):
        avg, cur = cx.tensor(np.array([0.0, 1.0])), cx.tensor(np.array([3.0, -2.0]))
        fn([avg], [cur], cx.tensor(n))
        weight = float(np.float32(1 / (n + 1)))
        np.testing.assert_array_equal(avg.numpy(), [3.0 * weight, 1.0 + (-3.0) * weight])
        avg2 = cx.tensor(np.array([0.0, 1.0]))
        fn([avg2], [cur], n)                      # a plain number: the float64 weight
        np.testing.assert_allclose(avg2.numpy(), [3.0 / (n + 1), 1.0 - 3.0 / (n + 1)], rtol=1e-15)


def test_averaged_model_copies_the_model_and_forwards():
    rng = np.random.default_rng(1)
    model = make_model(cx, rng)
    averaged = swa_utils.AveragedModel(model)
    assert averaged.module is not model and averaged.n_averaged.item() == 0
    assert averaged.n_averaged.dtype == cx.int64
    assert all(a is not b for a, b in zip(averaged.parameters(), model.parameters()))
    assert sorted(averaged.state_dict()) == sorted(["n_averaged"] + ["module." + k for k in model.state_dict()])
    x = cx.tensor(rng.standard_normal((4, 3)))
    model.eval()
    averaged.eval()
    np.testing.assert_array_equal(averaged(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="Invalid decay value %s provided" % bad):
            swa_utils.get_ema_multi_avg_fn(bad)
        with pytest.raises(ValueError, match="Invalid decay value"):
            swa_utils.get_ema_avg_fn(bad)


def test_averaged_model_state_dict_round_trip():
    states, _ = run_averaging(cx, np.float64, AVERAGES["swa"], updates=3)
    rng = np.random.default_rng(0)
    model = make_model(cx, rng)
    averaged = swa_utils.AveragedModel(model)
    for state in states:
        set_state(cx, model, state)
        averaged.update_parameters(model)
    other = swa_utils.AveragedModel(make_model(cx, np.random.default_rng(9)))
    other.load_state_dict(copy.deepcopy(averaged.state_dict()))
    assert other.n_averaged.item() == 3
    new = perturb(rng, states[-1])
    set_state(cx, model, new)
    averaged.update_parameters(model)
    other.update_parameters(model)
    for (k, a), (_, b) in zip(averaged.state_dict().items(), other.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)


# -- update_bn ------------------------------------------------------------------------------------

def batches(rng, sizes, tuples=False):
    out = [rng.standard_normal((n, 3)) * 2.0 + 1.0 for n in sizes]
    return [(x, np.zeros(len(x))) for x in out] if tuples else out


@pytest.mark.parametrize("tuples", [False, True], ids=["tensors", "tuples"])
def test_update_bn_computes_the_statistics_of_the_data(tuples):
    """momentum=None for the pass: the running statistics are the equal-weight average over
    batches of each batch's mean and unbiased variance of the BatchNorm input."""
    rng = np.random.default_rng(2)
    model = make_model(cx, rng)
    data = batches(rng, [8, 5, 11, 2], tuples)
    loader = [tuple(cx.tensor(a) for a in b) if tuples else cx.tensor(b) for b in data]
    model.eval()
    bn = model[1]
    bn.momentum = 0.3
    swa_utils.update_bn(loader, model)
    w, b = snapshot(model)["0.weight"], snapshot(model)["0.bias"]
    inputs = [(x[0] if tuples else x) @ w.T + b for x in data]
    mean = np.mean([h.mean(axis=0) for h in inputs], axis=0)
    var = np.mean([h.var(axis=0, ddof=1) for h in inputs], axis=0)
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-12)
    assert bn.num_batches_tracked.item() == len(data)
    assert bn.momentum == 0.3 and not model.training and not bn.training


@needs_torch
def test_update_bn_equals_torch():
    rng = np.random.default_rng(3)
    ours, theirs = make_model(cx, np.random.default_rng(4)), make_model(torch, np.random.default_rng(4))
    data = batches(rng, [6, 9, 3])
    for model, lib in ((ours, cx), (theirs, torch)):
        model.train()
        swa_utils_lib = lib_swa(lib)
        swa_utils_lib.update_bn([lib.tensor(x) for x in data], model)
        assert model.training
    for key, value in snapshot(theirs).items():
        np.testing.assert_allclose(snapshot(ours)[key], value, rtol=1e-13, err_msg=key)


def test_update_bn_without_batch_norm_does_nothing():
    model = cx.nn.Sequential(cx.nn.Linear(3, 2))
    calls = []

    class Loader:
        def __iter__(self):
            calls.append(1)
            return iter([cx.ones(2, 3)])

    swa_utils.update_bn(Loader(), model)
    assert calls == []


# -- SWALR ----------------------------------------------------------------------------------------

def swalr_closed(epoch, base, swa_lr, anneal_epochs, strategy):
    """From the definition: the lr moves from its value when SWALR starts to swa_lr along the
    anneal curve over anneal_epochs epochs."""
    t = min(1.0, max(epoch, 0 if anneal_epochs else 1) / max(1, anneal_epochs))
    alpha = (1 - math.cos(math.pi * t)) / 2 if strategy == "cos" else t
    return swa_lr * alpha + base * (1 - alpha)


SWALR_CASES = [dict(swa_lr=0.05), dict(swa_lr=0.01, anneal_epochs=4, anneal_strategy="linear"),
               dict(swa_lr=[0.02, 0.2], anneal_epochs=7), dict(swa_lr=0.3, anneal_epochs=0)]


def make_optimizer(lib):
    p, q = lib.zeros(3, requires_grad=True), lib.zeros(2, requires_grad=True)
    return lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)


def run_swalr(lib, kwargs, epochs=15):
    opt = make_optimizer(lib)
    sched = lib_swa(lib).SWALR(opt, **kwargs)
    seen = [sched.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        sched.step()
        seen.append(sched.get_last_lr())
    return seen, opt, sched


@pytest.mark.parametrize("kwargs", SWALR_CASES, ids=lambda k: "-".join("%s=%s" % kv for kv in k.items()))
def test_swalr_sequence(kwargs):
    ours, opt, sched = run_swalr(cx, kwargs)
    swa_lrs = kwargs["swa_lr"] if isinstance(kwargs["swa_lr"], list) else [kwargs["swa_lr"]] * 2
    for epoch, lrs in enumerate(ours):
        expected = [swalr_closed(epoch, base, swa, kwargs.get("anneal_epochs", 10),
                                 kwargs.get("anneal_strategy", "cos")) for base, swa in zip((0.1, 0.5), swa_lrs)]
        np.testing.assert_allclose(lrs, expected, rtol=1e-12, err_msg=str(epoch))
    assert [g["swa_lr"] for g in opt.param_groups] == swa_lrs
    if torch is not None:
        theirs, _, their_sched = run_swalr(torch, kwargs)
        assert ours == theirs
        assert list(sched.state_dict()) == list(their_sched.state_dict())


def test_swalr_state_dict_round_trip_and_errors():
    _, opt, sched = run_swalr(cx, dict(swa_lr=0.05, anneal_epochs=6, anneal_strategy="linear"), epochs=3)
    state = copy.deepcopy(sched.state_dict())
    assert "anneal_func" not in state and state["_anneal_strategy"] == "linear"
    opt2 = make_optimizer(cx)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    sched2 = swa_utils.SWALR(opt2, swa_lr=0.05)
    sched2.load_state_dict(state)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert sched2.anneal_func is swa_utils.SWALR._linear_anneal
    for _ in range(6):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched.get_last_lr() == sched2.get_last_lr()
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        swa_utils.SWALR(make_optimizer(cx), 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        swa_utils.SWALR(make_optimizer(cx), 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
        swa_utils.SWALR(make_optimizer(cx), [0.1])


def test_exported_where_torch_exports_them():
    assert optim.swa_utils is swa_utils and cx.optim.swa_utils.AveragedModel is swa_utils.AveragedModel
    if torch is not None:
        assert sorted(swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
