"""Optimizers: step-by-step against torch 2.13's single-tensor algorithms,
against float64 re-derivations of the update rules, state_dict structure
and load semantics, hooks, and torch's errors for bad hyperparameters."""
import collections
import copy
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend import optim
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

# (optimizer, hyperparameters): every option each optimizer has, alone and combined.
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True, betas=(0.5, 0.9))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1, centered=True, maximize=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.5)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, eps=1e-8, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.05, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.95, eps=1e-5, weight_decay=0.1, maximize=True)),
]
SHAPES = [(5, 3), (7,), (1,), (0,), (2, 3, 4), ()]
STEPS = 120


def case_id(case):
    return "%s-%s" % (case[0], "-".join("%s=%s" % kv for kv in case[1].items()))


def make_groups(lib, arrays, parameter):
    """Two parameter groups, the second with its own lr; one parameter is a transposed view."""
    params = [parameter(lib.tensor(a.copy())) for a in arrays]
    params[0] = parameter(lib.tensor(arrays[0].T.copy()).t())    # non-contiguous storage
    return params, [{"params": params[:2]}, {"params": params[2:], "lr": 0.003}]


def feed_gradients(pairs, step, rng, dtype):
    """The same gradient to both libraries: part feedback from the parameter (so a
    difference would grow), part noise; some parameters get no gradient some steps."""
    for i, (ours, theirs) in enumerate(pairs):
        if (step + i) % 7 == 3:
            ours.grad = None
            theirs.grad = None
            continue
        g = np.asarray(0.3 * ours.detach().numpy() + rng.standard_normal(ours.shape), dtype=dtype)
        ours.grad = cx.tensor(g)
        theirs.grad = torch.tensor(g)


def deviation(ours, theirs):
    """Largest elementwise |ours - theirs| / |theirs| (0 where both are equal)."""
    x = np.asarray(ours, np.float64)
    y = np.asarray(theirs, np.float64)
    diff = np.abs(x - y)
    scale = np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / scale)
    return float(rel.max()) if rel.size else 0.0


def normwise_deviation(ours, theirs):
    """max |ours - theirs| / max |theirs| over one tensor (the error on the tensor's own scale)."""
    x = np.asarray(ours, np.float64)
    y = np.asarray(theirs, np.float64)
    if x.size == 0:
        return 0.0
    scale = np.abs(y).max()
    diff = np.abs(x - y).max()
    return 0.0 if diff == 0 else float(diff / scale)


Deviation = collections.namedtuple("Deviation", ["params", "state", "params_normwise"])


def as_numpy(t):
    return t.detach().numpy() if isinstance(t, cx.Tensor) else t.detach().cpu().numpy()


def run_against_torch(name, kwargs, dtype, steps=STEPS, seed=0):
    """Step both libraries side by side; returns the worst elementwise relative deviation
    of the parameters and of the optimizer state over all steps, and the worst normwise one
    of the parameters."""
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    ours, our_groups = make_groups(cx, arrays, cx.nn.Parameter)
    theirs, their_groups = make_groups(torch, arrays, torch.nn.Parameter)
    opt_ours = getattr(optim, name)(our_groups, **kwargs)
    opt_theirs = getattr(torch.optim, name)(their_groups, foreach=False, **kwargs)
    worst_param = worst_state = worst_normwise = 0.0
    for step in range(steps):
        feed_gradients(list(zip(ours, theirs)), step, rng, dtype)
        opt_ours.step()
        opt_theirs.step()
        for a, b in zip(ours, theirs):
            worst_param = max(worst_param, deviation(as_numpy(a), as_numpy(b)))
            worst_normwise = max(worst_normwise, normwise_deviation(as_numpy(a), as_numpy(b)))
        sd_ours, sd_theirs = opt_ours.state_dict(), opt_theirs.state_dict()
        assert sorted(sd_ours["state"]) == sorted(sd_theirs["state"])
        for index, their_state in sd_theirs["state"].items():
            our_state = sd_ours["state"][index]
            assert list(our_state) == list(their_state)
            for key, value in their_state.items():
                assert str(our_state[key].dtype).split(".")[1] == str(value.dtype).split(".")[1], key
                assert tuple(our_state[key].shape) == tuple(value.shape), key
                if key == "step":
                    assert our_state[key].item() == value.item()
                else:
                    worst_state = max(worst_state, deviation(as_numpy(our_state[key]), as_numpy(value)))
    return Deviation(worst_param, worst_state, worst_normwise)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_float64_steps_equal_torch_within_1e_10(case):
    name, kwargs = case
    worst = run_against_torch(name, kwargs, np.float64)
    assert worst.params <= 1e-10, worst
    assert worst.state <= 1e-10, worst


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_float32_steps_follow_torch(case):
    """float32: the multiply-adds are fused as torch's (bitwise equal), but torch's sqrt is
    its vendor library's (not always correctly rounded), so Adam-like steps drift by ulps that
    the gradient feedback amplifies: loose elementwise near zero, a few ulps on each tensor's
    own scale."""
    name, kwargs = case
    worst = run_against_torch(name, kwargs, np.float32, steps=60)
    assert worst.params_normwise <= 1e-6, worst
    assert worst.params <= 5e-3, worst
    assert worst.state <= 5e-3, worst
    if name == "SGD":                 # no square roots: every operation is bitwise torch's
        assert worst.params == worst.state == 0.0, worst


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
        ours[2].grad = None
        theirs[2].grad = None
        opt_ours.step()
        opt_theirs.step()
    sd_ours, sd_theirs = opt_ours.state_dict(), opt_theirs.state_dict()
    assert set(sd_ours) == {"state", "param_groups"}
    assert list(sd_ours["state"]) == list(sd_theirs["state"])
    for g_ours, g_theirs in zip(sd_ours["param_groups"], sd_theirs["param_groups"]):
        assert list(g_ours) == list(g_theirs)
        assert g_ours == g_theirs
    for index in sd_theirs["state"]:
        for key, value in sd_theirs["state"][index].items():
            mine = sd_ours["state"][index][key]
            assert isinstance(mine, cx.Tensor)
            if key == "step":
                assert mine.dtype == cx.float32 and mine.dim() == 0
    # the state dict holds the live tensors, as torch's does
    for key, value in sd_ours["state"].get(0, {}).items():
        assert value is opt_ours.state[ours[0]][key]
    assert repr(opt_ours) == repr(opt_theirs)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_loading_torchs_state_continues_as_torch(case):
    """A torch state_dict carried over (tensors converted) makes our optimizer continue exactly
    as torch's own does: the loaded state is used as it is."""
    name, kwargs = case
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in [(3, 2), (4,)]]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in arrays]
    opt_theirs = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    for step in range(5):
        for p, a in zip(theirs, arrays):
            p.grad = torch.tensor(a * np.cos(step))
        opt_theirs.step()
    snapshot = opt_theirs.state_dict()
    converted = {
        "state": {i: {k: cx.tensor(v.detach().numpy().copy()) for k, v in s.items()}
                  for i, s in snapshot["state"].items()},
        "param_groups": copy.deepcopy(snapshot["param_groups"]),
    }
    ours = [cx.nn.Parameter(cx.tensor(p.detach().numpy().copy())) for p in theirs]
    opt_ours = getattr(optim, name)(ours, **kwargs)
    opt_ours.load_state_dict(converted)
    for step in range(10):
        for a, b, arr in zip(ours, theirs, arrays):
            g = arr * np.sin(step + 1)
            a.grad = cx.tensor(g)
            b.grad = torch.tensor(g)
        opt_ours.step()
        opt_theirs.step()
        for a, b in zip(ours, theirs):
            assert deviation(as_numpy(a), as_numpy(b)) <= 1e-12


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_state_dict_round_trip_through_deepcopy(case):
    """Steps after loading a deep-copied state_dict equal the steps of the original."""
    name, kwargs = case
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(4, 3), (5,)]]
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
    run(a, opt_a, grads[5:])
    # the deep copy is a snapshot: the original optimizer's later steps leave it alone
    if saved["state"] and "step" in saved["state"][0]:
        assert saved["state"][0]["step"].item() == 5
    run(b, opt_b, grads[5:])
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # ... while the loaded optimizer uses the loaded tensors themselves (torch's semantics)
    if saved["state"] and "step" in saved["state"][0]:
        assert saved["state"][0]["step"].item() == 12


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [None, 0, 1, 7, 16, 1003], ids=lambda n: "0-d" if n is None else str(n))
def test_inplace_primitives_round_as_torch(dtype, size):
    """The update primitives against torch's in-place ops on the same data: bitwise in
    float32 (fused multiply-adds emulated), within an ulp in float64.  0-d arrays are tried
    300 times (numpy turns their results into scalars, a separate path)."""
    from cextend.optim import _inplace as F
    rng = np.random.default_rng(size or 0)
    for _ in range(300 if size is None else 1):
        if size is None:
            a, b, c = (np.asarray(rng.standard_normal(), dtype=dtype) for _ in range(3))
        else:
            a, b, c = (np.asarray(rng.standard_normal(2 * size)[::2], dtype=dtype) for _ in range(3))  # strided
        check_primitives(F, a, b, np.asarray(np.abs(c) + dtype(0.1)))


def check_primitives(F, a, b, c):
    ta, tb, tc = (torch.from_numpy(x.copy()) for x in (a, b, c))
    # float64: one rounding of the unfused product, on the scale of the terms (not the result,
    # which may cancel): |ours - torch| <= 2 u (|a| + |b| max(|b|, |c|, 1))
    terms = np.abs(a) + np.abs(b) * np.maximum(np.maximum(np.abs(b), np.abs(c)), 1)
    bound = 0 if a.dtype == np.float32 else 2 * np.finfo(a.dtype).eps * terms
    cases = [
        (lambda x: F.add_(x, b, alpha=-0.37), lambda t: t.add_(tb, alpha=-0.37)),
        (lambda x: F.add_(x, b), lambda t: t.add_(tb)),
        (lambda x: x.__setitem__(Ellipsis, F.add(-x, b, alpha=0.1)),       # -x of a 0-d array is a scalar
         lambda t: t.copy_((-t).add(tb, alpha=0.1))),
        (lambda x: F.addcmul_(x, b, c, value=0.3), lambda t: t.addcmul_(tb, tc, value=0.3)),
        (lambda x: F.addcmul_(x, b, b, value=1), lambda t: t.addcmul_(tb, tb, value=1)),
        (lambda x: F.addcdiv_(x, b, c, value=-0.3), lambda t: t.addcdiv_(tb, tc, value=-0.3)),
        (lambda x: F.lerp_(x, b, 0.1), lambda t: t.lerp_(tb, 0.1)),
        (lambda x: F.lerp_(x, b, 0.999), lambda t: t.lerp_(tb, 0.999)),
        (lambda x: F.mul_(x, 0.9), lambda t: t.mul_(0.9)),
        (lambda x: F.maximum_(x, c), lambda t: torch.maximum(t, tc, out=t)),
    ]
    for ours, theirs in cases:
        x, t = a.copy(), ta.clone()
        ours(x)
        theirs(t)
        assert np.all(np.abs(x.astype(np.float64) - t.numpy()) <= bound)


def test_load_uses_state_as_given_and_casts_floating_state_to_the_param_dtype():
    p = cx.nn.Parameter(cx.zeros(3))
    opt = optim.Adam([p], lr=0.1)
    exp_avg = cx.tensor([1.0, 2.0, 3.0])                       # float32 like p: used as it is
    exp_avg_sq = cx.tensor(np.array([1.0, 1.0, 1.0]))          # float64: cast to float32
    step = cx.tensor(np.array(4.0))                            # `step` is never cast
    sd = {"state": {0: {"step": step, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}},
          "param_groups": copy.deepcopy(opt.state_dict()["param_groups"])}
    opt.load_state_dict(sd)
    state = opt.state[p]
    assert state["exp_avg"] is exp_avg
    assert state["exp_avg_sq"] is not exp_avg_sq and state["exp_avg_sq"].dtype == cx.float32
    assert state["step"] is step and step.dtype == cx.float64
    p.grad = cx.ones(3)
    opt.step()
    assert step.item() == 5.0                                  # the given tensor itself advanced


def test_loading_a_number_step_gives_a_float32_tensor():
    p = cx.nn.Parameter(cx.zeros(2))
    opt = optim.RMSprop([p])
    sd = {"state": {0: {"step": 3, "square_avg": cx.ones(2)}}, "param_groups": opt.state_dict()["param_groups"]}
    opt.load_state_dict(sd)
    assert isinstance(opt.state[p]["step"], cx.Tensor) and opt.state[p]["step"].dtype == cx.float32


def test_load_state_dict_rejects_a_mismatched_layout():
    a, b = cx.nn.Parameter(cx.zeros(2)), cx.nn.Parameter(cx.zeros(3))
    opt = optim.SGD([a, b], lr=0.1)
    other = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    single = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(single.state_dict())


def test_load_restores_hyperparameters_and_keeps_params():
    a = cx.nn.Parameter(cx.zeros(2))
    opt = optim.SGD([a], lr=0.1, momentum=0.5)
    sd = copy.deepcopy(opt.state_dict())
    sd["param_groups"][0]["lr"] = 0.25
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.25 and opt.param_groups[0]["params"][0] is a


def test_sgd_matches_a_float64_reference():
    p0 = np.linspace(-1, 1, 6)
    for kwargs in [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3,
                                                                      weight_decay=0.01),
                   dict(lr=0.1, momentum=0.8, nesterov=True)]:
        p = cx.tensor(p0.copy(), requires_grad=True)
        opt = optim.SGD([p], **kwargs)
        ref, buf = p0.copy(), None
        for step in range(6):
            g = ref * (1.0 + 0.1 * step) - 0.5
            p.grad = cx.tensor(p.detach().numpy() * (1.0 + 0.1 * step) - 0.5)
            opt.step()
            d = g + kwargs.get("weight_decay", 0) * ref
            if kwargs.get("momentum"):
                buf = d.copy() if buf is None else kwargs["momentum"] * buf + (1 - kwargs.get("dampening", 0)) * d
                d = d + kwargs["momentum"] * buf if kwargs.get("nesterov") else buf
            ref = ref - kwargs["lr"] * d
            np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-13, atol=1e-15)


def test_adam_matches_a_float64_reference():
    p0 = np.linspace(-1, 1, 6)
    for kwargs in [dict(lr=0.01), dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1), dict(lr=0.01, amsgrad=True)]:
        p = cx.tensor(p0.copy(), requires_grad=True)
        opt = optim.Adam([p], **kwargs)
        b1, b2 = kwargs.get("betas", (0.9, 0.999))
        ref, m, v, vmax = p0.copy(), 0.0, 0.0, 0.0
        for t in range(1, 7):
            p.grad = cx.tensor(p.detach().numpy() * (1.0 + 0.1 * t) - 0.5)
            opt.step()
            g = ref * (1.0 + 0.1 * t) - 0.5 + kwargs.get("weight_decay", 0) * ref
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = np.maximum(vmax, v)
            denom = np.sqrt(vmax if kwargs.get("amsgrad") else v) / np.sqrt(1 - b2 ** t) + 1e-8
            ref = ref - kwargs["lr"] / (1 - b1 ** t) * m / denom
            np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-12, atol=1e-15)


def test_params_without_grad_are_skipped_and_get_no_state():
    a, b = cx.nn.Parameter(cx.ones(2)), cx.nn.Parameter(cx.ones(2))
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = cx.ones(2)
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])
    assert b not in opt.state and len(opt.state[a]) == 3


def test_step_bumps_versions_so_a_stale_graph_refuses_backward():
    w = cx.nn.Parameter(cx.ones(3))
    loss = (w * w).sum()
    w.grad = cx.ones(3)
    optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_closure_runs_with_grad_enabled_and_its_loss_is_returned():
    w = cx.nn.Parameter(cx.tensor([1.0, -2.0]))
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with cx.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6], rtol=1e-6)


def test_zero_grad_to_none_or_to_zeros():
    a = cx.nn.Parameter(cx.ones(2))
    opt = optim.SGD([a], lr=0.1)
    a.grad = cx.ones(2)
    grad = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is grad
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert a.grad is None


def test_add_param_group_takes_defaults_and_rejects_duplicates():
    a, b = cx.nn.Parameter(cx.ones(2)), cx.nn.Parameter(cx.ones(2))
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[1]["params"] == [b]
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {cx.nn.Parameter(cx.ones(1))}})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)


def test_named_parameters_are_accepted_and_names_kept():
    model = cx.nn.Linear(3, 2)
    opt = optim.Adam(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_step_hooks_run_around_step():
    a = cx.nn.Parameter(cx.ones(1))
    opt = optim.SGD([a], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", a.grad is None)))
    opt.step()
    assert calls == [("pre", True), ("post", True)]
    pre.remove()
    opt.step()
    assert calls[-1] == ("post", True) and len(calls) == 3


def test_state_dict_hooks():
    a = cx.nn.Parameter(cx.ones(1))
    opt = optim.SGD([a], lr=0.1)
    opt.register_state_dict_post_hook(lambda o, sd: dict(sd, extra=1))
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_post_hook(lambda o: seen.append(o))
    opt.load_state_dict({"state": {}, "param_groups": opt.state_dict()["param_groups"]})
    assert seen == [opt]


def test_unsupported_implementation_flags_raise_clearly():
    a = [cx.nn.Parameter(cx.ones(1))]
    with pytest.raises(RuntimeError, match="fused=True is not supported"):
        optim.Adam(a, fused=True)
    with pytest.raises(RuntimeError, match="differentiable=True is not supported"):
        optim.SGD(a, differentiable=True)
    with pytest.raises(RuntimeError, match="capturable=True is not supported"):
        optim.RMSprop(a, capturable=True)
    optim.SGD(a, foreach=True).step()           # accepted: the same algorithm


def test_tensor_lr_is_accepted():
    a = cx.nn.Parameter(cx.ones(2))
    a.grad = cx.ones(2)
    optim.Adam([a], lr=cx.tensor(0.1)).step()
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 0.9], rtol=1e-5)


BAD_HYPERPARAMETERS = [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(momentum=-0.1)), ("SGD", dict(weight_decay=-1.0)),
    ("SGD", dict(lr=0.1, nesterov=True)), ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-1.0)), ("Adam", dict(eps=-1.0)), ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))), ("Adam", dict(weight_decay=-0.1)), ("Adam", dict(betas=(0, 0.9))),
    ("AdamW", dict(lr=-0.5)), ("AdamW", dict(betas=(0.9, 1.5))),
    ("RMSprop", dict(lr=-1.0)), ("RMSprop", dict(eps=-1.0)), ("RMSprop", dict(momentum=-1.0)),
    ("RMSprop", dict(weight_decay=-1.0)), ("RMSprop", dict(alpha=-1.0)),
    ("Adagrad", dict(lr=-1.0)), ("Adagrad", dict(lr_decay=-1.0)), ("Adagrad", dict(weight_decay=-1.0)),
    ("Adagrad", dict(initial_accumulator_value=-1.0)), ("Adagrad", dict(eps=-1.0)),
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)),
    ("Adadelta", dict(weight_decay=-1.0)),
]


@needs_torch
@pytest.mark.parametrize("case", BAD_HYPERPARAMETERS, ids=case_id)
def test_bad_hyperparameters_raise_torchs_error(case):
    name, kwargs = case
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([cx.zeros(1, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_empty_parameter_list_raises():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)


def test_adagrad_creates_state_at_construction_like_torch():
    a = cx.nn.Parameter(cx.ones(2))
    opt = optim.Adagrad([a], initial_accumulator_value=0.5)
    assert opt.state[a]["step"].item() == 0.0
    np.testing.assert_array_equal(opt.state[a]["sum"].numpy(), [0.5, 0.5])


def test_deepcopy_of_an_optimizer_is_independent():
    a = cx.nn.Parameter(cx.ones(2))
    opt = optim.Adam([a], lr=0.1)
    a.grad = cx.ones(2)
    opt.step()
    clone = copy.deepcopy(opt)
    assert clone.state_dict()["state"][0]["exp_avg"] is not opt.state[a]["exp_avg"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone.step()


def test_step_counter_follows_the_default_dtype_as_torch():
    a = cx.nn.Parameter(cx.ones(2))
    a.grad = cx.ones(2)
    opt = optim.Adam([a])
    opt.step()
    assert opt.state[a]["step"].dtype == cx.float32
    previous = cx.get_default_dtype()
    cx.set_default_dtype(cx.float64)
    try:
        b = cx.nn.Parameter(cx.ones(2))
        b.grad = cx.ones(2)
        opt = optim.Adam([b])
        opt.step()
        assert opt.state[b]["step"].dtype == cx.float64
    finally:
        cx.set_default_dtype(previous)


def test_a_user_written_optimizer_in_the_old_style_works():
    """A 2017-style subclass: `required` defaults, per-parameter state, p.data updates."""
    from cextend.optim.optimizer import Optimizer, required

    class SignSGD(Optimizer):
        def __init__(self, params, lr=required, decay=0.5):
            super().__init__(params, dict(lr=lr, decay=decay))

        def step(self, closure=None):
            loss = closure() if closure is not None else None
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    state["count"] = state.get("count", 0) + 1
                    p.data.sub_(group["lr"] * group["decay"] ** state["count"] * p.grad.data.sign())
            return loss

    w = cx.nn.Parameter(cx.tensor([1.0, -1.0, 0.0]))
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        SignSGD([w])
    opt = SignSGD([{"params": [w], "lr": 0.4}])
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    w.grad = cx.tensor([2.0, -3.0, 0.0])
    opt.step()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [1.0 - 0.2 - 0.1, -1.0 + 0.2 + 0.1, 0.0], rtol=1e-6)
    assert calls == [1, 1] and opt.state_dict()["state"] == {0: {"count": 2}}
