"""nn.utils.clip_grad_norm_ / clip_grad_value_ against torch 2.13 and a
float64 numpy reference: the returned total norm (value and dtype), the
clipped gradients, every norm type, mixed dtypes, None grads, errors."""
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend.nn.utils import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

NORM_TYPES = [2.0, 1, 3.5, 0.5, 0, float("inf"), -float("inf"), "inf"]
DTYPES = [(np.float32,) * 3, (np.float64,) * 3, (np.float32, np.float64, np.float32)]
SHAPES = [(4, 5), (7,), (2, 3, 2)]


def build(dtypes, scale, seed=0, none_at=None):
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(rng.standard_normal(s) * scale, dtype=d) for s, d in zip(SHAPES, dtypes)]
    ours = [cx.nn.Parameter(cx.tensor(a)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays] if torch is not None else None
    for i, a in enumerate(arrays):
        if i == none_at:
            continue
        g = np.asarray(a[::-1].copy() * 2, dtype=a.dtype)
        ours[i].grad = cx.tensor(g)
        if theirs is not None:
            theirs[i].grad = torch.tensor(g)
    return ours, theirs


def flat_norm(values, norm_type):
    flat = np.abs(np.asarray(values, np.float64)).ravel()
    if norm_type in (float("inf"), "inf"):
        return flat.max()
    if norm_type == -float("inf"):
        return flat.min()
    if norm_type == 0:
        return float(np.count_nonzero(flat))
    return (flat ** float(norm_type)).sum() ** (1.0 / float(norm_type))


def reference_norm(grads, norm_type):
    """torch's definition: the norm of the per-tensor norms (for p != 0 the norm of all elements;
    for p == 0 the number of gradients with a nonzero element)."""
    return flat_norm([flat_norm(g, norm_type) for g in grads], norm_type)


@needs_torch
@pytest.mark.parametrize("norm_type", NORM_TYPES, ids=str)
@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: "-".join(x.__name__ for x in d))
@pytest.mark.parametrize("max_norm,scale", [(1.5, 3.0), (1e6, 1.0), (0.0, 1.0)])
@pytest.mark.parametrize("none_at", [None, 1])
def test_clip_grad_norm_equals_torch(norm_type, dtypes, max_norm, scale, none_at):
    ours, theirs = build(dtypes, scale, none_at=none_at)
    before = [p.grad.numpy().astype(np.float64) for p in ours if p.grad is not None]
    total_ours = clip_grad_norm_(ours, max_norm, norm_type)
    total_theirs = torch.nn.utils.clip_grad_norm_(theirs, max_norm, float(norm_type))
    assert str(total_ours.dtype).split(".")[1] == str(total_theirs.dtype).split(".")[1]
    assert total_ours.dim() == 0
    exact = all(d == np.float64 for d in dtypes)
    rtol = 1e-13 if exact else 1e-6
    np.testing.assert_allclose(total_ours.item(), total_theirs.item(), rtol=rtol)
    np.testing.assert_allclose(total_ours.item(), reference_norm(before, norm_type), rtol=max(rtol, 1e-6))
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None
            continue
        assert a.grad.dtype.name == str(b.grad.dtype).split(".")[1]
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=0)


def test_clipped_gradients_have_the_asked_norm_and_small_ones_are_untouched():
    ours, _ = build(DTYPES[1], 3.0)
    total = clip_grad_norm_(ours, 2.0)
    assert total.item() > 2.0
    after = reference_norm([p.grad.numpy() for p in ours], 2.0)
    assert after == pytest.approx(2.0 * total.item() / (total.item() + 1e-6), rel=1e-12)
    small, _ = build(DTYPES[1], 1e-3, seed=1)
    before = [p.grad.numpy().copy() for p in small]
    clip_grad_norm_(small, 10.0)
    for p, b in zip(small, before):
        np.testing.assert_array_equal(p.grad.numpy(), b)


def test_a_single_tensor_and_a_generator_are_accepted():
    ours, _ = build(DTYPES[1], 3.0)
    expected = reference_norm([ours[0].grad.numpy()], 2.0)
    assert clip_grad_norm_(ours[0], 1.0).item() == pytest.approx(expected, rel=1e-13)
    assert reference_norm([ours[0].grad.numpy()], 2.0) == pytest.approx(1.0, rel=1e-5)
    clip_grad_norm_((p for p in ours), 1.0)
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        assert clip_grad_norm_((p for p in []), 1.0).item() == 0.0


def test_no_gradients_give_a_float32_zero():
    p = cx.nn.Parameter(cx.ones(3, dtype=cx.float64))
    total = clip_grad_norm_([p], 1.0)
    assert total.item() == 0.0 and total.dtype == cx.float32


@needs_torch
def test_nonfinite_norm_raises_when_asked_and_scales_otherwise():
    for value in (np.nan, np.inf):
        ours, theirs = build(DTYPES[1], 1.0)
        g = ours[0].grad.numpy()
        g[0, 0] = value
        theirs[0].grad[0, 0] = value
        with pytest.raises(RuntimeError) as err_ours:
            clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
        with pytest.raises(RuntimeError) as err_theirs:
            torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
        assert str(err_ours.value) == str(err_theirs.value)
        total_ours = clip_grad_norm_(ours, 1.0)
        total_theirs = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        np.testing.assert_array_equal(total_ours.numpy(), total_theirs.numpy())
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


@needs_torch
@pytest.mark.parametrize("clip_value", [0.5, 2, 0.0])
def test_clip_grad_value_equals_torch(clip_value):
    ours, theirs = build(DTYPES[2], 3.0, none_at=2)
    ours[1].grad.numpy()[2] = np.nan
    theirs[1].grad[2] = np.nan
    clip_grad_value_(ours, clip_value)
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None
        else:
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_clip_grad_value_accepts_a_single_tensor_and_runs_in_place():
    p = cx.nn.Parameter(cx.tensor([1.0, -3.0, 0.2]))
    p.grad = cx.tensor([5.0, -5.0, 0.1])
    grad = p.grad
    clip_grad_value_(p, 1.0)
    assert p.grad is grad
    np.testing.assert_allclose(grad.numpy(), [1.0, -1.0, 0.1], rtol=1e-7)


def test_get_total_norm_and_deprecated_spelling():
    ours, _ = build(DTYPES[1], 1.0)
    grads = [p.grad for p in ours]
    assert get_total_norm(grads, 1).item() == pytest.approx(reference_norm([g.numpy() for g in grads], 1), rel=1e-13)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        clip_grad_norm(ours, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clip_grad_norm_(ours, 1.0, foreach=True)


def test_inf_norm_of_empty_gradients_raises_like_torch():
    p = cx.nn.Parameter(cx.zeros(0))
    p.grad = cx.zeros(0)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        clip_grad_norm_([p], 1.0, norm_type="inf")
    assert clip_grad_norm_([p], 1.0).item() == 0.0
