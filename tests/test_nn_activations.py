"""nn activations and softmax against torch 2.13: values, dtypes, gradients,
warnings and errors, in float32 and float64, on contiguous, transposed and
sliced inputs, empty and 0-d tensors and extreme values."""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from nn_parity import Fixed, Layout, check, same_error, torch

TF = torch.nn.functional
DTYPES = (np.float32, np.float64)
LAYOUTS = (Layout.contiguous, Layout.transposed, Layout.sliced)
SHAPES = ((3, 4), (), (7,), (2, 3, 5), (0, 4), (1, 1))


def values(shape, seed=0, scale=3.0):
    return np.random.default_rng(seed).uniform(-scale, scale, shape)


# name -> (ours, torch's, extra keyword sets)
ACTIVATIONS = {
    "gelu": (F.gelu, TF.gelu, ({}, {"approximate": "tanh"})),
    "leaky_relu": (F.leaky_relu, TF.leaky_relu, ({}, {"negative_slope": 0.2}, {"negative_slope": -0.3})),
    "elu": (F.elu, TF.elu, ({}, {"alpha": 0.5}, {"alpha": -1.5})),
    "celu": (F.celu, TF.celu, ({}, {"alpha": 0.7})),
    "selu": (F.selu, TF.selu, ({},)),
    "softplus": (F.softplus, TF.softplus, ({}, {"beta": 2.0}, {"beta": 0.5, "threshold": 1.0})),
    "silu": (F.silu, TF.silu, ({},)),
    "mish": (F.mish, TF.mish, ({},)),
    "hardtanh": (F.hardtanh, TF.hardtanh, ({}, {"min_val": -0.5, "max_val": 2.0})),
    "relu6": (F.relu6, TF.relu6, ({},)),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, ({},)),
    "relu": (F.relu, TF.relu, ({},)),
    "sigmoid": (F.sigmoid, torch.sigmoid, ({},)),
    "tanh": (F.tanh, torch.tanh, ({},)),
}
CASES = [(name, i) for name, (_, _, kws) in ACTIVATIONS.items() for i in range(len(kws))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,k", CASES, ids=["%s-%d" % c for c in CASES])
def test_activation_matches_torch(name, k, shape, dtype):
    ours, theirs, kws = ACTIVATIONS[name]
    check(ours, theirs, [values(shape, seed=len(shape) + k)], kws[k], dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_reads_strided_inputs(name, layout):
    ours, theirs, kws = ACTIVATIONS[name]
    check(ours, theirs, [values((4, 6), seed=3)], kws[-1], layout=layout)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_is_finite_at_extremes(name, dtype):
    """Large |x| must not overflow into inf/NaN where torch's answer is finite."""
    ours, theirs, kws = ACTIVATIONS[name]
    x = np.array([-1e4, -700.0, -88.0, -30.0, -1e-8, 0.0, 1e-8, 30.0, 88.0, 700.0, 1e4])
    check(ours, theirs, [x], kws[0], dtype=dtype)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_propagates_nan(name):
    ours, theirs, kws = ACTIVATIONS[name]
    check(ours, theirs, [np.array([np.nan, 1.0, -1.0])], kws[0], grad=False)


INPLACE = {
    "leaky_relu": (lambda x, **k: F.leaky_relu(x, inplace=True, **k),
                   lambda x, **k: TF.leaky_relu(x, inplace=True, **k), {"negative_slope": 0.1}),
    "leaky_relu_": (F.leaky_relu_, TF.leaky_relu_, {}),
    "elu": (lambda x, **k: F.elu(x, inplace=True, **k), lambda x, **k: TF.elu(x, inplace=True, **k),
            {"alpha": 0.5}),
    "elu_": (F.elu_, TF.elu_, {}),
    "celu": (lambda x: F.celu(x, 0.5, True), lambda x: TF.celu(x, 0.5, True), {}),
    "selu": (lambda x: F.selu(x, True), lambda x: TF.selu(x, True), {}),
    "silu": (lambda x: F.silu(x, True), lambda x: TF.silu(x, True), {}),
    "mish": (lambda x: F.mish(x, True), lambda x: TF.mish(x, True), {}),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.5, True), lambda x: TF.hardtanh(x, -0.5, 0.5, True), {}),
    "hardtanh_": (F.hardtanh_, TF.hardtanh_, {}),
    "relu6": (lambda x: F.relu6(x, True), lambda x: TF.relu6(x, True), {}),
    "relu": (lambda x: F.relu(x, True), lambda x: TF.relu(x, True), {}),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_forms_write_the_input_and_differentiate(name):
    """x.clone() then the in-place op: same values and gradient as torch, and the
    result is the (modified) clone itself."""
    ours, theirs, kws = INPLACE[name]

    def run(op):
        def f(x, **k):
            y = x * 1.5
            out = op(y, **k)
            assert out is y
            return out
        return f
    check(run(ours), run(theirs), [values((3, 5), seed=11)], kws)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_a_leaf_that_requires_grad_raises(name):
    ours, theirs, kws = INPLACE[name]
    same_error(lambda x: ours(x, **kws), lambda x: theirs(x, **kws), [values((2, 3))])


def test_inplace_bumps_the_version_so_saved_uses_fail():
    x = cx.randn(3, requires_grad=True)
    y = x * 2
    z = y.sigmoid()            # saves its result...
    w = z * 1
    F.elu(z, inplace=True)     # ...which elu then overwrites
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


@pytest.mark.parametrize("op,kw", [(F.leaky_relu, "negative_slope"), (F.elu, "alpha")])
def test_inplace_backward_refuses_a_negative_slope_as_torch(op, kw):
    t_op = getattr(TF, op.__name__)

    def run(fn):
        def f(x):
            y = fn(x * 1, **{kw: -0.2, "inplace": True})
            return y.sum().backward()
        return f
    same_error(run(op), run(t_op), [values((4,))])


def test_integer_inputs_are_refused_or_kept_as_torch():
    ints = np.array([[1, -2, 3], [0, 5, -7]], np.int64)
    for name in ("gelu", "leaky_relu", "elu", "celu", "selu", "softplus", "silu", "mish", "logsigmoid"):
        same_error(getattr(F, name), getattr(TF, name), [ints])
    for name in ("hardtanh", "relu6"):
        check(getattr(F, name), getattr(TF, name), [ints])


def test_bad_arguments_raise_as_torch():
    x = [values((3,))]
    same_error(lambda t: F.gelu(t, approximate="fast"), lambda t: TF.gelu(t, approximate="fast"), x)
    same_error(lambda t: F.hardtanh(t, 1.0, -1.0), lambda t: TF.hardtanh(t, 1.0, -1.0), x)
    same_error(lambda t: F.celu(t, 0.0), lambda t: TF.celu(t, 0.0), x)


def test_torch_namespace_spellings():
    """torch.celu / torch.selu exist beside F.celu / F.selu; torch has no Tensor.gelu."""
    check(cx.celu, torch.celu, [values((3, 4))], {"alpha": 2.0})
    check(cx.selu, torch.selu, [values((3, 4))])
    for name in ("gelu", "leaky_relu", "elu", "softplus", "silu", "mish", "hardtanh", "logsigmoid"):
        assert hasattr(cx.Tensor, name) == hasattr(torch.Tensor, name), name
        assert hasattr(cx, name) == hasattr(torch, name), name


def test_grad_fn_names_follow_torch():
    x = cx.randn(3, requires_grad=True)
    assert type(F.gelu(x).grad_fn).__name__ == "GeluBackward0"
    assert type(F.selu(x).grad_fn).__name__ == "EluBackward0"
    assert type(F.relu6(x).grad_fn).__name__ == "HardtanhBackward0"
    assert type(F.logsigmoid(x).grad_fn).__name__ == "LogSigmoidBackward0"


# -- softmax family ---------------------------------------------------------------------------------

SOFTMAX = {"softmax": (F.softmax, TF.softmax), "log_softmax": (F.log_softmax, TF.log_softmax),
           "softmin": (F.softmin, TF.softmin)}
SOFTMAX_CASES = [((3, 4), 1), ((3, 4), 0), ((3, 4), -1), ((2, 3, 5), 1), ((2, 3, 5), -1), ((7,), 0),
                 ((), 0), ((), -1), ((0, 4), 1), ((4, 0), 1), ((1, 1), 0), ((2, 1, 3), 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("name", sorted(SOFTMAX))
def test_softmax_matches_torch(name, shape, dim, dtype):
    ours, theirs = SOFTMAX[name]
    check(ours, theirs, [values(shape, seed=2)], {"dim": dim}, dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", sorted(SOFTMAX))
def test_softmax_reads_strided_inputs(name, layout):
    ours, theirs = SOFTMAX[name]
    check(ours, theirs, [values((5, 6), seed=4)], {"dim": 1}, layout=layout)


@pytest.mark.parametrize("name", sorted(SOFTMAX))
def test_softmax_is_stable_for_huge_logits(name):
    ours, theirs = SOFTMAX[name]
    x = np.array([[1e4, 0.0, -1e4], [800.0, 799.0, -3.0], [-1e30, -1e30, -1e30]])
    for dtype in DTYPES:
        check(ours, theirs, [x], {"dim": 1}, dtype=dtype)
    check(ours, theirs, [np.array([[-np.inf, -np.inf], [0.0, -np.inf], [np.inf, 1.0]])], {"dim": 1},
          grad=False)


@pytest.mark.parametrize("name", sorted(SOFTMAX))
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
def test_implicit_dim_warns_and_picks_torchs_dim(name, ndim):
    ours, theirs = SOFTMAX[name]
    check(ours, theirs, [values((2, 3, 4, 5)[:ndim], seed=ndim)])   # check() compares the warnings too


@pytest.mark.parametrize("name", sorted(SOFTMAX))
def test_dtype_argument_casts_first(name):
    ours, theirs = SOFTMAX[name]
    for target in ("float64", "float32"):
        check(lambda x: ours(x, 1, dtype=getattr(cx, target)), lambda x: theirs(x, 1, dtype=getattr(torch, target)),
              [values((3, 4))], dtype=np.float32)
    ints = [np.array([[1, 2], [3, -4]], np.int64)]
    check(lambda x: ours(x, 0, dtype=cx.float64), lambda x: theirs(x, 0, dtype=torch.float64), ints)
    same_error(lambda x: ours(x, 0), lambda x: theirs(x, 0), ints)
    same_error(lambda x: ours(x, 1), lambda x: theirs(x, 1), ints)
    same_error(lambda x: ours(x, 1, dtype=cx.int64), lambda x: theirs(x, 1, dtype=torch.int64),
               [values((2, 2))])


def test_softmax_dim_out_of_range_raises_as_torch():
    same_error(lambda x: F.softmax(x, 2), lambda x: TF.softmax(x, 2), [values((2, 3))])
    same_error(lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1), [values(())])


def test_tensor_and_namespace_spellings_of_softmax():
    x = [values((3, 4))]
    check(lambda t: t.softmax(1), lambda t: t.softmax(1), x)
    check(lambda t: t.log_softmax(dim=0), lambda t: t.log_softmax(dim=0), x)
    check(lambda t: cx.softmax(t, -1), lambda t: torch.softmax(t, -1), x)
    # computed in float32, so the float64 input's gradient carries float32 rounding
    check(lambda t: cx.log_softmax(t, 0, dtype=cx.float32), lambda t: torch.log_softmax(t, 0, dtype=torch.float32), x,
          tolerance=(2e-5, 2e-6))
    with pytest.raises(TypeError):
        cx.softmax(cx.ones(2))


def test_fixed_arguments_are_not_differentiated():
    """A Fixed input gives a tensor that does not require grad (the helper's contract)."""
    mine, ref = check(F.softmax, TF.softmax, [Fixed(values((2, 3)))], {"dim": 1})
    assert not mine.requires_grad


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_a_view_rewrites_the_bases_history(name):
    """An in-place activation on a slice changes the base; the base's gradient goes
    through it (torch's CopySlices)."""
    ours, theirs, kws = INPLACE[name]

    def run(op):
        def f(x, **k):
            y = x * 1.5
            op(y[1:], **k)
            return y
        return f
    check(run(ours), run(theirs), [values((4, 5), seed=12)], kws)
