"""cextend.torch: our kernels as torch Functions, checked by torch itself."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch not installed: cextend.torch is the optional [torch] extra")
F = torch.nn.functional

import cextend as cx          # noqa: E402
import cextend.torch as ct    # noqa: E402


def double(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=g, requires_grad=True)


def test_linear_passes_torch_gradcheck_and_gradgradcheck():
    x, w, b = double(5, 4), double(3, 4, seed=1), double(3, seed=2)
    assert torch.autograd.gradcheck(ct.linear, (x, w, b))
    assert torch.autograd.gradgradcheck(ct.linear, (x, w, b))
    assert torch.autograd.gradcheck(lambda a, m: ct.linear(a, m), (double(2, 3, 4), double(6, 4, seed=3)))


def test_linear_matches_f_linear_in_both_dtypes():
    for dtype, tol in ((torch.float32, 1e-5), (torch.float64, 1e-12)):
        x = torch.randn(7, 2, 33, dtype=dtype, requires_grad=True)
        w = torch.randn(17, 33, dtype=dtype, requires_grad=True)
        b = torch.randn(17, dtype=dtype, requires_grad=True)
        ours, theirs = ct.linear(x, w, b), F.linear(x, w, b)
        torch.testing.assert_close(ours, theirs, rtol=tol, atol=tol)
        g = torch.randn_like(ours)
        grads_ours = torch.autograd.grad(ours, (x, w, b), g)
        grads_theirs = torch.autograd.grad(theirs, (x, w, b), g)
        for a, c in zip(grads_ours, grads_theirs):
            torch.testing.assert_close(a, c, rtol=tol * 10, atol=tol * 10)


def test_non_contiguous_inputs_are_made_contiguous():
    x = torch.randn(6, 8, dtype=torch.float64)[:, ::2]
    w = torch.randn(4, 3, dtype=torch.float64).t()
    torch.testing.assert_close(ct.linear(x, w), F.linear(x, w))


def test_global_max_pool_matches_adaptive_max_pool_and_gradchecks():
    x = double(2, 3, 4, 5)
    values, indices = ct.global_max_pool(x)
    ref, ref_idx = F.adaptive_max_pool2d(x, 1, return_indices=True)
    torch.testing.assert_close(values, ref.reshape(2, 3))
    assert torch.equal(indices, ref_idx.reshape(2, 3)) and not indices.requires_grad
    assert torch.autograd.gradcheck(lambda t: ct.global_max_pool(t)[0], (x,))
    assert torch.autograd.gradgradcheck(lambda t: ct.global_max_pool(t)[0], (x,))


def test_linear_module_trains():
    torch.manual_seed(0)
    layer = ct.Linear(4, 1, dtype=torch.float64)
    assert "in_features=4" in repr(layer) and layer.weight.abs().max() <= 0.5
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    x = torch.randn(64, 4, dtype=torch.float64)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=torch.float64) + 0.25
    for _ in range(300):
        opt.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-6


def test_conversions_share_memory():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    c = ct.from_torch(t)
    t[0, 0] = 42
    assert c[0, 0].item() == 42 and c.dtype is cx.float32
    back = ct.to_torch(c)
    back[1, 2] = -1
    assert t[1, 2].item() == -1
    assert ct.to_torch(cx.tensor([1.0, 2.0], dtype=cx.double)).dtype == torch.float64


def test_clear_errors():
    with pytest.raises(TypeError, match="torch.float32 or torch.float64"):
        ct.linear(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.int64))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        ct.linear(np.ones((2, 2)), torch.ones(2, 2))
    with pytest.raises(TypeError, match="expects a cextend Tensor"):
        ct.to_torch(torch.ones(2))
