"""nn.init: fans and gains equal torch's; bounds re-derived from torch's
formulas hold exactly; large samples have the intended mean/std (within 5
standard errors); deterministic initialisers (eye_, dirac_, constant_) equal
torch's output; errors as torch's."""
import math
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend.nn import init
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

SHAPES = [(2, 3), (7, 1), (1, 1), (64, 32), (5, 4, 3), (8, 3, 3, 3), (4, 2, 2, 3, 1), (3, 0), (0, 4, 2)]


def error_message(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return type(info.value), str(info.value)


def assert_sample_moments(values, mean, std):
    """Mean and std of a large sample within 5 standard errors of the targets."""
    values = np.asarray(values, np.float64).ravel()
    n = values.size
    assert abs(values.mean() - mean) <= 5 * std / math.sqrt(n), (values.mean(), mean)
    assert abs(values.std() - std) <= 5 * std / math.sqrt(2 * n), (values.std(), std)


@needs_torch
@pytest.mark.parametrize("shape", SHAPES + [(4,), ()])
def test_fans_equal_torch(shape):
    ours, theirs = cx.empty(shape), torch.empty(shape)
    if len(shape) < 2:
        assert error_message(init._calculate_fan_in_and_fan_out, ours) == \
            error_message(torch.nn.init._calculate_fan_in_and_fan_out, theirs)
        return
    assert init._calculate_fan_in_and_fan_out(ours) == torch.nn.init._calculate_fan_in_and_fan_out(theirs)
    for mode in ("fan_in", "fan_out", "FAN_IN"):
        assert init._calculate_correct_fan(ours, mode) == torch.nn.init._calculate_correct_fan(theirs, mode)
    assert error_message(init._calculate_correct_fan, ours, "fan_avg") == \
        error_message(torch.nn.init._calculate_correct_fan, theirs, "fan_avg")


@needs_torch
@pytest.mark.parametrize("args", [("linear",), ("conv1d",), ("conv2d",), ("conv3d",), ("conv_transpose1d",),
                                  ("conv_transpose2d",), ("conv_transpose3d",), ("sigmoid",), ("tanh",),
                                  ("relu",), ("leaky_relu",), ("leaky_relu", 0.2), ("leaky_relu", 3),
                                  ("selu",)])
def test_gain_equals_torch(args):
    ours, theirs = init.calculate_gain(*args), torch.nn.init.calculate_gain(*args)
    assert ours == theirs and type(ours) is type(theirs)


@needs_torch
@pytest.mark.parametrize("args", [("softmax",), ("leaky_relu", True), ("leaky_relu", "0.1")])
def test_gain_errors_equal_torch(args):
    assert error_message(init.calculate_gain, *args) == error_message(torch.nn.init.calculate_gain, *args)


@pytest.mark.parametrize("shape", [s for s in SHAPES if 0 not in s])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_xavier_uniform_bounds_and_moments(shape, gain):
    w = cx.empty(*shape)
    init.xavier_uniform_(w, gain=gain)
    fan_in = shape[1] * math.prod(shape[2:])
    fan_out = shape[0] * math.prod(shape[2:])
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    values = w.numpy()
    assert np.all(np.abs(values) <= np.float32(a))


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("leaky_relu", 0), ("leaky_relu", 0.2), ("relu", 0), ("tanh", 0),
                                            ("linear", 0)])
def test_kaiming_uniform_bound_and_moments(mode, nonlinearity, a):
    shape = (300, 100, 3, 3)
    w = cx.empty(*shape, dtype=cx.float64)
    cx.manual_seed(0)
    init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlinearity)
    fan = (100 if mode == "fan_in" else 300) * 9
    gain = {"relu": math.sqrt(2), "tanh": 5 / 3, "linear": 1.0}.get(nonlinearity, math.sqrt(2 / (1 + a * a)))
    bound = gain * math.sqrt(3.0 / fan)
    values = w.numpy()
    assert np.all(np.abs(values) <= bound)
    assert np.abs(values).max() > 0.999 * bound                # the whole interval is used
    assert_sample_moments(values, 0.0, bound / math.sqrt(3))


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_normal_std(mode):
    w = cx.empty(400, 200, 3)
    cx.manual_seed(1)
    init.kaiming_normal_(w, mode=mode, nonlinearity="relu")
    fan = (200 if mode == "fan_in" else 400) * 3
    assert_sample_moments(w.numpy(), 0.0, math.sqrt(2.0) / math.sqrt(fan))


def test_xavier_normal_std():
    w = cx.empty(500, 300, dtype=cx.float64)
    cx.manual_seed(2)
    init.xavier_normal_(w, gain=2.0)
    assert_sample_moments(w.numpy(), 0.0, 2.0 * math.sqrt(2.0 / 800))
    assert w.dtype == cx.float64


def test_uniform_and_normal():
    w = cx.empty(200000)
    cx.manual_seed(3)
    init.uniform_(w, -2.0, 3.0)
    assert w.numpy().min() >= -2.0 and w.numpy().max() <= 3.0
    assert_sample_moments(w.numpy(), 0.5, 5 / math.sqrt(12))
    init.normal_(w, 1.5, 0.25)
    assert_sample_moments(w.numpy(), 1.5, 0.25)


def truncated_normal_moments(mean, std, a, b):
    alpha, beta = (a - mean) / std, (b - mean) / std
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)   # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))          # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = mean + std * (phi(alpha) - phi(beta)) / z
    var = std ** 2 * (1 + (alpha * phi(alpha) - beta * phi(beta)) / z - ((phi(alpha) - phi(beta)) / z) ** 2)
    return m, math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 1.0), (0.0, 1.0, 1.5, 3.0),
                                          (0.0, 0.02, -0.04, 0.04), (0.0, 1.0, -0.1, 0.1)])
@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
def test_trunc_normal_bounds_and_moments(mean, std, a, b, dtype):
    """Both of torch's samplers: redrawing normals (mass > 0.3) and uniform rejection (mass <= 0.3)."""
    w = cx.empty(100000, dtype=dtype)
    cx.manual_seed(4)
    init.trunc_normal_(w, mean, std, a, b)
    values = w.numpy()
    assert values.min() >= a and values.max() <= b
    target_mean, target_std = truncated_normal_moments(mean, std, a, b)
    assert_sample_moments(values, target_mean, target_std)


def test_trunc_normal_warns_when_mean_is_far_from_the_interval():
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        init.trunc_normal_(cx.empty(10), mean=5.0, std=1.0, a=-1.0, b=1.0)


@needs_torch
@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (0, 3)])
def test_eye_equals_torch(shape):
    ours, theirs = cx.empty(*shape, dtype=cx.float64), torch.empty(*shape, dtype=torch.float64)
    init.eye_(ours)
    torch.nn.init.eye_(theirs)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert error_message(init.eye_, cx.empty(2, 2, 2)) == error_message(torch.nn.init.eye_, torch.empty(2, 2, 2))


@needs_torch
@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((4, 8, 3, 3), 1),
                                          ((6, 2, 3, 2, 5), 3), ((2, 5, 1, 1), 1)])
def test_dirac_equals_torch(shape, groups):
    ours, theirs = cx.randn(*shape), torch.randn(*shape)
    init.dirac_(ours, groups)
    torch.nn.init.dirac_(theirs, groups)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@needs_torch
def test_dirac_errors_equal_torch():
    assert error_message(init.dirac_, cx.empty(3, 3)) == error_message(torch.nn.init.dirac_, torch.empty(3, 3))
    assert error_message(init.dirac_, cx.empty(5, 3, 3), 2) == \
        error_message(torch.nn.init.dirac_, torch.empty(5, 3, 3), 2)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (8, 2, 3, 3), (1, 7)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_orthogonal_rows_or_columns_are_orthonormal(shape, gain):
    w = cx.empty(*shape, dtype=cx.float64)
    init.orthogonal_(w, gain=gain)
    flat = w.numpy().reshape(shape[0], -1)
    small = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(small, gain ** 2 * np.eye(small.shape[0]), atol=1e-12)


@needs_torch
def test_orthogonal_errors_equal_torch():
    assert error_message(init.orthogonal_, cx.empty(4)) == error_message(torch.nn.init.orthogonal_, torch.empty(4))


def test_constant_zeros_ones_fill():
    w = cx.empty(3, 2, dtype=cx.float64)
    np.testing.assert_array_equal(init.constant_(w, 0.3).numpy(), np.full((3, 2), 0.3))
    np.testing.assert_array_equal(init.zeros_(w).numpy(), np.zeros((3, 2)))
    np.testing.assert_array_equal(init.ones_(w).numpy(), np.ones((3, 2)))


def test_sparse_zeroes_the_asked_share_of_each_column():
    w = cx.empty(10, 6)
    init.sparse_(w, sparsity=0.3, std=0.5)
    assert ((w.numpy() == 0).sum(axis=0) == 3).all()


@pytest.mark.parametrize("fn,args", [(init.uniform_, ()), (init.normal_, ()), (init.xavier_uniform_, ()),
                                     (init.xavier_normal_, ()), (init.kaiming_uniform_, ()),
                                     (init.kaiming_normal_, ()), (init.trunc_normal_, ()), (init.constant_, (0.5,)),
                                     (init.zeros_, ()), (init.ones_, ()), (init.eye_, ()), (init.orthogonal_, ()),
                                     (init.sparse_, (0.5,))])
def test_initialises_parameters_in_place_outside_the_graph(fn, args):
    w = cx.nn.Parameter(cx.empty(4, 3))
    version = w._version
    out = fn(w, *args)
    assert out is w and w.requires_grad and w.grad_fn is None and w._version > version
    assert np.all(np.isfinite(w.detach().numpy()))


def test_a_seeded_numpy_generator_makes_draws_reproducible():
    a, b = cx.empty(5, 4), cx.empty(5, 4)
    init.kaiming_uniform_(a, generator=np.random.default_rng(7))
    init.kaiming_uniform_(b, generator=np.random.default_rng(7))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    init.trunc_normal_(a, generator=np.random.default_rng(8))
    init.trunc_normal_(b, generator=np.random.default_rng(8))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        init.normal_(a, generator=3)


def test_zero_element_kaiming_is_a_no_op_with_a_warning():
    w = cx.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(w) is w
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(w)


def test_one_dimensional_tensors_have_no_fan():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(cx.empty(5))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_normal_(cx.empty(5))


def test_deprecated_spellings_warn():
    with pytest.warns(FutureWarning, match="`nn.init.xavier_uniform` is now deprecated"):
        init.xavier_uniform(cx.empty(3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.xavier_uniform_(cx.empty(3, 3))


def test_reachable_as_nn_init():
    import cextend.nn as nn
    assert nn.init.kaiming_uniform_ is init.kaiming_uniform_
