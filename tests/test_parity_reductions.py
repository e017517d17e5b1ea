"""Torch parity of reductions and scans: var_mean's single node and
Welford mean, prod's and cumprod's gradients through zeros, logcumsumexp's
gradient, float32 scans accumulated in double, max with NaN, named-tuple
results and empty dim lists.
"""
import math

import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`

from parity_helpers import each_lib, inf, nan, real_torch


def test_sum_over_an_empty_dim_tuple_reduces_everything():
    x = cx.ones(2, 3)
    assert x.sum(dim=()).item() == 6
    assert x.sum(dim=[]).item() == 6
    assert x.mean(dim=()).item() == 1


def test_max_and_min_with_dim_return_named_tuples():
    x = cx.tensor([[1.0, 3.0, 2.0]])
    for result, index in ((x.max(1), 1), (x.min(1), 0), (cx.max(x, dim=1), 1)):
        values, indices = result
        assert result.values is values and result.indices is indices
        assert indices.tolist() == [index]


def test_max_with_nan_sends_the_gradient_to_the_nans():
    x = cx.tensor([math.nan, 1.0, 3.0], requires_grad=True)
    m = x.max()
    assert np.isnan(m.item())
    m.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0])
    x = cx.tensor([math.nan, math.nan, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.5, 0])


@pytest.mark.disagreement("D54")
@pytest.mark.disagreement("D59")
@pytest.mark.disagreement("D68")
@each_lib
def test_var_mean_is_one_node_with_welfords_mean_and_hooks_its_unused_output_with_none(lib):
    x = lib.tensor([[-3.0, -1.0, inf], [1.0, inf, 2.0], [1.0, 2.0, 4.0]], requires_grad=True)
    v, m = lib.var_mean(x, 1)
    # Welford: an infinity last gives inf, one followed by a finite value NaN
    assert np.isinf(m.detach().numpy()[0]) and np.isnan(m.detach().numpy()[1])
    assert m.detach().numpy()[2] == pytest.approx(7 / 3)
    assert type(v.grad_fn) is type(m.grad_fn) and v.grad_fn is m.grad_fn
    m.sum().backward()          # the mean's gradient is 1/n whatever the values
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 3), 1 / 3))
    seen = []
    x2 = lib.tensor([1.0, -3.0], requires_grad=True)
    v2, m2 = lib.var_mean(x2)
    m2.register_hook(lambda g: seen.append(g))
    v2.backward()
    assert seen == [None]       # torch calls the unused output's hook with None


@pytest.mark.disagreement("D63")
@each_lib
def test_prod_gradient_is_zero_when_the_input_holds_two_zeros(lib):
    x = lib.tensor([nan, 0.0, 2.0, 0.0], requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    y = lib.tensor([nan, 0.0, 2.0, 0.0], requires_grad=True)
    y.prod(0).backward()        # the dim form has no shortcut
    assert np.isnan(y.grad.numpy()[1:]).all()
    z = lib.tensor([3.0, 0.0, 2.0, 5.0], requires_grad=True)
    z.prod().backward()
    assert z.grad.tolist() == [0.0, 30.0, 0.0, 0.0]


def test_float32_scans_accumulate_in_double():
    x = torch.tensor([[-0.0, 1e8, 1.0, -1e8]])
    np.testing.assert_array_equal(x.cumsum(1).numpy(), [[0.0, 1e8, 1e8, 1.0]])
    assert not np.signbit(x.cumsum(1).numpy()[0, 0])
    with np.errstate(over="ignore"):
        want = np.cumprod(np.array([1e30, 1e30, 1e-30], np.float32).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(torch.tensor([1e30, 1e30, 1e-30]).cumprod(0).numpy(), want)
    assert np.isfinite(want[2])


def _cumprod_grad_reference(a, g):
    """d/da_k of sum_j g_j prod_{i<=j} a_i, exactly (float64, no division)."""
    grad = np.zeros_like(a)
    for k in range(a.size):
        for j in range(k, a.size):
            grad[k] += g[j] * np.prod(np.delete(a[:j + 1], k))
    return grad


def test_cumprod_gradient_with_zeros_matches_the_product_rule():
    rng = np.random.default_rng(4)
    for _ in range(50):
        a = rng.choice([0.0, 1.5, -2.0, 0.5, -1.25, 3.0], size=(3, 6))
        g = rng.standard_normal((3, 6))
        x = torch.tensor(a, requires_grad=True)
        grad, = torch.autograd.grad(torch.cumprod(x, 1), [x], torch.tensor(g))
        want = np.stack([_cumprod_grad_reference(a[r], g[r]) for r in range(3)])
        np.testing.assert_allclose(grad.numpy(), want, rtol=1e-10, atol=1e-12)
        # past a row's first zero the gradient is exactly +0.0, as torch's
        past = np.cumsum(a == 0, 1) - (a == 0) > 0
        assert not np.any(np.signbit(grad.numpy()[past]))


def test_cumprod_gradient_past_a_zero_ignores_an_infinite_incoming_gradient():
    x = torch.tensor([[2.0, 0.0, 3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([[1.0, 1.0, float("inf"), 1.0]], dtype=torch.float64)
    grad, = torch.autograd.grad(torch.cumprod(x, 1), [x], g)
    # d/dx3 = 0 exactly (x1 = 0 is a factor); torch's formula never forms 0 * inf there
    assert grad[0, 3].item() == 0.0 and grad[0, 2].item() == 0.0
    assert grad[0, 1].item() == float("inf")


def test_cumprod_double_backward_through_zeros_is_torchs_sum_of_omitted_products():
    # under create_graph torch sums the products that omit each element; with
    # an infinity among them that is NaN where a recurrence would give inf
    x = torch.tensor([0.0, float("inf"), 0.75, -0.0, 2.0], requires_grad=True)
    x.clone().cumprod_(-1).mean().backward(create_graph=True)
    assert np.isnan(x.grad.detach().numpy()[0]) and x.grad.detach().numpy()[1] == 0.0
    y = torch.tensor([[0.0, 1.5, -2.0, 0.0, 0.5], [1.0, 2.0, 0.0, 3.0, -1.0]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: t.cumprod(1), (y,))


def test_logcumsumexp_gradient_ignores_a_nan_incoming_gradient_elsewhere():
    x = torch.tensor([-2.0, 1.25, -2.5, -2.25, -3.0], requires_grad=True)
    torch.logcumsumexp(x, -1).sqrt().sum().backward()
    grad = x.grad.numpy()
    assert np.isfinite(grad).all()
    a = np.array([-2.0, 1.25, -2.5, -2.25, -3.0])
    r = np.logaddexp.accumulate(a)
    with np.errstate(invalid="ignore"):
        g = 0.5 / np.sqrt(r)
    g = np.where(np.isnan(g), 0.0, g)       # torch's log-space split drops the NaN
    want = np.array([np.sum(g[k:] * np.exp(a[k] - r[k:])) for k in range(5)])
    np.testing.assert_allclose(grad, want, rtol=1e-5)
    big = torch.tensor([300.0, -1000.0, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: s.logcumsumexp(0), (big,))


# -- float16 reductions accumulate in float32 (torch's opmath type) ---------------------------------

def _half_cases(lib):
    twenties = lib.full((4096,), 20.0, dtype=lib.float16)
    alternating = lib.tensor([300.0, -300.0, 300.0, -300.0], dtype=lib.float16)
    return {
        "mean of 4096 twenties": twenties.mean(),
        "mean over a dim": lib.full((2, 4096), 20.0, dtype=lib.float16).mean(1),
        "2-norm": twenties.norm(),
        "3-norm": twenties.norm(3),
        "std": alternating.std(),
        "var (past float16's range)": alternating.var(),
        "std_mean": lib.std_mean(alternating)[0],
        "layer_norm": lib.nn.functional.layer_norm(alternating, (4,)),
    }


def test_float16_reductions_accumulate_in_float32():
    """The float64 answer rounded to float16 once: a float16 accumulator
    would give inf (mean, norm) or zeros (layer_norm)."""
    ours = _half_cases(torch)
    expected = {
        "mean of 4096 twenties": 20.0, "mean over a dim": [20.0, 20.0], "2-norm": np.sqrt(4096 * 400.0),
        "3-norm": (4096 * 8000.0) ** (1 / 3), "std": np.std([300.0, -300.0] * 2, ddof=1),
        "var (past float16's range)": np.inf, "std_mean": np.std([300.0, -300.0] * 2, ddof=1),
        "layer_norm": [1.0, -1.0, 1.0, -1.0],
    }
    for name, value in ours.items():
        assert value.dtype == torch.float16, name
        np.testing.assert_array_equal(value.numpy(), np.float16(expected[name]), err_msg=name)
    if real_torch is not None:
        for name, value in _half_cases(real_torch).items():
            np.testing.assert_array_equal(ours[name].numpy(), value.numpy(), err_msg=name)


def test_float16_layer_norm_gradients_are_computed_in_float32():
    x = torch.tensor([300.0, -300.0, 300.0, -300.0], dtype=torch.float16, requires_grad=True)
    w = torch.ones(4, dtype=torch.float16, requires_grad=True)
    (torch.nn.functional.layer_norm(x, (4,), w) * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float16)).sum().backward()
    # d/dx of sum(c * (x - mean) / std): exact in float64, rounded once
    xs, c = np.array([300.0, -300.0, 300.0, -300.0]), np.array([1.0, 2.0, 3.0, 4.0])
    std = np.sqrt(((xs - xs.mean()) ** 2).mean() + 1e-5)
    xhat = (xs - xs.mean()) / std
    dx = (c - c.mean() - xhat * (c * xhat).mean()) / std
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), dx, rtol=2e-3)
    np.testing.assert_array_equal(w.grad.numpy(), np.float16(c * xhat))
