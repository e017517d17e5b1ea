"""Torch parity at special values and rounding: values and gradients at
zero, infinities and NaN (pow, relu, clamp, logit, polygamma), and
results that must round as torch's kernels do (tanh, lerp, number / tensor).
"""
import math

import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`

from parity_helpers import each_lib, inf


def test_pow_zero_exponent_has_zero_gradient_at_zero():
    x = cx.tensor([0.0, 1.0], requires_grad=True)
    (x ** 0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0])


def test_pow_of_zero_base_has_zero_gradient_for_nonnegative_exponents():
    e = cx.tensor([0.0, 2.0], requires_grad=True)
    (0.0 ** e).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), [0, 0])
    b = cx.tensor([0.0, 0.0], requires_grad=True)
    e = cx.tensor([0.0, 2.0], requires_grad=True)
    (b ** e).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [0, 0])
    np.testing.assert_array_equal(e.grad.numpy(), [0, 0])


def test_negative_number_to_a_tensor_power_is_nan_not_an_exception():
    e = cx.tensor([0.5, 2.0], requires_grad=True)
    r = (-2.0) ** e
    np.testing.assert_array_equal(np.isnan(r.detach().numpy()), [True, False])
    assert r.detach().numpy()[1] == 4.0
    r.sum().backward()
    assert np.isnan(e.grad.numpy()).all()      # log(-2) is NaN, as in torch


def test_relu_propagates_nan_and_passes_its_gradient():
    x = cx.tensor([math.nan, 1.0, -1.0], requires_grad=True)
    r = cx.relu(x)
    assert np.isnan(r.detach().numpy()[0])
    r.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 0])


def test_clamp_with_equal_bounds_gives_neither_bound_a_gradient():
    x = torch.tensor([0.125, 3.0, 1.0])
    low = torch.tensor([2.0, 2.0, 0.0], requires_grad=True)
    high = torch.tensor([2.0, 2.0, 5.0], requires_grad=True)
    x.clip(low, high).sum().backward()
    np.testing.assert_array_equal(low.grad.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(high.grad.numpy(), [0.0, 1.0, 0.0])


def test_logit_and_its_gradient_are_infinite_at_zero_and_one_and_nan_outside():
    x = torch.tensor([0.3, 0.6, 0.0, -0.0, 1.0, -0.5], dtype=torch.float64, requires_grad=True)
    y = x.logit()
    a = x.detach().numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(y.detach().numpy(), np.log(a / (1 - a)))
    g, = torch.autograd.grad(y, [x], torch.tensor([1.0, 1.0, -0.5, -0.5, 2.0, 1.0], dtype=torch.float64))
    got = g.numpy()
    np.testing.assert_allclose(got[:2], 1 / (a[:2] * (1 - a[:2])))
    assert got[2] == -np.inf and got[3] == -np.inf and got[4] == np.inf and np.isnan(got[5])
    clipped = torch.logit(x, eps=0.1)
    assert clipped.detach().numpy()[2] == pytest.approx(np.log(0.1 / 0.9))
    z = torch.tensor([0.3, 0.6, 0.45], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(torch.logit, (z,)) and torch.autograd.gradgradcheck(torch.logit, (z,))


def test_logit_gradient_under_create_graph_divides_as_it_is():
    # torch's differentiable formula: g / (x * (1 - x)), so -0.0 gives -inf;
    # its first-order kernel treats -0.0 as +0.0
    def grad(create_graph):
        x = torch.tensor([0.5, -0.0, 0.0, 1.5], requires_grad=True)
        g, = torch.autograd.grad(x.logit().sum(), [x], create_graph=create_graph)
        return g.detach().numpy()
    np.testing.assert_array_equal(grad(True), [4.0, -np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(grad(False), [4.0, np.inf, np.inf, np.nan])


@pytest.mark.disagreement("D71")
@each_lib
def test_polygamma_at_infinities_is_torchs(lib):
    got = lib.polygamma(2, lib.tensor([inf, -inf, 1.0])).numpy()
    assert np.isnan(got[0]) and got[1] == -inf and got[2] == pytest.approx(-2.4041138063191885)
    assert lib.polygamma(1, lib.tensor([inf])).tolist() == [0.0]


@pytest.mark.disagreement("D78")
@pytest.mark.parametrize("scale", [1.0, 5.0, 12.0])
def test_float32_tanh_is_correctly_rounded(scale):
    # numpy's float32 tanh is up to 1 ulp off (tanh(9.5) = 0.99999994, the
    # correctly rounded value is 1.0); atanh turns that ulp into 8.66 vs inf
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(4099) * scale).astype(np.float32)
    x[:3] = [9.5, -9.5, 0.0]
    got = torch.tensor(x).tanh().numpy()
    assert np.array_equal(got, np.tanh(x.astype(np.float64)).astype(np.float32))
    assert got[0] == 1.0 and got[1] == -1.0
    assert torch.tensor([9.5]).tanh().atanh().item() == float("inf")


@pytest.mark.disagreement("D78")
def test_float32_tanh_is_correctly_rounded_for_strided_views_and_in_place():
    x = np.linspace(-10, 10, 30, dtype=np.float32).reshape(5, 6)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    t = torch.tensor(x)
    assert np.array_equal(t.t().tanh().numpy(), want.T)
    t[:, ::2].tanh_()
    assert np.array_equal(t.numpy()[:, ::2], want[:, ::2])
    assert np.array_equal(t.numpy()[:, 1::2], x[:, 1::2])


def test_lerp_rounds_once_as_torchs_fused_kernel():
    a, b = torch.tensor([1.75, -2.5]), torch.tensor([0.625, -0.4375])
    got = a.lerp(b, 0.8).numpy()
    w = np.float32(0.8)
    want = (np.float64(w - np.float32(1)) * np.float64(b.numpy() - a.numpy()) + b.numpy().astype(np.float64))
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert got[0] == np.float32(0.84999996)


def test_number_divided_by_a_tensor_is_reciprocal_times_the_number():
    # torch's __rtruediv__ is self.reciprocal() * other: its rounding, and a
    # backward that reads the reciprocal (so zeroing x's data after does not
    # change the gradient)
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(1000) * 7).astype(np.float32)
    got = (3.0 / torch.tensor(a)).numpy()
    np.testing.assert_array_equal(got, np.reciprocal(a) * np.float32(3.0))
    x = torch.tensor(-2.25, requires_grad=True)
    y = 0.5 / x
    x.unsqueeze(-1).data.zero_()
    y.backward()
    np.testing.assert_allclose(x.grad.item(), -0.5 / 2.25 ** 2, rtol=1e-6)
