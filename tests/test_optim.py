"""SGD and Adam against a float64 re-derivation of torch's update rules,
and against torch itself when it is installed."""
import numpy as np
import pytest

import cextend as cx
from cextend import optim


def quadratic_grads(p, step):
    """A deterministic gradient sequence: d/dp of a changing quadratic."""
    return p * (1.0 + 0.1 * step) - 0.5


def run(optimizer_cls, kwargs, steps=5, dtype=np.float64):
    p = cx.tensor(np.linspace(-1, 1, 6).astype(dtype), requires_grad=True)
    opt = optimizer_cls([p], **kwargs)
    history = []
    for step in range(steps):
        p.grad = cx.tensor(quadratic_grads(p.detach().numpy(), step))
        opt.step()
        history.append(p.detach().numpy().copy())
    return history


def sgd_reference(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, steps=5):
    p = np.linspace(-1, 1, 6)
    buf, history = None, []
    for step in range(steps):
        d = quadratic_grads(p, step) + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
        history.append(p)
    return history


def adam_reference(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, steps=5):
    p = np.linspace(-1, 1, 6)
    m = v = vmax = np.zeros(6)
    history = []
    for t in range(1, steps + 1):
        g = quadratic_grads(p, t - 1) + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / np.sqrt(1 - betas[1] ** t) + eps
        p = p - lr / (1 - betas[0] ** t) * m / denom
        history.append(p)
    return history


@pytest.mark.parametrize("kwargs", [dict(lr=0.1), dict(lr=0.1, momentum=0.9),
                                    dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
                                    dict(lr=0.1, momentum=0.8, nesterov=True)])
def test_sgd_matches_the_reference(kwargs):
    for ours, ref in zip(run(optim.SGD, kwargs), sgd_reference(**kwargs)):
        np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kwargs", [dict(lr=0.01), dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1),
                                    dict(lr=0.01, amsgrad=True)])
def test_adam_matches_the_reference(kwargs):
    for ours, ref in zip(run(optim.Adam, kwargs), adam_reference(**kwargs)):
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15)


def test_invalid_settings_raise():
    p = [cx.zeros(1, requires_grad=True)]
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta"):
        optim.Adam(p, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)


def test_zero_grad_and_param_groups():
    a, b = cx.ones(2, requires_grad=True), cx.ones(2, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    (a * 2 + b * 2).sum().backward()
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.8, 0.8], rtol=1e-6)
    np.testing.assert_allclose(b.detach().numpy(), [-1.0, -1.0], rtol=1e-6)
    opt.zero_grad()
    assert a.grad is None and b.grad is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
                                         ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                         ("Adam", dict(lr=0.01, weight_decay=0.01)),
                                         ("Adam", dict(lr=0.01, amsgrad=True))])
def test_step_by_step_agreement_with_torch(name, kwargs, dtype):
    torch = pytest.importorskip("torch", reason="torch not installed: cross-check skipped")
    init = np.linspace(-1, 1, 6).astype(dtype)
    ours = cx.tensor(init.copy(), requires_grad=True)
    theirs = torch.tensor(init.copy(), requires_grad=True)
    opt_ours = getattr(optim, name)([ours], **kwargs)
    opt_theirs = getattr(torch.optim, name)([theirs], **kwargs)
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-13, atol=1e-15)
    for step in range(6):
        g = quadratic_grads(init * 0 + ours.detach().numpy(), step).astype(dtype)
        ours.grad = cx.tensor(g)
        theirs.grad = torch.tensor(g)
        opt_ours.step()
        opt_theirs.step()
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)
