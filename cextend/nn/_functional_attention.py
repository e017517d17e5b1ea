"""torch.nn.functional's attention: scaled_dot_product_attention and
multi_head_attention_forward, with the mask helpers torch's transformer
layers call (_canonical_mask, _none_or_dtype, _mha_shape_check).

Composed of the op table's ops (matmul, baddbmm, bmm, linear, softmax,
dropout, masked_fill, cat, repeat_interleave), so autograd, gradcheck and
double backward come from theirs.  It lives apart from cextend/nn/attention.py
(which re-exports it beside nn.MultiheadAttention) so that
cextend.nn.functional can import it without importing the layers.

scaled_dot_product_attention is torch 2.13's math path
(_scaled_dot_product_attention_math): q and k^T each scaled by sqrt(scale),
a bool mask (True = take part) made additive (-inf elsewhere), the causal
mask lower-triangular, key and value heads repeated for GQA, and torch's
_safe_softmax, so a row whose keys are all masked gives zeros (value and
gradient) rather than NaN.  torch's fused CPU kernel (flash attention for
4-D inputs) computes the same function; cextend has only this path.
float16 inputs are computed in float32 and the result cast back, as the
math path does.  multi_head_attention_forward is torch's code, step for step:
with need_weights it computes the weights itself (plain softmax: a fully
masked row is NaN, as in torch), otherwise it calls the function above.
"""
import math
import warnings

import numpy as np

from cextend import _dtype, _factories
from cextend._ops._nn_checks import torch_name
from cextend._ops._operands import broadcast_shapes, is_tensor
from cextend._ops.joining import cat
from cextend._ops.linalg import linear
from cextend._ops.nn_activation import softmax
from cextend._ops.nn_layers import dropout

# How torch's TORCH_CHECK messages print a dtype (caffe2::TypeMeta names).
_TYPE_META = {"float16": "c10::Half", "float32": "float", "float64": "double", "int64": "long int",
              "int32": "int", "uint8": "unsigned char", "bool": "bool"}


def _meta(t):
    return _TYPE_META.get(t.dtype.name, t.dtype.name)


def require_host(what, **tensors):
    """cextend's attention runs on the CPU: a device tensor is refused, naming
    the op or layer and the device (TypeError, as the device op set refuses an op)."""
    for name, t in tensors.items():
        if t is not None and is_tensor(t) and t.device.type != "cpu":
            raise TypeError("%s is not supported on %s tensors (%s is on %s): cextend's attention and "
                            "transformer layers run on the CPU only; move the module and its inputs "
                            "with .cpu() first" % (what, t.device.type, name, t.device))


def _fmt(shape):
    return "[%s]" % ", ".join(str(int(s)) for s in shape)


# -- scaled_dot_product_attention ------------------------------------------------------------

def _validate(query, key, value, attn_mask):
    """torch's validate_sdpa_input, then the math kernel's dtype check."""
    for position, (name, t) in enumerate((("query", query), ("key", key), ("value", value)), 1):
        if not is_tensor(t):
            raise TypeError("scaled_dot_product_attention(): argument '%s' (position %d) must be Tensor, not %s"
                            % (name, position, type(t).__name__))
    if attn_mask is not None and not is_tensor(attn_mask):
        raise TypeError("scaled_dot_product_attention(): argument 'attn_mask' must be Tensor, not %s"
                        % type(attn_mask).__name__)
    require_host("scaled_dot_product_attention", query=query, key=key, value=value, attn_mask=attn_mask)
    if not (query.dtype is key.dtype and query.dtype is value.dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: %s "
                           "key.dtype: %s and value.dtype: %s instead." % (_meta(query), _meta(key), _meta(value)))
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           "%d key.dim: %d and value.dim: %d instead." % (query.dim(), key.dim(), value.dim()))
    if attn_mask is not None and attn_mask.dtype not in (_dtype.bool, _dtype.float32, query.dtype):
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           "attn_mask.dtype: %s and  query.dtype: %s instead." % (_meta(attn_mask), _meta(query)))
    if not query.dtype.is_floating_point:
        raise RuntimeError("expected scalar type Float but found %s" % torch_name(query._data.dtype))


def _additive(mask, dtype):
    """A bool mask (True = take part) as 0 / -inf in dtype; a float mask as it is."""
    if mask is None or mask.dtype is not _dtype.bool:
        return mask
    return _factories.zeros_like(mask, dtype=dtype).masked_fill_(mask.logical_not(), float("-inf"))


def _repeat_heads(query, key, value):
    """torch's pre_process_group_query_attention_input: key and value heads (dim -3)
    repeated to the query's."""
    for t in (query, key, value):
        if t.dim() < 3:
            raise IndexError("Dimension out of range (expected to be in range of [-%d, %d], but got -3)"
                             % (t.dim(), t.dim() - 1))
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq == hk == hv:
        return key, value
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return key.repeat_interleave(hq // hk, -3), value.repeat_interleave(hq // hv, -3)


def _check_matmul(a_shape, b_batch, inner_b, cols_b):
    """The batch broadcast and inner sizes of a @ b, for a of a_shape and b of
    b_batch + (inner_b, cols_b), with the messages torch's matmul gives."""
    batch_a, batch_b = tuple(a_shape[:-2]), tuple(b_batch)
    batch = broadcast_shapes(batch_a, batch_b)
    inner_a = a_shape[-1]
    if inner_a != inner_b:
        if not batch_a and not batch_b:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                               % (a_shape[-2], inner_a, inner_b, cols_b))
        count = int(np.prod(batch, dtype=np.int64))
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: "
                           "[%d, %d]." % (count, inner_a, count, inner_b))
    return batch


def _safe_softmax(scores):
    """torch's _safe_softmax along the last dim: a row that is all -inf gives
    zeros.  Those rows are softmaxed as zeros and the result zeroed, so the
    gradient there is zero, as torch's (its backward reads the zeroed result)."""
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    if not dead._data.any():
        return softmax(scores, -1)
    return softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v over the last two dims; any leading
    (batch, head) dims, broadcast between query, key, value and the mask.

    attn_mask: bool (True = take part) or float (added), broadcastable to
    (..., L, S); is_causal: the lower-triangular mask (not with attn_mask);
    scale: 1/sqrt(E) by default; enable_gqa: query heads (dim -3) a multiple
    of key/value heads.  Dropout (dropout_p > 0) always applies, as torch's.
    """
    _validate(query, key, value, attn_mask)
    origin = query.dtype
    if origin is _dtype.float16:                     # the math path computes in float32
        query, key, value = query.float(), key.float(), value.float()
    head = query.shape[-1]
    factor = abs(scale) if scale is not None else (1.0 / math.sqrt(head) if head else math.inf)
    root = math.sqrt(factor)
    q = query * (-root if scale is not None and scale < 0 else root)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        attn_mask = _factories.ones(q.shape[-2], key.shape[-2], dtype=_dtype.bool).tril()
    mask = _additive(attn_mask, origin)
    if enable_gqa:
        key, value = _repeat_heads(q, key, value)
    batch = _check_matmul(q.shape, key.shape[:-2], key.shape[-1], key.shape[-2])
    scores = q.matmul(key.transpose(-2, -1) * root)
    if mask is not None:
        shape = broadcast_shapes(tuple(scores.shape), tuple(mask.shape))
        if shape != tuple(scores.shape):
            raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                               % (_fmt(scores.shape), _fmt(shape)))
        scores = scores + mask
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        if dropout_p > 1.0:     # torch's native dropout raises RuntimeError (F.dropout a ValueError)
            raise RuntimeError("dropout probability has to be between 0 and 1, but got %s" % (dropout_p,))
        weights = dropout(weights, dropout_p, True)
    _check_matmul(batch + tuple(weights.shape[-2:]), value.shape[:-2], value.shape[-2], value.shape[-1])
    out = weights.matmul(value)
    return out.to(origin) if out.dtype is not origin else out


# -- multi_head_attention_forward and its helpers ----------------------------------------------

def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-D query) or not (2-D); torch's AssertionErrors otherwise."""
    if query.dim() == 3:
        is_batched = True
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D"
                                 f" but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                                 f" but found {attn_mask.dim()}-D tensor instead")
    elif query.dim() == 2:
        is_batched = False
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D"
                                 f" but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                                     f" but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected_shape = (num_heads, query.shape[0], key.shape[0])
                if attn_mask.shape != expected_shape:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected_shape} but got "
                                         f"{attn_mask.shape}")
    else:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                             "query tensor")
    return is_batched


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) as an additive float mask (-inf where True) of
    target_type; a float mask as it is; anything else an AssertionError.  Warns, as
    torch, when the mask's dtype differs from other_type."""
    if mask is not None:
        mask_dtype = mask.dtype
        mask_is_float = mask_dtype.is_floating_point
        if mask_dtype is not _dtype.bool and not mask_is_float:
            raise AssertionError(f"only bool and floating types of {mask_name} are supported")
        if check_other and other_type is not None and mask_dtype is not other_type:
            warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                          "both instead.", stacklevel=2)
        if not mask_is_float:
            mask = _factories.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    if is_tensor(input):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _check_key_padding_mask(key_padding_mask, src_len, bsz):
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")


def _in_projection_packed(q, k, v, w, b=None):
    """q, k, v projected by one packed (3E, E) weight: one linear for
    self-attention, two for encoder-decoder attention (k is v), three otherwise."""
    E = q.size(-1)
    if k is v:
        if q is k:
            return list(linear(q, w, b).chunk(3, -1))
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        k_proj, v_proj = linear(k, w_kv, b_kv).chunk(2, -1)
        return [linear(q, w_q, b_q), k_proj, v_proj]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return [linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)]


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """q, k, v projected by separate weights (kdim / vdim differ from embed_dim)."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    if w_q.shape != (Eq, Eq):
        raise AssertionError(f"expecting query weights shape of {(Eq, Eq)}, but got {w_q.shape}")
    if w_k.shape != (Eq, Ek):
        raise AssertionError(f"expecting key weights shape of {(Eq, Ek)}, but got {w_k.shape}")
    if w_v.shape != (Eq, Ev):
        raise AssertionError(f"expecting value weights shape of {(Eq, Ev)}, but got {w_v.shape}")
    if b_q is not None and b_q.shape != (Eq,):
        raise AssertionError(f"expecting query bias shape of {(Eq,)}, but got {b_q.shape}")
    if b_k is not None and b_k.shape != (Eq,):
        raise AssertionError(f"expecting key bias shape of {(Eq,)}, but got {b_k.shape}")
    if b_v is not None and b_v.shape != (Eq,):
        raise AssertionError(f"expecting value bias shape of {(Eq,)}, but got {b_v.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _pad_last(mask):
    """F.pad(mask, (0, 1)): one more column of zeros (False for a bool mask)."""
    return cat([mask, _factories.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype)], -1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: query (L, N, E) or (L, E),
    key and value (S, N, E_k/E_v) or (S, E_k/E_v); returns (output, weights or None)."""
    require_host("multi_head_attention_forward", query=query, key=key, value=value, in_proj_weight=in_proj_weight,
                 q_proj_weight=q_proj_weight, out_proj_weight=out_proj_weight)
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)

    tgt_len, bsz, embed_dim = query.shape
    src_len, _, _ = key.shape

    key_padding_mask = _canonical_mask(mask=key_padding_mask, mask_name="key_padding_mask",
                                       other_type=_none_or_dtype(attn_mask), other_name="attn_mask",
                                       target_type=query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None            # the hint alone: SDPA's causal mask
    else:
        attn_mask = _canonical_mask(mask=attn_mask, mask_name="attn_mask", other_type=None, other_name="",
                                    target_type=query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False       # the merged mask is no longer causal

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    # in-projection
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight is None")
        if k_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but k_proj_weight is None")
        if v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but v_proj_weight is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    # the attention mask, 3-D
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct_2d_size = (tgt_len, src_len)
            if attn_mask.shape != correct_2d_size:
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{correct_2d_size}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct_3d_size = (bsz * num_heads, tgt_len, src_len)
            if attn_mask.shape != correct_3d_size:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{correct_3d_size}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    # bias along the sequence (dim 0)
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    else:
        if bias_k is not None:
            raise AssertionError("bias_k is set but bias_v is None")
        if bias_v is not None:
            raise AssertionError("bias_v is set but bias_k is None")

    # heads: (N * num_heads, length, head_dim), batch first
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_k.size(0) of {bsz * num_heads}, but got {static_k.size(0)}")
        if static_k.size(2) != head_dim:
            raise AssertionError(f"expecting static_k.size(2) of {head_dim}, but got {static_k.size(2)}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_v.size(0) of {bsz * num_heads}, but got {static_v.size(0)}")
        if static_v.size(2) != head_dim:
            raise AssertionError(f"expecting static_v.size(2) of {head_dim}, but got {static_v.size(2)}")
        v = static_v

    # zero attention along the sequence (now dim 1)
    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, _factories.zeros(zero_attn_shape, dtype=k.dtype)], dim=1)
        v = cat([v, _factories.zeros(zero_attn_shape, dtype=v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)

    src_len = k.size(1)

    # key padding merged into the attention mask
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        key_padding_mask = (key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        _B, _Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            attn_output_weights = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            attn_output_weights = q_scaled.bmm(k.transpose(-2, -1))
        attn_output_weights = softmax(attn_output_weights, -1)
        if dropout_p > 0.0:
            attn_output_weights = dropout(attn_output_weights, dropout_p)
        attn_output = attn_output_weights.bmm(v)
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.reshape(tgt_len, bsz, attn_output.size(1))
        attn_output_weights = attn_output_weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_output_weights = attn_output_weights.mean(dim=1)
        if not is_batched:
            attn_output = attn_output.squeeze(1)
            attn_output_weights = attn_output_weights.squeeze(0)
        return attn_output, attn_output_weights

    # attn_mask (1, L, S) or (N * num_heads, L, S) -> broadcastable to (N, num_heads, L, S)
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.reshape(tgt_len, bsz, attn_output.size(1))
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    return attn_output, None
