"""nn.RNN, nn.LSTM, nn.GRU and their cells: against a numpy float64
reference always, and against torch 2.13 where installed (weights copied
from torch; outputs, final states and every gradient: float64 to 1e-10,
float32 to torch's float32 tolerances), across layers, directions,
batch_first, unbatched input, given or default states, bias and
proj_size; gradcheck and gradgradcheck of a 2-layer bidirectional LSTM and
GRU; parameter names, shapes and init, state_dicts both ways, torch's
argument checks, and the refusal of CUDA tensors."""
import warnings

import numpy as np
import pytest

import cextend
import rnn_reference as ref
from cextend.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:     # the numpy references still run; the torch comparisons skip
    torch = None

with_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: cross-check skipped")
MODES = {"LSTM": "LSTM", "GRU": "GRU", "RNN": "RNN_TANH", "RNN_relu": "RNN_RELU"}


def _make(lib, kind, dtype, **kw):
    nn = lib.nn
    if kind == "RNN_relu":
        return nn.RNN(nonlinearity="relu", **kw).to(dtype)
    return getattr(nn, kind)(**kw).to(dtype)


def _dtype(lib, name):
    return getattr(lib, name)


# (kind, num_layers, bidirectional, batch_first, batched, given state, bias, proj_size)
CONFIGS = [
    ("LSTM", 1, False, False, True, False, True, 0),
    ("LSTM", 2, True, False, True, True, True, 0),
    ("LSTM", 3, False, True, True, True, False, 0),
    ("LSTM", 2, True, True, False, True, True, 0),
    ("LSTM", 2, True, False, True, True, True, 2),
    ("GRU", 1, True, True, True, True, True, 0),
    ("GRU", 3, True, False, True, False, True, 0),
    ("GRU", 2, False, False, False, False, False, 0),
    ("RNN", 2, True, False, True, True, True, 0),
    ("RNN_relu", 3, False, True, True, False, True, 0),
    ("RNN", 1, False, False, False, True, False, 0),
]
LONG_CONFIGS = [
    ("LSTM", 3, True, True, True, False, True, 0), ("GRU", 3, True, True, False, True, True, 0),
    ("RNN_relu", 2, True, True, True, True, False, 0), ("LSTM", 3, True, True, True, True, False, 1),
    ("GRU", 2, True, False, True, True, False, 0),
]
ALL_CONFIGS = [pytest.param(*c, id="-".join(map(str, c))) for c in CONFIGS] + \
    [pytest.param(*c, id="-".join(map(str, c)), marks=pytest.mark.long_run) for c in LONG_CONFIGS]
T, B, IN, H = 5, 3, 4, 3


def _inputs(rng, kind, num_layers, bidirectional, batch_first, batched, given, proj):
    x = rng.standard_normal((B, T, IN) if batch_first else (T, B, IN))
    if not batched:
        x = x[:, 0] if batch_first else x[:, 0]
    states = None
    if given:
        d = 2 if bidirectional else 1
        batch_shape = (B,) if batched else ()
        states = [rng.standard_normal((num_layers * d,) + batch_shape + (proj or H,))]
        if kind == "LSTM":
            states.append(rng.standard_normal((num_layers * d,) + batch_shape + (H,)))
    return x, states


def _run(lib, module, x, states, kind, dtype="float64"):
    """Forward and backward of a scalar loss of every output: (output, final states, x.grad, state grads)."""
    xt = lib.tensor(x).to(_dtype(lib, dtype)).requires_grad_()
    hx = None
    if states is not None:
        hx = [lib.tensor(s).to(_dtype(lib, dtype)).requires_grad_() for s in states]
    out, final = module(xt, None if hx is None else (tuple(hx) if kind == "LSTM" else hx[0]))
    finals = list(final) if kind == "LSTM" else [final]
    loss = (out * out).sum() + sum((0.5 + i) * (f * f).sum() for i, f in enumerate(finals))
    loss.backward()
    arrays = [out] + finals + [xt.grad] + ([] if hx is None else [h.grad for h in hx])
    return [a.detach().numpy().astype(np.float64) for a in arrays]


def _kwargs(num_layers, bidirectional, batch_first, bias, proj):
    kw = dict(input_size=IN, hidden_size=H, num_layers=num_layers, bidirectional=bidirectional,
              batch_first=batch_first, bias=bias)
    if proj:
        kw["proj_size"] = proj
    return kw


@pytest.mark.parametrize("kind,num_layers,bidirectional,batch_first,batched,given,bias,proj", ALL_CONFIGS)
def test_layers_match_the_numpy_reference(kind, num_layers, bidirectional, batch_first, batched, given, bias, proj):
    rng = np.random.default_rng(num_layers * 7 + bidirectional)
    cextend.manual_seed(3)
    module = _make(cextend, kind, cextend.float64, **_kwargs(num_layers, bidirectional, batch_first, bias, proj))
    x, states = _inputs(rng, kind, num_layers, bidirectional, batch_first, batched, given, proj)
    out, final = module(cextend.tensor(x), None if states is None else
                        (tuple(cextend.tensor(s) for s in states) if kind == "LSTM" else cextend.tensor(states[0])))
    weights = {name: p.detach().numpy() for name, p in module.named_parameters()}
    xr = x if batched else x[:, None] if not batch_first else x[None]
    if batch_first:
        xr = xr.transpose(1, 0, 2)
    d = 2 if bidirectional else 1
    if states is None:
        hr = [np.zeros((num_layers * d, xr.shape[1], proj or H))]
        hr += [np.zeros((num_layers * d, xr.shape[1], H))] if kind == "LSTM" else []
    else:
        hr = [s if batched else s[:, None] for s in states]
    expected, expected_final = ref.layers(MODES[kind], weights, xr, hr if kind == "LSTM" else hr[0], num_layers,
                                          bidirectional)
    if batch_first:
        expected = expected.transpose(1, 0, 2)
    if not batched:
        expected = expected[0] if batch_first else expected[:, 0]
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
    finals = final if kind == "LSTM" else (final,)
    expected_finals = expected_final if kind == "LSTM" else (expected_final,)
    for f, e in zip(finals, expected_finals):
        np.testing.assert_allclose(f.detach().numpy(), e if batched else e[:, 0], rtol=1e-12, atol=1e-12)


def _pair(kind, kw, dtype):
    """A torch module and a cextend module holding its weights."""
    torch.manual_seed(0)
    theirs = _make(torch, kind, getattr(torch, dtype), **kw)
    ours = _make(cextend, kind, getattr(cextend, dtype), **kw)
    ours.load_state_dict({k: cextend.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@with_torch
@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("kind,num_layers,bidirectional,batch_first,batched,given,bias,proj", ALL_CONFIGS)
def test_layers_match_torch_with_every_gradient(kind, num_layers, bidirectional, batch_first, batched, given, bias,
                                                proj):
    rng = np.random.default_rng(num_layers * 11 + batch_first)
    kw = _kwargs(num_layers, bidirectional, batch_first, bias, proj)
    x, states = _inputs(rng, kind, num_layers, bidirectional, batch_first, batched, given, proj)
    for dtype, tol in (("float64", dict(rtol=1e-10, atol=1e-10)), ("float32", dict(rtol=1.3e-6, atol=1e-5))):
        ours, theirs = _pair(kind, kw, dtype)
        got, want = _run(cextend, ours, x, states, kind, dtype), _run(torch, theirs, x, states, kind, dtype)
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, **tol)
        for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert name == tname
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), err_msg=name,
                                       **(tol if dtype == "float64" else dict(rtol=1e-4, atol=2e-5)))


def _small_bidirectional(kind, size, seed=12):
    """A 2-layer bidirectional layer and fn(x, h0, c0, *weights) -> its outputs, where
    the weights are the module's own parameters (gradcheck perturbs its inputs in place)."""
    rng = np.random.default_rng(seed)
    cextend.manual_seed(4)
    steps, batch, features, hidden = size
    module = getattr(cextend.nn, kind)(features, hidden, num_layers=2, bidirectional=True).double()
    x = cextend.tensor(rng.standard_normal((steps, batch, features))).requires_grad_()
    h0, c0 = (cextend.tensor(rng.standard_normal((4, batch, hidden))).requires_grad_() for _ in range(2))

    def fn(x, h0, c0, *weights):
        out, final = module(x, (h0, c0) if kind == "LSTM" else h0)
        return (out,) + (tuple(final) if kind == "LSTM" else (final,))
    return fn, (x, h0, c0), list(module.parameters())


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_two_layer_bidirectional_gradcheck_and_gradgradcheck(kind):
    fn, inputs, params = _small_bidirectional(kind, (2, 1, 2, 1))
    assert gradcheck(fn, inputs + tuple(params))
    # second order through the Tensor-op backward of the fused cells: the inputs, the
    # states and a recurrent, an input and a bias weight of both layers and directions
    assert gradgradcheck(fn, inputs + (params[1], params[8], params[11]), fast_mode=True)


@pytest.mark.long_run
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_two_layer_bidirectional_gradgradcheck_of_every_weight(kind):
    fn, inputs, params = _small_bidirectional(kind, (2, 2, 2, 1), seed=13)
    assert gradcheck(fn, inputs + tuple(params))
    assert gradgradcheck(fn, inputs + tuple(params))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_parameters_are_torchs_names_shapes_and_init(kind):
    module = getattr(cextend.nn, kind)(5, 4, num_layers=2, bidirectional=True)
    d = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind] * 4
    expected = []
    for layer in range(2):
        for sfx in ("", "_reverse"):
            expected += [("weight_ih_l%d%s" % (layer, sfx), (d, 5 if layer == 0 else 8)),
                         ("weight_hh_l%d%s" % (layer, sfx), (d, 4)),
                         ("bias_ih_l%d%s" % (layer, sfx), (d,)), ("bias_hh_l%d%s" % (layer, sfx), (d,))]
    assert [(n, tuple(p.shape)) for n, p in module.named_parameters()] == expected
    assert list(module.state_dict()) == [n for n, _ in expected]
    assert module._flat_weights_names == [n for n, _ in expected]
    assert [[tuple(w.shape) for w in ws] for ws in module.all_weights][0] == [s for _, s in expected[:4]]
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert values.dtype == np.float32 and np.abs(values).max() <= 0.5 and values.std() > 0.2   # U(-1/2, 1/2)
    assert module.flatten_parameters() is None
    lstm = cextend.nn.LSTM(3, 4, proj_size=2, bias=False)
    assert [(n, tuple(p.shape)) for n, p in lstm.named_parameters()] == [
        ("weight_ih_l0", (16, 3)), ("weight_hh_l0", (16, 2)), ("weight_hr_l0", (2, 4))]


@with_torch
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_state_dicts_load_both_ways_and_reprs_match(kind):
    kw = dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True, batch_first=True, dropout=0.25)
    if kind == "LSTM":
        kw["proj_size"] = 2
    theirs = getattr(torch.nn, kind)(**kw)
    ours = getattr(cextend.nn, kind)(**kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: cextend.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    for (n, p), (_, q) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=n)
    back = getattr(torch.nn, kind)(**kw)
    back.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    assert repr(ours) == repr(theirs)
    for cell in ("RNNCell", "LSTMCell", "GRUCell"):
        assert repr(getattr(cextend.nn, cell)(3, 4, bias=False)) == repr(getattr(torch.nn, cell)(3, 4, bias=False))
    assert repr(cextend.nn.RNNCell(3, 4, nonlinearity="relu")) == repr(torch.nn.RNNCell(3, 4, nonlinearity="relu"))


def _message(lib, program):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program(lib)
    except Exception as error:          # the type and message are what is compared
        return type(error).__name__, str(error).replace("torch.", "").replace("cextend.", "")
    return None


ERRORS = {
    "input size": (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 6)),
                   ("RuntimeError", "input.size(-1) must be equal to input_size. Expected 3, got 6")),
    "hidden size": (lambda lib: lib.nn.GRU(3, 4)(lib.zeros(5, 2, 3), lib.zeros(1, 2, 5)),
                    ("RuntimeError", "Expected hidden size (1, 2, 4), got [1, 2, 5]")),
    "hidden batch": (lambda lib: lib.nn.RNN(3, 4, 2)(lib.zeros(5, 2, 3), lib.zeros(2, 3, 4)),
                     ("RuntimeError", "Expected hidden size (2, 2, 4), got [2, 3, 4]")),
    "cell size": (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 3), (lib.zeros(1, 2, 4), lib.zeros(1, 2, 3))),
                  ("RuntimeError", "Expected hidden[1] size (1, 2, 4), got [1, 2, 3]")),
    "4-d input": (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 3, 1)),
                  ("ValueError", "LSTM: Expected input to be 2D or 3D, got 4D instead")),
    "rnn 1-d input": (lambda lib: lib.nn.RNN(3, 4)(lib.zeros(3)),
                      ("ValueError", "RNN: Expected input to be 2D or 3D, got 1D tensor instead")),
    "unbatched hx": (lambda lib: lib.nn.GRU(3, 4)(lib.zeros(5, 3), lib.zeros(1, 2, 4)),
                     ("RuntimeError", "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor")),
    "batched hx": (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 3), (lib.zeros(1, 4), lib.zeros(1, 4))),
                   ("RuntimeError", "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors")),
    "dtype": (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 3, dtype=lib.float64)),
              ("ValueError", "RNN input dtype (float64) does not match weight dtype (float32). Convert input: "
                             "input.to(float32), or convert model: model.to(float64)")),
    "proj_size": (lambda lib: lib.nn.LSTM(3, 4, proj_size=4),
                  ("ValueError", "proj_size has to be smaller than hidden_size")),
    "gru proj_size": (lambda lib: lib.nn.GRU(3, 4, proj_size=2),
                      ("ValueError", "proj_size argument is only supported for LSTM, not RNN or GRU")),
    "dropout": (lambda lib: lib.nn.LSTM(3, 4, dropout=1.5),
                ("ValueError", "dropout should be a number in range [0, 1] representing the probability of an "
                               "element being zeroed")),
    "nonlinearity": (lambda lib: lib.nn.RNN(3, 4, nonlinearity="sigmoid"),
                     ("ValueError", "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'.")),
    "hidden_size": (lambda lib: lib.nn.LSTM(3, 0), ("ValueError", "hidden_size must be greater than zero")),
    "no steps": (lambda lib: lib.nn.GRU(3, 4, batch_first=True)(lib.zeros(2, 0, 3)),
                 ("RuntimeError", "Expected sequence length to be larger than 0 in RNN")),
    "cell input": (lambda lib: lib.nn.LSTMCell(3, 4)(lib.zeros(2, 3, 3)),
                   ("ValueError", "LSTMCell: Expected input to be 1D or 2D, got 3D instead")),
    "cell input size": (lambda lib: lib.nn.GRUCell(3, 4)(lib.zeros(2, 5)),
                        ("RuntimeError", "input has inconsistent input_size: got 5 expected 3")),
    "cell hidden": (lambda lib: lib.nn.RNNCell(3, 4)(lib.zeros(2, 3), lib.zeros(3, 4)),
                    ("RuntimeError", "Input batch size 2 doesn't match hidden0 batch size 3")),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_argument_checks_say_what_torch_says(case):
    program, expected = ERRORS[case]
    assert _message(cextend, program) == expected
    if torch is not None:
        assert _message(torch, program) == expected


def test_dropout_on_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        cextend.nn.GRU(3, 4, dropout=0.5)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_the_numpy_reference_and_torch(kind):
    rng = np.random.default_rng(13)
    cextend.manual_seed(5)
    ours = getattr(cextend.nn, kind)(4, 3).double()
    weights = {n: p.detach().numpy() for n, p in ours.named_parameters()}
    x, h, c = rng.standard_normal((2, 4)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    ig = x @ weights["weight_ih"].T + weights["bias_ih"]
    hg = h @ weights["weight_hh"].T + weights["bias_hh"]
    state = (cextend.tensor(h), cextend.tensor(c)) if kind == "LSTMCell" else cextend.tensor(h)
    got = ours(cextend.tensor(x), state)
    if kind == "LSTMCell":
        want = ref.lstm_cell(ig, hg, c)[:2]
    elif kind == "GRUCell":
        want = (ref.gru_cell(ig, hg, h)[0],)
    else:
        want = (np.tanh(ig + hg),)
    for g, w in zip(got if kind == "LSTMCell" else (got,), want):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-12)
    unbatched = ours(cextend.tensor(x[0]), None)
    zero = (np.zeros((1, 3)), np.zeros((1, 3))) if kind == "LSTMCell" else np.zeros((1, 3))
    full = ours(cextend.tensor(x[:1]), tuple(cextend.tensor(z) for z in zero) if kind == "LSTMCell"
                else cextend.tensor(zero))
    for u, f in zip(unbatched if kind == "LSTMCell" else (unbatched,), full if kind == "LSTMCell" else (full,)):
        assert u.shape == (3,)
        np.testing.assert_array_equal(u.detach().numpy(), f.detach().numpy()[0])
    if torch is None:
        return
    theirs = getattr(torch.nn, kind)(4, 3).double()
    ours.load_state_dict({k: cextend.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    tstate = (torch.tensor(h), torch.tensor(c)) if kind == "LSTMCell" else torch.tensor(h)
    for g, w in zip(*[r if kind == "LSTMCell" else (r,) for r in
                      (ours(cextend.tensor(x), state), theirs(torch.tensor(x), tstate))]):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_outputs_are_torchs_views_and_nodes():
    lstm = cextend.nn.LSTM(3, 4, batch_first=True)
    out, (h, c) = lstm(cextend.randn(2, 5, 3))
    assert out.shape == (2, 5, 4) and not out.is_contiguous()       # torch's transpose of the time-major output
    assert h.shape == c.shape == (1, 2, 4) and out.requires_grad
    with cextend.no_grad():
        out, (h, c) = lstm(cextend.randn(2, 5, 3))
    assert not out.requires_grad and out.grad_fn is None
    out, (h, c) = cextend.nn.LSTM(3, 4, bidirectional=True)(cextend.zeros(4, 0, 3))      # an empty batch
    assert out.shape == (4, 0, 8) and h.shape == c.shape == (2, 0, 4)


def test_modules_refuse_cuda_tensors_naming_the_layer():
    from cextend import _device
    from host_device import HostRuntime
    previous = _device.use_runtime(HostRuntime())
    try:
        for module, args in ((cextend.nn.LSTM(3, 4), (cextend.zeros(5, 2, 3).cuda(),)),
                             (cextend.nn.GRU(3, 4).cuda(), (cextend.zeros(5, 2, 3).cuda(),)),
                             (cextend.nn.RNN(3, 4).cuda(), (cextend.zeros(5, 2, 3),)),
                             (cextend.nn.LSTMCell(3, 4), (cextend.zeros(2, 3).cuda(),))):
            name = type(module).__name__
            with pytest.raises(RuntimeError, match=r"%s has no CUDA kernels .*: \w+ is on cuda:0; move the module "
                                                   r"and its inputs with \.cpu\(\)" % name):
                module(*args)
        with pytest.raises(RuntimeError, match=r"_thnn_fused_lstm_cell has no CUDA kernel: input_gates is on cuda:0"):
            cextend._thnn_fused_lstm_cell(cextend.zeros(2, 8).cuda(), cextend.zeros(2, 8).cuda(),
                                          cextend.zeros(2, 2).cuda())
    finally:
        _device.use_runtime(previous)
