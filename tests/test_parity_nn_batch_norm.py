"""Torch parity of batch norm: folding weight and statistics into a scale
and a shift (and where torch does not fold), eps checks, saved running
statistics, gradients under create_graph and double backward, and loading
an old checkpoint without num_batches_tracked.
"""
import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
import cextend.nn.functional as cF

from parity_helpers import inf, nan, tF, _array, _assert_same_outcome, _assert_values

F = torch.nn.functional


# -- batch_norm folds weight and statistics into a scale and a shift -------------------------------

def _batch_norm_reference(x, weight, bias, training, running_mean, running_var, eps):
    """torch's CPU form: alpha = invstd * w, beta = b - mean * alpha, y = x * alpha + beta (float64)."""
    axes = (0,) + tuple(range(2, x.ndim))
    if training:
        mean = x.mean(axis=axes)
        invstd = 1 / np.sqrt(x.var(axis=axes) + eps)
    else:
        mean, invstd = running_mean, 1 / np.sqrt(running_var + eps)
    with np.errstate(invalid="ignore"):
        alpha = invstd * weight
        beta = bias - mean * alpha
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return x * alpha.reshape(shape) + beta.reshape(shape)


@pytest.mark.disagreement("D77")
@pytest.mark.parametrize("weight, bias", [([0.25, -inf], [0.25, -0.5]), ([inf, 1.0], [-inf, inf]),
                                          ([0.0, nan], [inf, 0.0]), ([1.0, 1.0], [inf, -inf]),
                                          ([0.5, -1.5], [0.25, 2.0])])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_folds_infinite_affine_terms_into_a_scale_and_a_shift(weight, bias, training, dtype):
    x = np.array([[[[2.75, -2.25]], [[0.5, -2.5]]], [[[-0.75, 2.25]], [[-1.75, -0.0]]]])
    running_mean, running_var = np.array([0.5, -0.25]), np.array([2.0, 0.5])
    expected = _batch_norm_reference(x, np.array(weight), np.array(bias), training, running_mean, running_var, 1e-5)

    def program(lib):
        F = cF if lib is cx else tF
        dt = getattr(lib, dtype)
        return F.batch_norm(lib.tensor(x, dtype=dt), lib.tensor(running_mean, dtype=dt),
                            lib.tensor(running_var, dtype=dt), lib.tensor(weight, dtype=dt),
                            lib.tensor(bias, dtype=dt), training=training, momentum=0.0)
    got = _array(program(cx))
    np.testing.assert_allclose(got, expected.astype(dtype), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)
    _assert_same_outcome(program, rtol=1e-5)


@pytest.mark.parametrize("layout", ["sliced", "transposed", "expanded"])
def test_batch_norm_of_strided_operands_computes_unfolded(layout):
    # torch folds y = x * alpha + beta only when every operand is contiguous;
    # otherwise ((x - mean) * invstd) * w + b, which differs at infinities
    rng = np.random.default_rng(6)
    a = rng.choice([1.5, -2.0, 0.0, 0.25], size=(4, 3, 2))
    rm, rv = np.array([0.5, np.inf, -1.0]), np.array([1.0, 0.5, 2.0])
    w, b = np.array([1.0, np.inf, 2.0]), np.array([0.0, 1.0, np.inf])
    x = torch.tensor(a)
    mean = torch.tensor(rm)
    if layout == "sliced":
        x = torch.tensor(np.repeat(a, 2, axis=2))[:, :, ::2]
    elif layout == "transposed":
        x = torch.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    else:
        mean = torch.tensor([0.5], dtype=torch.float64).expand(3)
        rm = np.full(3, 0.5)
    y = torch.nn.functional.batch_norm(x, mean, torch.tensor(rv), torch.tensor(w), torch.tensor(b), training=False)
    shape = (1, 3, 1)
    with np.errstate(all="ignore"):
        want = ((a - rm.reshape(shape)) * (1 / np.sqrt(rv + 1e-5)).reshape(shape)) * w.reshape(shape) + b.reshape(shape)
    np.testing.assert_array_equal(y.numpy(), want)


def test_batch_norm_of_contiguous_operands_folds():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    y = torch.nn.functional.batch_norm(x, torch.tensor([0.0, 0.0], dtype=torch.float64),
                                       torch.tensor([1.0, 1.0], dtype=torch.float64),
                                       torch.tensor([np.inf, 1.0], dtype=torch.float64), None, training=False)
    # alpha = inf, beta = 0 - 0 * inf = NaN: every element of channel 0 is NaN
    assert np.isnan(y.numpy()[:, 0]).all()


@pytest.mark.disagreement("D77")
@pytest.mark.parametrize("training, eps, message", [(True, 0.0, "positive during training"),
                                                     (True, -1e-5, "positive during training"),
                                                     (False, -1e-5, "non-negative")])
def test_batch_norm_eps_must_be_positive_in_training_and_non_negative_in_evaluation(training, eps, message):
    def program(lib):
        F = cF if lib is cx else tF
        return F.batch_norm(lib.ones(2, 2, 1, 1), lib.zeros(2), lib.ones(2), training=training, eps=eps)
    with pytest.raises(ValueError, match=message):
        program(cx)
    _assert_same_outcome(program)
    if not training:    # eps = 0 in evaluation is allowed: 1 / sqrt(running_var)
        y = cF.batch_norm(cx.ones(2, 2, 1, 1), cx.zeros(2), cx.full((2,), 4.0), eps=0.0)
        _assert_values(y.numpy(), np.full((2, 2, 1, 1), 0.5, np.float32))


def test_batch_norm_saves_its_running_stats_and_updates_them_without_a_version_bump():
    # torch's kernel updates them without a version bump (one module can run
    # twice before a backward) and its node saves them (a change after raises)
    bn = torch.nn.BatchNorm1d(3)
    x1 = torch.randn(4, 3, requires_grad=True)
    y1, y2 = bn(x1), bn(torch.randn(4, 3))
    (y1.sum() + y2.sum()).backward()
    for training in (True, False):
        bn.train(training)
        y = bn(x1)
        bn.running_var.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_batch_norm_evaluation_gradient_requires_grad_under_create_graph():
    x = torch.tensor([[0.5625], [1.1875], [-0.6875]], requires_grad=True)
    y = torch.nn.functional.batch_norm(x.expand(3, 2), torch.tensor([-1.1, 1.48]), torch.tensor([1.44, 1.57]),
                                       torch.tensor([0.5, -1.0]), None, training=False)
    y.sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None


def test_batch_norm_bias_gradient_requires_grad_under_create_graph():
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    bias = torch.tensor([-0.5, 2.5, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.batch_norm(x, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
                                       None, bias, training=False)
    gb, = torch.autograd.grad(y.sum(), [bias], create_graph=True)
    assert gb.requires_grad and gb.grad_fn is not None
    np.testing.assert_array_equal(gb.detach().numpy(), [5.0, 5.0, 5.0])


@pytest.mark.parametrize("target", ["input", "bias"])
def test_batch_norm_evaluation_double_backward_leaves_input_grad_none(target):
    # torch's double-backward node reads the input (so the gradient requires
    # grad), but in evaluation its formula gives the input no gradient: None
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [3.0, 1.0, 0.0]], requires_grad=True)
    bias = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    y = F.batch_norm(x, torch.zeros(3), torch.ones(3), torch.tensor([1.0, 2.0, -1.0]), bias, training=False)
    g, = torch.autograd.grad((y * torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, -1.0], [2.0, 2.0, 1.0]])).sum(),
                             [x if target == "input" else bias], create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    assert x.grad is None and bias.grad is None


def test_batch_norm_training_double_backward_still_reaches_the_input():
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    w = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: F.batch_norm(a, None, None, b, None, training=True),
                                        (x, w))


def test_an_old_batch_norm_checkpoint_without_the_counter_loads():
    # a plain dict carries no version: torch treats it as a checkpoint from
    # before num_batches_tracked and keeps the module's own counter
    bn = torch.nn.BatchNorm1d(2)
    bn.num_batches_tracked += 3
    old = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert str(bn.load_state_dict(old)) == "<All keys matched successfully>"
    assert bn.num_batches_tracked.item() == 3
    current = bn.state_dict()                   # version 2: the counter is required
    assert current._metadata[""] == {"version": 2}
    del current["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(current)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert list(model.state_dict()._metadata.items()) == [("", {"version": 1}), ("0", {"version": 1}),
                                                          ("1", {"version": 2})]
