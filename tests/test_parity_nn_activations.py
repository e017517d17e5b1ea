"""Torch parity of nn activations and softmax: elu/selu/celu's second
derivative, logsigmoid's saved buffer and gradients, gelu at infinities,
hardtanh/relu6 of integer and bool inputs, softmax of empty integer
tensors, and the layout of activation results.
"""
import math

import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
import cextend.nn.functional as cF

from parity_helpers import inf, nan, real_torch, tF, with_torch, _array, _assert_same_outcome, _assert_values

F = torch.nn.functional


def test_activations_lay_their_results_out_as_the_input():
    F = torch.nn.functional
    t = torch.randn(4, 3).t()
    for f in (F.gelu, F.elu, F.silu, F.softplus, F.leaky_relu, F.relu6, F.mish, F.celu):
        y = f(t)
        assert y.stride() == (1, 3)
        np.testing.assert_allclose(y.numpy(), f(t.contiguous()).numpy(), rtol=1e-6)
    assert F.logsigmoid(t).stride() == (4, 1)           # its kernel writes a contiguous buffer


@pytest.mark.parametrize("make", [lambda x: torch.nn.functional.elu(x, 0.5), torch.nn.functional.selu,
                                  lambda x: torch.nn.functional.celu(x, 0.7),
                                  lambda x: torch.nn.functional.elu(x.clone(), 0.5, inplace=True)])
def test_elu_second_derivative_is_zero_at_zero(make):
    # torch's first derivative takes the negative branch at 0 (x <= 0), its
    # second derivative masks with x < 0; finite differences agree away from 0
    x = torch.tensor([-0.0, 0.0, -1.0, 0.5, -2.5], dtype=torch.float64, requires_grad=True)
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    g, = torch.autograd.grad((make(x) * weights).sum(), [x], create_graph=True)
    g.sum().backward()
    assert x.grad[0].item() == 0.0 and x.grad[1].item() == 0.0 and x.grad[3].item() == 0.0
    h = 1e-6
    for i in (2, 4):
        def first(v):
            t = torch.tensor([v], dtype=torch.float64, requires_grad=True)
            d, = torch.autograd.grad(make(t).sum(), [t])
            return d.item() * weights[i].item()
        fd = (first(x[i].item() + h) - first(x[i].item() - h)) / (2 * h)
        np.testing.assert_allclose(x.grad[i].item(), fd, rtol=1e-5)


def test_elu_second_derivative_is_torchs_elu_double_backward():
    # masked with x < 0 and multiplied in: 0 (not NaN) at NaN, -0.0 where the
    # incoming weight is negative
    x = torch.tensor([[-1.0, 2.0, -0.25, 2.5], [float("nan"), 1.5, -1.5, -2.0]], requires_grad=True)
    g, = torch.autograd.grad(torch.nn.functional.elu(x, alpha=2.0).sum(), [x], create_graph=True)
    (g * torch.tensor([[2.0, 0.5, 1.0, -0.75], [-1.25, 2.5, -1.5, 1.25]])).sum().backward()
    got = x.grad.numpy()
    assert got[1, 0] == 0.0 and np.signbit(got[0, 3]) and got[0, 1] == 0.0
    np.testing.assert_allclose(got[0, 0], 2.0 * 2.0 * np.exp(-1.0), rtol=1e-6)
    z = torch.tensor([-0.7, 0.3, -1.9], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: torch.nn.functional.celu(t, 0.7), (z,))


def test_logsigmoid_backward_reads_the_buffer_saved_by_forward():
    # torch saves exp(-|x|) at forward and its backward reads that buffer with
    # the input's current value: after x.data changes, x < 0 picks the branch
    # and the old buffer gives the slope
    a = np.array([1.0, -2.0, 3.0])
    x = torch.tensor(a, requires_grad=True)
    y = F.logsigmoid(x)
    x.data.mul_(-1)
    y.sum().backward()
    z = np.exp(-np.abs(a))
    negative = -a < 0
    want = np.where(negative, 1.0, 0.0) - np.where(negative, 1.0, -1.0) * (z / (1 + z))
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsigmoid_first_and_second_gradients_match_the_formula(dtype):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(37) * 8).astype(dtype)
    a[:4] = [0.0, -0.0, np.inf, -np.inf]
    x = torch.tensor(a, requires_grad=True)
    go = rng.standard_normal(37).astype(dtype)
    g, = torch.autograd.grad((F.logsigmoid(x) * torch.tensor(go)).sum(), [x], create_graph=True)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(g.detach().numpy(), go / (1 + np.exp(a64)), rtol=1e-6 if dtype == np.float32 else 1e-14)
    (g * g).sum().backward()
    s = 1 / (1 + np.exp(-a64))
    with np.errstate(invalid="ignore"):
        want = 2 * (go / (1 + np.exp(a64))) * go * (s - 1) * s
    # float32: torch's formula takes s - 1 in float32, which cancels for large x
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-30)


def test_logsigmoid_double_backward_passes_gradgradcheck():
    x = torch.tensor([-3.5, -0.25, 0.0, 0.75, 4.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(F.logsigmoid, (x,))


# -- hardtanh / relu6 refuse bool, and negative limits for unsigned types --------------------------

@pytest.mark.disagreement("D61")
@pytest.mark.parametrize("call", [lambda F, x: F.relu6(x), lambda F, x: F.hardtanh(x),
                                  lambda F, x: F.hardtanh(x, 0.0, 6.0), lambda F, x: F.relu6(x, inplace=True),
                                  lambda F, x: F.hardtanh_(x)])
def test_hardtanh_of_bool_raises(call):
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        call(cF, cx.tensor([True, False]))


@pytest.mark.disagreement("D61")
def test_hardtanh_of_unsigned_with_negative_limit_raises_and_integers_clamp():
    with pytest.raises(RuntimeError, match="cannot do hardtanh on an unsigned type with negative limits"):
        cF.hardtanh(cx.tensor([1, 2, 9], dtype=cx.uint8), -1.0, 6.5)
    np.testing.assert_array_equal(cF.hardtanh(cx.tensor([1, 2, 9], dtype=cx.uint8), 0.0, 6.5).numpy(), [1, 2, 6])
    np.testing.assert_array_equal(cF.relu6(cx.tensor([-3, 2, 9])).numpy(), [0, 2, 6])
    # ATen truncates the limits toward zero for integer inputs (-0.5 -> 0, 0.5 -> 0, -1.5 -> -1).
    np.testing.assert_array_equal(cF.hardtanh(cx.tensor([0, 1, 7], dtype=cx.uint8), -0.5, 6.5).numpy(), [0, 1, 6])
    np.testing.assert_array_equal(cF.hardtanh(cx.tensor([-5, 0, 1, 7]), 0.5, 2.5).numpy(), [0, 0, 1, 2])
    np.testing.assert_array_equal(cF.hardtanh(cx.tensor([-5, 0, 1, 7]), -1.5, -0.5).numpy(), [-1, 0, 0, 0])


@pytest.mark.disagreement("D61")
@with_torch
@pytest.mark.parametrize("make", [lambda lib: lib.tensor([True, False]),
                                  lambda lib: lib.tensor([1, 200, 9], dtype=lib.uint8),
                                  lambda lib: lib.tensor([-4, 2, 9], dtype=lib.int32)])
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 6.0), (-0.5, 6.5), (0.5, 2.5), (-1.5, -0.5), (-3.0, -1.0)])
def test_hardtanh_integer_and_bool_inputs_match_torch(make, bounds):
    _assert_same_outcome(lambda lib: (cF if lib is cx else tF).hardtanh(make(lib), *bounds))


# -- gelu at +-inf and near float32's overflow -----------------------------------------------------

@pytest.mark.disagreement("D64")
def test_gelu_at_infinities_is_atens_formula_in_every_layout():
    # 0.5 * x * (1 + erf(x / sqrt 2)), halving first: inf at +inf, x itself from
    # 2**127 up, NaN at -inf (-inf * 0).  torch's oneDNN path (some float32
    # inputs) answers differently there, CPU by CPU: cextend never imitates it.
    big = float(np.float32(2.0 ** 127))
    below = float(np.nextafter(np.float32(big), np.float32(0)))
    x32 = cx.tensor([inf, -inf, big, below, 1.0, -0.0])
    expected = np.array([inf, nan, big, below, 0.8413447, -0.0], np.float32)
    _assert_values(cF.gelu(x32).numpy(), expected)
    _assert_values(cF.gelu(x32.double()).numpy(), [inf, nan, big, below, 0.8413447460685429, -0.0])
    _assert_values(cF.gelu(cx.tensor([inf])).numpy(), np.array([inf], np.float32))
    _assert_values(cF.gelu(x32[::2]).numpy(), expected[::2])
    _assert_values(cF.gelu(x32.reshape(2, 3).t()).numpy(), expected.reshape(2, 3).T)
    _assert_values(cF.gelu(x32, approximate="tanh").numpy()[:2], np.array([inf, nan], np.float32))


@pytest.mark.disagreement("D64")
def test_gelu_gradient_at_infinities_is_nan():
    x = cx.tensor([inf, -inf, 3e38, 2.0], requires_grad=True)
    cF.gelu(x).sum().backward()
    phi = math.exp(-2.0) / math.sqrt(2 * math.pi)
    _assert_values(x.grad.numpy(), np.array([nan, nan, 1.0, 0.5 * (1 + math.erf(2 / math.sqrt(2))) + 2 * phi],
                                            np.float32))


@pytest.mark.disagreement("D64")
@with_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "single"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_special_values_match_torch_where_torch_is_cpu_independent(dtype, layout, approximate):
    """Compared with torch run here, now.  Where torch may take oneDNN's path
    (float32, approximate='none'), its answers at the overflow edge (x >=
    2**127, +inf) and the sign of its zeros depend on the CPU (AVX-512 and
    AVX2 machines differ): those elements are unspecified."""
    values = [inf, -inf, 3e38, -3e38, float(np.float32(2.0 ** 127)), nan, 0.0, -0.0, 40.0, -40.0, -6.0]

    def program(lib):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        x = {"contiguous": x, "strided": x[::2], "single": x[:1]}[layout]
        return x, (cF if lib is cx else tF).gelu(x, approximate=approximate)
    x, ours = (_array(t) for t in program(cx))
    theirs = _array(program(real_torch)[1])
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    cpu_dependent = dtype == "float32" and approximate == "none"
    specified = ~(x >= np.float32(2.0 ** 127)) if cpu_dependent else np.ones(x.shape, bool)
    np.testing.assert_allclose(ours[specified], theirs[specified], rtol=1e-5, atol=0)
    if not cpu_dependent:
        zeros = theirs == 0
        assert np.array_equal(np.signbit(ours[zeros]), np.signbit(theirs[zeros])), (ours, theirs)


def test_gelu_of_a_contiguous_pow_result_is_atens_formula_at_infinity():
    # the contiguous result may send torch's float32 gelu to oneDNN, whose
    # answer at +inf depends on the CPU; cextend's is ATen's formula (inf)
    t = torch.tensor([[1.0, -2.75], [-np.inf, 1.0]]).mT
    out = F.gelu(0 ** t).numpy()        # 0 ** -inf = 0 ** -2.75 = inf
    np.testing.assert_array_equal(out, [[0.0, np.inf], [np.inf, 0.0]])


@pytest.mark.disagreement("D67")
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape, dim", [((0, 3), 1), ((0, 3), 0), ((3, 0), 1), ((3, 0), -1)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_of_an_empty_integer_tensor_returns_it(dtype, shape, dim, log):
    x = cx.zeros(shape, dtype=getattr(cx, dtype))
    y = (cx.log_softmax if log else cx.softmax)(x, dim)
    assert y.dtype == x.dtype and tuple(y.shape) == shape

    def program(lib):
        return (lib.log_softmax if log else lib.softmax)(lib.zeros(shape, dtype=getattr(lib, dtype)), dim)
    _assert_same_outcome(program)


@pytest.mark.disagreement("D67")
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_softmax_of_a_nonempty_integer_tensor_still_raises(dtype):
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        cx.softmax(cx.zeros(2, dtype=getattr(cx, dtype)), 0)
    _assert_same_outcome(lambda lib: lib.softmax(lib.zeros(2, dtype=getattr(lib, dtype)), 0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softplus_second_derivative_is_zero_where_beta_x_equals_the_threshold(dtype):
    # torch's first derivative is the sigmoid up to and at the threshold
    # (beta * x <= threshold); its double backward masks with beta * x <
    # threshold, strictly.  Elsewhere: sigmoid'(beta x) * beta, the formula.
    x = torch.tensor([1.0, 0.5, -1.0, 1.5, 0.99], dtype=dtype, requires_grad=True)
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=dtype)
    g, = torch.autograd.grad((torch.nn.functional.softplus(x, beta=2.0, threshold=2.0) * weights).sum(), [x],
                             create_graph=True)
    s = 1 / (1 + np.exp(-2.0 * np.array([1.0, 0.5, -1.0, 1.5, 0.99])))
    np.testing.assert_allclose(g.detach().numpy(), np.where([0, 0, 0, 1, 0], 1.0, s) * weights.numpy(),
                               rtol=1e-6)
    g.sum().backward()
    expected = np.where(2.0 * np.array([1.0, 0.5, -1.0, 1.5, 0.99]) < 2.0, s * (1 - s) * 2.0, 0.0) * weights.numpy()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-12)
    assert x.grad[0].item() == 0.0 and x.grad[4].item() != 0.0
