"""scaled_dot_product_attention, multi_head_attention_forward and
nn.MultiheadAttention: against numpy float64 references written here
(always), against torch 2.13 where it is installed (weights copied from
torch: outputs, attention weights and the gradients of inputs and
parameters), torch's errors and warnings, gradcheck / gradgradcheck,
dropout's statistics, and the refusal of device tensors."""
import math
import warnings

import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as cF
from cextend import _device
from cextend.autograd import gradcheck, gradgradcheck
from host_device import HostRuntime
from parity_helpers import real_torch, with_torch

LIBS = [cx] + ([real_torch] if real_torch is not None else [])


# -- numpy references ------------------------------------------------------------------------

def _softmax_rows(scores, safe):
    """softmax over the last axis; safe: a row of -inf gives zeros (torch's _safe_softmax)."""
    if scores.shape[-1] == 0:
        return scores.copy()
    top = scores.max(-1, keepdims=True)
    dead = np.isneginf(top)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - np.where(dead & safe, 0.0, top))
        w = e / e.sum(-1, keepdims=True)
    return np.where(dead, 0.0, w) if safe else w


def ref_sdpa(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    if gqa:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    E, L, S = q.shape[-1], q.shape[-2], k.shape[-2]
    factor = (1.0 / math.sqrt(E) if E else math.inf) if scale is None else scale
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * factor if E else np.zeros(
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (L, S))
    if causal:
        mask = np.tril(np.ones((L, S), bool))
    if mask is not None:
        scores = scores + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    return np.matmul(_softmax_rows(scores, safe=True), v)


def _additive(mask, masked_value_true):
    """MHA's convention: a bool mask's True means masked out."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask.astype(np.float64)


def ref_mha(query, key, value, p, num_heads, key_padding_mask=None, attn_mask=None, add_zero_attn=False,
            average=True):
    """torch's multi-head attention in numpy, on (L, N, E) inputs: (output, weights)."""
    L, N, E = query.shape
    H, D = num_heads, E // num_heads
    if "in_proj_weight" in p:
        wq, wk, wv = np.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq, bk, bv = np.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0.0, 0.0, 0.0)
    q, k, v = query @ wq.T + bq, key @ wk.T + bk, value @ wv.T + bv
    am, kpm = _additive(attn_mask, True), _additive(key_padding_mask, True)
    pad = []
    if "bias_k" in p:
        k = np.concatenate([k, np.broadcast_to(p["bias_k"], (1, N, E))])
        v = np.concatenate([v, np.broadcast_to(p["bias_v"], (1, N, E))])
        pad.append(1)
    q = q.reshape(L, N, H, D).transpose(1, 2, 0, 3)                  # (N, H, L, D)
    k = k.reshape(k.shape[0], N, H, D).transpose(1, 2, 0, 3)
    v = v.reshape(v.shape[0], N, H, D).transpose(1, 2, 0, 3)
    if add_zero_attn:
        k = np.concatenate([k, np.zeros((N, H, 1, D))], 2)
        v = np.concatenate([v, np.zeros((N, H, 1, D))], 2)
        pad.append(1)
    S = k.shape[2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(D)
    if am is not None:
        am = np.concatenate([am, np.zeros(am.shape[:-1] + (len(pad),))], -1) if pad else am
        scores = scores + (am if am.ndim == 2 else am.reshape(N, H, L, S))
    if kpm is not None:
        kpm = np.concatenate([kpm, np.zeros((N, len(pad)))], -1) if pad else kpm
        scores = scores + kpm[:, None, None, :]
    w = _softmax_rows(scores, safe=False)
    out = (w @ v).transpose(2, 0, 1, 3).reshape(L, N, E) @ p["out_proj.weight"].T
    if "out_proj.bias" in p:
        out = out + p["out_proj.bias"]
    return out, (w.mean(1) if average else w)


def _t(a, dtype=cx.float64, requires_grad=False, layout="contiguous"):
    """A cextend tensor of array a, in a layout: contiguous or transposed (last two dims)."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        a = a.astype(dtype.numpy)
    if layout == "transposed" and a.ndim >= 2:
        t = cx.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
        assert not t.is_contiguous() or min(a.shape[-2:]) == 1
    else:
        t = cx.from_numpy(a.copy())
    return t.requires_grad_(requires_grad) if a.dtype.kind == "f" else t


def _np(t):
    return np.asarray(t.detach().numpy(), np.float64)


# -- scaled_dot_product_attention against numpy ------------------------------------------------

# (query shape, key shape, value shape): leading dims broadcast; lengths 1, odd and prime
SDPA_SHAPES = [
    ((3, 4), (5, 4), (5, 6)),                        # no batch dims
    ((2, 1, 4), (2, 1, 4), (2, 1, 3)),               # L = S = 1
    ((2, 3, 7, 5), (2, 3, 11, 5), (2, 3, 11, 2)),    # prime lengths
    ((2, 1, 3, 4), (1, 4, 5, 4), (1, 4, 5, 4)),      # batch dims broadcast
    ((1, 2, 2, 1, 4), (3, 1, 2, 6, 4), (3, 1, 2, 6, 1)),  # three leading dims, L = 1
]


@pytest.mark.parametrize("shapes", SDPA_SHAPES, ids=lambda s: "x".join(map(str, s[0])))
@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_sdpa_matches_numpy_reference(shapes, mask):
    rng = np.random.default_rng(hash((shapes, mask)) % 2**32)
    q, k, v = (rng.standard_normal(s) for s in shapes)
    L, S = shapes[0][-2], shapes[1][-2]
    m = None
    if mask == "bool":
        m = rng.random((L, S)) > 0.3
        m[0] = False                                 # a row with every key masked: zeros
    elif mask == "float":
        m = rng.standard_normal((1, L, S) if len(shapes[0]) > 2 else (L, S))
    expected = ref_sdpa(q, k, v, m, causal=mask == "causal")
    for layout in ("contiguous", "transposed"):
        out = cF.scaled_dot_product_attention(_t(q, layout=layout), _t(k, layout=layout), _t(v, layout=layout),
                                              attn_mask=None if m is None else _t(m), is_causal=mask == "causal")
        assert out.dtype is cx.float64 and tuple(out.shape) == expected.shape
        np.testing.assert_allclose(_np(out), expected, rtol=1e-12, atol=1e-13)
    out32 = cF.scaled_dot_product_attention(_t(q, cx.float32), _t(k, cx.float32), _t(v, cx.float32),
                                            attn_mask=None if m is None else _t(m, cx.float32),
                                            is_causal=mask == "causal")
    assert out32.dtype is cx.float32
    np.testing.assert_allclose(_np(out32), expected, rtol=1e-5, atol=1e-5)


def test_sdpa_scale_gqa_and_half():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 6, 3, 4)), rng.standard_normal((2, 2, 5, 4)), rng.standard_normal((2, 3, 5, 4))
    for scale in (0.3, -0.7, 0.0):
        out = cF.scaled_dot_product_attention(_t(q), _t(k), _t(v), scale=scale, enable_gqa=True)
        np.testing.assert_allclose(_np(out), ref_sdpa(q, k, v, scale=scale, gqa=True), rtol=1e-12, atol=1e-13)
    # 3-D GQA: the heads are dim -3
    out = cF.scaled_dot_product_attention(_t(q[0]), _t(k[0]), _t(v[0]), enable_gqa=True)
    np.testing.assert_allclose(_np(out), ref_sdpa(q[0], k[0], v[0], gqa=True), rtol=1e-12)
    # float16 runs in float32 and comes back as float16
    h = [_t(a[0, :2], cx.float16) for a in (q, k, v)]
    out = cF.scaled_dot_product_attention(*h)
    assert out.dtype is cx.float16
    np.testing.assert_allclose(_np(out), ref_sdpa(*[_np(a) for a in h]), rtol=2e-3, atol=2e-3)


def test_sdpa_fully_masked_rows_give_zeros_and_zero_gradients():
    rng = np.random.default_rng(2)
    q, k, v = (_t(rng.standard_normal(s), requires_grad=True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 6)))
    keep = np.ones((3, 5), bool)
    keep[1] = False
    for mask in (_t(keep), _t(np.where(keep, 0.0, -np.inf))):
        out = cF.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert np.array_equal(_np(out)[:, 1], np.zeros((2, 6)))
        q.grad = k.grad = v.grad = None
        out.sum().backward()
        for t in (q, k, v):
            assert np.isfinite(_np(t.grad)).all()
        assert np.array_equal(_np(q.grad)[:, 1], np.zeros((2, 4)))


def test_sdpa_empty_shapes():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 6))
    assert tuple(cF.scaled_dot_product_attention(_t(q[:0]), _t(k[:0]), _t(v[:0])).shape) == (0, 3, 6)
    assert tuple(cF.scaled_dot_product_attention(_t(q[:, :0]), _t(k), _t(v)).shape) == (2, 0, 6)
    qq = _t(q, requires_grad=True)
    out = cF.scaled_dot_product_attention(qq, _t(k[:, :0]), _t(v[:, :0]))      # no keys: zeros
    assert np.array_equal(_np(out), np.zeros((2, 3, 6)))
    out.sum().backward()
    assert np.array_equal(_np(qq.grad), np.zeros((2, 3, 4)))
    out = cF.scaled_dot_product_attention(_t(q[..., :0]), _t(k[..., :0]), _t(v))  # E = 0: uniform weights
    np.testing.assert_allclose(_np(out), np.broadcast_to(v.mean(1, keepdims=True), (2, 3, 6)), rtol=1e-12)


def test_sdpa_dropout_statistics():
    # value = identity: the output is the dropped attention weights themselves
    cx.manual_seed(0)
    L = S = 64
    q, k = cx.zeros(4, L, 8, dtype=cx.float64), cx.zeros(4, S, 8, dtype=cx.float64)
    eye = cx.from_numpy(np.eye(S))
    w = _np(cF.scaled_dot_product_attention(q, k, eye, dropout_p=0.25))
    zero = (w == 0).mean()
    assert abs(zero - 0.25) < 0.02, zero                 # 16384 draws: 5 sigma is 0.017
    np.testing.assert_allclose(w[w != 0], 1.0 / S / 0.75, rtol=1e-12)
    assert (_np(cF.scaled_dot_product_attention(q, k, eye, dropout_p=0.0)) > 0).all()
    assert np.array_equal(_np(cF.scaled_dot_product_attention(q, k, eye, dropout_p=1.0)), np.zeros((4, L, S)))


# -- errors, as torch's -----------------------------------------------------------------------

def _q(lib, *shape, dtype=None):
    return lib.ones(*shape, dtype=dtype or lib.float64)


SDPA_ERRORS = {
    "dtypes differ": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 4, dtype=lib.float32), _q(lib, 2, 5, 4)), RuntimeError,
        "Expected query, key, and value to have the same dtype, but got query.dtype: double key.dtype: float "
        "and value.dtype: double instead."),
    "1-D query": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 4), _q(lib, 2, 5, 4), _q(lib, 2, 5, 4)), RuntimeError,
        "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 3 "
        "and value.dim: 3 instead."),
    "integer mask": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 3, 4), _q(lib, 5, 4), _q(lib, 5, 4), attn_mask=lib.ones(3, 5, dtype=lib.int64)), RuntimeError,
        "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long "
        "int and  query.dtype: double instead."),
    "double mask, float query": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 3, 4, dtype=lib.float32), _q(lib, 5, 4, dtype=lib.float32), _q(lib, 5, 4, dtype=lib.float32),
        attn_mask=lib.ones(3, 5, dtype=lib.float64)), RuntimeError,
        "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: double "
        "and  query.dtype: float instead."),
    "integer inputs": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        *[lib.ones(2, 3, 4, dtype=lib.int64)] * 3), RuntimeError, "expected scalar type Float but found Long"),
    "causal and a mask": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 4), _q(lib, 2, 5, 4), attn_mask=lib.ones(3, 5, dtype=lib.bool),
        is_causal=True), RuntimeError,
        "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"),
    "mask too short": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 4), _q(lib, 2, 5, 4), attn_mask=lib.ones(3, 4, dtype=lib.bool)),
        RuntimeError, "The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 2"),
    "mask of more dims": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 4), _q(lib, 2, 5, 4), attn_mask=lib.ones(2, 1, 3, 5, dtype=lib.bool)),
        RuntimeError, "output with shape [2, 3, 5] doesn't match the broadcast shape [2, 2, 3, 5]"),
    "key width": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 3), _q(lib, 2, 5, 4)), RuntimeError,
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."),
    "value length": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 4), _q(lib, 2, 4, 4)), RuntimeError,
        "Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 4]."),
    "2-D key width": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 3, 4), _q(lib, 5, 3), _q(lib, 5, 3)), RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x5)"),
    "batch dims clash": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 6, 3, 4), _q(lib, 2, 2, 5, 4), _q(lib, 2, 2, 5, 4)), RuntimeError,
        "The size of tensor a (6) must match the size of tensor b (2) at non-singleton dimension 1"),
    "GQA heads do not divide": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 5, 3, 4), _q(lib, 2, 2, 5, 4), _q(lib, 2, 2, 5, 4), enable_gqa=True), RuntimeError,
        "Number of heads in key and value must divide the number of heads in "),
    "GQA of 2-D inputs": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 3, 4), _q(lib, 5, 4), _q(lib, 5, 4), enable_gqa=True), IndexError,
        "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    "dropout above 1": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        _q(lib, 2, 3, 4), _q(lib, 2, 5, 4), _q(lib, 2, 5, 4), dropout_p=1.5), RuntimeError,
        "dropout probability has to be between 0 and 1, but got 1.5"),
    "query not a tensor": (lambda lib: lib.nn.functional.scaled_dot_product_attention(
        [1.0], _q(lib, 2, 5, 4), _q(lib, 2, 5, 4)), TypeError,
        "scaled_dot_product_attention(): argument 'query' (position 1) must be Tensor, not list"),
}


def _normalise(message):
    return message.replace("cextend.Size", "torch.Size").replace("cextend.", "torch.")


def _check_error(program, kind, message):
    """cextend raises kind with message; where torch is installed, it raises
    the same (its type, or a base of ours) with the same message."""
    with pytest.raises(kind) as ours:
        program(cx)
    assert _normalise(str(ours.value)) == message
    if real_torch is not None:
        with pytest.raises(Exception) as theirs:
            program(real_torch)
        assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)
        assert _normalise(str(ours.value)) == str(theirs.value)


@pytest.mark.parametrize("case", sorted(SDPA_ERRORS))
def test_sdpa_errors_as_torch(case):
    _check_error(*SDPA_ERRORS[case])


# -- scaled_dot_product_attention against torch --------------------------------------------------

@with_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", ["plain", "bool mask", "float mask", "causal", "scale", "gqa", "dead rows",
                                  "3-D", "2-D"])
def test_sdpa_matches_torch(case, dtype):
    rng = np.random.default_rng(len(case))
    qs, ks, vs = (2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 3)
    kwargs = {}
    if case == "bool mask":
        kwargs["attn_mask"] = rng.random((5, 7)) > 0.4
    elif case == "float mask":
        kwargs["attn_mask"] = rng.standard_normal((2, 1, 5, 7))
    elif case == "causal":
        kwargs["is_causal"] = True
    elif case == "scale":
        kwargs["scale"] = 0.37
    elif case == "gqa":
        qs, kwargs["enable_gqa"] = (2, 6, 5, 4), True
    elif case == "dead rows":
        m = rng.random((2, 1, 5, 7)) > 0.5
        m[:, :, 2] = False
        kwargs["attn_mask"] = m
    elif case == "3-D":
        qs, ks, vs = qs[1:], ks[1:], vs[1:]
    elif case == "2-D":
        qs, ks, vs = qs[2:], ks[2:], vs[2:]
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    grad = rng.standard_normal(qs[:-1] + vs[-1:])
    results = []
    for lib in (cx, real_torch):
        dt = getattr(lib, dtype)
        tensors = [lib.tensor(a, dtype=dt, requires_grad=True) for a in arrays]
        kw = {key: (lib.tensor(val, dtype=dt if val.dtype.kind == "f" else lib.bool) if isinstance(val, np.ndarray)
                    else val) for key, val in kwargs.items()}
        out = lib.nn.functional.scaled_dot_product_attention(*tensors, **kw)
        out.backward(lib.tensor(grad, dtype=dt))
        results.append([_np(out)] + [_np(t.grad) for t in tensors])
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **tol)


# -- gradcheck ---------------------------------------------------------------------------------

def test_sdpa_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(5)
    q, k, v = (_t(rng.standard_normal(s), requires_grad=True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    keep = rng.random((3, 5)) > 0.3
    keep[1] = False
    mask = _t(keep)
    fmask = _t(rng.standard_normal((1, 3, 5)), requires_grad=True)

    def f(q, k, v):
        return cF.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def g(q, k, v, m):
        return cF.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.6)

    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))
    assert gradcheck(g, (q, k, v, fmask))
    assert gradcheck(lambda q, k, v: cF.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))
    qg = _t(rng.standard_normal((1, 4, 2, 3)), requires_grad=True)
    kg, vg = (_t(rng.standard_normal((1, 2, 3, 3)), requires_grad=True) for _ in range(2))
    assert gradcheck(lambda q, k, v: cF.scaled_dot_product_attention(q, k, v, enable_gqa=True), (qg, kg, vg))


# -- multi-head attention: configurations --------------------------------------------------------

E, H = 6, 3

MHA_CASES = {
    # name: (module kwargs, forward setup)
    "self": (dict(), dict()),
    "self, batch_first, bool attn_mask, no weights": (dict(batch_first=True),
                                                     dict(attn_mask="bool2", need_weights=False)),
    "cross kdim/vdim, key_padding_mask, per-head weights": (dict(kdim=4, vdim=5),
                                                          dict(kpm="bool", average_attn_weights=False)),
    "bias_kv, zero_attn, float masks": (dict(add_bias_kv=True, add_zero_attn=True),
                                        dict(attn_mask="float3", kpm="float")),
    "bias_kv, zero_attn, bool masks, no weights": (dict(add_bias_kv=True, add_zero_attn=True, batch_first=True),
                                                   dict(attn_mask="bool3", kpm="bool", need_weights=False)),
    "unbatched": (dict(), dict(unbatched=True, kpm="bool", attn_mask="bool3")),
    "unbatched cross, no weights": (dict(kdim=4, vdim=5), dict(unbatched=True, attn_mask="float2",
                                                               need_weights=False)),
    "causal hint": (dict(), dict(attn_mask="causal", is_causal=True, need_weights=False)),
    "causal hint with padding": (dict(batch_first=True), dict(attn_mask="causal", is_causal=True, kpm="float")),
    "no bias": (dict(bias=False), dict(attn_mask="float2")),
    "encoder-decoder": (dict(), dict(cross=True, kpm="bool", need_weights=False)),
}


def _mha_inputs(rng, module_kwargs, setup, L=4, S=5, N=2):
    """numpy query/key/value (and masks) for a case, in the module's layout."""
    kdim, vdim = module_kwargs.get("kdim", E), module_kwargs.get("vdim", E)
    separate = kdim != E or vdim != E
    unbatched = setup.get("unbatched", False)
    if not separate and not setup.get("cross"):
        S = L
    query = rng.standard_normal((L, N, E))
    key = rng.standard_normal((S, N, kdim)) if separate or setup.get("cross") else query
    value = rng.standard_normal((S, N, vdim)) if separate else key
    masks = {}
    kind = setup.get("attn_mask")
    if kind == "bool2":
        m = rng.random((L, S)) > 0.7
        m[:, 0] = False                              # every row keeps a key
        masks["attn_mask"] = m
    elif kind == "bool3":
        m = rng.random((N * H if not unbatched else H, L, S)) > 0.7
        m[..., 0] = False
        masks["attn_mask"] = m
    elif kind == "float2":
        masks["attn_mask"] = rng.standard_normal((L, S))
    elif kind == "float3":
        masks["attn_mask"] = rng.standard_normal((N * H, L, S))
    elif kind == "causal":
        masks["attn_mask"] = np.triu(np.full((L, S), -np.inf), 1)
    if setup.get("kpm") == "bool":
        m = rng.random((N, S)) > 0.6
        m[:, 0] = False
        masks["key_padding_mask"] = m
    elif setup.get("kpm") == "float":
        masks["key_padding_mask"] = rng.standard_normal((N, S))
    if unbatched:
        query, key, value = query[:, 0], key[:, 0], value[:, 0] if separate else key[:, 0]
        if "key_padding_mask" in masks:
            masks["key_padding_mask"] = masks["key_padding_mask"][0]
    return query, key, value, separate, masks


def _to_layout(a, batch_first, unbatched):
    return a.transpose(1, 0, 2) if batch_first and not unbatched else a


def _random_params(rng, module):
    """Nonzero values for every parameter (biases included), as numpy float64."""
    return {name: rng.standard_normal(tuple(p.shape)) * 0.5 for name, p in module.state_dict().items()}


def _load(module, params, lib):
    module.load_state_dict({name: lib.tensor(value, dtype=next(iter(module.parameters())).dtype)
                            for name, value in params.items()})


def _run_mha(lib, module, query, key, value, separate, masks, setup, dtype, grad_seed=11):
    """Forward and backward of module in lib: (output, weights, {name: grad})."""
    dt = getattr(lib, dtype)
    q = lib.tensor(query, dtype=dt, requires_grad=True)
    if separate:
        k = lib.tensor(key, dtype=dt, requires_grad=True)
        v = lib.tensor(value, dtype=dt, requires_grad=True)
    elif setup.get("cross"):
        k = v = lib.tensor(key, dtype=dt, requires_grad=True)
    else:
        k = v = q
    kw = {name: lib.tensor(m, dtype=dt if m.dtype.kind == "f" else lib.bool) for name, m in masks.items()}
    for name in ("need_weights", "average_attn_weights", "is_causal"):
        if name in setup:
            kw[name] = setup[name]
    out, weights = module(q, k, v, **kw)
    rng = np.random.default_rng(grad_seed)
    loss = (out * lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=dt)).sum()
    if weights is not None:
        loss = loss + (weights * lib.tensor(rng.standard_normal(tuple(weights.shape)), dtype=dt)).sum()
    loss.backward()
    grads = {"query": q.grad}
    if separate or setup.get("cross"):
        grads["key"] = k.grad
    if separate:
        grads["value"] = v.grad
    grads.update({name: p.grad for name, p in module.named_parameters()})
    return _np(out), None if weights is None else _np(weights), {n: _np(g) for n, g in grads.items()}


@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_mha_matches_numpy_reference(case):
    module_kwargs, setup = MHA_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    query, key, value, separate, masks = _mha_inputs(rng, module_kwargs, setup)
    mha = cx.nn.MultiheadAttention(E, H, dtype=cx.float64, **module_kwargs)
    params = _random_params(rng, mha)
    _load(mha, params, cx)
    batch_first, unbatched = module_kwargs.get("batch_first", False), setup.get("unbatched", False)
    args = [_to_layout(a, batch_first, unbatched) for a in (query, key, value)]
    if unbatched:
        ref_args = [a[:, None] for a in (query, key, value)]
        ref_masks = dict(masks)
        if "key_padding_mask" in ref_masks:
            ref_masks["key_padding_mask"] = ref_masks["key_padding_mask"][None]
        if "attn_mask" in ref_masks and ref_masks["attn_mask"].ndim == 3:
            pass                                     # (H, L, S) is (1 * H, L, S)
    else:
        ref_args, ref_masks = [query, key, value], masks
    expected, weights = ref_mha(*ref_args, params, H, add_zero_attn=module_kwargs.get("add_zero_attn", False),
                                average=setup.get("average_attn_weights", True), **ref_masks)
    out, got_weights, _ = _run_mha(cx, mha, *args, separate, masks, setup, "float64")
    if unbatched:
        expected, weights = expected[:, 0], weights[0]
    elif batch_first:
        expected = expected.transpose(1, 0, 2)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    if setup.get("need_weights", True):
        np.testing.assert_allclose(got_weights, weights, rtol=1e-12, atol=1e-13)
    else:
        assert got_weights is None


@with_torch
@pytest.mark.parametrize("dtype", ["float64", pytest.param("float32", marks=pytest.mark.long_run)])
@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_mha_matches_torch(case, dtype):
    module_kwargs, setup = MHA_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)) + 1)
    query, key, value, separate, masks = _mha_inputs(rng, module_kwargs, setup)
    theirs = real_torch.nn.MultiheadAttention(E, H, dtype=getattr(real_torch, dtype), **module_kwargs)
    ours = cx.nn.MultiheadAttention(E, H, dtype=getattr(cx, dtype), **module_kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _load(ours, {name: t.detach().double().numpy() for name, t in theirs.state_dict().items()}, cx)
    batch_first, unbatched = module_kwargs.get("batch_first", False), setup.get("unbatched", False)
    args = [_to_layout(a, batch_first, unbatched) for a in (query, key, value)]
    got = _run_mha(cx, ours, *args, separate, masks, setup, dtype)
    want = _run_mha(real_torch, theirs, *args, separate, masks, setup, dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], want[0], **tol)
    if want[1] is None:
        assert got[1] is None
    else:
        np.testing.assert_allclose(got[1], want[1], **tol)
    assert sorted(got[2]) == sorted(want[2])
    for name in want[2]:
        np.testing.assert_allclose(got[2][name], want[2][name], err_msg=name, **tol)


@with_torch
def test_mha_fully_masked_rows_as_torch():
    # need_weights: torch's plain softmax gives NaN rows; without weights SDPA's safe softmax gives zeros
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 2, E))
    kpm = np.zeros((2, 3), bool)
    kpm[1] = True
    modules = {lib: lib.nn.MultiheadAttention(E, H, dtype=lib.float64) for lib in (real_torch, cx)}
    _load(modules[cx], {n: t.detach().numpy() for n, t in modules[real_torch].state_dict().items()}, cx)
    results = []
    for lib, m in modules.items():
        xt = lib.tensor(x, requires_grad=True)
        with_weights = m(xt, xt, xt, key_padding_mask=lib.tensor(kpm))
        without = m(xt, xt, xt, key_padding_mask=lib.tensor(kpm), need_weights=False)[0]
        without.sum().backward()
        results.append([_np(with_weights[0]), _np(with_weights[1]), _np(without), _np(xt.grad)])
    for theirs, ours in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert np.isnan(results[1][0][:, 1]).all() and np.isfinite(results[1][2]).all()


def test_mha_forward_static_key_and_value():
    # static_k / static_v (N * num_heads, S, head_dim) replace the projected key and value
    rng = np.random.default_rng(10)
    L, S, N, e, h = 3, 4, 2, 6, 3
    arrays = [rng.standard_normal(s) for s in ((L, N, e), (S, N, e), (3 * e, e), (3 * e,), (e, e), (e,),
                                               (N * h, S, e // h), (N * h, S, e // h))]
    results = []
    for lib in LIBS:
        q, k, w, b, wo, bo, sk, sv = (lib.tensor(a) for a in arrays)
        out, weights = lib.nn.functional.multi_head_attention_forward(
            q, k, k, e, h, w, b, None, None, False, 0.0, wo, bo, static_k=sk, static_v=sv,
            average_attn_weights=False)
        results.append((_np(out), _np(weights)))
    q, _, w, b, wo, bo, sk, sv = arrays
    heads = (q @ w[:e].T + b[:e]).reshape(L, N * h, e // h).transpose(1, 0, 2)
    scores = heads @ sk.transpose(0, 2, 1) / math.sqrt(e // h)
    p = _softmax_rows(scores, safe=False)
    expected = (p @ sv).transpose(1, 0, 2).reshape(L, N, e) @ wo.T + bo
    np.testing.assert_allclose(results[0][0], expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(results[0][1], p.reshape(N, h, L, S), rtol=1e-12, atol=1e-13)
    for theirs in results[1:]:
        np.testing.assert_allclose(results[0][0], theirs[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(results[0][1], theirs[1], rtol=1e-10, atol=1e-12)


# -- gradcheck of a small MHA ----------------------------------------------------------------------

def test_mha_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(9)
    e, h = 4, 2
    tensors = [_t(rng.standard_normal(s) * 0.5, requires_grad=True)
               for s in ((2, 2, e), (3, 2, e), (3, 2, e), (3 * e, e), (3 * e,), (e, e), (e,))]
    kpm = _t(np.array([[0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]))
    mask = _t(rng.standard_normal((2, 3)))

    def f(q, k, v, w, b, wo, bo):
        return cF.multi_head_attention_forward(q, k, v, e, h, w, b, None, None, False, 0.0, wo, bo,
                                               key_padding_mask=kpm, attn_mask=mask)

    def g(q, k, v, w, b, wo, bo):
        return cF.multi_head_attention_forward(q, k, v, e, h, w, b, None, None, True, 0.0, wo, bo,
                                               key_padding_mask=kpm, need_weights=False)[0]

    assert gradcheck(f, tensors)
    assert gradcheck(g, tensors)
    small = [t[:, :1] if i < 3 else t for i, t in enumerate(tensors)]
    small = [_t(_np(t), requires_grad=True) for t in small]
    kpm = _t(np.array([[0.0, 0.0, -np.inf]]))
    assert gradgradcheck(lambda *a: f(*a)[0], small)


# -- the module: parameters, initialisation, errors, warnings ---------------------------------------

def test_mha_parameters_and_initialisation():
    cx.manual_seed(0)
    m = cx.nn.MultiheadAttention(8, 2)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)), ("out_proj.bias", (8,))]
    assert isinstance(m.out_proj, cx.nn.Linear) and type(m.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert m.q_proj_weight is None and m.bias_k is None and m.head_dim == 4 and m._qkv_same_embed_dim
    assert (_np(m.in_proj_bias) == 0).all() and (_np(m.out_proj.bias) == 0).all()
    bound = math.sqrt(6.0 / (8 + 24))                # xavier_uniform_ of (24, 8)
    w = _np(m.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    m = cx.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False, add_bias_kv=True)
    assert list(m.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v",
                                    "out_proj.weight"]
    assert [tuple(t.shape) for t in m.state_dict().values()] == [(8, 8), (8, 3), (8, 5), (1, 1, 8), (1, 1, 8), (8, 8)]
    assert m.in_proj_weight is None and m.in_proj_bias is None and m.out_proj.bias is None
    m = cx.nn.MultiheadAttention(64, 4, add_bias_kv=True, dtype=cx.float64)
    assert m.in_proj_weight.dtype is cx.float64
    assert 0.1 < _np(m.bias_k).std() < 0.25          # xavier_normal_ of (1, 1, 64): std 0.125


def test_mha_module_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        cx.nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got embed_dim=0"):
        cx.nn.MultiheadAttention(0, 1)


def _mha_call(lib, query=(3, 2, 6), key=(5, 2, 6), value=None, **kwargs):
    m = lib.nn.MultiheadAttention(6, 2, dtype=lib.float64, **kwargs.pop("module", {}))
    q, k = lib.ones(*query, dtype=lib.float64), lib.ones(*key, dtype=lib.float64)
    v = k if value is None else lib.ones(*value, dtype=lib.float64)
    return m(q, k, v, **{name: (val(lib) if callable(val) else val) for name, val in kwargs.items()})[0]


MHA_ERRORS = {
    "4-D query": (lambda lib: _mha_call(lib, query=(3, 2, 1, 6)), AssertionError,
                  "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor"),
    "2-D key for 3-D query": (lambda lib: _mha_call(lib, key=(5, 6)), AssertionError,
                              "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and "
                              "2-D tensors respectively"),
    "3-D key for 2-D query": (lambda lib: _mha_call(lib, query=(3, 6)), AssertionError,
                              "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found 3-D and "
                              "3-D tensors respectively"),
    "3-D key_padding_mask": (lambda lib: _mha_call(lib, key_padding_mask=lambda lib: lib.ones(2, 5, 1,
                                                                                              dtype=lib.bool)),
                             AssertionError, "For batched (3-D) `query`, expected `key_padding_mask` to be `None` "
                             "or 2-D but found 3-D tensor instead"),
    "4-D attn_mask": (lambda lib: _mha_call(lib, attn_mask=lambda lib: lib.ones(1, 2, 3, 5, dtype=lib.bool)),
                      AssertionError, "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                      "but found 4-D tensor instead"),
    "2-D attn_mask shape": (lambda lib: _mha_call(lib, attn_mask=lambda lib: lib.ones(3, 4, dtype=lib.bool)),
                            RuntimeError, "The shape of the 2D attn_mask is torch.Size([3, 4]), but should be "
                            "(3, 5)."),
    "3-D attn_mask shape": (lambda lib: _mha_call(lib, attn_mask=lambda lib: lib.ones(2, 3, 5, dtype=lib.bool)),
                            RuntimeError, "The shape of the 3D attn_mask is torch.Size([2, 3, 5]), but should be "
                            "(4, 3, 5)."),
    "unbatched 3-D attn_mask shape": (lambda lib: _mha_call(lib, query=(3, 6), key=(5, 6), attn_mask=lambda lib:
                                                            lib.ones(4, 3, 5, dtype=lib.bool)),
                                      AssertionError, "Expected `attn_mask` shape to be (2, 3, 5) but got "
                                      "torch.Size([4, 3, 5])"),
    "key_padding_mask length": (lambda lib: _mha_call(lib, key_padding_mask=lambda lib: lib.ones(2, 4,
                                                                                                 dtype=lib.bool)),
                                AssertionError, "Expected key_padded_mask.shape[1] to be 5, but got 4"),
    "key_padding_mask batch": (lambda lib: _mha_call(lib, key_padding_mask=lambda lib: lib.ones(3, 5,
                                                                                                dtype=lib.bool)),
                               AssertionError, "Expected key_padded_mask.shape[0] to be 2, but got 3"),
    "integer attn_mask": (lambda lib: _mha_call(lib, attn_mask=lambda lib: lib.ones(3, 5, dtype=lib.int64)),
                          AssertionError, "only bool and floating types of attn_mask are supported"),
    "causal hint without a mask": (lambda lib: _mha_call(lib, is_causal=True), RuntimeError,
                                   "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                                   "module method `generate_square_subsequent_mask` to create this mask."),
    "key and value differ": (lambda lib: _mha_call(lib, value=(4, 2, 6)), AssertionError,
                             "key shape torch.Size([5, 2, 6]) does not match value shape torch.Size([4, 2, 6])"),
    "embed dim to check": (lambda lib: lib.nn.functional.multi_head_attention_forward(
        *[lib.ones(3, 2, 6, dtype=lib.float64)] * 3, 8, 2, lib.ones(18, 6, dtype=lib.float64), None, None, None,
        False, 0.0, lib.ones(6, 6, dtype=lib.float64), None), AssertionError,
        "was expecting embedding dimension of 8, but got 6"),
    "embed dim not divisible": (lambda lib: lib.nn.functional.multi_head_attention_forward(
        *[lib.ones(3, 2, 6, dtype=lib.float64)] * 3, 6, 4, lib.ones(18, 6, dtype=lib.float64), None, None, None,
        False, 0.0, lib.ones(6, 6, dtype=lib.float64), None), AssertionError,
        "embed_dim 6 not divisible by num_heads 4"),
    "bias_k without bias_v": (lambda lib: lib.nn.functional.multi_head_attention_forward(
        *[lib.ones(3, 2, 6, dtype=lib.float64)] * 3, 6, 2, lib.ones(18, 6, dtype=lib.float64), None,
        lib.ones(1, 1, 6, dtype=lib.float64), None, False, 0.0, lib.ones(6, 6, dtype=lib.float64), None),
        AssertionError, "bias_k is set but bias_v is None"),
}


@pytest.mark.parametrize("case", sorted(MHA_ERRORS))
def test_mha_errors_as_torch(case):
    _check_error(*MHA_ERRORS[case])


def test_mha_mismatched_mask_types_warn_as_torch():
    for lib in LIBS:
        m = lib.nn.MultiheadAttention(6, 2, dtype=lib.float64)
        x = lib.ones(3, 2, 6, dtype=lib.float64)
        with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated. "
                                             "Use same type for both instead."):
            m(x, x, x, key_padding_mask=lib.zeros(2, 3, dtype=lib.bool), attn_mask=lib.zeros(3, 3, dtype=lib.float64))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            m(x, x, x, key_padding_mask=lib.zeros(2, 3, dtype=lib.bool), attn_mask=lib.zeros(3, 3, dtype=lib.bool))


def test_mha_bool_and_float_masks_agree():
    # True (masked out) is -inf; the canonical float mask gives the same result
    rng = np.random.default_rng(12)
    m = cx.nn.MultiheadAttention(E, H, dtype=cx.float64)
    x = _t(rng.standard_normal((4, 2, E)))
    am = rng.random((4, 4)) > 0.6
    am[:, 0] = False
    kpm = np.array([[False, True, False, False], [False, False, False, True]])
    a = m(x, x, x, attn_mask=_t(am), key_padding_mask=_t(kpm))
    b = m(x, x, x, attn_mask=_t(np.where(am, -np.inf, 0.0)), key_padding_mask=_t(np.where(kpm, -np.inf, 0.0)))
    np.testing.assert_array_equal(_np(a[0]), _np(b[0]))
    np.testing.assert_array_equal(_np(a[1]), _np(b[1]))
    assert (_np(a[1])[1, :, 3] == 0).all() and (_np(a[1])[0, :, 1] == 0).all()   # a padded key gets no weight


# -- dropout inside attention -----------------------------------------------------------------------

def test_mha_dropout_zeroes_attention_weights_in_training_only():
    cx.manual_seed(3)
    p, L = 0.3, 40
    m = cx.nn.MultiheadAttention(8, 2, dropout=p, dtype=cx.float64)
    x = _t(np.random.default_rng(4).standard_normal((L, 3, 8)))
    _, w = m(x, x, x, average_attn_weights=False)
    w = _np(w)
    zero = (w == 0).mean()
    assert abs(zero - p) < 0.02, zero                # 9600 weights: 5 sigma is 0.023 ... 4.3 sigma here
    np.testing.assert_allclose(w.sum(-1).mean(), 1.0, rtol=0.03)     # survivors scaled by 1 / (1 - p)
    _, w_again = m(x, x, x, average_attn_weights=False)
    assert not np.array_equal(_np(w_again), w)       # a fresh mask per call
    m.eval()
    _, w = m(x, x, x, average_attn_weights=False)
    assert (_np(w) > 0).all()
    np.testing.assert_allclose(_np(w).sum(-1), 1.0, rtol=1e-12)
    out_eval = _np(m(x, x, x, need_weights=False)[0])
    np.testing.assert_allclose(_np(m(x, x, x)[0]), out_eval, rtol=1e-12, atol=1e-12)


# -- device tensors ------------------------------------------------------------------------------

@pytest.fixture
def emulated_cuda():
    previous = _device.use_runtime(HostRuntime())
    yield
    _device.use_runtime(previous)


def test_attention_refuses_device_tensors_naming_the_layer(emulated_cuda):
    x = cx.randn(3, 2, 4).cuda()
    with pytest.raises(TypeError, match=r"scaled_dot_product_attention is not supported on cuda tensors "
                                        r"\(query is on cuda:0\).*CPU only"):
        cF.scaled_dot_product_attention(x, x, x)
    m = cx.nn.MultiheadAttention(4, 2).cuda()
    with pytest.raises(TypeError, match=r"MultiheadAttention is not supported on cuda tensors \(query is on cuda:0\)"):
        m(x, x, x)
    with pytest.raises(TypeError, match=r"MultiheadAttention is not supported on cuda tensors "
                                        r"\(in_proj_weight is on cuda:0\)"):
        m(x.cpu(), x.cpu(), x.cpu())
    with pytest.raises(TypeError, match=r"multi_head_attention_forward is not supported on cuda tensors"):
        cF.multi_head_attention_forward(x, x, x, 4, 2, m.in_proj_weight, None, None, None, False, 0.0,
                                        m.out_proj.weight, None)
    m.cpu()
    assert tuple(m(x.cpu(), x.cpu(), x.cpu())[0].shape) == (3, 2, 4)
