"""Torch parity of linear, layer_norm and dropout: which linear results are
views, what linear saves, a bias of another layout or dtype, layer_norm's
gradient and output layout, and dropout of integer tensors.
"""
import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
import cextend.nn.functional as cF

from parity_helpers import real_torch, tF, _array, _assert_same_outcome

F = torch.nn.functional


def test_linear_result_is_a_view_where_torch_flattens():
    rng = np.random.default_rng(8)
    w, b = torch.tensor(rng.standard_normal((5, 4))), torch.tensor(rng.standard_normal(5))
    for shape in ((4,), (2, 3, 4), (2, 1, 3, 4)):
        a = rng.standard_normal(shape)
        y = torch.nn.functional.linear(torch.tensor(a), w, b)
        np.testing.assert_allclose(y.numpy(), a @ w.numpy().T + b.numpy(), rtol=1e-12)
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            y.detach_()
    assert torch.nn.functional.linear(torch.tensor(rng.standard_normal((2, 4))), w, b)._base is None
    assert torch.nn.functional.linear(torch.tensor(rng.standard_normal((3, 4))), w)._base is None
    x = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    torch.nn.functional.linear(x.t().contiguous().t().unsqueeze(0), w, b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(w.numpy().sum(0), (3, 1)), rtol=1e-12)


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
def test_linear_with_a_strided_bias_is_no_view(shape):
    # torch 2.13 takes its fused flatten path only with a contiguous bias;
    # otherwise matmul then add_(bias): the result is no view, and a later
    # in-place change does not go through CopySlices
    x = torch.ones(*shape, dtype=torch.float64)
    w = torch.ones(3, 4, dtype=torch.float64)
    b = torch.tensor([1.4375], dtype=torch.float64, requires_grad=True)
    y = F.linear(x, w, b.expand(3))
    first = y[..., 0]
    y.add_(torch.tensor([-6, 2, -2]))
    first.sum().backward()
    y.sum().backward()          # no saved tensor on the way: a second pass works, as torch's
    n = int(np.prod(shape[:-1]))
    assert b.grad.item() == n + 3 * n
    assert F.linear(x, w, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))._base is not None


def test_linear_saves_each_factor_only_for_the_others_gradient():
    # as torch's addmm: with only the bias requiring grad nothing is saved,
    # so a second backward runs and changing the operands does not matter
    x, w = torch.tensor([1.875, 0.0, 0.375, -0.125]), torch.ones(3, 4)
    b = torch.tensor([-0.8125, -0.0, 0.3125], requires_grad=True)
    y = torch.nn.functional.linear(x, w, b)
    w.add_(1)
    y.sum().backward()
    y.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])
    x = torch.randn(3, 4, requires_grad=True)
    weight = torch.randn(5, 4)
    out = torch.nn.functional.linear(x, weight)
    weight.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# -- linear with a bias of another dtype (a documented deviation) ----------------------------------

@pytest.mark.disagreement("D82")
@pytest.mark.parametrize("layout", ["contiguous", "expanded", "sliced", "2-d transposed", "3-d permuted"])
@pytest.mark.parametrize("bias_expanded", [False, True])
def test_linear_with_a_bias_of_another_dtype_raises_for_every_layout(layout, bias_expanded):
    def operands(lib):
        x = {"contiguous": lib.full((4,), -0.625), "expanded": lib.tensor([-0.625]).expand(4),
             "sliced": lib.arange(8.0)[::2], "2-d transposed": lib.ones(4, 2).t(),
             "3-d permuted": lib.ones(2, 4, 3).transpose(1, 2)}[layout]
        bias = (lib.tensor([-0.25], dtype=lib.float64).expand(3) if bias_expanded
                else lib.tensor([-0.25, 0.5, 1.0], dtype=lib.float64))
        return x, lib.ones(4, 3).t(), bias
    with pytest.raises(RuntimeError):
        cF.linear(*operands(cx))
    if real_torch is not None and not bias_expanded and layout in ("contiguous", "2-d transposed"):
        with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
            tF.linear(*operands(real_torch))


def test_layer_norm_input_gradient_follows_torchs_kernel():
    # ds = sum(g w x), db = sum(g w): an infinite weight makes the whole row NaN
    x = torch.tensor([[2.0, -0.25, -0.625, -0.75], [1.625, 0.625, -0.3125, 1.125]], requires_grad=True)
    w = torch.tensor([-float("inf"), 0.75, 0.75, -0.6875])
    torch.nn.functional.layer_norm(x, [4], w, w).sum().backward()
    assert np.isnan(x.grad.numpy()).all()
    # finite: the usual formula, against float64 numpy
    rng = np.random.default_rng(12)
    a, wa, g = rng.standard_normal((5, 7)), rng.standard_normal(7), rng.standard_normal((5, 7))
    t = torch.tensor(a, requires_grad=True)
    torch.nn.functional.layer_norm(t, [7], torch.tensor(wa), None).backward(torch.tensor(g))
    mean, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat, gw = (a - mean) * rstd, g * wa
    want = rstd * (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-9, atol=1e-12)


def test_layer_norm_gradient_of_a_sum_is_zero_under_create_graph_too():
    x = torch.tensor(np.random.default_rng(14).standard_normal((3, 5)), requires_grad=True)
    g, = torch.autograd.grad(torch.nn.functional.layer_norm(x, (5,)).sum(), [x], create_graph=True)
    assert np.abs(g.detach().numpy()).max() < 1e-12
    w = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: torch.nn.functional.layer_norm(a, (5,), b), (x, w))


def test_layer_norm_output_is_contiguous_for_any_input_layout():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4))
    x = torch.tensor(a).t()
    y = F.layer_norm(x, (3,))
    assert y.is_contiguous() and y.stride() == (3, 1)
    y.view(-1)                      # torch's kernel writes a contiguous output: view() works
    rows = a.T
    want = (rows - rows.mean(1, keepdims=True)) / np.sqrt(rows.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)


# -- dropout with p=1 multiplies by a zero of the input's dtype ------------------------------------

@pytest.mark.disagreement("D73")
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.filterwarnings("ignore:dropout2d")
@pytest.mark.parametrize("form", ["dropout", "dropout_inplace", "dropout1d", "dropout2d", "transposed"])
def test_dropout_of_integers_with_p_one_is_zero(dtype, form):
    def program(lib):
        F = cF if lib is cx else tF
        x = lib.tensor([1, 0, 2]).to(getattr(lib, dtype))
        if form == "dropout":
            return F.dropout(x, 1.0)
        if form == "dropout_inplace":
            return F.dropout(x.clone(), 1.0, inplace=True)
        if form == "dropout1d":
            return F.dropout1d(x.reshape(1, 3), 1.0)
        if form == "dropout2d":
            return F.dropout2d(x.reshape(1, 1, 3), 1.0)
        return F.dropout(x.reshape(3, 1).t(), 1.0)
    result = program(cx)
    assert result.dtype == getattr(cx, dtype)
    assert not _array(result).any()
    _assert_same_outcome(program)


@pytest.mark.disagreement("D73")
def test_dropout_of_integers_with_fractional_p_still_raises():
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        cF.dropout(cx.tensor([1, 2]), 0.5)
    np.testing.assert_array_equal(cF.dropout(cx.tensor([1, 2]), 0.5, training=False).numpy(), [1, 2])
