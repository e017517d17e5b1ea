"""Torch parity of nn losses: the target's gradient (sign of zero, swapped
operands), what losses save, double backward at the kink, and special
values (binary_cross_entropy's range checks, kl_div where log(target) is
undefined, nll_loss and cross_entropy with ignored rows and infinities),
mixed dtypes and non-contiguous inputs.
"""
import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
import cextend.nn.functional as cF

from parity_helpers import inf, nan, real_torch, tF, with_torch, _array, _assert_same_outcome, _assert_values

F = torch.nn.functional


def test_mse_loss_target_gradient_is_plus_zero_where_input_equals_target():
    # torch differentiates the target as 2 (target - input): +0.0 where equal
    x = torch.tensor([2.25, 1.0, -3.0], requires_grad=True)
    loss = torch.nn.functional.mse_loss(x.detach(), x, reduction="sum")
    grad, = torch.autograd.grad(loss, [x])
    assert np.all(grad.numpy() == 0) and not np.any(np.signbit(grad.numpy()))


def test_losses_differentiate_the_target_with_swapped_operands():
    # as torch: the target's zero gradient takes the incoming gradient's sign
    x = torch.tensor([2.0, -0.0, 0.0, 1.5], requires_grad=True)
    for loss in (torch.nn.functional.smooth_l1_loss, torch.nn.functional.huber_loss,
                 torch.nn.functional.mse_loss):
        g, = torch.autograd.grad((loss(x, x) * -2.5).sum(), [x])
        assert np.all(g.numpy() == 0) and np.all(np.signbit(g.numpy()))


def test_binary_cross_entropy_target_gradient_is_minus_logit():
    x = torch.tensor([0.5, 0.875, 0.125], dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0.25, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
    _, grad_t = torch.autograd.grad(torch.nn.functional.binary_cross_entropy(x, t, reduction="sum"), [x, t])
    a = x.detach().numpy()
    np.testing.assert_allclose(grad_t.numpy(), -np.log(a / (1 - a)))
    assert np.signbit(grad_t.numpy()[0])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_bce_with_logits_gradient_of_a_float64_input_keeps_float64_precision(reduction):
    # torch: sigmoid(x).sub_(target).mul_(grad).div_(numel), all in the
    # input's float64; the float32 target and loss do not round it
    a = np.array([0.0, 0.0, 1.0, -2.5, 0.3])
    y = np.array([0.0, 1.0, 1.0, 0.25, 0.5], np.float32)
    x = torch.tensor(a, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, torch.tensor(y), reduction=reduction)
    assert loss.dtype == torch.float32
    loss.backward()
    want = 1 / (1 + np.exp(-a)) - y.astype(np.float64)
    if reduction == "mean":
        want = want / a.size
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-15, atol=1e-17)


def test_unreduced_pointwise_loss_is_laid_out_as_tensor_iterator():
    # mse_loss(reduction='none') of a transposed input keeps its layout: a
    # later reshape(-1) copies, so writing into the loss does not reach it
    x = torch.arange(12.0).reshape(4, 3).T
    t = torch.ones(3, 4)
    loss = F.mse_loss(x, t, reduction="none")
    assert loss.stride() == (1, 3)
    flat = loss.reshape(-1)
    loss.data.div_(loss.data + 1)
    np.testing.assert_array_equal(flat.numpy(), ((np.arange(12.0).reshape(4, 3).T - 1) ** 2).reshape(-1))


@pytest.mark.parametrize("loss,kw,bound", [("huber_loss", {"delta": 1.0}, 1.0), ("huber_loss", {"delta": 0.5}, 0.5),
                                           ("smooth_l1_loss", {"beta": 1.0}, 1.0)])
def test_huber_and_smooth_l1_double_backward_is_zero_at_the_kink(loss, kw, bound):
    # torch's double backward is grad * (|d| < bound): strictly inside only,
    # while the first derivative at |d| == bound is still +-bound's slope
    a = np.array([-2.0, 0.5, 1.0, -1.0, 0.0, 3.0, 0.25])
    b = np.array([-1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.75])
    x = torch.tensor(a, requires_grad=True)
    t = torch.tensor(b)
    gx, = torch.autograd.grad(getattr(F, loss)(x, t, reduction="none", **kw).sum(), [x], create_graph=True)
    d = a - b
    scale = 1.0 / bound if loss == "smooth_l1_loss" else 1.0
    np.testing.assert_array_equal(gx.detach().numpy(), np.clip(d, -bound, bound) * scale)
    (gx * torch.tensor(np.arange(7.0))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(np.abs(d) < bound, np.arange(7.0) * scale, 0.0))


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_a_loss_class_weight_changed_in_place_before_backward_raises(loss, reduction):
    x = torch.tensor([[0.1, -0.3, 0.5], [2.25, 1.25, 0.75]], requires_grad=True)
    w = torch.tensor([0.5, 0.6, 0.9])
    out = getattr(F, loss)(x, torch.tensor([2, 0]), weight=w, reduction=reduction)
    w[0] = 2.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_nll_loss_double_backward_saves_the_weight_too():
    x = torch.tensor([[0.1, -0.3, 0.5], [2.25, 1.25, 0.75]], requires_grad=True)
    w = torch.tensor([0.5, 0.6, 0.9])
    g, = torch.autograd.grad(F.nll_loss(x, torch.tensor([2, 0]), weight=w).sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[0, 0, -0.9 / 1.4], [-0.5 / 1.4, 0, 0]], rtol=1e-6)
    w[1] = 3.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (g * 2).sum().backward()


# -- binary_cross_entropy checks the target too ----------------------------------------------------

@pytest.mark.disagreement("D65")
@pytest.mark.parametrize("x, y, bad", [(0.5, 1.5, "target"), (0.5, -0.5, "target"), (0.5, nan, "target"),
                                       (nan, 0.5, "input"), (1.5, 1.5, "input"),
                                       ([0.5, 2.0], [1.5, 0.5], "target"), ([2.0, 0.5], [0.5, 1.5], "input"),
                                       ([0.5, 0.2], [0.5, inf], "target")])
def test_binary_cross_entropy_out_of_range_raises_for_the_first_bad_element(x, y, bad):
    with pytest.raises(RuntimeError, match="all elements of %s should be between 0 and 1" % bad):
        cF.binary_cross_entropy(cx.tensor(x), cx.tensor(y))
    _assert_same_outcome(lambda lib: (cF if lib is cx else tF).binary_cross_entropy(lib.tensor(x), lib.tensor(y)))


@pytest.mark.disagreement("D65")
def test_binary_cross_entropy_in_range_still_computes():
    p, y = np.array([0.5, 0.2, 0.9]), np.array([0.5, 1.0, 0.0])
    expected = -(y * np.log(p) + (1 - y) * np.log1p(-p)).mean()
    got = cF.binary_cross_entropy(cx.tensor(p), cx.tensor(y)).item()
    assert got == pytest.approx(expected, rel=1e-12)


# -- kl_div's target gradient masks log(target) where target <= 0 ----------------------------------

@pytest.mark.disagreement("D74")
def test_kl_div_target_gradient_is_zero_under_a_zero_incoming_gradient():
    # torch's xlogy derivative: xlogy(grad, t) masked to 0 where t == 0 and t <= 0;
    # with grad = 0, xlogy(0, -0.625) = 0 (not 0 * NaN), so the gradient is 0.
    t = cx.tensor([-0.625, 0.5], requires_grad=True)
    loss = cF.kl_div(cx.tensor([-0.25, 0.5]), t, reduction="sum")
    (loss * 0).backward()
    _assert_values(t.grad.numpy(), np.array([0.0, 0.0], np.float32))


@pytest.mark.disagreement("D74")
def test_kl_div_target_gradient_is_nan_where_log_is_undefined():
    # d/dt [t log t - t x] = log t + 1 - x: NaN for t < 0; at t == 0 the xlogy term's
    # self-gradient is masked to 0 but its other-gradient g * t / t = 0/0 is NaN.
    x = np.array([-0.25, 0.5, 1.0, 0.75])
    t = cx.tensor([-0.625, 0.0, 2.0, 0.5], dtype=cx.float64, requires_grad=True)
    cF.kl_div(cx.tensor(x), t, reduction="sum").backward()
    tt = np.array([-0.625, 0.0, 2.0, 0.5])
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(tt > 0, np.log(np.where(tt > 0, tt, 1)) + 1 - x, np.nan)
    _assert_values(t.grad.numpy(), expected, rtol=1e-12)


@pytest.mark.disagreement("D74")
@with_torch
@pytest.mark.parametrize("target", [[-0.625, 0.5], [0.0, 0.5], [-0.0, 2.0], [inf, 1.0], [nan, 1.0], [-inf, 1.0],
                                    [0.25, 0.5]])
@pytest.mark.parametrize("scale", [0.0, 1.0])
@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean"])
def test_kl_div_gradients_match_torch(target, scale, reduction):
    def grads(lib):
        F = cF if lib is cx else tF
        t = lib.tensor(target, requires_grad=True)
        x = lib.tensor([-0.25, 0.5], requires_grad=True)
        (F.kl_div(x, t, reduction=reduction) * scale).sum().backward()
        return _array(t.grad), _array(x.grad)
    for ours, theirs in zip(grads(cx), grads(real_torch)):
        _assert_values(ours, theirs)


# -- nll_loss / cross_entropy skip ignored rows ----------------------------------------------------

@pytest.mark.disagreement("D81")
def test_cross_entropy_ignores_infinite_logits_in_ignored_rows():
    logits = np.array([[-inf, 0.1875, 0.6875], [0.6875, 0.375, -0.9375]])
    x = cx.tensor(logits, dtype=cx.float64, requires_grad=True)
    loss = cF.cross_entropy(x, cx.tensor([1, 2]), ignore_index=1)
    row = logits[1]
    log_softmax = row - np.log(np.exp(row).sum())
    assert loss.item() == pytest.approx(-log_softmax[2], rel=1e-14)
    loss.backward()
    grad = np.zeros_like(logits)
    grad[1] = np.exp(log_softmax) - np.eye(3)[2]
    _assert_values(x.grad.numpy(), grad, rtol=1e-12)


@pytest.mark.disagreement("D81")
@pytest.mark.parametrize("reduction, expected", [("none", [0.0, -2.0, 0.0]), ("sum", -2.0), ("mean", -2.0)])
def test_nll_loss_ignored_rows_add_plus_zero_and_get_no_gradient(reduction, expected):
    x = cx.tensor([[inf, 1.0], [nan, 2.0], [-inf, 3.0]], requires_grad=True)
    loss = cF.nll_loss(x, cx.tensor([-100, 1, -100]), reduction=reduction)
    _assert_values(loss.detach().numpy(), np.array(expected, np.float32))
    (loss * inf).sum().backward()       # an infinite incoming gradient does not reach ignored rows
    _assert_values(x.grad.numpy(), np.array([[0, 0], [0, -inf], [0, 0]], np.float32))


@pytest.mark.disagreement("D81")
def test_nll_loss_sums_negative_zeros_to_plus_zero_and_mean_over_zero_weight_is_nan():
    x = cx.tensor([[0.0, 1.0], [0.0, 2.0]], requires_grad=True)
    _assert_values(cF.nll_loss(x, cx.tensor([0, 0]), reduction="sum").detach().numpy(), np.float32(0.0))
    loss = cF.nll_loss(x, cx.tensor([0, 1]), weight=cx.zeros(2), reduction="mean")
    loss.backward()
    # -(g / 0) * 0 at the picks, as torch's kernel computes it
    _assert_values(x.grad.numpy(), np.array([[nan, 0], [0, nan]], np.float32))


@pytest.mark.disagreement("D81")
@with_torch
@pytest.mark.parametrize("shape, target_shape", [((3,), ()), ((4, 3), (4,)), ((2, 3, 5), (2, 5)),
                                                 ((2, 3, 2, 3), (2, 2, 3))])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [None, [0.5, 0.0, 2.0]])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_nll_loss_and_cross_entropy_with_infinities_match_torch(shape, target_shape, reduction, weight,
                                                                label_smoothing):
    rng = np.random.default_rng(sum(shape))
    values = rng.standard_normal(shape)
    values.flat[::7] = -inf
    values.flat[-1] = nan
    target = rng.integers(0, 3, target_shape)
    target.flat[::2] = 1

    def run(lib):
        F = cF if lib is cx else tF
        x = lib.tensor(values, requires_grad=True)
        w = None if weight is None else lib.tensor(weight, dtype=lib.float64)
        t = lib.tensor(target)
        nll = F.nll_loss(x, t, weight=w, ignore_index=1, reduction=reduction)
        (grad,) = lib.autograd.grad(nll.sum(), x)
        ce = F.cross_entropy(x, t, weight=w, ignore_index=1, reduction=reduction, label_smoothing=label_smoothing)
        ce.sum().backward()
        return _array(nll), _array(grad), _array(ce), _array(x.grad)
    for ours, theirs in zip(run(cx), run(real_torch)):
        _assert_values(ours, theirs, rtol=1e-12)


# -- where torch's backward raises by a torch bug, cextend differentiates --------------------------
# (documented deviations: tests/difftest/allowlist.ALLOWED and docs/torch-parity.md)

@pytest.mark.disagreement("D72")
@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64")])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_huber_loss_of_mixed_float_dtypes_differentiates_each_operand_in_its_dtype(dtypes, reduction):
    xs, ts, delta = np.array([1.0, 2.0, -3.0]), np.array([0.5, 1.0, 1.0]), 1.5
    x = cx.tensor(xs, dtype=getattr(cx, dtypes[0]), requires_grad=True)
    t = cx.tensor(ts, dtype=getattr(cx, dtypes[1]), requires_grad=True)
    loss = cF.huber_loss(x, t, reduction=reduction, delta=delta)
    assert loss.dtype == x.dtype        # torch's forward: the input's dtype
    loss.sum().backward()
    scale = 1 / xs.size if reduction == "mean" else 1.0
    expected = np.clip(xs - ts, -delta, delta) * scale
    assert x.grad.dtype == x.dtype and t.grad.dtype == t.dtype
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(t.grad.numpy(), -expected, rtol=1e-6)
    if real_torch is not None:       # torch's own answer for the same operands: delta * smooth_l1_loss(beta=delta)
        tx = real_torch.tensor(xs, dtype=getattr(real_torch, dtypes[0]), requires_grad=True)
        tt = real_torch.tensor(ts, dtype=getattr(real_torch, dtypes[1]), requires_grad=True)
        (tF.smooth_l1_loss(tx, tt, reduction=reduction, beta=delta) * delta).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-6)


@pytest.mark.disagreement("D85")
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_backward_of_a_permuted_4d_input_differentiates_where_torch_raises(reduction):
    values = np.array([[[[2.0, -2.5], [-2.0, 2.25]], [[0.75, -2.5], [-0.25, 2.0]]]])
    target = np.array([[[0, 0], [1, 0]]])
    x = cx.tensor(values, requires_grad=True)
    loss = cF.nll_loss(x.transpose(-1, -2), cx.tensor(target), reduction=reduction)
    loss.sum().backward()
    # d/dx of -x^T[n, t, h, w] (mean: over the 4 targets): -1 (or -1/4) at each pick, transposed back
    picks = np.zeros((1, 2, 2, 2))
    for h in range(2):
        for w in range(2):
            picks[0, target[0, h, w], h, w] = -1.0
    expected = picks.transpose(0, 1, 3, 2) / (4 if reduction == "mean" else 1)
    _assert_values(x.grad.numpy(), expected.astype(np.float32))
    if real_torch is not None:       # torch raises here; its gradient for the contiguous copy is the answer
        tx = real_torch.tensor(values, requires_grad=True)
        tF.nll_loss(tx.transpose(-1, -2).contiguous(), real_torch.tensor(target), reduction=reduction).sum().backward()
        _assert_values(x.grad.numpy(), tx.grad.numpy())
