"""nn.TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder,
TransformerDecoder and Transformer: parameter names as torch's, a numpy
float64 reference of the encoder layer (always), torch 2.13 parity where it
is installed (weights copied from torch: outputs and gradients, one
optimizer step of nn.Transformer, and a small encoder classifier trained
for 15 Adam steps whose loss matches torch's step for step), the errors and
warnings torch gives, dropout in training only, and the refusal of device
tensors."""
import math
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend import _device
from cextend.nn.transformer import _detect_is_causal_mask
from host_device import HostRuntime
from parity_helpers import real_torch, with_torch

LIBS = [cx] + ([real_torch] if real_torch is not None else [])


def _np(t):
    return np.asarray(t.detach().numpy(), np.float64)


def _copy_weights(source, target):
    """torch module -> cextend module (same state_dict keys)."""
    state = source.state_dict()
    assert list(state) == list(target.state_dict())
    target.load_state_dict({name: cx.tensor(t.detach().numpy()) for name, t in state.items()})


def _random_state(module, rng):
    """Every parameter (LayerNorm's and the biases included) set to random values."""
    module.load_state_dict({name: cx.tensor(rng.standard_normal(tuple(t.shape)) * 0.4, dtype=t.dtype)
                            for name, t in module.state_dict().items()})


# -- names and structure -----------------------------------------------------------------------

ENCODER_LAYER_KEYS = ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                      "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                      "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
DECODER_LAYER_KEYS = (ENCODER_LAYER_KEYS[:4] + [k.replace("self_attn", "multihead_attn") for k in ENCODER_LAYER_KEYS[:4]]
                      + ENCODER_LAYER_KEYS[4:] + ["norm3.weight", "norm3.bias"])


def test_state_dict_keys_are_torchs():
    layer = cx.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    assert list(layer.state_dict()) == ENCODER_LAYER_KEYS
    assert list(cx.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16).state_dict()) == DECODER_LAYER_KEYS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = cx.nn.TransformerEncoder(layer, 2, norm=cx.nn.LayerNorm(8))
    assert list(encoder.state_dict()) == (["layers.0." + k for k in ENCODER_LAYER_KEYS]
                                          + ["layers.1." + k for k in ENCODER_LAYER_KEYS] + ["norm.weight", "norm.bias"])
    assert encoder.layers[0] is not layer and encoder.layers[0].linear1.weight is not encoder.layers[1].linear1.weight
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cx.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16)
    keys = list(model.state_dict())
    assert keys == (["encoder.layers.0." + k for k in ENCODER_LAYER_KEYS] + ["encoder.norm.weight", "encoder.norm.bias"]
                    + ["decoder.layers.%d.%s" % (i, k) for i in range(2) for k in DECODER_LAYER_KEYS]
                    + ["decoder.norm.weight", "decoder.norm.bias"])
    no_bias = cx.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, bias=False)
    assert list(no_bias.state_dict()) == ["self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight",
                                          "linear2.weight", "norm1.weight", "norm2.weight"]
    if real_torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = real_torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                                               dim_feedforward=16)
        assert keys == list(theirs.state_dict())
        assert [tuple(t.shape) for t in model.state_dict().values()] == [tuple(t.shape) for t in
                                                                          theirs.state_dict().values()]
        assert repr(model) == repr(theirs)


def test_transformer_initialisation():
    cx.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cx.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                                  dim_feedforward=32)
    w = _np(model.encoder.layers[0].linear1.weight)             # xavier_uniform_ of (32, 16)
    bound = math.sqrt(6.0 / 48)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert (_np(model.encoder.layers[0].self_attn.in_proj_bias) == 0).all()
    assert (_np(model.decoder.norm.weight) == 1).all()
    layer = cx.nn.TransformerEncoderLayer(8, 2, activation="gelu", dtype=cx.float64)
    assert layer.activation is cx.nn.functional.gelu and layer.activation_relu_or_gelu == 2
    assert layer.linear1.weight.dtype is cx.float64 and layer.linear1.out_features == 2048
    assert layer.self_attn.dropout == 0.1 and layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5
    assert cx.nn.TransformerEncoderLayer(8, 2, activation=cx.nn.ReLU()).activation_relu_or_gelu == 1
    assert cx.nn.TransformerEncoderLayer(8, 2, activation=cx.tanh).activation_relu_or_gelu == 0


def test_generate_square_subsequent_mask_and_causal_detection():
    mask = cx.nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype is cx.float32
    np.testing.assert_array_equal(_np(mask), np.triu(np.full((4, 4), -np.inf), 1))
    assert cx.nn.Transformer.generate_square_subsequent_mask(3, dtype=cx.float64).dtype is cx.float64
    assert _detect_is_causal_mask(mask) is True
    assert _detect_is_causal_mask(mask, size=5) is False
    assert _detect_is_causal_mask(mask, is_causal=False) is False
    assert _detect_is_causal_mask(cx.zeros(4, 4)) is False
    assert _detect_is_causal_mask(None, is_causal=True) is True


def test_errors_and_warnings_as_torch():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            lib.nn.TransformerEncoderLayer(8, 2, activation="tanh")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = lib.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                       dim_feedforward=8)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            model(lib.zeros(3, 2, 8), lib.zeros(3, 3, 8))
        with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
            model(lib.zeros(3, 2, 8), lib.zeros(3, 2, 6))
        with pytest.warns(UserWarning, match=r"enable_nested_tensor is True, but self.use_nested_tensor is False "
                                             r"because encoder_layer.self_attn.batch_first was not True\(use "
                                             r"batch_first for better inference performance\)"):
            lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=8), 1)
        with pytest.warns(UserWarning, match="encoder_layer.norm_first was True"):
            lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, norm_first=True), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            encoder = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=8,
                                                                               batch_first=True), 1)
            lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=8), 1,
                                      enable_nested_tensor=False)
        assert encoder.use_nested_tensor and encoder.enable_nested_tensor and encoder.mask_check
        with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and mask is deprecated"):
            encoder(lib.zeros(2, 3, 8), mask=lib.zeros(3, 3), src_key_padding_mask=lib.zeros(2, 3, dtype=lib.bool))
        with pytest.raises(AssertionError, match="only bool and floating types of src_key_padding_mask are "
                                                 "supported"):
            encoder(lib.zeros(2, 3, 8), src_key_padding_mask=lib.zeros(2, 3, dtype=lib.int64))


# -- a numpy reference of the encoder layer ----------------------------------------------------------

def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _ref_self_attention(x, p, prefix, heads, additive):
    """x (L, N, E); additive (N * heads or 1, L, L) or None."""
    L, N, E = x.shape
    D = E // heads
    qkv = x @ p[prefix + "in_proj_weight"].T + p[prefix + "in_proj_bias"]
    q, k, v = (a.reshape(L, N * heads, D).transpose(1, 0, 2) for a in np.split(qkv, 3, -1))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(D)
    if additive is not None:
        scores = scores + additive
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    w = scores / scores.sum(-1, keepdims=True)
    out = (w @ v).transpose(1, 0, 2).reshape(L, N, E)
    return out @ p[prefix + "out_proj.weight"].T + p[prefix + "out_proj.bias"]


def ref_encoder_layer(x, p, heads, norm_first, activation, key_padding=None, causal=False):
    L, N, E = x.shape
    additive = np.zeros((N * heads, L, L))
    if key_padding is not None:
        additive = additive + np.repeat(np.where(key_padding, -np.inf, 0.0), heads, 0)[:, None, :]
    if causal:
        additive = additive + np.triu(np.full((L, L), -np.inf), 1)

    def ff(h):
        return activation(h @ p["linear1.weight"].T + p["linear1.bias"]) @ p["linear2.weight"].T + p["linear2.bias"]

    def norm(h, i):
        return _layer_norm(h, p["norm%d.weight" % i], p["norm%d.bias" % i])

    if norm_first:
        x = x + _ref_self_attention(norm(x, 1), p, "self_attn.", heads, additive)
        return x + ff(norm(x, 2))
    x = norm(x + _ref_self_attention(x, p, "self_attn.", heads, additive), 1)
    return norm(x + ff(x), 2)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("variant", ["relu", "gelu, padding", "causal, batch_first", "unbatched"])
def test_encoder_layer_matches_numpy_reference(norm_first, variant):
    rng = np.random.default_rng(len(variant) + norm_first)
    d, heads, L, N = 6, 3, 5, 2
    activation = "gelu" if "gelu" in variant else "relu"
    batch_first = "batch_first" in variant
    layer = cx.nn.TransformerEncoderLayer(d, heads, dim_feedforward=7, dropout=0.0, activation=activation,
                                          norm_first=norm_first, batch_first=batch_first, dtype=cx.float64)
    _random_state(layer, rng)
    p = {name: _np(t) for name, t in layer.state_dict().items()}
    x = rng.standard_normal((L, N, d))
    kwargs, ref_kwargs = {}, {}
    if "padding" in variant:
        pad = rng.random((N, L)) > 0.6
        pad[:, 0] = False
        kwargs["src_key_padding_mask"], ref_kwargs["key_padding"] = cx.tensor(pad), pad
    if "causal" in variant:
        kwargs["src_mask"] = cx.nn.Transformer.generate_square_subsequent_mask(L, dtype=cx.float64)
        kwargs["is_causal"] = True
        ref_kwargs["causal"] = True
    act = _gelu if activation == "gelu" else (lambda h: np.maximum(h, 0))
    expected = ref_encoder_layer(x, p, heads, norm_first, act, **ref_kwargs)
    if variant == "unbatched":
        out = layer(cx.tensor(x[:, 0]), **kwargs)
        np.testing.assert_allclose(_np(out), expected[:, 0], rtol=1e-11, atol=1e-12)
        return
    inp = x.transpose(1, 0, 2) if batch_first else x
    out = _np(layer(cx.tensor(inp), **kwargs))
    np.testing.assert_allclose(out.transpose(1, 0, 2) if batch_first else out, expected, rtol=1e-11, atol=1e-12)


# -- against torch -----------------------------------------------------------------------------

def _forward_backward(lib, module, arrays, kwargs, grad_seed=3):
    """module(*arrays, **kwargs) in float64; returns (output, input grads, param grads)."""
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
    kw = {name: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for name, v in kwargs.items()}
    out = module(*inputs, **kw)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(g))
    return _np(out), [_np(t.grad) for t in inputs], {n: _np(p.grad) for n, p in module.named_parameters()}


def _assert_same(ours, theirs, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(ours[0], theirs[0], rtol=rtol, atol=atol)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    assert sorted(ours[2]) == sorted(theirs[2])
    for name in theirs[2]:
        np.testing.assert_allclose(ours[2][name], theirs[2][name], rtol=rtol, atol=atol, err_msg=name)


ENCODER_VARIANTS = {
    "post-norm relu": (dict(), dict()),
    "pre-norm gelu, bool masks": (dict(norm_first=True, activation="gelu"), dict(src_mask="bool", kpm="bool")),
    "batch_first, float masks": (dict(batch_first=True), dict(src_mask="float", kpm="float")),
    "causal mask detected": (dict(), dict(src_mask="causal")),
    "no bias, callable activation": (dict(bias=False, activation="callable"), dict(kpm="bool")),
    "unbatched": (dict(), dict(unbatched=True, src_mask="bool")),
}


def _masks(rng, setup, L, N, lib_mask_name="src_mask"):
    kwargs = {}
    kind = setup.get("src_mask")
    if kind == "bool":
        m = rng.random((L, L)) > 0.7
        np.fill_diagonal(m, False)
        kwargs[lib_mask_name] = m
    elif kind == "float":
        kwargs[lib_mask_name] = rng.standard_normal((L, L))
    elif kind == "causal":
        kwargs[lib_mask_name] = np.triu(np.full((L, L), -np.inf), 1)
    if setup.get("kpm"):
        pad = rng.random((N, L)) > 0.6
        pad[:, 0] = False
        kwargs["src_key_padding_mask"] = pad if setup["kpm"] == "bool" else np.where(pad, -1e9, 0.0)
    return kwargs


@with_torch
@pytest.mark.parametrize("variant", sorted(ENCODER_VARIANTS))
def test_encoder_matches_torch(variant):
    layer_kwargs, setup = ENCODER_VARIANTS[variant]
    rng = np.random.default_rng(sum(map(ord, variant)))
    L, N, d = 5, 3, 8
    x = rng.standard_normal((L, d) if setup.get("unbatched") else (L, N, d))
    if layer_kwargs.get("batch_first"):
        x = x.transpose(1, 0, 2)
    masks = _masks(rng, setup, L, N, "mask")
    encoders = {}
    for lib in (real_torch, cx):
        kw = dict(layer_kwargs)
        if kw.get("activation") == "callable":
            kw["activation"] = lib.nn.functional.silu
        layer = lib.nn.TransformerEncoderLayer(d, 2, dim_feedforward=12, dropout=0.0, dtype=lib.float64, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            encoders[lib] = lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(d, dtype=lib.float64))
    _copy_weights(encoders[real_torch], encoders[cx])
    results = [_forward_backward(lib, encoder, [x], masks) for lib, encoder in encoders.items()]
    _assert_same(results[1], results[0])


@with_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_matches_torch(norm_first):
    rng = np.random.default_rng(4)
    T, S, N, d = 4, 6, 2, 8
    tgt, memory = rng.standard_normal((T, N, d)), rng.standard_normal((S, N, d))
    pad = rng.random((N, S)) > 0.6
    pad[:, 0] = False
    mem_mask = rng.standard_normal((T, S))
    decoders = {}
    for lib in (real_torch, cx):
        layer = lib.nn.TransformerDecoderLayer(d, 4, dim_feedforward=10, dropout=0.0, norm_first=norm_first,
                                               dtype=lib.float64)
        decoders[lib] = lib.nn.TransformerDecoder(layer, 2, norm=lib.nn.LayerNorm(d, dtype=lib.float64))
    _copy_weights(decoders[real_torch], decoders[cx])
    results = []
    for lib, decoder in decoders.items():
        causal = lib.nn.Transformer.generate_square_subsequent_mask(T, dtype=lib.float64)
        results.append(_forward_backward(lib, decoder, [tgt, memory],
                                         dict(tgt_mask=causal, memory_mask=mem_mask,
                                              memory_key_padding_mask=np.where(pad, -np.inf, 0.0))))
    _assert_same(results[1], results[0])


@with_torch
@pytest.mark.filterwarnings("ignore:Support for mismatched tgt_key_padding_mask")
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask and attn_mask")
def test_transformer_one_adam_step_matches_torch():
    rng = np.random.default_rng(5)
    S, T, N, d = 5, 4, 3, 8
    src, tgt, target = rng.standard_normal((N, S, d)), rng.standard_normal((N, T, d)), rng.standard_normal((N, T, d))
    src_pad = rng.random((N, S)) > 0.7
    src_pad[:, 0] = False
    tgt_pad = np.zeros((N, T), bool)
    tgt_pad[0, -1] = True
    models = {}
    for lib in (real_torch, cx):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models[lib] = lib.nn.Transformer(d_model=d, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                                             dim_feedforward=16, dropout=0.0, batch_first=True, dtype=lib.float64)
    _copy_weights(models[real_torch], models[cx])
    runs = []
    for lib, model in models.items():
        opt = lib.optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            out = model(lib.tensor(src), lib.tensor(tgt),
                        tgt_mask=lib.nn.Transformer.generate_square_subsequent_mask(T, dtype=lib.float64),
                        src_key_padding_mask=lib.tensor(src_pad), tgt_key_padding_mask=lib.tensor(tgt_pad),
                        memory_key_padding_mask=lib.tensor(src_pad))
            loss = lib.nn.functional.mse_loss(out, lib.tensor(target))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, {n: _np(p) for n, p in model.named_parameters()}))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-10)
    # atol: the key projection's bias has a zero gradient up to rounding (softmax ignores a
    # shift shared by all keys), which Adam's g / (sqrt(v) + eps) turns into steps of ~1e-11
    for name, value in runs[0][1].items():
        np.testing.assert_allclose(runs[1][1][name], value, rtol=1e-9, atol=1e-9, err_msg=name)


# -- a small encoder classifier trains ---------------------------------------------------------------

VOCAB, CLASSES, SEQ, BATCH, D_MODEL = 12, 3, 6, 24, 16


def _classifier(lib):
    class EncoderClassifier(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(VOCAB, D_MODEL, dtype=lib.float64)
            layer = lib.nn.TransformerEncoderLayer(D_MODEL, 4, dim_feedforward=32, dropout=0.0, batch_first=True,
                                                   dtype=lib.float64)
            self.encoder = lib.nn.TransformerEncoder(layer, 2)
            self.head = lib.nn.Linear(D_MODEL, CLASSES, dtype=lib.float64)

        def forward(self, tokens, padding):
            h = self.encoder(self.embed(tokens), src_key_padding_mask=padding)
            return self.head(h.mean(1))

    return EncoderClassifier()


def _synthetic_data():
    """Class = the most frequent of three token groups; trailing tokens padded."""
    rng = np.random.default_rng(6)
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ))
    padding = np.zeros((BATCH, SEQ), bool)
    padding[::3, -2:] = True
    counts = np.stack([((tokens // (VOCAB // CLASSES) == c) & ~padding).sum(1) for c in range(CLASSES)], 1)
    return tokens, padding, counts.argmax(1)


def _train(lib, model, steps=15):
    tokens, padding, labels = _synthetic_data()
    x, pad, y = lib.tensor(tokens), lib.tensor(padding), lib.tensor(labels)
    opt = lib.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x, pad), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_encoder_classifier_trains():
    cx.manual_seed(0)
    model = _classifier(cx)
    if real_torch is not None:
        real_torch.manual_seed(0)
        reference = _classifier(real_torch)
        _copy_weights(reference, model)
        expected = _train(real_torch, reference)
    losses = _train(cx, model)
    assert losses[-1] < 0.75 * losses[0], losses
    if real_torch is not None:
        np.testing.assert_allclose(losses, expected, rtol=1e-9)


# -- dropout -------------------------------------------------------------------------------------

def test_dropout_applies_in_training_only():
    cx.manual_seed(1)
    layer = cx.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5, dtype=cx.float64)
    x = cx.tensor(np.random.default_rng(7).standard_normal((5, 2, 8)))
    a, b = _np(layer(x)), _np(layer(x))
    assert not np.allclose(a, b)
    layer.eval()
    c, e = _np(layer(x)), _np(layer(x))
    np.testing.assert_array_equal(c, e)
    layer.train()
    for m in layer.modules():
        if isinstance(m, (cx.nn.Dropout, cx.nn.MultiheadAttention)):
            if isinstance(m, cx.nn.Dropout):
                m.p = 0.0
            else:
                m.dropout = 0.0
    np.testing.assert_allclose(_np(layer(x)), c, rtol=1e-12, atol=1e-12)


# -- device tensors ------------------------------------------------------------------------------

def test_transformer_layers_refuse_device_tensors():
    previous = _device.use_runtime(HostRuntime())
    try:
        x = cx.randn(3, 2, 8).cuda()
        layer = cx.nn.TransformerEncoderLayer(8, 2, dim_feedforward=8)
        with pytest.raises(TypeError, match=r"TransformerEncoderLayer is not supported on cuda tensors "
                                            r"\(src is on cuda:0\)"):
            layer(x)
        layer.cuda()
        with pytest.raises(TypeError, match=r"TransformerEncoderLayer is not supported on cuda tensors "
                                            r"\(weight is on cuda:0\)"):
            layer(x.cpu())
        decoder = cx.nn.TransformerDecoderLayer(8, 2, dim_feedforward=8)
        with pytest.raises(TypeError, match=r"TransformerDecoderLayer is not supported on cuda tensors "
                                            r"\(memory is on cuda:0\)"):
            decoder(x.cpu(), x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cx.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                      dim_feedforward=8)
        with pytest.raises(TypeError, match=r"Transformer is not supported on cuda tensors \(src is on cuda:0\)"):
            model(x, x)
        with pytest.raises(TypeError, match=r"TransformerEncoder is not supported on cuda tensors"):
            model.encoder(x)
    finally:
        _device.use_runtime(previous)
