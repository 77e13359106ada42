"""The transformer of "Attention Is All You Need" as torch.nn builds it: ``Transformer`` (encoder
and decoder), ``TransformerEncoder``/``TransformerDecoder`` (stacks of copies of one layer with an
optional final norm) and ``TransformerEncoderLayer``/``TransformerDecoderLayer``.

Submodule and parameter names are PyTorch's (``encoder.layers.0.self_attn.in_proj_weight``,
``decoder.layers.0.multihead_attn.out_proj.bias``, ``linear1``, ``norm3``, ...), so a torch
state_dict loads as is; masks mean what they mean for :class:`MultiheadAttention`.

>>> import tensorplug as tp
>>> model = tp.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
>>> tgt_mask = tp.nn.Transformer.generate_square_subsequent_mask(4)
>>> model(tp.randn(5, 3, 8), tp.randn(4, 3, 8), tgt_mask=tgt_mask).shape
(4, 3, 8)
"""
from __future__ import annotations

import copy
from typing import Callable

from ..frontend.factories import full
from ..frontend.ops.shaping import triu
from ..frontend.tensor import Tensor
from . import functional as F
from . import init
from .activation import GELU, ReLU
from ._multihead_attention import MultiheadAttention, additive_mask, warn_mismatched_masks
from .containers import ModuleList
from .layers import Dropout, LayerNorm, Linear
from .module import Module

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


_NAMED_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation) -> Callable:
    """The feed-forward block's activation: "relu", "gelu" or any callable."""
    if isinstance(activation, str):
        if activation not in _NAMED_ACTIVATIONS:
            raise RuntimeError(f"activation should be relu/gelu, not {activation}")
        return _NAMED_ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"activation should be a string or a callable, got {type(activation).__name__}")
    return activation


def _fused_kernel_flag(activation) -> int:
    """PyTorch's ``activation_relu_or_gelu`` (1 relu, 2 gelu, 0 other; it picks a fused kernel
    there), kept for code that reads it."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _canonical_masks(padding_mask, padding_name: str, attn_mask, attn_name: str, dtype) -> tuple:
    """Both masks as additive float masks, once for every layer of a stack, with PyTorch's
    warning when one is bool and the other float."""
    warn_mismatched_masks(padding_mask, padding_name, attn_mask, attn_name, stacklevel=4)
    return additive_mask(padding_mask, padding_name, dtype), additive_mask(attn_mask, attn_name, dtype)


def _attend(attention: MultiheadAttention, queries: Tensor, source: Tensor, mask, padding_mask, causal) -> Tensor:
    """The attention output alone (no weights) of ``queries`` over ``source``."""
    output, _ = attention(queries, source, source, attn_mask=mask, key_padding_mask=padding_mask,
                          need_weights=False, is_causal=causal)
    return output


# PyTorch's stacks compare a mask with a causal one when is_causal is None (a host
# synchronisation per call), only to pick a faster kernel for the same result: a mask that is
# causal gives the same output whether it is applied or replaced by the hint. So None means
# "apply the mask as given" here, which is what PyTorch computes too.
def _causal_hint(is_causal) -> bool:
    return bool(is_causal)


class _ResidualLayer(Module):
    """What the encoder and decoder layers share: attention blocks then a feed-forward block,
    block ``i`` wrapped with ``dropout{i}`` and ``norm{i}`` as ``x + dropout(block(norm(x)))``
    with ``norm_first``, ``norm(x + dropout(block(x)))`` without."""

    def _build(self, attentions: dict, d_model: int, dim_feedforward: int, dropout: float, layer_norm_eps: float,
               norm_first: bool, bias: bool, factory: dict) -> None:
        # Registration order is PyTorch's, so that repr and the order of parameters() match.
        for name, attention in attentions.items():
            setattr(self, name, attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        blocks = range(1, len(attentions) + 2)
        for number in blocks:
            setattr(self, f"norm{number}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for number in blocks:
            setattr(self, f"dropout{number}", Dropout(dropout))

    def _residual(self, x: Tensor, number: int, block: Callable[[Tensor], Tensor]) -> Tensor:
        norm, dropout = self._modules[f"norm{number}"], self._modules[f"dropout{number}"]
        if self.norm_first:
            return x + dropout(block(norm(x)))
        return norm(x + dropout(block(x)))

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class TransformerEncoderLayer(_ResidualLayer):
    """Self-attention then a feed-forward block, each with dropout, a residual connection and a
    LayerNorm (after the residual by default, before the block with ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1, activation=F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        attention = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory)
        self._build({"self_attn": attention}, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias,
                    factory)
        chosen = _activation(activation)
        self.activation_relu_or_gelu = _fused_kernel_flag(chosen)
        self.activation = chosen

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        padding, mask = _canonical_masks(src_key_padding_mask, "src_key_padding_mask", src_mask, "src_mask", src.dtype)
        x = self._residual(src, 1, lambda h: _attend(self.self_attn, h, h, mask, padding, is_causal))
        return self._residual(x, 2, self._feed_forward)


class TransformerDecoderLayer(_ResidualLayer):
    """Self-attention over the target, attention from the target to the encoder's output
    (``memory``), then a feed-forward block; each with dropout, a residual connection and a
    LayerNorm (after the residual by default, before the block with ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1, activation=F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        attentions = {name: MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                               **factory)
                      for name in ("self_attn", "multihead_attn")}
        self._build(attentions, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias, factory)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = self._residual(tgt, 1, lambda h: _attend(self.self_attn, h, h, tgt_mask, tgt_key_padding_mask,
                                                     tgt_is_causal))
        x = self._residual(x, 2, lambda h: _attend(self.multihead_attn, h, memory, memory_mask,
                                                   memory_key_padding_mask, memory_is_causal))
        return self._residual(x, 3, self._feed_forward)


class _LayerStack(Module):
    """``num_layers`` deep copies of one layer (each with its own parameters, starting equal) in
    ``layers``, and an optional final ``norm``."""

    def _stack(self, layer: Module, num_layers: int, norm: Module | None) -> None:
        self.layers = ModuleList(copy.deepcopy(layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def _normed(self, output: Tensor) -> Tensor:
        return output if self.norm is None else self.norm(output)


class TransformerEncoder(_LayerStack):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then an optional ``norm``.

    ``enable_nested_tensor`` and ``mask_check`` are accepted and kept for PyTorch's signature;
    tensorplug has no nested tensors, so padded positions are computed and masked, never skipped.
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self._stack(encoder_layer, num_layers, norm)
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False  # what PyTorch decides from the layer; never, here
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        padding, mask = _canonical_masks(src_key_padding_mask, "src_key_padding_mask", mask, "mask", src.dtype)
        causal = _causal_hint(is_causal)
        hidden = src
        for layer in self.layers:
            hidden = layer(hidden, src_mask=mask, is_causal=causal, src_key_padding_mask=padding)
        return self._normed(hidden)


class TransformerDecoder(_LayerStack):
    """``num_layers`` copies of ``decoder_layer`` applied in turn to the target, each attending to
    the same ``memory``, then an optional ``norm``."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self._stack(decoder_layer, num_layers, norm)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        masks = dict(tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                     memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=_causal_hint(tgt_is_causal),
                     memory_is_causal=memory_is_causal)
        hidden = tgt
        for layer in self.layers:
            hidden = layer(hidden, memory, **masks)
        return self._normed(hidden)


class Transformer(Module):
    """An encoder of ``num_encoder_layers`` layers over ``src`` and a decoder of
    ``num_decoder_layers`` layers over ``tgt`` attending to the encoder's output, each stack
    ending in a LayerNorm. Every parameter with more than one dimension starts from
    ``xavier_uniform_``, as in PyTorch.

    ``custom_encoder`` / ``custom_decoder`` replace the stacks; a subclass may also replace
    ``self.encoder`` or ``self.decoder`` after ``super().__init__()`` (pytorch/examples' word
    language model keeps the encoder and makes ``decoder`` a Linear layer).
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias)

        def final_norm() -> LayerNorm:
            return LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)

        # Built in this order (encoder, then decoder, then the re-initialisation) so that a seeded
        # generator gives PyTorch's draws.
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers, final_norm())
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers, final_norm())
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def _check_inputs(self, src: Tensor, tgt: Tensor) -> None:
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError(
                f"the batch number of src and tgt must be equal (Transformer: src {list(src.shape)}, tgt "
                f"{list(tgt.shape)}, batch_first={self.batch_first})"
            )
        if (src.size(-1), tgt.size(-1)) != (self.d_model, self.d_model):
            raise RuntimeError(
                f"the feature number of src and tgt must be equal to d_model (Transformer: d_model={self.d_model}, "
                f"src {list(src.shape)}, tgt {list(tgt.shape)})"
            )

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        self._check_inputs(src, tgt)
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A (sz, sz) causal mask: -inf above the diagonal (a position may not attend to later
        ones), 0 elsewhere."""
        return triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), 1)

    def _reset_parameters(self) -> None:
        """Xavier-uniform every weight matrix (vectors such as biases keep their values)."""
        for matrix in [p for p in self.parameters() if p.dim() > 1]:
            init.xavier_uniform_(matrix)
