"""``nn.MultiheadAttention``, with PyTorch's parameter names (``in_proj_weight``,
``in_proj_bias``, ``out_proj``, or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when
the key and value sizes differ) so a torch state_dict loads as is.

Masks follow torch.nn.MultiheadAttention: in a bool ``attn_mask`` or ``key_padding_mask``, True
marks a position that may NOT be attended to (the opposite of scaled_dot_product_attention's
bool mask); a float mask is added to the scores. A query whose every key is masked gets a zero
output when the weights are not asked for (PyTorch's fused path) and NaN when they are (its
softmax path), as in PyTorch 2.13.

>>> import tensorplug as tp
>>> mha = tp.nn.MultiheadAttention(8, 2, batch_first=True)
>>> out, weights = mha(tp.randn(3, 5, 8), tp.randn(3, 5, 8), tp.randn(3, 5, 8))
>>> out.shape, weights.shape
((3, 5, 8), (3, 5, 5))
"""
from __future__ import annotations

import math
import warnings

from ..frontend import dtypes as _dt
from ..frontend.factories import empty, zeros
from ..frontend.ops.elementwise import where
from ..frontend.ops.joining import cat
from ..frontend.tensor import Tensor
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear class of ``MultiheadAttention.out_proj`` (named as in PyTorch, so reprs match)."""


def additive_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A bool mask (True = masked out) as a float mask of 0 and -inf; a float mask unchanged
    (PyTorch's ``F._canonical_mask``)."""
    if mask is None:
        return None
    if mask.dtype is _dt.bool:
        return where(mask, float("-inf"), zeros((), dtype=dtype, device=mask.device))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported, got {mask.dtype}")
    return mask


def warn_mismatched_masks(padding_mask: Tensor | None, padding_name: str, attn_mask: Tensor | None, attn_name: str,
                          stacklevel: int = 3) -> None:
    """PyTorch's deprecation warning for a bool padding mask beside a float attention mask (or
    the reverse); both still work."""
    if padding_mask is not None and attn_mask is not None and padding_mask.dtype is not attn_mask.dtype:
        warnings.warn(
            f"Support for mismatched {padding_name} and {attn_name} is deprecated. Use same type for both instead.",
            stacklevel=stacklevel,
        )


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size ``embed_dim // num_heads``:
    ``out_proj(concat_h softmax(q_h k_h^T / sqrt(d) + mask) v_h)``.

    Inputs are (L, N, E), or (N, L, E) with ``batch_first``, or unbatched (L, E). Returns
    ``(output, weights)``; weights are averaged over heads unless ``average_attn_weights=False``
    and None when ``need_weights=False``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, add_bias_kv: bool = False,
                 add_zero_attn: bool = False, kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
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

    def _projections(self, query, key, value) -> tuple:
        e = self.embed_dim
        b = self.in_proj_bias
        b_q, b_k, b_v = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            w_q, w_k, w_v = w[:e], w[e:2 * e], w[2 * e:]
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _check_inputs(self, query, key, value) -> bool:
        for name, t, size in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: expected {name} to be a Tensor, got {type(t).__name__}")
            if t.ndim not in (2, 3) or t.shape[-1] != size:
                raise RuntimeError(
                    f"{self._get_name()}(embed_dim={self.embed_dim}, num_heads={self.num_heads}): expected {name} "
                    f"of shape (L, {size}) or 3-D with last dimension {size}, got shape {list(t.shape)}"
                )
        if not query.ndim == key.ndim == value.ndim:
            raise RuntimeError(
                f"MultiheadAttention: query, key and value must have the same number of dimensions, got "
                f"{query.ndim}, {key.ndim} and {value.ndim}"
            )
        if key.shape[:-1] != value.shape[:-1]:
            raise RuntimeError(f"key shape {list(key.shape)} does not match value shape {list(value.shape)}")
        return query.ndim == 3

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        batched = self._check_inputs(query, key, value)
        self._check_mask_dims(batched, key_padding_mask, attn_mask)
        warn_mismatched_masks(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask")
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                "`generate_square_subsequent_mask` to create this mask."
            )
        # As PyTorch: the hint replaces the mask by a causal one where nothing else needs the
        # mask itself (no padding to merge, no weights to return); otherwise the mask is used.
        causal = is_causal and key_padding_mask is None and not need_weights
        if causal:
            attn_mask = None
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        # From here on everything is batch first: (N, L, E) and (N, S, E).
        n, length, _ = query.shape
        heads, head_dim = self.num_heads, self.head_dim
        q, k, v = self._projections(query, key, value)
        mask = self._merged_mask(attn_mask, key_padding_mask, n, length, key.shape[1], q.dtype)
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(n, 1, self.embed_dim)], 1)
            v = cat([v, self.bias_v.expand(n, 1, self.embed_dim)], 1)
            mask = F.pad(mask, (0, 1)) if mask is not None else None
        q = q.reshape(n, length, heads, head_dim).transpose(1, 2)
        k = k.reshape(n, k.shape[1], heads, head_dim).transpose(1, 2)
        v = v.reshape(n, v.shape[1], heads, head_dim).transpose(1, 2)
        if self.add_zero_attn:
            k = cat([k, zeros((n, heads, 1, head_dim), dtype=k.dtype, device=k.device)], 2)
            v = cat([v, zeros((n, heads, 1, head_dim), dtype=v.dtype, device=v.device)], 2)
            mask = F.pad(mask, (0, 1)) if mask is not None else None
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * (1.0 / math.sqrt(head_dim))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores, -1)
            if dropout_p > 0.0:
                weights = F.dropout(weights, dropout_p)
            out = weights @ v
            if average_attn_weights:
                weights = weights.mean(1)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal)
        out = self.out_proj(out.transpose(1, 2).reshape(n, length, self.embed_dim))
        if not batched:
            out = out.squeeze(0)
            weights = weights.squeeze(0) if weights is not None else None
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    @staticmethod
    def _check_mask_dims(batched: bool, key_padding_mask, attn_mask) -> None:
        what, padding_dims = ("batched (3-D)", 2) if batched else ("unbatched (2-D)", 1)
        if key_padding_mask is not None and key_padding_mask.ndim != padding_dims:
            raise AssertionError(
                f"For {what} `query`, expected `key_padding_mask` to be `None` or {padding_dims}-D but found "
                f"{key_padding_mask.ndim}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(
                f"For {what} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {attn_mask.ndim}-D "
                f"tensor instead"
            )

    def _merged_mask(self, attn_mask, key_padding_mask, n: int, length: int, source: int, dtype):
        """attn_mask (L, S) or (N*heads, L, S) and key_padding_mask (N, S) as one additive mask
        broadcastable to (N, heads, L, S)."""
        attn_mask = additive_mask(attn_mask, "attn_mask", dtype)
        key_padding_mask = additive_mask(key_padding_mask, "key_padding_mask", dtype)
        mask = None
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (length, source):
                    raise RuntimeError(
                        f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, but should be {[length, source]}."
                    )
                mask = attn_mask
            elif attn_mask.ndim == 3:
                if tuple(attn_mask.shape) != (n * self.num_heads, length, source):
                    raise RuntimeError(
                        f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, but should be "
                        f"{[n * self.num_heads, length, source]}."
                    )
                mask = attn_mask.reshape(n, self.num_heads, length, source)
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, source):
                raise RuntimeError(
                    f"expecting key_padding_mask shape of {(n, source)}, but got {tuple(key_padding_mask.shape)}"
                )
            padding = key_padding_mask.reshape(n, 1, 1, source)
            mask = padding if mask is None else mask + padding
        return mask


class _FunctionalAttention:
    """The attributes and helpers ``MultiheadAttention.forward`` reads, taken from
    ``F.multi_head_attention_forward``'s arguments, so both run one implementation."""

    forward = MultiheadAttention.forward
    _check_inputs = MultiheadAttention._check_inputs
    _check_mask_dims = staticmethod(MultiheadAttention._check_mask_dims)
    _merged_mask = MultiheadAttention._merged_mask
    _projections = MultiheadAttention._projections
    batch_first = False

    def _get_name(self) -> str:
        return "MultiheadAttention"

    def out_proj(self, x: Tensor) -> Tensor:
        return F.linear(x, self.out_proj_weight, self.out_proj_bias)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                                 bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights=True, is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: ``nn.MultiheadAttention``'s forward with
    its parameters as arguments; query, key and value are ``(L, N, E)`` or unbatched ``(L, E)``
    (sequence first). Returns ``(output, weights)``. ``static_k`` / ``static_v`` are not
    supported (NotImplementedError)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k and static_v are not supported by tensorplug")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_head_attention_forward: expected {name} to be a Tensor, got {type(t).__name__}")
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if embed_dim % num_heads:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    attention = _FunctionalAttention()
    attention.embed_dim, attention.num_heads, attention.head_dim = embed_dim, num_heads, embed_dim // num_heads
    attention.kdim, attention.vdim = key.shape[-1], value.shape[-1]
    attention._qkv_same_embed_dim = not use_separate_proj_weight
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight is None")
    elif in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    attention.in_proj_weight, attention.in_proj_bias = in_proj_weight, in_proj_bias
    attention.q_proj_weight, attention.k_proj_weight, attention.v_proj_weight = q_proj_weight, k_proj_weight, v_proj_weight
    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    attention.bias_k, attention.bias_v = bias_k, bias_v
    attention.add_zero_attn = add_zero_attn
    attention.dropout, attention.training = dropout_p, training
    attention.out_proj_weight, attention.out_proj_bias = out_proj_weight, out_proj_bias
    return attention.forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal)
