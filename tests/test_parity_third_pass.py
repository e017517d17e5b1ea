"""Torch-parity fixes found by the long fuzz runs (DISAGREEMENTS.md D48,
D51, D58, D78): each checked against an independent reference (numpy in
float64) or against torch 2.13's documented behaviour, without torch."""
import numpy as np
import pytest

import cextend as torch


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


def test_float32_tanh_of_a_strided_view_and_in_place():
    x = np.linspace(-10, 10, 30, dtype=np.float32).reshape(5, 6)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    t = torch.tensor(x)
    assert np.array_equal(t.t().tanh().numpy(), want.T)
    t[:, ::2].tanh_()
    assert np.array_equal(t.numpy()[:, ::2], want[:, ::2])
    assert np.array_equal(t.numpy()[:, 1::2], x[:, 1::2])


def test_einsum_contracts_left_to_right_as_torch():
    # ((A B) C): the product A B is finite, times C's -inf column gives -inf
    # in row 1; A (B C) meets inf - inf first and gives NaN
    a = np.array([[1.75, 0.25, -2.75], [2.75, -1.75, -0.5]])
    b = np.array([[1.25, -1.125, 1.25, -0.125], [-0.8125, -0.4375, -0.5, -0.3125],
                  [-1.375, -1.625, 1.25, 0.1875]])
    c = np.array([[0.5, -np.inf], [0.875, 0.6875], [-1.3125, -np.inf], [1.5, -0.0625]])
    with np.errstate(invalid="ignore"):
        want = (a @ b) @ c
    got = torch.einsum("ij,jk,kl->il", torch.tensor(a), torch.tensor(b), torch.tensor(c)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[1, 1] == -np.inf and np.isnan(got[0, 1])


@pytest.mark.parametrize("shapes", [((3, 5), (5, 7), (7, 2), (2, 4)), ((1, 6), (6, 1), (1, 9)),
                                    ((4, 13), (13, 13), (13, 0))])
def test_einsum_chain_values_and_gradients(shapes):
    rng = np.random.default_rng(len(shapes))
    arrays = [rng.standard_normal(s) for s in shapes]
    letters = "abcdefgh"
    subs = [letters[i] + letters[i + 1] for i in range(len(shapes))]
    equation = ",".join(subs) + "->a" + letters[len(shapes)]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = torch.einsum(equation, *ts)
    np.testing.assert_allclose(out.detach().numpy(), np.linalg.multi_dot(arrays), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    for i, t in enumerate(ts):
        left = np.linalg.multi_dot([np.ones((1, shapes[0][0]))] + arrays[:i]) if i else np.ones((1, shapes[0][0]))
        right = (np.linalg.multi_dot(arrays[i + 1:] + [np.ones((shapes[-1][1], 1))])
                 if i + 1 < len(arrays) else np.ones((shapes[-1][1], 1)))
        np.testing.assert_allclose(t.grad.numpy(), left.T @ right.T, rtol=1e-10, atol=1e-12)


def test_view_keeps_a_grad_fn_after_its_base_is_detached_in_place():
    # torch regenerates the view's AsStridedBackward with the base's (absent)
    # gradient edge: grad_fn is not None, and no gradient reaches x
    x = torch.tensor([[1.0, 2.0]], requires_grad=True)
    y = x.clone()
    v = y.t()
    y.detach_()
    y.mul_(2)
    assert v.grad_fn is not None and v.requires_grad and not v.is_leaf
    (v * 3).sum().backward()
    assert x.grad is None
    np.testing.assert_array_equal(v.detach().numpy(), [[2.0], [4.0]])


def test_filling_an_int_tensor_with_a_value_requiring_grad_records_history():
    w = torch.tensor(-1.25, requires_grad=True)
    ints = torch.tensor([0, 1])
    ints.fill_(w)
    assert ints.requires_grad and ints.grad_fn is not None
    np.testing.assert_array_equal(ints.detach().numpy(), [-1, -1])
    # no view or op of an integer tensor can carry history
    for make in (lambda: ints.select(-1, 0), lambda: ints.t(), lambda: ints.reshape(2), lambda: ints[0],
                 lambda: ints.clone(), lambda: ints.sum()):
        with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
            make()
    assert ints.float().requires_grad and not (ints == -1).requires_grad


def test_index_fill_of_an_int_view_with_a_value_requiring_grad():
    base = torch.tensor([[-2, -4], [0, 2]])
    view = base.t()
    view.index_fill_(0, torch.tensor([0]), torch.tensor(0.75, requires_grad=True))
    np.testing.assert_array_equal(base.detach().numpy(), [[0, -4], [0, 2]])
    assert view.requires_grad and base.requires_grad and base.grad_fn.name() == "CopySlices"
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
        base[0]


@pytest.mark.parametrize("split", [lambda t: t.split(1, 0), lambda t: t.chunk(2, 0), lambda t: t.unbind(0)])
def test_copy_into_an_int_multi_output_view_records_nothing(split):
    # torch's copy_ into an integer tensor records nothing, so the views'
    # rules for in-place ops with grad do not apply (fill_ would raise)
    base = torch.tensor([[-2, -4], [0, 2]])
    part = split(base)[0]
    part.copy_(torch.tensor([1.25, -2.75], requires_grad=True).reshape(part.shape))
    np.testing.assert_array_equal(base.numpy(), [[1, -2], [0, 2]])
    assert not part.requires_grad and not base.requires_grad
    with pytest.raises(RuntimeError, match="returns multiple views"):
        split(base)[0].fill_(torch.tensor(1.0, requires_grad=True))


def test_copy_into_a_no_grad_bool_view_records_nothing():
    flags = torch.tensor([True, False])
    with torch.no_grad():
        first = flags.unbind(-1)[0]
    first.copy_(torch.tensor(0.0, requires_grad=True))
    np.testing.assert_array_equal(flags.numpy(), [False, False])
    assert not first.requires_grad
