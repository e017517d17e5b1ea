"""Attention: scaled_dot_product_attention, multi_head_attention_forward and
nn.MultiheadAttention, as torch's.

The two functions are cextend/nn/_functional_attention.py's (re-exported
here and from cextend.nn.functional); MultiheadAttention is torch's module:
its parameters, their names in state_dict (in_proj_weight, or
q/k/v_proj_weight when kdim/vdim differ; in_proj_bias; out_proj.weight and
.bias; bias_k, bias_v) and its initialisation (xavier_uniform_ weights,
zero biases, xavier_normal_ bias_k/bias_v).  torch's inference fast path
(_native_multi_head_attention, nested tensors) computes the same function
as the path implemented here, which is the only one.  CPU only: a device
tensor is refused with a TypeError naming the layer and the device.
"""
from cextend import _factories
from cextend.autograd.grad_mode import no_grad
from cextend.nn import init
from cextend.nn._functional_attention import (_canonical_mask, _none_or_dtype, multi_head_attention_forward,
                                              require_host, scaled_dot_product_attention)
from cextend.nn.layers import Linear
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter

__all__ = ["MultiheadAttention", "scaled_dot_product_attention", "multi_head_attention_forward"]


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's out_proj: a Linear."""


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: attention over num_heads heads of
    embed_dim // num_heads features, with input projections (packed as
    in_proj_weight when kdim == vdim == embed_dim) and an output projection.

    forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False) returns
    (output, weights or None); inputs (L, N, E) or, with batch_first,
    (N, L, E); or unbatched (L, E).  Masks: True (bool) = masked out, or
    float values added; key_padding_mask (N, S); attn_mask (L, S) or
    (N * num_heads, L, S).
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_factories.empty((embed_dim, embed_dim), dtype=dtype))
            self.k_proj_weight = Parameter(_factories.empty((embed_dim, self.kdim), dtype=dtype))
            self.v_proj_weight = Parameter(_factories.empty((embed_dim, self.vdim), dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_factories.empty((3 * embed_dim, embed_dim), dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_factories.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(_factories.empty((1, 1, embed_dim), dtype=dtype))
            self.bias_v = Parameter(_factories.empty((1, 1, embed_dim), dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()
        if device is not None:
            self.to(device=device)

    def _reset_parameters(self):
        with no_grad():
            if self._qkv_same_embed_dim:
                init.xavier_uniform_(self.in_proj_weight)
            else:
                init.xavier_uniform_(self.q_proj_weight)
                init.xavier_uniform_(self.k_proj_weight)
                init.xavier_uniform_(self.v_proj_weight)
            if self.in_proj_bias is not None:
                init.constant_(self.in_proj_bias, 0.0)
                init.constant_(self.out_proj.bias, 0.0)
            if self.bias_k is not None:
                init.xavier_normal_(self.bias_k)
            if self.bias_v is not None:
                init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        # pickles from before kdim/vdim existed
        state.setdefault("_qkv_same_embed_dim", True)
        self.__dict__.update(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        weight = "in_proj_weight" if self._qkv_same_embed_dim else "q_proj_weight"
        require_host("MultiheadAttention", query=query, key=key, value=value, **{weight: getattr(self, weight)})
        is_batched = query.dim() == 3
        key_padding_mask = _canonical_mask(mask=key_padding_mask, mask_name="key_padding_mask",
                                           other_type=_none_or_dtype(attn_mask), other_name="attn_mask",
                                           target_type=query.dtype)
        attn_mask = _canonical_mask(mask=attn_mask, mask_name="attn_mask", other_type=None, other_name="",
                                    target_type=query.dtype, check_other=False)
        if self.batch_first and is_batched:
            # the same tensor stays the same tensor: self-attention projects once
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))

        separate = not self._qkv_same_embed_dim
        attn_output, attn_output_weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight if separate else None,
            k_proj_weight=self.k_proj_weight if separate else None,
            v_proj_weight=self.v_proj_weight if separate else None,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return attn_output.transpose(1, 0), attn_output_weights
        return attn_output, attn_output_weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """torch's mask merge for its fast path: (merged mask, mask type 0/1/2 or None)."""
        mask_type = None
        merged_mask = None
        if key_padding_mask is not None:
            mask_type = 1
            merged_mask = key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                attn_mask_expanded = attn_mask.reshape(batch_size, -1, seq_len, seq_len)
            else:
                attn_mask_expanded = attn_mask.reshape(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            merged_mask = attn_mask_expanded
            if key_padding_mask is not None:
                key_padding_mask_expanded = key_padding_mask.reshape(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
                merged_mask = attn_mask_expanded + key_padding_mask_expanded
        return merged_mask, mask_type
