"""The recurrent cells' C kernels (src/rnn.c) and their ops
(cextend/_ops/recurrent.py): against numpy float64 references on awkward
sizes in both dtypes, illegal arguments named by the C API, the same bits
for any instruction set and thread count, the activations' accuracy, and
gradcheck / gradgradcheck of the fused ops and the cells.  Layers and
packed sequences: test_rnn_modules.py, test_rnn_packed.py; training:
test_rnn_training.py."""
import numpy as np
import pytest

import cextend
import rnn_reference as ref
from cextend import _backend
from cextend._C import ffi, lib
from cextend._ops import recurrent
from cextend.autograd import gradcheck, gradgradcheck

CTYPES = {np.float32: "float *", np.float64: "double *"}
SFX = {np.float32: "f32", np.float64: "f64"}
# (batch, hidden): empty either way, one, odd, prime, and large enough to use several threads
SIZES = [(0, 3), (4, 0), (1, 1), (3, 5), (7, 13), (13, 31), (64, 257)]


def _ptr(dtype, arr):
    return ffi.NULL if arr is None else ffi.cast(CTYPES[dtype], arr.ctypes.data)


def _poisoned(dtype, *shape):
    return np.full(shape, np.nan, dtype)


def _tolerance(dtype):
    return dict(rtol=1e-13, atol=1e-14) if dtype == np.float64 else dict(rtol=2e-6, atol=2e-6)


def _lstm_forward(dtype, ig, hg, cx, ib=None, hb=None, ld_i=None, ld_h=None):
    """The C forward on numpy arrays (rows of the gates may be strided), outputs NaN-poisoned first."""
    batch, hidden = cx.shape
    hy, cy, ws = (_poisoned(dtype, batch, hidden), _poisoned(dtype, batch, hidden),
                  _poisoned(dtype, batch, 4 * hidden))
    status = getattr(lib, "cextend_lstm_cell_forward_" + SFX[dtype])(
        batch, hidden, _ptr(dtype, ig), ld_i or max(1, 4 * hidden), _ptr(dtype, hg), ld_h or max(1, 4 * hidden),
        _ptr(dtype, ib), _ptr(dtype, hb), _ptr(dtype, cx), _ptr(dtype, hy), _ptr(dtype, cy), _ptr(dtype, ws))
    assert status == 0, ffi.string(lib.cextend_last_error())
    return hy, cy, ws


def _gru_forward(dtype, ig, hg, hx, ib=None, hb=None, ld_i=None, ld_h=None):
    batch, hidden = hx.shape
    hy, ws = _poisoned(dtype, batch, hidden), _poisoned(dtype, batch, 5 * hidden)
    status = getattr(lib, "cextend_gru_cell_forward_" + SFX[dtype])(
        batch, hidden, _ptr(dtype, ig), ld_i or max(1, 3 * hidden), _ptr(dtype, hg), ld_h or max(1, 3 * hidden),
        _ptr(dtype, ib), _ptr(dtype, hb), _ptr(dtype, hx), _ptr(dtype, hy), _ptr(dtype, ws))
    assert status == 0, ffi.string(lib.cextend_last_error())
    return hy, ws


# -- the kernels against numpy --------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batch,hidden", SIZES)
def test_lstm_kernels_match_numpy(dtype, batch, hidden):
    rng = np.random.default_rng(batch * 100 + hidden)
    ig, hg = (rng.standard_normal((batch, 4 * hidden)) * 2 for _ in range(2))
    cx, ib, hb = rng.standard_normal((batch, hidden)), rng.standard_normal(4 * hidden), rng.standard_normal(4 * hidden)
    tol = _tolerance(dtype)
    for biases in ((None, None), (ib, None), (ib, hb)):
        args = [a.astype(dtype) if a is not None else None for a in (ig, hg, cx) + biases]
        hy, cy, ws = _lstm_forward(dtype, *args)
        expected = ref.lstm_cell(*[a.astype(np.float64) if a is not None else None for a in args])
        for got, want in zip((hy, cy, ws), expected):
            np.testing.assert_allclose(got, want, **tol)
    # the backward, from this forward's (last) outputs, with each gradient present or absent
    ghy, gcy = (rng.standard_normal((batch, hidden)).astype(dtype) for _ in range(2))
    for grads in ((ghy, gcy), (ghy, None), (None, gcy)):
        gates, gcx = _poisoned(dtype, batch, 4 * hidden), _poisoned(dtype, batch, hidden)
        assert getattr(lib, "cextend_lstm_cell_backward_" + SFX[dtype])(
            batch, hidden, _ptr(dtype, grads[0]), _ptr(dtype, grads[1]), _ptr(dtype, args[2]), _ptr(dtype, cy),
            _ptr(dtype, ws), _ptr(dtype, gates), _ptr(dtype, gcx)) == 0
        expected = ref.lstm_cell_backward(*[None if a is None else a.astype(np.float64)
                                            for a in grads + (args[2], cy, ws)])
        np.testing.assert_allclose(gates, expected[0], **tol)
        np.testing.assert_allclose(gcx, expected[1], **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batch,hidden", SIZES)
def test_gru_kernels_match_numpy(dtype, batch, hidden):
    rng = np.random.default_rng(batch * 100 + hidden + 1)
    ig, hg = (rng.standard_normal((batch, 3 * hidden)) * 2 for _ in range(2))
    hx, ib, hb = rng.standard_normal((batch, hidden)), rng.standard_normal(3 * hidden), rng.standard_normal(3 * hidden)
    tol = _tolerance(dtype)
    for biases in ((None, None), (None, hb), (ib, hb)):
        args = [a.astype(dtype) if a is not None else None for a in (ig, hg, hx) + biases]
        hy, ws = _gru_forward(dtype, *args)
        expected = ref.gru_cell(*[a.astype(np.float64) if a is not None else None for a in args])
        np.testing.assert_allclose(hy, expected[0], **tol)
        np.testing.assert_allclose(ws, expected[1], **tol)
    grad = rng.standard_normal((batch, hidden)).astype(dtype)
    outs = [_poisoned(dtype, batch, 3 * hidden), _poisoned(dtype, batch, 3 * hidden), _poisoned(dtype, batch, hidden)]
    assert getattr(lib, "cextend_gru_cell_backward_" + SFX[dtype])(
        batch, hidden, _ptr(dtype, grad), _ptr(dtype, ws), *[_ptr(dtype, o) for o in outs]) == 0
    for got, want in zip(outs, ref.gru_cell_backward(grad.astype(np.float64), ws.astype(np.float64))):
        np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_row_strided_gates_read_in_place(dtype):
    """A time step of a batch-first projection: rows ld apart, read without a copy."""
    rng = np.random.default_rng(5)
    batch, hidden, steps = 3, 4, 5
    proj = rng.standard_normal((batch, steps, 4 * hidden)).astype(dtype)
    hg = rng.standard_normal((batch, 2, 4 * hidden)).astype(dtype)[:, 1]
    cx = rng.standard_normal((batch, hidden)).astype(dtype)
    strided = _lstm_forward(dtype, proj[:, 2], hg, cx, ld_i=steps * 4 * hidden, ld_h=2 * 4 * hidden)
    dense = _lstm_forward(dtype, np.ascontiguousarray(proj[:, 2]), np.ascontiguousarray(hg), cx)
    for a, b in zip(strided, dense):
        np.testing.assert_array_equal(a, b)
    # the binding passes such views through too, and copies what the kernel cannot read
    for ig in (proj[:, 2], np.asfortranarray(proj[:, 2]), proj[:, 2, ::-1][:, ::-1]):
        for a, b in zip(_backend.lstm_cell_forward(ig, hg, cx), dense):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_the_lstm_backward_recomputes_cy_to_the_bit(dtype):
    rng = np.random.default_rng(14)
    ig, hg = (rng.standard_normal((5, 4 * 37)).astype(dtype) * 2 for _ in range(2))
    cx, ghy, gcy = (rng.standard_normal((5, 37)).astype(dtype) for _ in range(3))
    hy, cy, ws = _backend.lstm_cell_forward(ig, hg, cx)
    recomputed, given = (_backend.lstm_cell_backward(ghy, gcy, cx, c, ws) for c in (None, cy))
    for a, b in zip(recomputed, given):
        np.testing.assert_array_equal(a, b)


def test_workspace_and_outputs_may_be_skipped():
    rng = np.random.default_rng(6)
    ig, hg, cx = rng.standard_normal((2, 8)), rng.standard_normal((2, 8)), rng.standard_normal((2, 2))
    hy, cy, ws = _backend.lstm_cell_forward(ig, hg, cx, workspace=False)
    assert ws is None
    np.testing.assert_array_equal(hy, _backend.lstm_cell_forward(ig, hg, cx)[0])
    full = _backend.lstm_cell_backward(hy, cy, cx, cy, _backend.lstm_cell_forward(ig, hg, cx)[2])
    only_cx = _backend.lstm_cell_backward(hy, cy, cx, cy, _backend.lstm_cell_forward(ig, hg, cx)[2], gates=False)
    assert only_cx[0] is None
    np.testing.assert_array_equal(only_cx[1], full[1])


# -- same bits on every instruction set and thread count ---------------------------------

def _all_kernels(dtype, batch, hidden, seed=0):
    rng = np.random.default_rng(seed)
    ig4, hg4 = (rng.standard_normal((batch, 4 * hidden)).astype(dtype) * 3 for _ in range(2))
    ig3, hg3 = (rng.standard_normal((batch, 3 * hidden)).astype(dtype) * 3 for _ in range(2))
    state = rng.standard_normal((batch, hidden)).astype(dtype)
    hy, cy, ws = _backend.lstm_cell_forward(ig4, hg4, state)
    gy, gws = _backend.gru_cell_forward(ig3, hg3, state)
    return [hy, cy, ws, *_backend.lstm_cell_backward(hy, cy, state, cy, ws), gy, gws,
            *_backend.gru_cell_backward(gy, gws)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_same_bits_on_every_instruction_set_and_thread_count(dtype):
    batch, hidden = 67, 521         # 8 * 67 * 521 element passes: several threads where there are cores
    previous_isa, previous_threads = _backend.get_isa(), cextend.get_num_threads()
    try:
        cextend.set_num_threads(1)
        baseline = _all_kernels(dtype, batch, hidden)
        for isa in _backend.available_isas():
            _backend.set_isa(isa)
            for got, want in zip(_all_kernels(dtype, batch, hidden), baseline):
                np.testing.assert_array_equal(got, want, err_msg=isa)
        _backend.set_isa(previous_isa)
        cextend.set_num_threads(2)
        for got, want in zip(_all_kernels(dtype, batch, hidden), baseline):
            np.testing.assert_array_equal(got, want)
    finally:
        _backend.set_isa(previous_isa)
        cextend.set_num_threads(previous_threads)


# -- the activations' accuracy and special values -------------------------------------------

def _activations(dtype, x):
    """(sigmoid(x), tanh(x)) as the LSTM kernel computes them (its workspace's i and g)."""
    n = x.size
    ig = np.zeros((1, 4 * n), dtype)
    ig[0, :n] = ig[0, 2 * n:3 * n] = x
    hg = np.zeros_like(ig)
    if n:
        hg[0, 2 * n:3 * n] = -0.0          # tanh(-0.0) must stay -0.0: -0.0 + -0.0 is -0.0
    ws = _backend.lstm_cell_forward(ig, hg, np.zeros((1, n), dtype))[2]
    return ws[0, :n], ws[0, 2 * n:3 * n]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_sigmoid_and_tanh_are_within_three_ulps(dtype):
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is no wider than double here: no exact reference")
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(4000) * s for s in (1e-9, 1e-3, 0.1, 1, 4, 12, 40, 300)]).astype(dtype)
    # where exp(-x) overflows, torch's 1 / (1 + exp(-x)) is 0, and so is ours
    x = x[x > (-709.7 if dtype == np.float64 else -88.7)]
    sig, th = _activations(dtype, x)
    exact = x.astype(np.longdouble)
    assert ref.ulps(sig, 1 / (1 + np.exp(-exact)), dtype).max() <= 3
    assert ref.ulps(th, np.tanh(exact), dtype).max() <= 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_special_values_are_torchs(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e3, -1e3, 1e-30, -1e-30], dtype)
    sig, th = _activations(dtype, x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(sig, 1 / (1 + np.exp(-x)))         # torch's formula, NaN and all
    np.testing.assert_array_equal(th, np.tanh(x))
    assert np.signbit(th[1]) and not np.signbit(th[0])


# -- illegal arguments: status -i and a message naming argument i ---------------------------

SENTINEL = 7.0


def _lstm_forward_args(dtype, batch=2, hidden=3):
    t = "float" if dtype == np.float32 else "double"
    outs = {name: ffi.new("%s[]" % t, [SENTINEL] * n) for name, n in
            (("hy", batch * hidden), ("cy", batch * hidden), ("workspace", 4 * batch * hidden))}
    data = {name: ffi.new("%s[]" % t, [0.5] * n) for name, n in
            (("input_gates", 8 * batch * hidden), ("hidden_gates", 8 * batch * hidden), ("input_bias", 4 * hidden),
             ("hidden_bias", 4 * hidden), ("cx", batch * hidden))}
    args = [batch, hidden, data["input_gates"], 4 * hidden, data["hidden_gates"], 4 * hidden, data["input_bias"],
            data["hidden_bias"], data["cx"], outs["hy"], outs["cy"], outs["workspace"]]
    return args, outs


def _misaligned(arg):
    return ffi.cast("char *", arg) + 1


LSTM_FORWARD_CASES = [
    (0, -1, "batch"), (1, -1, "hidden"), (1, 2 ** 62, "hidden"), (2, None, "input_gates"),
    (3, 11, "ld_input"), (4, None, "hidden_gates"), (5, 0, "ld_hidden"), (6, "misaligned", "input_bias"),
    (7, "misaligned", "hidden_bias"), (8, None, "cx"), (9, None, "hy"), (10, None, "cy"),
    (11, "misaligned", "workspace")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("index,value,name", LSTM_FORWARD_CASES, ids=[c[2] + str(c[0]) for c in LSTM_FORWARD_CASES])
def test_lstm_forward_names_an_illegal_argument_and_writes_nothing(dtype, index, value, name):
    args, outs = _lstm_forward_args(dtype)
    if value == "misaligned":
        value = ffi.cast(CTYPES[dtype], _misaligned(args[index]))
    elif value is None:
        value = ffi.NULL
    args[index] = value
    status = getattr(lib, "cextend_lstm_cell_forward_" + SFX[dtype])(*args)
    assert status == -(index + 1)
    message = ffi.string(lib.cextend_last_error()).decode()
    assert name in message and ("cextend_lstm_cell_forward_" + SFX[dtype]) in message, message
    for out in outs.values():
        assert all(v == SENTINEL for v in out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_the_backward_and_gru_entry_points_name_illegal_arguments(dtype):
    t, sfx = ("float" if dtype == np.float32 else "double"), SFX[dtype]
    batch, hidden = 2, 3

    def buf(n, value=0.5):
        return ffi.new("%s[]" % t, [value] * n)
    ws4, ws5, state = buf(4 * batch * hidden), buf(5 * batch * hidden), buf(batch * hidden)
    grad_gates, grad_cx = buf(4 * batch * hidden, SENTINEL), buf(batch * hidden, SENTINEL)
    lstm_backward = [batch, hidden, state, state, state, state, ws4, grad_gates, grad_cx]
    gru_forward = [batch, hidden, buf(3 * batch * hidden), 3 * hidden, buf(3 * batch * hidden), 3 * hidden,
                   ffi.NULL, ffi.NULL, state, buf(batch * hidden, SENTINEL), buf(5 * batch * hidden, SENTINEL)]
    gru_backward = [batch, hidden, state, ws5, buf(3 * batch * hidden, SENTINEL), buf(3 * batch * hidden, SENTINEL),
                    buf(batch * hidden, SENTINEL)]
    cases = [("lstm_cell_backward", lstm_backward, 4, ffi.NULL, "cx"),
             ("lstm_cell_backward", lstm_backward, 5, "misaligned", "cy"),
             ("lstm_cell_backward", lstm_backward, 6, ffi.NULL, "workspace"),
             ("lstm_cell_backward", lstm_backward, 2, "misaligned", "grad_hy"),
             ("lstm_cell_backward", lstm_backward, 8, "misaligned", "grad_cx"),
             ("gru_cell_forward", gru_forward, 3, 2, "ld_input"),
             ("gru_cell_forward", gru_forward, 8, ffi.NULL, "hx"),
             ("gru_cell_forward", gru_forward, 10, "misaligned", "workspace"),
             ("gru_cell_backward", gru_backward, 2, ffi.NULL, "grad_hy"),
             ("gru_cell_backward", gru_backward, 3, ffi.NULL, "workspace"),
             ("gru_cell_backward", gru_backward, 5, "misaligned", "grad_hidden_gates"),
             ("gru_cell_backward", gru_backward, 1, -4, "hidden")]
    for fn, base, index, value, name in cases:
        args = list(base)
        args[index] = ffi.cast("%s *" % t, _misaligned(args[index])) if value == "misaligned" else value
        status = getattr(lib, "cextend_%s_%s" % (fn, sfx))(*args)
        assert status == -(index + 1), (fn, name, status)
        message = ffi.string(lib.cextend_last_error()).decode()
        assert name in message, (fn, message)
    assert all(v == SENTINEL for v in grad_gates) and all(v == SENTINEL for v in grad_cx)


def test_zero_sized_operands_may_be_null():
    for fn in (lib.cextend_lstm_cell_forward_f64, lib.cextend_lstm_cell_forward_f32):
        assert fn(0, 5, ffi.NULL, 20, ffi.NULL, 20, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL) == 0
    assert lib.cextend_gru_cell_backward_f64(3, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL) == 0


# -- the ops: checks, nodes, gradients -----------------------------------------------------

def _t(a, requires_grad=False):
    return cextend.tensor(np.asarray(a, np.float64)).requires_grad_(requires_grad)


def test_fused_ops_check_their_operands():
    ig, hg, c = _t(np.zeros((2, 8))), _t(np.zeros((2, 8))), _t(np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match=r"_thnn_fused_lstm_cell: expected hidden_gates of input_gates' shape"):
        cextend._thnn_fused_lstm_cell(ig, _t(np.zeros((2, 4))), c)
    with pytest.raises(RuntimeError, match=r"expected cx of shape \[2, 2\]"):
        cextend._thnn_fused_lstm_cell(ig, hg, _t(np.zeros((2, 3))))
    with pytest.raises(RuntimeError, match=r"the gates' size 6 is not 4 \* hidden"):
        cextend._thnn_fused_lstm_cell(_t(np.zeros((2, 6))), _t(np.zeros((2, 6))), c)
    with pytest.raises(RuntimeError, match=r"expected input_bias of shape \[8\]"):
        cextend._thnn_fused_lstm_cell(ig, hg, c, _t(np.zeros(4)))
    with pytest.raises(TypeError, match=r"_thnn_fused_gru_cell: .*share one dtype"):
        cextend._thnn_fused_gru_cell(_t(np.zeros((2, 6))), _t(np.zeros((2, 6))).float(), _t(np.zeros((2, 2))))
    with pytest.raises(TypeError, match=r"must be float32 or float64"):
        cextend._thnn_fused_gru_cell(_t(np.zeros((2, 6))).long(), _t(np.zeros((2, 6))).long(),
                                     _t(np.zeros((2, 2))).long())


def test_fused_ops_record_torchs_nodes_and_a_workspace_without_grad():
    rng = np.random.default_rng(8)
    ig, hg, c = _t(rng.standard_normal((2, 8)), True), _t(rng.standard_normal((2, 8))), _t(rng.standard_normal((2, 2)))
    hy, cy, ws = cextend._thnn_fused_lstm_cell(ig, hg, c)
    assert type(hy.grad_fn).__name__ == "ThnnFusedLstmCellBackward0" and hy.grad_fn is cy.grad_fn
    assert not ws.requires_grad and ws.shape == (2, 8)
    hy, ws = cextend._thnn_fused_gru_cell(_t(rng.standard_normal((2, 6)), True), _t(rng.standard_normal((2, 6))),
                                          _t(rng.standard_normal((2, 2))))
    assert type(hy.grad_fn).__name__ == "ThnnFusedGruCellBackward0" and ws.shape == (2, 10)


def test_saved_tensors_follow_torchs_cells():
    """torch's CPU cell saves cx (its f * cx), not its outputs: changing cy or hy in place
    after the step leaves backward alone; a second backward without retain_graph raises."""
    rng = np.random.default_rng(15)
    x, h, c = (_t(rng.standard_normal((2, 3)), True) for _ in range(3))
    w_ih, w_hh = _t(rng.standard_normal((12, 3)), True), _t(rng.standard_normal((12, 3)), True)
    hy, cy = cextend.lstm_cell(x, (h, c), w_ih, w_hh)
    grad_h = cextend.autograd.grad(hy.sum(), [x], retain_graph=True)[0].numpy()
    grad_c = cextend.autograd.grad(cy.sum(), [x], retain_graph=True)[0].numpy()
    cy.mul_(2)
    hy.add_(1)
    loss = hy.sum() + cy.sum()
    np.testing.assert_allclose(cextend.autograd.grad(loss, [x], retain_graph=True)[0].numpy(), grad_h + 2 * grad_c,
                               rtol=1e-12)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    # with w_hh fixed, nothing saves hx (torch's (hx - n) does not either): the workspace holds its values
    gy = cextend.gru_cell(x, h, _t(rng.standard_normal((9, 3)), True), _t(rng.standard_normal((9, 3))))
    h.detach().add_(1)
    gy.sum().backward()


def test_cells_of_mixed_dtypes_take_torchs_dtypes():
    rng = np.random.default_rng(16)
    x, h = _t(rng.standard_normal((2, 3))).float(), _t(rng.standard_normal((2, 3))).float()
    c = _t(rng.standard_normal((2, 3)))
    w_ih, w_hh = _t(rng.standard_normal((12, 3))).float(), _t(rng.standard_normal((12, 3))).float()
    hy, cy = cextend.lstm_cell(x, (h, c), w_ih, w_hh)
    assert hy.dtype == cy.dtype == cextend.float64                    # f * cx promotes
    ig = x.double().numpy() @ w_ih.double().numpy().T
    hg = h.double().numpy() @ w_hh.double().numpy().T
    gates = (hg + ig).astype(np.float32).astype(np.float64)           # torch's hg.add_(ig) stays float32
    want = ref.lstm_cell(gates, np.zeros_like(gates), c.numpy())
    np.testing.assert_allclose(cy.numpy(), want[1], rtol=1e-5)
    out = cextend.rnn_tanh_cell(x.double(), h, w_ih[:3].double(), w_hh[:3])
    assert out.dtype == cextend.float32                               # hg.add_(ig) keeps the hidden gates' dtype
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        cextend.gru_cell(x, h.long(), w_ih[:9], w_hh[:9].long())


def test_a_saved_operand_changed_in_place_makes_backward_raise():
    rng = np.random.default_rng(9)
    ig = _t(rng.standard_normal((2, 8)), True)
    c = _t(rng.standard_normal((2, 2)))
    hy, cy, ws = cextend._thnn_fused_lstm_cell(ig, _t(rng.standard_normal((2, 8))), c)
    c.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        hy.sum().backward()


def _lstm_cell_fn(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return cextend.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)


@pytest.mark.parametrize("mode", ["lstm", "gru", "fused_lstm", "fused_gru"])
def test_cells_gradcheck_and_gradgradcheck(mode):
    """The C backward (gradcheck) and the Tensor-op backward that create_graph uses (gradgradcheck)."""
    rng = np.random.default_rng(10)
    batch, size, hidden = 3, 4, 3
    chunks = 4 if "lstm" in mode else 3
    if mode.startswith("fused"):
        inputs = [rng.standard_normal((batch, chunks * hidden)), rng.standard_normal((batch, chunks * hidden)),
                  rng.standard_normal((batch, hidden)), rng.standard_normal(chunks * hidden),
                  rng.standard_normal(chunks * hidden)]
        op = cextend._thnn_fused_lstm_cell if chunks == 4 else cextend._thnn_fused_gru_cell

        def fn(*args):
            return op(*args)[:-1]          # the workspace is not differentiable
    else:
        inputs = [rng.standard_normal((batch, size)), rng.standard_normal((batch, hidden))]
        inputs += [rng.standard_normal((batch, hidden))] if chunks == 4 else []
        inputs += [rng.standard_normal((chunks * hidden, size)), rng.standard_normal((chunks * hidden, hidden)),
                   rng.standard_normal(chunks * hidden), rng.standard_normal(chunks * hidden)]
        fn = _lstm_cell_fn if chunks == 4 else cextend.gru_cell
    tensors = tuple(_t(a, True) for a in inputs)
    assert gradcheck(fn, tensors)
    assert gradgradcheck(fn, tensors)


def test_only_one_output_of_the_lstm_cell_differentiated():
    """A gradient for hy alone, or cy alone, as torch's graph would give it."""
    rng = np.random.default_rng(11)
    inputs = tuple(_t(a, True) for a in (rng.standard_normal((2, 8)), rng.standard_normal((2, 8)),
                                         rng.standard_normal((2, 2))))
    assert gradcheck(lambda *a: cextend._thnn_fused_lstm_cell(*a)[0], inputs)
    assert gradcheck(lambda *a: cextend._thnn_fused_lstm_cell(*a)[1], inputs)
    assert gradgradcheck(lambda *a: cextend._thnn_fused_lstm_cell(*a)[1], inputs)


def test_cells_check_their_operands_in_torchs_words():
    x, h = _t(np.zeros((3, 5))), _t(np.zeros((3, 4)))
    w_ih, w_hh = _t(np.zeros((16, 5))), _t(np.zeros((16, 4)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 6 expected 5"):
        cextend.lstm_cell(_t(np.zeros((3, 6))), (h, h), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        cextend.lstm_cell(x, (_t(np.zeros((2, 4))), h), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 3, expected 4"):
        cextend.lstm_cell(x, (h, _t(np.zeros((3, 3)))), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
        cextend.lstm_cell(x, (h,), w_ih, w_hh)
    with pytest.raises(RuntimeError, match=r"weight_hh first dim must be 3 \* hidden_size = 12, but got 16"):
        cextend.gru_cell(x, h, _t(np.zeros((12, 5))), w_hh)
    with pytest.raises(RuntimeError, match=r"weight_ih first dim must be 1 \* hidden_size = 4, but got 5"):
        cextend.rnn_tanh_cell(x, h, _t(np.zeros((5, 5))), _t(np.zeros((4, 4))))


def test_the_table_names_the_kernels():
    from cextend._ops.registry import OPS
    assert OPS["_thnn_fused_lstm_cell"].kernels is recurrent.LSTM_CELL
    assert OPS["_thnn_fused_gru_cell"].kernels is recurrent.GRU_CELL
    assert OPS["lstm_cell"].kernels.per_device["cuda"] is None
