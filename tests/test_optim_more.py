"""Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS: step by step against torch 2.13's single-tensor
algorithms (the same initial values and gradients in both), against float64 references of
the update rules written here with numpy, state_dict structure and round trips, and torch's
errors for bad hyperparameters.  LBFGS minimises Rosenbrock's function with and without the
strong-Wolfe line search along torch's trajectory."""
import copy

import numpy as np
import pytest

import cextend as cx
from cextend import optim
from cextend.optim import lbfgs as lbfgs_module
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

CASES = [
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adamax", dict(lr=0.02, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),                                           # rho_t > 5 from the 6th step on
    ("RAdam", dict(lr=0.01, weight_decay=0.1, eps=1e-6)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True, betas=(0.5, 0.6))),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
]
SHAPES = [(5, 3), (13,), (1,), (0,), (2, 3, 7), ()]       # the first is a transposed (strided) view
STEPS = 60


def case_id(case):
    return "%s-%s" % (case[0], "-".join("%s=%s" % kv for kv in case[1].items()))


def parameters(lib, arrays):
    params = [lib.nn.Parameter(lib.tensor(a.copy())) for a in arrays]
    params[0] = lib.nn.Parameter(lib.tensor(arrays[0].T.copy()).t())     # non-contiguous storage
    return params


def gradients(rng, arrays, steps, dtype):
    """Per step, a gradient for each parameter (None some steps); zeros on some steps, so
    Rprop's sign products and the max in Adamax meet exact zeros."""
    out = []
    for step in range(steps):
        grads = []
        for i, a in enumerate(arrays):
            if (step + i) % 7 == 3:
                grads.append(None)
            elif step % 11 == 5:
                grads.append(np.zeros(a.shape, dtype))
            else:
                grads.append(np.asarray(rng.standard_normal(a.shape), dtype))
        out.append(grads)
    return out


def feed(params, grads, lib, feedback):
    """grad = given + 0.3 * param (so differences between the two runs would grow)."""
    for p, g in zip(params, grads):
        p.grad = None if g is None else lib.tensor(g + feedback * as_numpy(p))


def as_numpy(t):
    return np.array(t.detach().numpy() if hasattr(t, "detach") else t)


def relative(ours, theirs):
    x, y = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    diff = np.abs(x - y)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(y))
    return float(rel.max()) if rel.size else 0.0


def normwise(ours, theirs):
    x, y = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if x.size == 0:
        return 0.0
    diff = np.abs(x - y).max()
    return 0.0 if diff == 0 else float(diff / np.abs(y).max())


def run_against_torch(name, kwargs, dtype, steps=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(rng.standard_normal(s), dtype) for s in SHAPES]
    ours, theirs = parameters(cx, arrays), parameters(torch, arrays)
    opt_ours = getattr(optim, name)([{"params": ours[:3]}, {"params": ours[3:], "lr": 0.003}], **kwargs)
    opt_theirs = getattr(torch.optim, name)([{"params": theirs[:3]}, {"params": theirs[3:], "lr": 0.003}],
                                            foreach=False, **kwargs)
    worst = dict(elementwise=0.0, normwise=0.0, state=0.0)
    for grads in gradients(rng, arrays, steps, dtype):
        feed(ours, grads, cx, 0.3)
        feed(theirs, grads, torch, 0.3)
        opt_ours.step()
        opt_theirs.step()
        for a, b in zip(ours, theirs):
            worst["elementwise"] = max(worst["elementwise"], relative(as_numpy(a), as_numpy(b)))
            worst["normwise"] = max(worst["normwise"], normwise(as_numpy(a), as_numpy(b)))
        for p, q in zip(ours, theirs):
            for key, value in opt_theirs.state[q].items():
                mine = opt_ours.state[p][key]
                assert str(mine.dtype).split(".")[1] == str(value.dtype).split(".")[1], key
                assert tuple(mine.shape) == tuple(value.shape), key
                worst["state"] = max(worst["state"], relative(as_numpy(mine), as_numpy(value)))
    return worst


# float64: which optimizers are torch's bit for bit (no lerp_/addcmul_ rounding twice, no sqrt)
BITWISE_64 = {"ASGD", "Rprop"}
BITWISE_32 = {"Adamax", "ASGD", "Rprop"}


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_float64_steps_equal_torch(case):
    name, kwargs = case
    worst = run_against_torch(name, kwargs, np.float64)
    assert worst["normwise"] <= 1e-13, worst
    assert worst["elementwise"] <= 1e-11, worst
    assert worst["state"] <= 1e-11, worst
    if name in BITWISE_64:
        assert worst == dict(elementwise=0.0, normwise=0.0, state=0.0)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_float32_steps_follow_torch(case):
    """float32: the fused multiply-adds round as torch's; NAdam and RAdam take a square root,
    torch's a vendor routine (not always correctly rounded), so they may drift by ulps."""
    name, kwargs = case
    worst = run_against_torch(name, kwargs, np.float32, steps=40)
    assert worst["normwise"] <= 1e-5, worst
    if name in BITWISE_32:
        assert worst == dict(elementwise=0.0, normwise=0.0, state=0.0)


# -- numpy float64 references, written from each algorithm's definition --------------------------

def f32(x):
    """torch keeps NAdam's mu_product and ASGD's eta / mu in 0-d float32 tensors."""
    return float(np.float32(x))


def f32_product(a, b):
    """mu_product *= mu on a 0-d float32 tensor: mu is rounded to float32 first, the product
    computed in float32."""
    return float(np.float32(a) * np.float32(b))


def reference_step(name, hp, p, g, s, t):
    """One update of parameter p (float64 array) with gradient g; s is its state dict; t the
    step number (from 1).  Returns the new p."""
    lr = hp.get("lr", dict(Adamax=2e-3, NAdam=2e-3, RAdam=1e-3, ASGD=1e-2, Rprop=1e-2)[name])
    wd = hp.get("weight_decay", 0.0)
    if hp.get("maximize"):
        g = -g
    if name in ("Adamax", "NAdam", "RAdam"):
        b1, b2 = hp.get("betas", (0.9, 0.999))
        eps = hp.get("eps", 1e-8)
        if wd and hp.get("decoupled_weight_decay"):
            p = p * (1 - lr * wd)
        elif wd:
            g = g + wd * p
        s.setdefault("m", np.zeros_like(p))
        s["m"] = b1 * s["m"] + (1 - b1) * g
    if name == "Adamax":
        s["u"] = np.maximum(b2 * s.get("u", np.zeros_like(p)), np.abs(g) + eps)
        return p - lr / (1 - b1 ** t) * s["m"] / s["u"]
    if name in ("NAdam", "RAdam"):
        s["v"] = b2 * s.get("v", np.zeros_like(p)) + (1 - b2) * g * g
    if name == "NAdam":
        md = hp.get("momentum_decay", 4e-3)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * md))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * md))
        s["mu_product"] = f32_product(s.get("mu_product", 1.0), mu)
        denom = np.sqrt(s["v"] / (1 - b2 ** t)) + eps
        return (p - lr * (1 - mu) / (1 - s["mu_product"]) * g / denom
                - lr * mu_next / (1 - s["mu_product"] * mu_next) * s["m"] / denom)
    if name == "RAdam":
        m_hat = s["m"] / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t <= 5:
            return p - lr * m_hat
        rect = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = np.sqrt(1 - b2 ** t) / (np.sqrt(s["v"]) + eps)
        return p - lr * m_hat * adaptive * rect
    if name == "ASGD":
        lambd, alpha, t0 = hp.get("lambd", 1e-4), hp.get("alpha", 0.75), hp.get("t0", 1e6)
        if wd:
            g = g + wd * p
        eta, mu = s.setdefault("eta", f32(lr)), s.setdefault("mu", 1.0)
        p = p * (1 - lambd * eta) - eta * g
        s["ax"] = p.copy() if mu == 1 else s["ax"] + mu * (p - s["ax"])
        s["eta"] = f32(lr / (1 + lambd * lr * t) ** alpha)
        s["mu"] = f32(1 / max(1, t - t0))
        return p
    if name == "Rprop":
        eta_minus, eta_plus = hp.get("etas", (0.5, 1.2))
        low, high = hp.get("step_sizes", (1e-6, 50))
        sign = np.sign(g * s.get("prev", np.zeros_like(p)))
        size = s.get("size", np.full_like(p, lr)) * np.where(sign > 0, eta_plus, np.where(sign < 0, eta_minus, 1.0))
        s["size"] = np.clip(size, low, high)
        g = np.where(sign < 0, 0.0, g)
        s["prev"] = g
        return p - np.sign(g) * s["size"]
    raise AssertionError(name)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_float64_steps_match_the_numpy_reference(case):
    name, kwargs = case
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    ours = parameters(cx, arrays)
    opt = getattr(optim, name)(ours, **kwargs)
    refs = [a.copy() for a in arrays]
    states = [{} for _ in arrays]
    counts = [0] * len(arrays)
    for grads in gradients(rng, arrays, 40, np.float64):
        for i, g in enumerate(grads):
            if g is not None:
                counts[i] += 1
                refs[i] = reference_step(name, kwargs, refs[i], g + 0.3 * refs[i], states[i], counts[i])
        feed(ours, grads, cx, 0.3)
        opt.step()
        for p, ref in zip(ours, refs):
            np.testing.assert_allclose(as_numpy(p), ref, rtol=1e-10, atol=1e-13)
            assert np.all(normwise(as_numpy(p), ref) <= 1e-12)
    for p, count in zip(ours, counts):
        assert opt.state[p]["step"].item() == count
        assert as_numpy(p).shape == opt.state[p][list(opt.state[p])[-1]].shape
    if name == "ASGD":                          # the average, too
        for p, s in zip(ours, states):
            np.testing.assert_allclose(as_numpy(opt.state[p]["ax"]), s["ax"], rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_maximize_is_descent_on_the_negated_gradient(case):
    name, kwargs = case
    kwargs = {k: v for k, v in kwargs.items() if k != "weight_decay"}
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    up, down = parameters(cx, arrays), parameters(cx, arrays)
    opt_up = getattr(optim, name)(up, **dict(kwargs, maximize=True))
    opt_down = getattr(optim, name)(down, **dict(kwargs, maximize=False))
    for grads in gradients(rng, arrays, 15, np.float64):
        feed(up, grads, cx, 0.0)
        feed(down, [None if g is None else -g for g in grads], cx, 0.0)
        opt_up.step()
        opt_down.step()
    for a, b in zip(up, down):
        np.testing.assert_array_equal(as_numpy(a), as_numpy(b))


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_tensor_lr_and_foreach_give_the_same_steps(name):
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    runs = []
    for lr, foreach in ((0.01, None), (cx.tensor(0.01, dtype=cx.float64), True), (0.01, False)):
        params = parameters(cx, arrays)
        opt = getattr(optim, name)(params, lr=lr, foreach=foreach)
        for grads in gradients(np.random.default_rng(9), arrays, 10, np.float64):
            feed(params, grads, cx, 0.0)
            opt.step()
        runs.append([as_numpy(p) for p in params])
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_state_dict_structure_equals_torch(case):
    name, kwargs = case
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in [(3, 2), (4,), (2,)]]
    ours = [cx.nn.Parameter(cx.tensor(a.copy())) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in arrays]
    opt_ours = getattr(optim, name)([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5}], **kwargs)
    opt_theirs = getattr(torch.optim, name)([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], **kwargs)
    for step in range(2):
        for a, b, arr in zip(ours, theirs, arrays):
            a.grad = cx.tensor(arr * (step + 1))
            b.grad = torch.tensor(arr * (step + 1))
        ours[2].grad = theirs[2].grad = None
        opt_ours.step()
        opt_theirs.step()
    sd_ours, sd_theirs = opt_ours.state_dict(), opt_theirs.state_dict()
    assert list(sd_ours) == ["state", "param_groups"]
    assert list(sd_ours["state"]) == list(sd_theirs["state"])
    assert sd_ours["param_groups"] == sd_theirs["param_groups"]
    assert [list(g) for g in sd_ours["param_groups"]] == [list(g) for g in sd_theirs["param_groups"]]
    for index, their_state in sd_theirs["state"].items():
        assert list(sd_ours["state"][index]) == list(their_state)
        for key, value in their_state.items():
            mine = sd_ours["state"][index][key]
            assert isinstance(mine, cx.Tensor)
            assert str(mine.dtype).split(".")[1] == str(value.dtype).split(".")[1], key
            np.testing.assert_allclose(as_numpy(mine), as_numpy(value), rtol=1e-13)
    for key, value in sd_ours["state"][0].items():         # the live tensors, as torch's
        assert value is opt_ours.state[ours[0]][key]
    assert repr(opt_ours) == repr(opt_theirs)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_loading_torchs_state_continues_as_torch(case):
    name, kwargs = case
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in [(3, 2), (4,)]]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in arrays]
    opt_theirs = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    for step in range(7):
        for p, a in zip(theirs, arrays):
            p.grad = torch.tensor(a * np.cos(step))
        opt_theirs.step()
    snapshot = opt_theirs.state_dict()
    converted = {"state": {i: {k: cx.tensor(v.detach().numpy().copy()) for k, v in s.items()}
                           for i, s in snapshot["state"].items()},
                 "param_groups": copy.deepcopy(snapshot["param_groups"])}
    ours = [cx.nn.Parameter(cx.tensor(p.detach().numpy().copy())) for p in theirs]
    opt_ours = getattr(optim, name)(ours, **kwargs)
    opt_ours.load_state_dict(converted)
    # torch's own load, as the reference: it casts floating state (NAdam's mu_product, ASGD's eta
    # and mu included, not `step`) to the parameter's dtype
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in theirs]
    opt_theirs = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    opt_theirs.load_state_dict(snapshot)
    for key, value in opt_theirs.state[theirs[0]].items():
        assert str(opt_ours.state[ours[0]][key].dtype).split(".")[1] == str(value.dtype).split(".")[1], key
    for step in range(10):
        for a, b, arr in zip(ours, theirs, arrays):
            g = arr * np.sin(step + 1)
            a.grad = cx.tensor(g)
            b.grad = torch.tensor(g)
        opt_ours.step()
        opt_theirs.step()
        for a, b in zip(ours, theirs):
            assert relative(as_numpy(a), as_numpy(b)) <= 1e-12


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_state_dict_round_trip_through_deepcopy(case):
    name, kwargs = case
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(4, 3), (5,), (0,)]]
    grads = [[rng.standard_normal(a.shape) for a in arrays] for _ in range(12)]

    def run(params, opt, steps):
        for g in steps:
            for p, gi in zip(params, g):
                p.grad = cx.tensor(gi)
            opt.step()

    a = [cx.nn.Parameter(cx.tensor(x.copy())) for x in arrays]
    opt_a = getattr(optim, name)(a, **kwargs)
    run(a, opt_a, grads[:5])
    saved = copy.deepcopy(opt_a.state_dict())
    b = [cx.nn.Parameter(cx.tensor(p.detach().numpy().copy())) for p in a]
    opt_b = getattr(optim, name)(b, **kwargs)
    opt_b.load_state_dict(saved)
    if name in ("NAdam", "ASGD"):
        # loading casts the float32 scalars (mu_product; eta, mu) to the parameter's dtype, as
        # torch's load does, so a loaded optimizer continues in float64: load into both
        assert opt_b.state[b[0]]["step"].dtype == cx.float32
        assert all(opt_b.state[b[0]][k].dtype == cx.float64 for k in ("mu_product", "eta", "mu") if k in saved["state"][0])
        opt_a.load_state_dict(copy.deepcopy(saved))
    run(a, opt_a, grads[5:])
    assert saved["state"][0]["step"].item() == 5
    run(b, opt_b, grads[5:])
    for p, q in zip(a, b):
        np.testing.assert_array_equal(as_numpy(p), as_numpy(q))


def test_numbers_loaded_as_scalar_state_become_tensors():
    p = cx.nn.Parameter(cx.zeros(2))
    for name, extra in (("NAdam", {"mu_product": 0.5}), ("ASGD", {"eta": 0.01, "mu": 1.0})):
        opt = getattr(optim, name)([p])
        state = dict({"step": 3, "exp_avg": cx.zeros(2), "exp_avg_sq": cx.zeros(2), "ax": cx.zeros(2)}, **extra)
        opt.load_state_dict({"state": {0: state}, "param_groups": opt.state_dict()["param_groups"]})
        for key in ["step", *extra]:
            value = opt.state[p][key]
            assert isinstance(value, cx.Tensor) and value.dtype == cx.float32 and value.dim() == 0, key


ERRORS = [
    ("Adamax", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    ("Adamax", dict(eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08"),
    ("Adamax", dict(betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), ValueError, "Invalid beta parameter at index 1: -0.1"),
    ("Adamax", dict(weight_decay=-0.5), ValueError, "Invalid weight_decay value: -0.5"),
    ("NAdam", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    ("NAdam", dict(momentum_decay=-1), ValueError, "Invalid momentum_decay value: -1"),
    ("NAdam", dict(betas=(0.9, 1.0)), ValueError, "Invalid beta parameter at index 1: 1.0"),
    ("RAdam", dict(lr=-0.001), ValueError, "Invalid learning rate: -0.001"),
    ("RAdam", dict(eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    ("RAdam", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    ("ASGD", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    ("ASGD", dict(weight_decay=-0.1), ValueError, "Invalid weight_decay value: -0.1"),
    ("Rprop", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
    ("Rprop", dict(etas=(1.2, 0.5)), ValueError, "Invalid eta values: 1.2, 0.5"),
    ("Rprop", dict(etas=(0.0, 1.2)), ValueError, "Invalid eta values: 0.0, 1.2"),
    ("LBFGS", dict(lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
]


@pytest.mark.parametrize("name, kwargs, error, message", ERRORS,
                         ids=lambda x: x if isinstance(x, str) and " " not in x else None)
def test_bad_hyperparameters_raise_torchs_errors(name, kwargs, error, message):
    with pytest.raises(error) as ours:
        getattr(optim, name)([cx.nn.Parameter(cx.zeros(2))], **kwargs)
    assert str(ours.value) == message
    if torch is not None:
        with pytest.raises(error) as theirs:
            getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **kwargs)
        assert str(theirs.value) == message


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "LBFGS"])
def test_common_errors(name):
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        getattr(optim, name)([])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(optim, name)([cx.nn.Parameter(cx.zeros(2))], lr=cx.tensor([0.1, 0.2]))
    if name != "LBFGS":       # capture and differentiable steps change behaviour: refused, not ignored
        for flag in ("capturable", "differentiable"):
            with pytest.raises(RuntimeError, match="%s=True is not supported" % flag):
                getattr(optim, name)([cx.nn.Parameter(cx.zeros(2))], **{flag: True})


def test_exported_where_torch_exports_them():
    for name in ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "LBFGS"]:
        assert name in optim.__all__ and issubclass(getattr(optim, name), optim.Optimizer)
        assert getattr(cx.optim, name) is getattr(optim, name)


# -- LBFGS ------------------------------------------------------------------------------------------

def rosenbrock(x):
    """Rosenbrock's function of a flat float64 vector and its gradient."""
    f = np.sum((1 - x[:-1]) ** 2) + np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2)
    g = np.zeros_like(x)
    g[:-1] += -2 * (1 - x[:-1]) - 400 * x[:-1] * (x[1:] - x[:-1] ** 2)
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return f, g


LBFGS_SHAPES = [(2,), (), (0,), (3, 1), (1,)]              # 7 numbers in 5 parameters


def lbfgs_problem(lib, start, shapes, function=rosenbrock, **kwargs):
    """Parameters holding `start` split over shapes; the closure sets the gradients from the
    numpy function (the same numbers in both libraries) and counts its calls."""
    sizes = [int(np.prod(s)) for s in shapes]
    pieces = np.split(np.asarray(start, np.float64), np.cumsum(sizes)[:-1])
    params = [lib.nn.Parameter(lib.tensor(piece.reshape(s))) for piece, s in zip(pieces, shapes)]
    opt = lib.optim.LBFGS(params, **kwargs)
    calls = []

    def flat():
        return np.concatenate([as_numpy(p).reshape(-1) for p in params])

    def closure():
        calls.append(lib.is_grad_enabled())
        f, g = function(flat())
        for p, piece in zip(params, np.split(g, np.cumsum(sizes)[:-1])):
            p.grad = lib.tensor(piece.reshape(tuple(p.shape)))
        return lib.tensor(f)

    return opt, closure, flat, calls


LBFGS_CASES = [
    dict(lr=0.002, history_size=3),                        # fixed steps
    dict(lr=0.002, max_iter=7),
    dict(line_search_fn="strong_wolfe", history_size=3),
    dict(line_search_fn="strong_wolfe"),
    dict(line_search_fn="strong_wolfe", max_iter=5, max_eval=9, tolerance_change=1e-12),
]
STARTS = {"2d": ([-1.5, 2.0], [(2,)]), "7 in 5 params": ([-1.2, 1.0, 0.3, -0.7, 1.1, 0.5, -0.4], LBFGS_SHAPES)}


def lbfgs_id(kwargs):
    return "-".join("%s=%s" % kv for kv in kwargs.items())


def lbfgs_trajectory(lib, start, shapes, kwargs, steps=8):
    opt, closure, flat, calls = lbfgs_problem(lib, start, shapes, **kwargs)
    trajectory, losses = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure)))
        trajectory.append(flat())
    state = opt.state[opt.param_groups[0]["params"][0]]
    return np.array(trajectory), losses, (state["func_evals"], state["n_iter"], len(calls)), opt


def torch_dot(a, b):
    return torch.from_numpy(a).dot(torch.from_numpy(b)).numpy()[()]


def torch_l1(v):
    return torch.from_numpy(v).abs().sum().numpy()[()]


def torch_sqrt(x):
    return torch.tensor(x, dtype=torch.float64).sqrt().numpy()[()]


@needs_torch
@pytest.mark.parametrize("start", list(STARTS), ids=str)
@pytest.mark.parametrize("kwargs", LBFGS_CASES, ids=lbfgs_id)
def test_lbfgs_trajectory_equals_torch_given_torchs_reductions(kwargs, start, monkeypatch):
    """With torch's own dot product and sum (BLAS sums in its own order) and its square root
    (MKL's on an Intel CPU, not always the nearest double), every iterate, loss and evaluation
    count is torch's bit for bit: the rest of the algorithm is the same."""
    monkeypatch.setattr(lbfgs_module, "_dot", torch_dot)
    monkeypatch.setattr(lbfgs_module, "_l1", torch_l1)
    monkeypatch.setattr(lbfgs_module, "_sqrt", torch_sqrt)
    ours = lbfgs_trajectory(cx, *STARTS[start], kwargs)
    theirs = lbfgs_trajectory(torch, *STARTS[start], kwargs)
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1] == theirs[1] and ours[2] == theirs[2]


@needs_torch
@pytest.mark.parametrize("start", list(STARTS), ids=str)
@pytest.mark.parametrize("kwargs", LBFGS_CASES, ids=lbfgs_id)
def test_lbfgs_trajectory_follows_torch(kwargs, start):
    """With numpy's reductions the iterates differ from torch's by rounding only: the same
    evaluation counts, the same point to 1e-8."""
    ours = lbfgs_trajectory(cx, *STARTS[start], kwargs)
    theirs = lbfgs_trajectory(torch, *STARTS[start], kwargs)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-14)
    assert ours[2] == theirs[2]
    sd_ours, sd_theirs = ours[3].state_dict(), theirs[3].state_dict()
    assert list(sd_ours["state"][0]) == list(sd_theirs["state"][0])
    assert sd_ours["param_groups"] == sd_theirs["param_groups"]
    for key in ("func_evals", "n_iter"):
        assert sd_ours["state"][0][key] == sd_theirs["state"][0][key]
    assert [tuple(t.shape) for t in sd_ours["state"][0]["old_dirs"]] == \
        [tuple(t.shape) for t in sd_theirs["state"][0]["old_dirs"]]


def reference_lbfgs(x, function, lr, max_iter, history_size):
    """Fixed-step L-BFGS from its definition (Nocedal and Wright's two-loop recursion), with
    torch's choices: the first step min(1, 1/|g|_1) * lr, a pair kept only when y.s > 1e-10,
    H0 = y.s / y.y of the newest pair, and no evaluation after the last iteration.  One step()
    of torch's, stopping tests off."""
    f, g = function(x)
    pairs, h0, d, t, g_prev = [], 1.0, None, None, None
    for k in range(max_iter):
        if k == 0:
            d = -g
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr
        else:
            s, y = d * t, g - g_prev
            if y @ s > 1e-10:
                pairs = (pairs + [(s, y)])[-history_size:]
                h0 = (y @ s) / (y @ y)
            q, alphas = g.copy(), []
            for s_i, y_i in reversed(pairs):
                alpha = (s_i @ q) / (y_i @ s_i)
                q = q - alpha * y_i
                alphas.append(alpha)
            r = h0 * q
            for (s_i, y_i), alpha in zip(pairs, reversed(alphas)):
                beta = (y_i @ r) / (y_i @ s_i)
                r = r + (alpha - beta) * s_i
            d, t = -r, lr
        g_prev = g
        x = x + t * d
        if k != max_iter - 1:
            f, g = function(x)
    return x


@pytest.mark.parametrize("history_size", [2, 5, 100])
@pytest.mark.parametrize("start", list(STARTS), ids=str)
def test_lbfgs_fixed_steps_match_the_numpy_reference(start, history_size):
    values, shapes = STARTS[start]
    opt, closure, flat, calls = lbfgs_problem(cx, values, shapes, lr=0.002, max_iter=12, history_size=history_size,
                                              tolerance_grad=-1.0, tolerance_change=-1.0)
    opt.step(closure)
    expected = reference_lbfgs(np.array(values), rosenbrock, 0.002, 12, history_size)
    np.testing.assert_allclose(flat(), expected, rtol=1e-12, atol=1e-14)
    assert len(calls) == 12 and all(calls)               # no evaluation after the last iteration
    assert len(opt.state[opt.param_groups[0]["params"][0]]["old_dirs"]) == min(history_size, 11)


@pytest.mark.parametrize("start", list(STARTS), ids=str)
def test_lbfgs_strong_wolfe_reaches_a_minimum(start):
    """The 2-d function's minimum (1, 1); in 7 dimensions this start goes to the local minimum
    near x0 = -1 (the gradient vanishes there)."""
    values, shapes = STARTS[start]
    opt, closure, flat, calls = lbfgs_problem(cx, values, shapes, line_search_fn="strong_wolfe",
                                              tolerance_grad=1e-10, tolerance_change=1e-14)
    for _ in range(15):
        opt.step(closure)
    assert np.abs(rosenbrock(flat())[1]).max() < 1e-5
    if len(values) == 2:
        np.testing.assert_allclose(flat(), [1.0, 1.0], atol=1e-7)
        assert rosenbrock(flat())[0] < 1e-14


def test_lbfgs_strong_wolfe_steps_satisfy_the_wolfe_conditions():
    """One iteration per step(): each accepted step length t along d gives sufficient
    decrease (c1 = 1e-4) and the strong curvature condition (c2 = 0.9)."""
    values, shapes = STARTS["7 in 5 params"]
    opt, closure, flat, calls = lbfgs_problem(cx, values, shapes, line_search_fn="strong_wolfe", max_iter=1,
                                              max_eval=25)
    state = opt.state[opt.param_groups[0]["params"][0]]
    for _ in range(20):
        x0 = flat()
        f0, g0 = rosenbrock(x0)
        opt.step(closure)
        d, t = as_numpy(state["d"]), float(np.asarray(as_numpy(state["t"]) if isinstance(state["t"], cx.Tensor)
                                                      else state["t"]))
        f1, g1 = rosenbrock(flat())
        np.testing.assert_allclose(flat(), x0 + t * d, rtol=1e-14, atol=1e-15)
        assert f1 <= f0 + 1e-4 * t * (g0 @ d)
        assert abs(g1 @ d) <= 0.9 * abs(g0 @ d)


def test_lbfgs_solves_a_quadratic():
    rng = np.random.default_rng(4)
    m = rng.standard_normal((7, 7))
    a = m @ m.T + 7 * np.eye(7)
    b = rng.standard_normal(7)

    def quadratic(x):
        return 0.5 * x @ a @ x - b @ x, a @ x - b

    opt, closure, flat, calls = lbfgs_problem(cx, np.zeros(7), LBFGS_SHAPES, quadratic, line_search_fn="strong_wolfe",
                                              max_iter=50, tolerance_grad=1e-12, tolerance_change=1e-20)
    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(flat(), np.linalg.solve(a, b), rtol=1e-7, atol=1e-10)


def test_lbfgs_stops_on_a_flat_gradient_and_counts_evaluations():
    opt, closure, flat, calls = lbfgs_problem(cx, [1.0, 1.0], [(2,)])        # the minimum itself
    loss = opt.step(closure)
    assert isinstance(loss, cx.Tensor) and loss.item() == 0.0
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert (state["func_evals"], state["n_iter"], len(calls)) == (1, 0, 1)
    assert list(state) == ["func_evals", "n_iter"]
    for kwargs in (dict(max_iter=6), dict(max_iter=20, max_eval=8, line_search_fn="strong_wolfe")):
        opt, closure, flat, calls = lbfgs_problem(cx, [-1.5, 2.0], [(2,)], **kwargs)
        for _ in range(3):
            before = len(calls)
            opt.step(closure)
            assert len(calls) - before <= opt.param_groups[0]["max_eval"]
        assert opt.param_groups[0]["max_eval"] == kwargs.get("max_eval", 6 * 5 // 4)
        assert opt.state[opt.param_groups[0]["params"][0]]["func_evals"] == len(calls)


def test_lbfgs_state_dict_round_trip_continues_identically():
    values, shapes = STARTS["7 in 5 params"]
    opt, closure, flat, _ = lbfgs_problem(cx, values, shapes, line_search_fn="strong_wolfe", history_size=4)
    for _ in range(2):
        opt.step(closure)
    saved = copy.deepcopy(opt.state_dict())
    opt2, closure2, flat2, _ = lbfgs_problem(cx, flat(), shapes, line_search_fn="strong_wolfe", history_size=4)
    opt2.load_state_dict(saved)
    for _ in range(3):
        opt.step(closure)
        opt2.step(closure2)
        np.testing.assert_array_equal(flat(), flat2())
    state = saved["state"][0]
    assert all(isinstance(state[k], cx.Tensor) for k in ("d", "prev_flat_grad"))
    assert all(isinstance(t, cx.Tensor) for t in state["old_dirs"] + state["old_stps"] + state["ro"])


def test_lbfgs_closure_runs_with_grad_and_autograd_works():
    """A closure that calls backward() (cextend's autograd, under an outer no_grad)."""
    x = cx.nn.Parameter(cx.tensor([-1.5, 2.0], dtype=cx.float64))
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    with cx.no_grad():
        for _ in range(10):
            opt.step(closure)
    np.testing.assert_allclose(as_numpy(x), [1.0, 1.0], atol=1e-5)     # the default tolerances


def test_lbfgs_errors():
    a, b = cx.nn.Parameter(cx.zeros(2)), cx.nn.Parameter(cx.zeros(2))
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options \\(parameter groups\\)"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt, closure, _, _ = lbfgs_problem(cx, [-1.5, 2.0], [(2,)], line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    with pytest.raises(TypeError):
        optim.LBFGS([a]).step()                                    # the closure is required
