"""The CNN ops and layers against torch 2.13: values, gradients, output
shapes, reprs, state_dict loading, running stats, and which bad
arguments raise.  Skipped (saying why) when torch is not installed."""
import itertools

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
import cextend.nn.functional as F

torch = pytest.importorskip("torch", reason="torch is not installed: the torch-parity tests need it")
tF = torch.nn.functional

DTYPES = [(np.float32, cx.float32, torch.float32), (np.float64, cx.float64, torch.float64)]


def _close(ours, theirs, dtype, scale=1.0):
    theirs = theirs.detach().numpy()
    ours = ours.detach().numpy() if isinstance(ours, cx.Tensor) else ours
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    tol = 2e-5 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol * max(scale, np.abs(theirs).max(initial=1)))


def _run_both(fn_ours, fn_torch, arrays, dtype, grad=True):
    """Call both on the same values; compare outputs and input gradients."""
    ours = [None if a is None else cx.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    theirs = [None if a is None else torch.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    y, yt = fn_ours(*ours), fn_torch(*theirs)
    if isinstance(y, tuple):
        y, yt = y[0], yt[0]
    _close(y, yt, dtype)
    if grad:
        g = np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(cx.from_numpy(g))
        yt.backward(torch.from_numpy(g))
        for a, b in zip(ours, theirs):
            if a is not None:
                _close(a.grad, b.grad, dtype, scale=np.abs(g).sum() ** 0.5)


def _conv_cases():
    rng = np.random.default_rng(1)
    for _ in range(24):
        groups = int(rng.choice([1, 2]))
        c_in, c_out = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        stride = tuple(int(v) for v in rng.integers(1, 3, 2))
        padding = tuple(int(v) for v in rng.integers(0, 3, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        hw = tuple(int(v) for v in rng.choice([3, 5, 8], 2))
        if any(s + 2 * p < d * (kk - 1) + 1 for s, p, d, kk in zip(hw, padding, dilation, k)):
            continue
        yield (int(rng.choice([0, 1, 3])), c_in, c_out, hw, k, stride, padding, dilation, groups)


@pytest.mark.parametrize("dtype,_c,_t", DTYPES)
@pytest.mark.parametrize("case", list(_conv_cases()))
def test_conv2d_and_conv_transpose2d(case, dtype, _c, _t):
    n, c_in, c_out, hw, k, stride, padding, dilation, groups = case
    rng = np.random.default_rng(sum(hw) + c_in)
    x = rng.standard_normal((max(n, 1), c_in) + hw).astype(dtype)[:n]
    w = rng.standard_normal((c_out, c_in // groups) + k).astype(dtype)
    b = rng.standard_normal(c_out).astype(dtype)
    params = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _run_both(lambda x, w, b: F.conv2d(x, w, b, **params), lambda x, w, b: tF.conv2d(x, w, b, **params),
              [x, w, b], dtype)
    wt = rng.standard_normal((c_in, c_out // groups) + k).astype(dtype)
    output_padding = tuple(int(min(s, d) > 1) for s, d in zip(stride, dilation))
    tparams = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
    if all(((s - 1) * st - 2 * p + d * (kk - 1) + op + 1) > 0 for s, st, p, d, kk, op in
           zip(hw, stride, padding, dilation, k, output_padding)):
        _run_both(lambda x, w, b: F.conv_transpose2d(x, w, b, **tparams),
                  lambda x, w, b: tF.conv_transpose2d(x, w, b, **tparams), [x, wt, b], dtype)


@pytest.mark.parametrize("dtype,_c,_t", DTYPES)
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
def test_conv1d_same_padding_and_unbatched_inputs(dtype, _c, _t):
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in [(2, 4, 11), (6, 2, 4), (6,)])
    for params in [dict(stride=2, padding=1, dilation=2, groups=2), dict(padding="same", groups=2),
                   dict(padding="valid", groups=2)]:
        _run_both(lambda x, w, b: F.conv1d(x, w, b, **params), lambda x, w, b: tF.conv1d(x, w, b, **params),
                  [x, w, b], dtype)
        _run_both(lambda x, w, b: F.conv1d(x, w, b, **params), lambda x, w, b: tF.conv1d(x, w, b, **params),
                  [x[0], w, b], dtype)
    x2, w2 = rng.standard_normal((3, 6, 7)).astype(dtype), rng.standard_normal((2, 3, 4, 2)).astype(dtype)
    _run_both(lambda x, w: F.conv2d(x, w, padding="same", dilation=(1, 3)),
              lambda x, w: tF.conv2d(x, w, padding="same", dilation=(1, 3)), [x2, w2], dtype)


def _pool_cases():
    rng = np.random.default_rng(3)
    for _ in range(30):
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        padding = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in k)
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        yield k, stride, padding, dilation, bool(rng.integers(0, 2)), bool(rng.integers(0, 2))


@pytest.mark.parametrize("dtype,_c,_t", DTYPES)
@pytest.mark.parametrize("case", list(_pool_cases()))
def test_pooling(case, dtype, _c, _t):
    k, stride, padding, dilation, ceil_mode, count_include_pad = case
    rng = np.random.default_rng(sum(k) + sum(stride))
    x = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
    x[0, 0, 1, 1] = x[0, 0, 1, 2]                    # a tie
    try:
        expected = tF.max_pool2d(torch.from_numpy(x), k, stride, padding, dilation, ceil_mode, return_indices=True)
    except RuntimeError:
        with pytest.raises(ValueError):
            F.max_pool2d(cx.from_numpy(x), k, stride, padding, dilation, ceil_mode)
    else:
        values, indices = F.max_pool2d(cx.from_numpy(x), k, stride, padding, dilation, ceil_mode, return_indices=True)
        np.testing.assert_array_equal(values.numpy(), expected[0].numpy())
        np.testing.assert_array_equal(indices.numpy(), expected[1].numpy())
        _run_both(lambda x: F.max_pool2d(x, k, stride, padding, dilation, ceil_mode),
                  lambda x: tF.max_pool2d(x, k, stride, padding, dilation, ceil_mode), [x], dtype)
    for divisor in (None, 2):
        args = (k, stride, padding, ceil_mode, count_include_pad, divisor)
        try:
            tF.avg_pool2d(torch.from_numpy(x), *args)
        except RuntimeError:
            with pytest.raises(ValueError):
                F.avg_pool2d(cx.from_numpy(x), *args)
            continue
        _run_both(lambda x: F.avg_pool2d(x, *args), lambda x: tF.avg_pool2d(x, *args), [x], dtype)


@pytest.mark.parametrize("dtype,_c,_t", DTYPES)
def test_max_pool_nan_windows(dtype, _c, _t):
    x = np.random.default_rng(4).standard_normal((1, 2, 6, 6)).astype(dtype)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = x[0, 1, 3, 4] = np.nan
    ours = F.max_pool2d(cx.from_numpy(x), 3, 2, 1, return_indices=True)
    theirs = tF.max_pool2d(torch.from_numpy(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@pytest.mark.parametrize("dtype,_c,_t", DTYPES)
@pytest.mark.parametrize("output_size", [(3, 2), 1, (5, None), (9, 7), (None, 4)])
def test_adaptive_avg_pool2d(output_size, dtype, _c, _t):
    x = np.random.default_rng(5).standard_normal((2, 3, 7, 6)).astype(dtype)
    _run_both(lambda x: F.adaptive_avg_pool2d(x, output_size), lambda x: tF.adaptive_avg_pool2d(x, output_size),
              [x], dtype)
    _run_both(lambda x: F.adaptive_avg_pool2d(x, output_size), lambda x: tF.adaptive_avg_pool2d(x, output_size),
              [x[0]], dtype)


@pytest.mark.parametrize("dtype,cdt,tdt", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (3, 3, 4, 5)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, training, dtype, cdt, tdt):
    rng = np.random.default_rng(6)
    x = (2 + 3 * rng.standard_normal(shape)).astype(dtype)
    w, b = rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype)
    rm, rv = rng.standard_normal(3).astype(dtype), rng.uniform(0.5, 2, 3).astype(dtype)
    ours_rm, ours_rv = cx.from_numpy(rm.copy()), cx.from_numpy(rv.copy())
    theirs_rm, theirs_rv = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    _run_both(lambda x, w, b: F.batch_norm(x, ours_rm, ours_rv, w, b, training, 0.3, 1e-3),
              lambda x, w, b: tF.batch_norm(x, theirs_rm, theirs_rv, w, b, training, 0.3, 1e-3), [x, w, b], dtype)
    _close(ours_rm, theirs_rm, dtype)
    _close(ours_rv, theirs_rv, dtype)


# -- modules ------------------------------------------------------------------------------

MODULES = [
    ("Conv1d", (3, 4, 3), dict(stride=2, padding=1, dilation=2)),
    ("Conv2d", (3, 4, 3), {}),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=2, padding=(1, 0), dilation=(1, 2), groups=2, bias=False)),
    ("Conv2d", (3, 4, 3), dict(padding="same")),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", (3, 2, 1, 2, False, True), {}),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("AdaptiveAvgPool2d", ((2, None),), {}),
    ("BatchNorm1d", (4,), dict(momentum=None)),
    ("BatchNorm2d", (4,), {}),
    ("BatchNorm2d", (4,), dict(affine=False, track_running_stats=False)),
    ("BatchNorm2d", (4,), dict(bias=False, eps=1e-3, momentum=0.5)),
]
INPUTS = {"Conv1d": (2, 3, 9), "Conv2d": (2, 3, 8, 7), "ConvTranspose2d": (2, 4, 5, 4), "MaxPool2d": (2, 3, 8, 7),
          "AvgPool2d": (2, 3, 8, 7), "AdaptiveAvgPool2d": (2, 3, 8, 7), "BatchNorm1d": (5, 4, 3),
          "BatchNorm2d": (3, 4, 5, 2)}


def _module_input(name, args, dtype, seed):
    shape = INPUTS[name]
    if name == "Conv2d" and args[0] == 4:
        shape = (2, 4, 8, 7)
    return (1 + 2 * np.random.default_rng(seed).standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=["%s-%d" % (m[0], i) for i, m in enumerate(MODULES)])
def test_module_repr_matches_torch(name, args, kwargs):
    assert repr(getattr(nn, name)(*args, **kwargs)) == repr(getattr(torch.nn, name)(*args, **kwargs))


@pytest.mark.parametrize("dtype,cdt,tdt", DTYPES)
@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=["%s-%d" % (m[0], i) for i, m in enumerate(MODULES)])
def test_module_loads_a_torch_state_dict_and_agrees_in_train_and_eval(name, args, kwargs, dtype, cdt, tdt):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **kwargs).to(tdt)
    ours = getattr(nn, name)(*args, **kwargs, **({"dtype": cdt} if name.startswith(("Conv", "Batch")) else {}))
    # a torch state_dict's values, as numpy arrays wrapped in cextend tensors
    state = {k: cx.tensor(v.numpy()) for k, v in theirs.state_dict().items()}
    assert sorted(state) == sorted(ours.state_dict())
    ours.load_state_dict(state)
    for step in range(3):                               # training steps move the running stats
        x = _module_input(name, args, dtype, step)
        xt = torch.from_numpy(x).requires_grad_()
        xo = cx.from_numpy(x.copy()).requires_grad_()
        y, yt = ours(xo), theirs(xt)
        _close(y, yt, dtype)
        y.sum().backward()
        yt.sum().backward()
        _close(xo.grad, xt.grad, dtype)
        for (key, p), (_, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
            _close(p.grad, pt.grad, dtype, scale=10)
    for (key, value), (tkey, tvalue) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert key == tkey
        if value.dtype is cx.int64:
            assert value.item() == tvalue.item()                # num_batches_tracked
        else:
            _close(value, tvalue, dtype)
    ours.eval()
    theirs.eval()
    x = _module_input(name, args, dtype, 9)
    _close(ours(cx.from_numpy(x)), theirs(torch.from_numpy(x)), dtype)


@pytest.mark.parametrize("name,args", [("Conv1d", (3, 8, 5)), ("Conv2d", (6, 8, (3, 2))),
                                       ("Conv2d", (6, 8, 3)), ("ConvTranspose2d", (6, 8, 3))])
def test_initialisation_uses_torchs_bounds(name, args):
    cx.manual_seed(0)        # the bias has few values: unseeded, "max > half the bound" fails 1 run in 256
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert ours.weight.shape == tuple(theirs.weight.shape) and ours.weight.dtype is cx.float32
    fan_in = theirs.weight.shape[1] * int(np.prod(theirs.weight.shape[2:]))
    for p in (ours.weight, ours.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= 1 / np.sqrt(fan_in) and np.abs(values).max() > 0.5 / np.sqrt(fan_in)
    assert ours.weight.requires_grad and ours.bias.requires_grad
    bn = nn.BatchNorm2d(5)
    assert bn.weight.tolist() == [1.0] * 5 and bn.bias.tolist() == [0.0] * 5
    assert bn.num_batches_tracked.dtype is cx.int64 and bn.num_batches_tracked.dim() == 0


def test_conv_transpose2d_output_size():
    ours, theirs = nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    ours.load_state_dict({k: cx.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(7).standard_normal((1, 2, 4, 5)).astype(np.float32)
    for size in [(9, 11), (10, 12), (1, 3, 10, 11)]:
        _close(ours(cx.from_numpy(x), output_size=size), theirs(torch.from_numpy(x), output_size=size), np.float32)
    with pytest.raises(ValueError, match="requested an output size"):
        ours(cx.from_numpy(x), output_size=(12, 12))
    with pytest.raises(ValueError):
        theirs(torch.from_numpy(x), output_size=(12, 12))


def test_batchnorm_momentum_none_is_a_cumulative_average():
    ours, theirs = nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2, momentum=None)
    rng = np.random.default_rng(8)
    for _ in range(4):
        x = rng.standard_normal((6, 2)).astype(np.float32)
        ours(cx.from_numpy(x))
        theirs(torch.from_numpy(x))
    _close(ours.running_mean, theirs.running_mean, np.float32)
    _close(ours.running_var, theirs.running_var, np.float32)
    assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 4


def test_batchnorm_counts_batches_as_torch_does():
    """Each training forward adds 1 to num_batches_tracked in place, bumping its version once, as
    torch's add_(1); a counter swapped for a view of a larger buffer still counts, in that buffer."""
    ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    x = np.random.default_rng(9).standard_normal((4, 3, 2, 2)).astype(np.float32)
    counter, tcounter = ours.num_batches_tracked, theirs.num_batches_tracked
    versions = counter._version, tcounter._version
    for _ in range(3):
        ours(cx.from_numpy(x))
        theirs(torch.from_numpy(x))
    assert counter.item() == tcounter.item() == 3
    assert counter._version - versions[0] == tcounter._version - versions[1] == 3
    ours.eval()
    theirs.eval()
    ours(cx.from_numpy(x))
    theirs(torch.from_numpy(x))
    assert counter.item() == tcounter.item() == 3
    ours.train()
    shared = cx.zeros(2, dtype=cx.int64)
    ours.num_batches_tracked = shared[1]
    ours(cx.from_numpy(x))
    assert shared.tolist() == [0, 1]


# -- the same bad arguments raise ------------------------------------------------------------

def _bad_calls(lib, F_):
    """(description, thunk) pairs with the same values in either library."""
    t = (lambda *s: lib.zeros(*s)) if lib is torch else (lambda *s: cx.zeros(*s))
    return [
        ("kernel larger than input", lambda: F_.conv2d(t(1, 1, 2, 2), t(1, 1, 3, 3))),
        ("channel mismatch", lambda: F_.conv2d(t(1, 2, 3, 3), t(1, 3, 2, 2))),
        ("groups not dividing", lambda: F_.conv2d(t(1, 4, 3, 3), t(3, 2, 3, 3), groups=2)),
        ("negative padding", lambda: F_.conv2d(t(1, 2, 3, 3), t(1, 2, 2, 2), padding=-1)),
        ("zero stride", lambda: F_.conv2d(t(1, 2, 3, 3), t(1, 2, 2, 2), stride=0)),
        ("same with stride", lambda: F_.conv2d(t(1, 2, 3, 3), t(1, 2, 2, 2), padding="same", stride=2)),
        ("bias size", lambda: F_.conv2d(t(1, 2, 3, 3), t(1, 2, 2, 2), t(2))),
        ("2-D input", lambda: F_.conv2d(t(3, 3), t(1, 1, 2, 2))),
        ("output padding", lambda: F_.conv_transpose2d(t(1, 2, 3, 3), t(2, 3, 2, 2), stride=2, output_padding=2)),
        ("transposed channels", lambda: F_.conv_transpose2d(t(1, 2, 3, 3), t(3, 3, 2, 2))),
        ("pool pad too large", lambda: F_.max_pool2d(t(1, 1, 3, 3), 2, padding=2)),
        ("pool output too small", lambda: F_.max_pool2d(t(1, 1, 3, 3), 4)),
        ("pool zero kernel", lambda: F_.avg_pool2d(t(1, 1, 3, 3), 0)),
        ("zero divisor", lambda: F_.avg_pool2d(t(1, 1, 5, 5), 2, divisor_override=0)),
        ("pool empty channels", lambda: F_.max_pool2d(t(1, 0, 3, 3), 2)),
        ("adaptive empty plane", lambda: F_.adaptive_avg_pool2d(t(1, 2, 0, 3), 2)),
        ("bn one value", lambda: F_.batch_norm(t(1, 2), None, None, training=True)),
        ("bn eval without stats", lambda: F_.batch_norm(t(2, 2, 3), None, None, training=False)),
        ("bn wrong stats size", lambda: F_.batch_norm(t(2, 3), t(2), t(3), training=True)),
    ]


@pytest.mark.parametrize("index", range(len(_bad_calls(torch, tF))))
def test_the_same_bad_arguments_raise(index):
    description, theirs = _bad_calls(torch, tF)[index]
    _, ours = _bad_calls(cx, F)[index]
    with pytest.raises(Exception):
        theirs()
    with pytest.raises((ValueError, TypeError, RuntimeError)):
        ours()


def test_module_constructor_errors_match_torch():
    for args, kwargs in [((4, 6, 3), dict(groups=4)), ((3, 6, 3), dict(groups=2)), ((3, 4, 3), dict(padding="full")),
                         ((3, 4, 3), dict(padding="same", stride=2)), ((3, 4, 3), dict(padding_mode="mirror"))]:
        with pytest.raises(ValueError):
            torch.nn.Conv2d(*args, **kwargs)
        with pytest.raises(ValueError):
            nn.Conv2d(*args, **kwargs)
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(cx.zeros(2, 3))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(cx.zeros(2, 3, 4, 4))


def test_a_small_cnn_trains_like_torch():
    """The same model, weights and data give the same loss trajectory."""
    def model(lib):
        return lib.Sequential(lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(), lib.MaxPool2d(2),
                              lib.Conv2d(4, 6, 3), lib.AdaptiveAvgPool2d(1))
    theirs, ours = model(torch.nn).double(), model(nn).double()
    ours.load_state_dict({k: cx.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(9)
    for _ in range(5):
        x = rng.standard_normal((4, 1, 8, 8))
        y, yt = ours(cx.from_numpy(x)), theirs(torch.from_numpy(x))
        loss, loss_t = (y * y).sum(), (yt * yt).sum()
        loss.backward()
        loss_t.backward()
        assert abs(loss.item() - loss_t.item()) <= 1e-9 * max(1, abs(loss_t.item()))
        with cx.no_grad(), torch.no_grad():
            for p, pt in itertools.zip_longest(ours.parameters(), theirs.parameters()):
                # (the first conv's bias gradient is 0 up to rounding: batch norm removes it)
                np.testing.assert_allclose(p.grad.numpy(), pt.grad.numpy(), rtol=1e-8,
                                           atol=1e-8 * (1 + abs(loss_t.item())))
                p -= 0.1 * p.grad
                pt -= 0.1 * pt.grad
                p.grad, pt.grad = None, None


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("name,args,kwargs", [("Conv2d", (2, 3, 3), dict(padding=1)),
                                              ("Conv2d", (2, 3, (2, 3)), dict(padding=(2, 1), stride=(1, 2))),
                                              ("Conv2d", (2, 4, 4), dict(padding="same", dilation=(1, 2))),
                                              ("Conv1d", (2, 3, 4), dict(padding=3))])
def test_padding_modes(name, args, kwargs, mode):
    theirs = getattr(torch.nn, name)(*args, padding_mode=mode, **kwargs).double()
    ours = getattr(nn, name)(*args, padding_mode=mode, **kwargs).double()
    ours.load_state_dict({k: cx.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    shape = (2, 2, 5, 6) if name == "Conv2d" else (2, 2, 7)
    x = np.random.default_rng(11).standard_normal(shape)
    xo, xt = cx.from_numpy(x.copy()).requires_grad_(), torch.from_numpy(x.copy()).requires_grad_()
    y, yt = ours(xo), theirs(xt)
    _close(y, yt, np.float64)
    g = np.random.default_rng(12).standard_normal(tuple(y.shape))
    y.backward(cx.from_numpy(g))
    yt.backward(torch.from_numpy(g))
    _close(xo.grad, xt.grad, np.float64)
    _close(ours.weight.grad, theirs.weight.grad, np.float64)


def test_padding_mode_errors_match_torch():
    with pytest.raises(ValueError, match="Padding size should be less than"):
        nn.Conv2d(1, 1, 3, padding=5, padding_mode="reflect")(cx.zeros(1, 1, 4, 4))
    with pytest.raises(RuntimeError):
        torch.nn.Conv2d(1, 1, 3, padding=5, padding_mode="reflect")(torch.zeros(1, 1, 4, 4))
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
    with pytest.raises(ValueError):
        torch.nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
