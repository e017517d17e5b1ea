"""group_norm / GroupNorm, instance_norm / InstanceNorm1d-3d and
local_response_norm / LocalResponseNorm (cextend/_ops/nn_norms.py,
cextend/nn/normalization_more.py).

Stated answers are numpy float64 references (per-group and per-instance
statistics with the biased variance, batch norm's running-stat update with
the unbiased one, the LRN window summed by loops); each program runs on
cextend and, where torch 2.13 is installed, on torch (`each_lib`);
`with_torch` tests compare float32 results, gradients and messages directly.
"""
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend.autograd import gradcheck, gradgradcheck

from parity_helpers import each_lib, real_torch, with_torch

RNG = np.random.default_rng(7)


def _np(t):
    return np.array(t.detach().numpy())


def _t(lib, a, requires_grad=False):
    t = lib.from_numpy(np.array(a))
    return t.requires_grad_() if requires_grad else t


# -- references ----------------------------------------------------------------------------------

def _ref_group_norm(x, groups, w=None, b=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, c // groups * int(np.prod(x.shape[2:])))
    mean = g.mean(axis=2, keepdims=True)
    var = g.var(axis=2, keepdims=True)
    y = ((g - mean) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def _ref_group_norm_grads(x, groups, w, g, eps=1e-5):
    """(dx, dw, db) in closed form."""
    n, c = x.shape[:2]
    shape = (1, c) + (1,) * (x.ndim - 2)
    xs = x.reshape(n, groups, -1)
    rstd = 1 / np.sqrt(xs.var(axis=2, keepdims=True) + eps)
    xhat = ((xs - xs.mean(axis=2, keepdims=True)) * rstd).reshape(x.shape)
    gw = (g * w.reshape(shape)).reshape(n, groups, -1)
    xh = xhat.reshape(n, groups, -1)
    dx = rstd * (gw - gw.mean(axis=2, keepdims=True) - xh * (gw * xh).mean(axis=2, keepdims=True))
    axes = (0,) + tuple(range(2, x.ndim))
    return dx.reshape(x.shape), (g * xhat).sum(axis=axes), g.sum(axis=axes)


def _ref_instance_norm(x, w=None, b=None, eps=1e-5, mean=None, var=None):
    axes = tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if mean is None:
        m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    else:
        m, v = mean.reshape(shape), var.reshape(shape)
    y = (x - m) / np.sqrt(v + eps)
    return y * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


def _ref_running(x, rm, rv, momentum):
    axes = tuple(range(2, x.ndim))
    count = int(np.prod(x.shape[2:]))
    mean = x.mean(axis=axes).mean(axis=0)
    var = (x.var(axis=axes) * count / (count - 1)).mean(axis=0)
    return (1 - momentum) * rm + momentum * mean, (1 - momentum) * rv + momentum * var


def _ref_lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = x * x
    div = np.zeros_like(x)
    for ch in range(c):
        lo, hi = ch - size // 2, ch + (size - 1) // 2
        div[:, ch] = sq[:, max(lo, 0):min(hi, c - 1) + 1].sum(axis=1) / size
    return x / (k + alpha * div) ** beta


# -- group_norm ----------------------------------------------------------------------------------

GROUP_CASES = [((2, 4, 3), 2, True), ((3, 6), 3, True), ((2, 6, 2, 3), 1, False), ((1, 7, 5), 7, True),
               ((2, 4, 1, 3, 2), 4, True), ((0, 4, 3), 2, True), ((2, 5, 13), 5, False), ((4, 3, 1), 1, True)]


@each_lib
@pytest.mark.parametrize("shape,groups,affine", GROUP_CASES, ids=str)
def test_group_norm_values_and_gradients_match_the_reference(lib, shape, groups, affine):
    a = RNG.standard_normal(shape) * 3 + 1
    c = shape[1]
    w = RNG.uniform(0.5, 1.5, c) if affine else None
    b = RNG.standard_normal(c) if affine else None
    x = _t(lib, a, True)
    wt = _t(lib, w if affine else np.ones(c), True)
    bt = _t(lib, b, True) if affine else None
    out = lib.nn.functional.group_norm(x, groups, wt, bt, eps=1e-5)
    want = _ref_group_norm(a, groups, w, b)
    assert out.dtype == lib.float64 and tuple(out.shape) == shape
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-12)
    if out.numel():
        assert type(out.grad_fn).__name__ == "NativeGroupNormBackward0"
        g = RNG.standard_normal(shape)
        grads = lib.autograd.grad(out, [x, wt] + ([bt] if affine else []), _t(lib, g))
        for got, ref in zip(grads, _ref_group_norm_grads(a, groups, w if affine else np.ones(c), g)):
            np.testing.assert_allclose(_np(got), ref, rtol=1e-10, atol=1e-12)


@each_lib
def test_group_norm_on_strided_and_channels_last_inputs(lib):
    a = RNG.standard_normal((2, 6, 3, 5))
    want = _ref_group_norm(a, 3)
    nchw = _t(lib, a)
    for x in (nchw.contiguous(memory_format=lib.channels_last), _t(lib, np.ascontiguousarray(a.transpose(0, 1, 3, 2)))
              .transpose(2, 3), _t(lib, np.repeat(a, 2, axis=3))[..., ::2]):
        out = lib.nn.functional.group_norm(x, 3)
        np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-12)
    assert lib.nn.functional.group_norm(nchw.contiguous(memory_format=lib.channels_last), 3).is_contiguous(
        memory_format=lib.channels_last)


def test_group_norm_gradcheck_and_gradgradcheck():
    x = cx.from_numpy(RNG.standard_normal((2, 6, 3))).requires_grad_()
    w = cx.from_numpy(RNG.uniform(0.5, 1.5, 6)).requires_grad_()
    b = cx.from_numpy(RNG.standard_normal(6)).requires_grad_()
    fn = lambda x, w, b: cx.nn.functional.group_norm(x.transpose(1, 2).transpose(1, 2), 3, w, b)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    g, = cx.autograd.grad(cx.nn.functional.group_norm(x, 3, w, b).sum(), [x], create_graph=True)
    assert type(g.grad_fn).__name__ == "NativeGroupNormBackwardBackward0"


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("F.group_norm(x, 3)", RuntimeError, "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 4, 3] and num_groups=3"),
    ("F.group_norm(x, 0)", ZeroDivisionError, "division or modulo by zero"),
    ("F.group_norm(x, -2)", RuntimeError, "Expected num groups to be greater than 0, got -2"),
    ("F.group_norm(x, 2, torch.ones(3))", RuntimeError, "Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape [3] and input of shape [2, 4, 3]"),
    ("F.group_norm(x, 2, None, torch.ones(2, 2))", RuntimeError, "Expected bias to be a vector of size equal to the number of channels"),
    ("F.group_norm(torch.ones(4), 2)", RuntimeError, "Expected at least 2 dimensions for input tensor but received 1"),
    ("F.group_norm(torch.ones(1, 4), 4)", ValueError, "Expected more than 1 value per channel when training, got input size [1, 4]"),
    ("F.group_norm(x.double(), 2, torch.ones(4))", RuntimeError, "mixed dtype (CPU): all inputs must share same datatype."),
    ("F.group_norm(x, 2, torch.ones(4, dtype=torch.float64))", RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("F.group_norm(torch.ones(2, 4, dtype=torch.int64), 2)", NotImplementedError, "\"GroupNormKernelImpl\" not implemented for 'Long'"),
    ("F.group_norm(x, 2.0)", TypeError, "num_groups"),
])
def test_group_norm_errors(lib, expr, error, words):
    env = dict(torch=lib, F=lib.nn.functional, x=lib.ones(2, 4, 3))
    with pytest.raises(error, match=_escaped(words)):
        eval(expr, env)


def _escaped(words):
    return "".join("\\" + ch if ch in "()[]." else ch for ch in words)


@each_lib
def test_group_norm_special_cases(lib):
    F = lib.nn.functional
    assert tuple(F.group_norm(lib.ones(2, 4, 0), 2).shape) == (2, 4, 0)
    np.testing.assert_array_equal(_np(F.group_norm(lib.ones(2, 4, 3), 2)), np.zeros((2, 4, 3)))   # constant groups
    # a negative eps is used as given, as torch's kernel: 1 / sqrt(var + eps)
    a = RNG.standard_normal((2, 4, 3)) * 4
    np.testing.assert_allclose(_np(F.group_norm(_t(lib, a), 2, eps=-0.01)), _ref_group_norm(a, 2, eps=-0.01),
                               rtol=1e-12)
    half = F.group_norm(lib.from_numpy(a.astype(np.float16)), 2)
    assert half.dtype == lib.float16
    np.testing.assert_allclose(_np(half).astype(np.float64), _ref_group_norm(a.astype(np.float16).astype(np.float64), 2),
                               rtol=2e-3, atol=2e-3)


@each_lib
def test_group_norm_module(lib):
    m = lib.nn.GroupNorm(2, 4)
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert list(m.state_dict()) == ["weight", "bias"]
    np.testing.assert_array_equal(_np(m.weight), np.ones(4))
    np.testing.assert_array_equal(_np(m.bias), np.zeros(4))
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(_np(m(lib.from_numpy(a))), _ref_group_norm(a.astype(np.float64), 2), rtol=1e-5,
                               atol=1e-5)
    assert lib.nn.GroupNorm(1, 3, affine=False).weight is None
    assert lib.nn.GroupNorm(3, 3, bias=False).bias is None
    assert lib.nn.GroupNorm(2, 4, dtype=lib.float64).weight.dtype == lib.float64
    with pytest.raises(ValueError, match=_escaped("num_channels (5) must be divisible by num_groups (2)")):
        lib.nn.GroupNorm(2, 5)


# -- instance_norm ---------------------------------------------------------------------------------

@each_lib
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 3, 4), (3, 2, 2, 1, 3), (2, 5, 2)], ids=str)
def test_instance_norm_values_running_stats_and_gradients(lib, shape):
    a = RNG.standard_normal(shape) * 2 - 1
    c = shape[1]
    w, b = RNG.uniform(0.5, 1.5, c), RNG.standard_normal(c)
    rm0, rv0 = RNG.standard_normal(c), RNG.uniform(0.5, 2, c)
    rm, rv = _t(lib, rm0.copy()), _t(lib, rv0.copy())
    x, wt, bt = _t(lib, a, True), _t(lib, w, True), _t(lib, b, True)
    out = lib.nn.functional.instance_norm(x, rm, rv, wt, bt, momentum=0.3)
    np.testing.assert_allclose(_np(out), _ref_instance_norm(a, w, b), rtol=1e-12, atol=1e-12)
    want_rm, want_rv = _ref_running(a, rm0, rv0, 0.3)
    np.testing.assert_allclose(_np(rm), want_rm, rtol=1e-12)
    np.testing.assert_allclose(_np(rv), want_rv, rtol=1e-12)
    assert type(out.grad_fn).__name__ == "ViewBackward0"
    # instance norm is group norm with one channel per group, sample by sample
    g = RNG.standard_normal(shape)
    gx, gw, gb = lib.autograd.grad(out, [x, wt, bt], _t(lib, g))
    for got, ref in zip((gx, gw, gb), _ref_group_norm_grads(a, c, w, g)):
        np.testing.assert_allclose(_np(got), ref, rtol=1e-10, atol=1e-12)
    # evaluation: the running stats, untouched but for torch's mean over the repeated copies
    ev = lib.nn.functional.instance_norm(_t(lib, a), rm, rv, wt, bt, use_input_stats=False)
    np.testing.assert_allclose(_np(ev), _ref_instance_norm(a, w, b, mean=want_rm, var=want_rv), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(rm), want_rm, rtol=1e-13)


def test_instance_norm_gradcheck_and_gradgradcheck():
    x = cx.from_numpy(RNG.standard_normal((2, 3, 4))).requires_grad_()
    w = cx.from_numpy(RNG.uniform(0.5, 1.5, 3)).requires_grad_()
    fn = lambda x, w: cx.nn.functional.instance_norm(x.transpose(1, 2).transpose(1, 2), weight=w)
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("F.instance_norm(torch.ones(2, 4, 1))", ValueError, "Expected more than 1 spatial element when training, got input size"),
    ("F.instance_norm(x, use_input_stats=False)", RuntimeError, "Expected running_mean and running_var to be defined when use_input_stats is false"),
    ("F.instance_norm(x, torch.zeros(3), torch.ones(3))", RuntimeError, "running_mean should contain 8 elements not 6"),
    ("F.instance_norm(x, None, None, torch.ones(3))", RuntimeError, "weight should contain 8 elements not 6"),
    ("F.instance_norm(x, torch.zeros(4), None)", ValueError, "running_mean and running_var must either both be None or neither be None"),
    ("F.instance_norm(torch.ones(2, 4, 3, dtype=torch.int64))", NotImplementedError, "\"batch_norm\" not implemented for 'Long'"),
    ("F.instance_norm(x, None, None, torch.ones(4, dtype=torch.float64))", RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("F.instance_norm(x, torch.zeros(4), torch.ones(4, dtype=torch.float64))", RuntimeError, "expected scalar type Float but found Double"),
])
def test_instance_norm_errors(lib, expr, error, words):
    env = dict(torch=lib, F=lib.nn.functional, x=lib.ones(2, 4, 3))
    with pytest.raises(error, match=_escaped(words)):
        eval(expr, env)


@each_lib
def test_instance_norm_keeps_float64_running_stats_of_a_float32_input(lib):
    a = RNG.standard_normal((2, 3, 4))
    rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
    out = lib.nn.functional.instance_norm(lib.from_numpy(a.astype(np.float32)), rm, rv)
    assert out.dtype == lib.float32 and rm.dtype == lib.float64
    want_rm, want_rv = _ref_running(a.astype(np.float32).astype(np.float64), np.zeros(3), np.ones(3), 0.1)
    np.testing.assert_allclose(_np(rm), want_rm, rtol=1e-6)
    np.testing.assert_allclose(_np(rv), want_rv, rtol=1e-6)
    assert tuple(lib.nn.functional.instance_norm(lib.ones(0, 3, 4)).shape) == (0, 3, 4)


@each_lib
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                       ("InstanceNorm2d", (2, 3, 2, 4)), ("InstanceNorm2d", (3, 4, 2)),
                                       ("InstanceNorm3d", (2, 3, 2, 2, 3)), ("InstanceNorm3d", (3, 2, 3, 2))])
def test_instance_norm_modules_train_eval_and_unbatched(lib, cls, shape):
    a = RNG.standard_normal(shape)
    batched = a if len(shape) == int(cls[-2]) + 2 else a[None]
    plain = getattr(lib.nn, cls)(3).double()
    assert repr(plain) == "%s(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)" % cls
    assert list(plain.state_dict()) == []
    np.testing.assert_allclose(_np(plain(_t(lib, a))), _ref_instance_norm(batched).reshape(shape), rtol=1e-12,
                               atol=1e-12)
    m = getattr(lib.nn, cls)(3, affine=True, track_running_stats=True, momentum=None).double()
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    m(_t(lib, a))
    m(_t(lib, a))
    assert int(m.num_batches_tracked) == 0                 # instance norm does not count batches
    rm, rv = _ref_running(batched, np.zeros(3), np.ones(3), 0.0)      # momentum None: factor 0.0, as torch
    np.testing.assert_allclose(_np(m.running_mean), rm, rtol=1e-12)
    m.eval()
    np.testing.assert_allclose(_np(m(_t(lib, a))), _ref_instance_norm(batched, mean=rm, var=rv).reshape(shape),
                               rtol=1e-12, atol=1e-12)


@each_lib
def test_instance_norm_module_checks(lib):
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        lib.nn.InstanceNorm1d(3)(lib.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features \\(4\\), but got: 3."):
        lib.nn.InstanceNorm1d(4, affine=True)(lib.ones(2, 3, 5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.nn.InstanceNorm2d(4)(lib.randn(2, 3, 5, 2))
    assert any("does not match num_features" in str(w.message) for w in caught)
    m = lib.nn.InstanceNorm1d(3)
    errors = []
    m._load_from_state_dict({"running_mean": lib.zeros(3), "running_var": lib.ones(3)}, "", {}, True, [], [], errors)
    assert len(errors) == 1 and "Unexpected running stats buffer(s)" in errors[0]


# -- local_response_norm -------------------------------------------------------------------------

LRN_CASES = [((2, 5, 3), 2, {}), ((2, 5, 3), 3, dict(alpha=0.5, beta=0.6, k=2.0)), ((1, 4, 3, 2), 4, dict(alpha=0.3)),
             ((2, 3, 2, 2, 3), 5, dict(alpha=1.0, beta=1.5)), ((3, 1, 7), 1, dict(alpha=2.0)), ((2, 7, 4), 7, {})]


@each_lib
@pytest.mark.parametrize("shape,size,kw", LRN_CASES, ids=str)
def test_local_response_norm_matches_the_window_reference(lib, shape, size, kw):
    a = RNG.standard_normal(shape) * 2
    x = _t(lib, a, True)
    out = lib.nn.functional.local_response_norm(x, size, **kw)
    np.testing.assert_allclose(_np(out), _ref_lrn(a, size, **kw), rtol=1e-12, atol=1e-14)
    assert type(out.grad_fn).__name__ == "DivBackward0"
    m = lib.nn.LocalResponseNorm(size, **kw)
    np.testing.assert_array_equal(_np(m(_t(lib, a))), _np(out))


def test_local_response_norm_gradcheck_and_gradgradcheck():
    for shape, size in (((2, 5, 3), 3), ((1, 4, 2, 3), 2)):
        x = cx.from_numpy(RNG.standard_normal(shape)).requires_grad_()
        fn = lambda x: cx.nn.functional.local_response_norm(x, size, alpha=0.5, beta=0.7, k=1.5)
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@each_lib
def test_local_response_norm_special_inputs(lib):
    F = lib.nn.functional
    empty = lib.ones(0, 5, 3)
    assert F.local_response_norm(empty, 3) is empty
    a = np.arange(24).reshape(2, 3, 4)
    out = F.local_response_norm(lib.from_numpy(a.copy()), 2)       # int64: avg_pool's integer (truncating) mean
    assert out.dtype == lib.float32
    div = np.zeros(a.shape, np.int64)
    for ch in range(3):
        div[:, ch] = (a[:, max(ch - 1, 0):ch + 1] ** 2).sum(axis=1) // 2
    np.testing.assert_allclose(_np(out), a / (1 + 1e-4 * div) ** 0.75, rtol=1e-6)
    assert repr(lib.nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("F.local_response_norm(torch.ones(2, 3), 2)", ValueError, "Expected 3D or higher dimensionality"),
    ("F.local_response_norm(x, 0)", RuntimeError, "kernel size should be greater than zero, but got kH: 0 kW: 1"),
    ("F.local_response_norm(torch.ones(2, 3, 4, dtype=torch.bool), 2)", NotImplementedError, "\"avg_pool2d\" not implemented for 'Bool'"),
    ("F.local_response_norm(torch.ones(2, 3, 4, 2, dtype=torch.int32), 2)", NotImplementedError, "\"avg_pool3d_out_frame\" not implemented for 'Int'"),
    ("F.local_response_norm(torch.ones(2, 3, 4, 2, 2).transpose(3, 4), 2)", RuntimeError, "view size is not compatible"),
])
def test_local_response_norm_errors(lib, expr, error, words):
    env = dict(torch=lib, F=lib.nn.functional, x=lib.ones(2, 4, 3))
    with pytest.raises(error, match=_escaped(words)):
        eval(expr, env)


# -- direct comparisons with torch ---------------------------------------------------------------------

@with_torch
@pytest.mark.parametrize("op", ["group", "instance", "lrn"])
def test_float32_values_and_gradients_match_torch(op):
    a = (RNG.standard_normal((3, 6, 4, 5)) * 5 + 2).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, 6).astype(np.float32)
    results = []
    for lib in (cx, real_torch):
        x = lib.from_numpy(a.copy()).requires_grad_()
        wt = lib.from_numpy(w.copy()).requires_grad_()
        F = lib.nn.functional
        if op == "group":
            out = F.group_norm(x, 3, wt, wt * 0.5)
        elif op == "instance":
            out = F.instance_norm(x, weight=wt)
        else:
            out = F.local_response_norm(x, 3, alpha=0.1) * wt.reshape(1, 6, 1, 1)
        out.backward(lib.from_numpy(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(out.shape)))
        results.append((_np(out), _np(x.grad), _np(wt.grad)))
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=2e-5)
