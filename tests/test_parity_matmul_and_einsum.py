"""Torch parity of matrix products and einsum: einsum's contraction order,
dtype rule and views, integer baddbmm's beta and alpha, and the gradients
of mv and outer products (sign of zero included).
"""
import numpy as np
import pytest

import cextend as torch

from parity_helpers import each_lib


@pytest.mark.disagreement("D58")
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


@pytest.mark.disagreement("D58")
@pytest.mark.parametrize("shapes", [((3, 5), (5, 7), (7, 2), (2, 4)), ((1, 6), (6, 1), (1, 9)),
                                    ((4, 13), (13, 13), (13, 0))])
def test_einsum_chain_values_and_gradients_match_multi_dot(shapes):
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


@pytest.mark.disagreement("D55")
@each_lib
def test_einsum_promotes_only_where_it_multiplies(lib):
    f, d = lib.tensor([1.0, 2.0]), lib.tensor([1.0, 3.0], dtype=lib.float64)
    outer = lib.einsum("i,j->ij", f, d)
    assert outer.dtype == lib.float64 and outer.tolist() == [[1.0, 3.0], [2.0, 6.0]]
    assert lib.einsum("i,i->i", f, d).tolist() == [1.0, 6.0]
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        lib.einsum("i,i->", f, d)
    assert np.signbit(lib.einsum("i,j->ij", lib.tensor([0.5]), lib.tensor([-0.0])).numpy()).all()


def test_einsum_results_are_views_where_torchs_are():
    a, b, m = torch.randn(3), torch.randn(4), torch.randn(3, 4)
    assert torch.einsum("i,j->ij", a, b)._base is None          # a product, nothing summed
    assert torch.einsum("ij,jk->ki", m, torch.randn(4, 5)).stride() == (3, 1)
    assert torch.einsum("ij", m)._base is not None and torch.einsum("ij->", m)._base is None
    x = torch.randn(3, 4, requires_grad=True)
    torch.einsum("ij,jk->ki", x, torch.ones(4, 2)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))


@pytest.mark.disagreement("D57")
@each_lib
def test_integer_addmm_family_truncates_beta_and_alpha(lib):
    v = lib.tensor([[[2, 4]]]).baddbmm(lib.tensor([[[6, 3]]]), lib.tensor([[[2, 2], [2, 2]]]),
                                       beta=0.5, alpha=-1.5)
    assert v.tolist() == [[[-18, -18]]]     # 0 * input + (-1) * 18


def test_mv_gradients_match_numpy():
    rng = np.random.default_rng(7)
    A, x, go = rng.standard_normal((5, 3)), rng.standard_normal(3), rng.standard_normal(5)
    a, v = torch.tensor(A, requires_grad=True), torch.tensor(x, requires_grad=True)
    (torch.mv(a, v) * torch.tensor(go)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.outer(go, x), rtol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), A.T @ go, rtol=1e-12)
    assert (torch.tensor(x, requires_grad=True) @ a.t()).grad_fn.name() == "SqueezeBackward4"


def test_outer_products_keep_the_sign_of_zero():
    a = torch.tensor([[-0.5625, 1.9375], [1.0, 1.625]], requires_grad=True)
    v = torch.tensor([-0.3125, 0.0])
    grad, = torch.autograd.grad((a.mv(v) * torch.tensor([1.25, -1.0])).sum(), [a])
    assert np.signbit(grad.numpy()[1, 1]) and not np.signbit(grad.numpy()[0, 1])


@pytest.mark.parametrize("k", [1, 2])
def test_matrix_products_sum_from_positive_zero(k):
    # torch's mm and matmul run a BLAS GEMM, whose sums start at +0.0: a
    # column of -0.0 products gives +0.0 even when k is 1 (only an outer
    # product, torch's ger, keeps -0.0: the test above)
    a = torch.tensor([[1.0, -0.25] * k], dtype=torch.float64).reshape(k, 2).t().contiguous()   # (2, k)
    zeros = torch.zeros(k, 3, dtype=torch.float64)
    for product in (torch.mm(a, zeros), a.matmul(zeros), a @ zeros):
        assert not np.signbit(product.numpy()).any(), product.numpy()
    v1 = torch.tensor([[0.4375], [-1.0], [-0.5], [1.5]], dtype=torch.float64, requires_grad=True)
    v2 = torch.mm(torch.tensor([[1.0, -0.25, 1.0, -3.0]], dtype=torch.float64), v1)
    v2.copy_(torch.tensor([-2.25]))            # v1's gradient: the product of zeros with the row
    grad, = torch.autograd.grad(v2.mean(), [v1], create_graph=True)
    assert not np.signbit(grad.detach().numpy()).any()
